// The activity buffers of the CUPTI model. The rules cite <cupti_activity.h> of CUDA 13, whose
// comments are CUPTI's API reference
// (https://docs.nvidia.com/cupti/api/group__CUPTI__ACTIVITY__API.html).
#include "buffers.h"

#include <cstring>
#include <string>

#include "fobmodel/model.h"

namespace fobcupti {
namespace {

constexpr size_t round_up(size_t n) {
  return (n + ACTIVITY_RECORD_ALIGNMENT - 1) / ACTIVITY_RECORD_ALIGNMENT *
         ACTIVITY_RECORD_ALIGNMENT;
}

}  // namespace

Buffers& Buffers::instance() {
  // Never destroyed: stream threads may still finish work while the process exits.
  static Buffers* buffers = new Buffers();
  return *buffers;
}

CUptiResult Buffers::register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard lock(mutex_);
  request_ = request;
  complete_ = complete;
  if (!worker_started_) {
    worker_started_ = true;
    std::thread worker([this] { work(); });
    worker_id_ = worker.get_id();
    worker.detach();
  }
  return CUPTI_SUCCESS;
}

bool Buffers::fits_locked(size_t size) const {
  return current_ != nullptr && used_ + size <= size_ &&
         (max_records_ == 0 || records_ < max_records_);
}

// CUpti_BuffersCallbackRequestFunc: "The callback function can decline the request by setting
// *buffer to NULL. In this case CUPTI may drop activity records"; maxNumRecords 0 fills the
// buffer with as many records as fit, > 0 with at most that many.
void Buffers::request_locked() {
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  request_(&buffer, &size, &max_records);
  if (buffer != nullptr && reinterpret_cast<uintptr_t>(buffer) % ACTIVITY_RECORD_ALIGNMENT != 0) {
    // Records are ACTIVITY_RECORD_ALIGNMENT-aligned structs (cupti_common.h): a misaligned
    // buffer would make every record a misaligned access, which the real library leaves to luck.
    fobmodel::violation("cupti", "the buffer request callback returned a buffer not aligned to " +
                                     std::to_string(ACTIVITY_RECORD_ALIGNMENT) + " bytes");
    buffer = nullptr;
  }
  current_ = buffer;
  size_ = buffer ? size : 0;
  used_ = records_ = 0;
  max_records_ = max_records;
}

void Buffers::hand_off_locked() {
  if (current_ == nullptr) return;
  full_.push_back({current_, size_, used_});
  ++handed_;
  current_ = nullptr;
  cv_.notify_all();
}

void Buffers::write(std::span<const Bytes> records) {
  size_t total = 0;
  for (const Bytes& r : records) total += round_up(r.size);
  std::lock_guard lock(mutex_);
  // "If the user does not register the buffers ... CUPTI will enable the activity kind but not
  // provide any records" (cuptiActivityEnableAndDump): no buffer, so every record is dropped.
  if (request_ == nullptr) {
    dropped_ += records.size();
    return;
  }
  if (!fits_locked(total)) {
    hand_off_locked();
    request_locked();
  }
  // The dropped count includes "records that could not be recorded because CUPTI did not have
  // activity buffer space available" (cuptiActivityGetNumDroppedRecords).
  if (!fits_locked(total)) {
    dropped_ += records.size();
    return;
  }
  for (const Bytes& r : records) {
    std::memcpy(current_ + used_, r.data, r.size);
    std::memset(current_ + used_ + r.size, 0, round_up(r.size) - r.size);
    used_ += round_up(r.size);
    ++records_;
  }
}

// cuptiActivityFlushAll: "CUPTI_ERROR_INVALID_OPERATION if not preceded by a successful call to
// cuptiActivityRegisterCallbacks"; "a blocking call". Every record the model writes is complete
// (its timestamps are known when it is written), so the default flush returns the same buffers
// as the forced one.
CUptiResult Buffers::flush_all(uint32_t) {
  std::unique_lock lock(mutex_);
  if (complete_ == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  if (std::this_thread::get_id() == worker_id_) {
    // The completion callback flushing would wait for itself: on a real GPU a hang.
    fobmodel::violation("cupti",
                        "cuptiActivityFlushAll called from the buffer completion "
                        "callback would wait for itself");
    return CUPTI_ERROR_INVALID_OPERATION;
  }
  hand_off_locked();
  const uint64_t target = handed_;
  cv_.wait(lock, [&] { return delivered_ >= target; });
  return CUPTI_SUCCESS;
}

size_t Buffers::take_dropped() {
  std::lock_guard lock(mutex_);
  const size_t dropped = dropped_;
  dropped_ = 0;
  return dropped;
}

// CUPTI's own thread: CUpti_BuffersCallbackCompleteFunc runs here, without the model's lock
// (the client takes its own locks in it). Context and stream id are NULL and 0: "all buffers
// returned by this callback are global buffers".
void Buffers::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return !full_.empty(); });
    const Full full = full_.front();
    full_.pop_front();
    const CUpti_BuffersCallbackCompleteFunc complete = complete_;
    lock.unlock();
    complete(nullptr, 0, full.buffer, full.size, full.valid);
    lock.lock();
    ++delivered_;
    cv_.notify_all();
  }
}

}  // namespace fobcupti
