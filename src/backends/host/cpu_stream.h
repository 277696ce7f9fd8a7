// A CPU "stream": one thread that runs queued operations in order, as a CUDA stream does.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace fob {

class CpuStream {
 public:
  explicit CpuStream(std::function<void()> thread_init = {});
  ~CpuStream();
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  void push(std::function<void()> op);
  // True once every queued operation has finished; false if `timeout_s` passed first.
  bool wait_idle(double timeout_s);

 private:
  void loop(std::function<void()> thread_init);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace fob
