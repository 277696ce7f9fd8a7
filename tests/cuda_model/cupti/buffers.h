// The CUPTI model's activity buffers: records are written into buffers the client's request
// callback hands out, and full (or flushed) buffers go back through the completion callback on
// CUPTI's own worker thread. Nothing here knows the record kinds; see records.cpp.
#pragma once

#include <cupti.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

namespace fobcupti {

// One record to write: its bytes as the CUDA 13 struct lays them out.
struct Bytes {
  const void* data;
  size_t size;
};

class Buffers {
 public:
  static Buffers& instance();

  // cuptiActivityRegisterCallbacks: "CUPTI_ERROR_INVALID_PARAMETER if either ... is NULL".
  CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                 CUpti_BuffersCallbackCompleteFunc complete);
  // Writes the records next to each other in one buffer where they fit (an external correlation
  // record must precede its API record); a record that fits no buffer is dropped and counted.
  void write(std::span<const Bytes> records);
  // cuptiActivityFlushAll: hands the current buffer to the worker and returns once the worker
  // has completed every buffer handed to it so far.
  CUptiResult flush_all(uint32_t flag);
  // cuptiActivityGetNumDroppedRecords: the count since the previous call, which resets it.
  size_t take_dropped();

 private:
  struct Full {
    uint8_t* buffer;
    size_t size;
    size_t valid;
  };
  Buffers() = default;
  bool fits_locked(size_t size) const;
  void request_locked();
  void hand_off_locked();
  void work();

  std::mutex mutex_;
  std::condition_variable cv_;
  CUpti_BuffersCallbackRequestFunc request_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete_ = nullptr;
  uint8_t* current_ = nullptr;
  size_t size_ = 0, used_ = 0, records_ = 0, max_records_ = 0;
  std::deque<Full> full_;
  uint64_t handed_ = 0, delivered_ = 0;
  size_t dropped_ = 0;
  std::thread::id worker_id_;
  bool worker_started_ = false;
};

}  // namespace fobcupti
