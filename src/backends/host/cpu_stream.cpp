#include "cpu_stream.h"

#include <chrono>

namespace fob {

CpuStream::CpuStream(std::function<void()> thread_init)
    : thread_([this, init = std::move(thread_init)] { loop(init); }) {}

CpuStream::~CpuStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CpuStream::push(std::function<void()> op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_all();
}

bool CpuStream::wait_idle(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                      [this] { return queue_.empty() && !busy_; });
}

void CpuStream::loop(std::function<void()> thread_init) {
  if (thread_init) thread_init();
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> op = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    op();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace fob
