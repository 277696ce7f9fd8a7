// The NCCL model's C API layer, shared by nccl_api.cpp (communicators, errors) and group.cpp
// (calls, groups and the ops they put on streams).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <string>

#include "engine.h"

// ncclComm_t is `struct ncclComm*` in nccl.h: the model's communicator.
struct ncclComm {
  std::shared_ptr<fobnccl::Comm> engine;
  std::atomic<bool> init_pending{false};  // nonblocking init: ncclInProgress until first asked
  std::atomic<int> queued{0};             // ops put on streams (not captured) that have not run
};

namespace fobnccl {

// The communicator a call names: ncclInvalidArgument for null or a handle that is not one, and
// a destroyed or aborted one is also the rule "nccl" (the real library would use freed memory).
ncclResult_t check_comm(ncclComm_t comm, const char* fn);
// Says why a call failed on stderr, as NCCL_DEBUG=WARN would, and returns `r`.
ncclResult_t warn(ncclResult_t r, const std::string& text);
int group_depth();
// A call inside a group failed: ncclGroupEnd returns the error too.
void note_group_error(ncclResult_t r);
// Queues a call: now (a group of one) outside a group, at the outermost ncclGroupEnd inside one.
ncclResult_t submit(ncclComm_t comm, cudaStream_t stream, const Call& call);

}  // namespace fobnccl
