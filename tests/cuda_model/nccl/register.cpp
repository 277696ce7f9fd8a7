// ncclMemAlloc / ncclMemFree (NCCL 2.28.9 src/allocator.cc) and buffer registration
// (ncclCommRegister / ncclCommDeregister, src/register/register.cc), and the rule
// "nccl-unregistered" a test can ask for (FOB_MODEL_NCCL_REQUIRE_REGISTERED=1).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "api.h"
#include "debug.h"
#include "fobmodel/model.h"

namespace fobnccl {
namespace {

std::mutex g_alloc_mu;
std::set<void*> g_allocated;  // what ncclMemAlloc returned and ncclMemFree has not freed

std::string text_of(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

// CUDACHECK's report of a failed runtime call: WARN "Cuda failure ..." and
// ncclUnhandledCudaError (src/include/checks.h).
ncclResult_t cuda_failure(cudaError_t e, std::source_location where) {
  return warn(
      ncclUnhandledCudaError,
      "Cuda failure " + std::to_string(static_cast<int>(e)) + " '" + cudaGetErrorString(e) + "'",
      where);
}

uintptr_t page_size() {
  static const auto size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool require_registration() {
  const char* text = std::getenv("FOB_MODEL_NCCL_REQUIRE_REGISTERED");
  return text != nullptr && std::string(text) == "1";
}

}  // namespace

std::vector<std::pair<const void*, size_t>> buffers_of(const Call& c, int nranks) {
  const size_t bytes = c.count * elem_size(c.dtype), all = bytes * static_cast<size_t>(nranks);
  if (bytes == 0) return {};
  switch (c.kind) {
    case Kind::send:
      return {{c.send, bytes}};
    case Kind::recv:
      return {{c.recv, bytes}};
    case Kind::all_gather:
      return {{c.send, bytes}, {c.recv, all}};
    case Kind::reduce_scatter:
      return {{c.send, all}, {c.recv, bytes}};
  }
  return {};
}

// ncclRegFind (src/include/register_inline.h:13-25): a registered range holding all of it.
bool registered(ncclComm& comm, const void* p, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(comm.mu);
  for (const auto& reg : comm.registrations) {
    if (reg->begin <= begin && begin + bytes <= reg->end) return true;
  }
  return false;
}

void require_registered(ncclComm& comm, const Call& call, const char* fn) {
  if (!require_registration()) return;
  for (const auto& [p, bytes] : buffers_of(call, comm.engine->nranks())) {
    if (registered(comm, p, bytes)) continue;
    fobmodel::violation(
        "nccl-unregistered",
        std::string(fn) + " on rank " + std::to_string(comm.engine->rank()) + " of comm " +
            text_of(&comm) + " (task \"" + fobmodel::current_task() + "\"): the buffer [" +
            text_of(p) + ", +" + std::to_string(bytes) +
            ") lies in no range registered with this communicator (ncclCommRegister), and "
            "FOB_MODEL_NCCL_REQUIRE_REGISTERED=1 asks that every buffer be");
  }
}

void cleanup_registrations(ncclComm& comm) {
  std::lock_guard<std::mutex> lock(comm.mu);
  for (const auto& reg : comm.registrations) {
    log::info(log::kInit, "Cleanup buffer %p pages %lx", reinterpret_cast<void*>(reg->begin),
              static_cast<unsigned long>((reg->end - reg->begin) / page_size()));
  }
  comm.registrations.clear();
}

}  // namespace fobnccl

extern "C" {

// ncclMemAlloc: "The actual allocated size might be larger than requested due to granularity
// requirement" (nccl.h); the model gives exactly `size` bytes of the current device's memory.
// "if (ptr == NULL || size == 0) goto fallback" to cudaMalloc (allocator.cc:28), whose answer
// stands: size 0 succeeds with *ptr NULL, a NULL ptr is a CUDA failure.
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  const cudaError_t e = cudaMalloc(ptr, size);
  if (e != cudaSuccess) return fobnccl::cuda_failure(e, std::source_location::current());
  if (size > 0) {
    std::lock_guard<std::mutex> lock(fobnccl::g_alloc_mu);
    fobnccl::g_allocated.insert(*ptr);
  }
  return ncclSuccess;
}

// ncclMemFree frees on the pointer's device and restores the current one (allocator.cc:103-130).
// A pointer ncclMemAlloc did not return fails as NCCL's does: cuMemRetainAllocationHandle (or,
// for a wild pointer, cuPointerGetAttribute) refuses it, a CUDA failure, ncclUnhandledCudaError.
// NULL is cudaFree(NULL): nothing.
ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(fobnccl::g_alloc_mu);
    if (fobnccl::g_allocated.erase(ptr) == 0) {
      return fobnccl::cuda_failure(cudaErrorInvalidValue, std::source_location::current());
    }
  }
  int saved = 0, device = 0;
  cudaGetDevice(&saved);
  fobmodel::memory_of(ptr, &device);
  if (device >= 0) cudaSetDevice(device);
  const cudaError_t e = cudaFree(ptr);
  cudaSetDevice(saved);
  return e == cudaSuccess ? ncclSuccess : fobnccl::cuda_failure(e, std::source_location::current());
}

// ncclCommRegister (register.cc:27-64, :116-126). With NCCL_LOCAL_REGISTER=0 it skips: a NULL
// handle and ncclSuccess. Otherwise it keeps the page-rounded range [buff & -page,
// roundup(buff + size)) in the communicator's cache, any range at all (the real registration
// happens at first use, and fails there silently), and a range inside one it keeps is that
// one's handle, counted once more. A NULL handle pointer, which NCCL would write through, is
// ncclInvalidArgument.
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (const ncclResult_t r = fobnccl::check_comm(comm, "ncclCommRegister"); r != ncclSuccess) {
    return r;
  }
  if (handle == nullptr)
    return fobnccl::warn(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  const int64_t local = fobnccl::log::param("LOCAL_REGISTER", 1);
  if (local == 0) {
    *handle = nullptr;
    fobnccl::log::info(fobnccl::log::kReg,
                       "Skipping registration for buffer %p size %zi (LocalRegister=%ld, "
                       "P2pUsesMemcpy=%d)",
                       buff, static_cast<ssize_t>(size), static_cast<long>(local), 0);
    return ncclSuccess;
  }
  fobnccl::log::info(fobnccl::log::kReg, "register comm %p buffer %p size %zi",
                     static_cast<void*>(comm), buff, static_cast<ssize_t>(size));
  const uintptr_t page = fobnccl::page_size();
  const auto data = reinterpret_cast<uintptr_t>(buff);
  const uintptr_t begin = data & ~(page - 1), end = (data + size + page - 1) & ~(page - 1);
  std::lock_guard<std::mutex> lock(comm->mu);
  for (const auto& reg : comm->registrations) {
    if (reg->begin <= begin && end <= reg->end) {
      ++reg->refs;
      *handle = reg.get();
      return ncclSuccess;
    }
  }
  comm->registrations.push_back(std::make_unique<fobnccl::Registration>());
  comm->registrations.back()->begin = begin;
  comm->registrations.back()->end = end;
  *handle = comm->registrations.back().get();
  return ncclSuccess;
}

// ncclCommDeregister (register.cc:139-168): NULL is nothing; a handle this communicator did not
// give is WARN "Deregister: Could not find handle" and ncclInvalidUsage; the range goes when its
// last registration does.
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (const ncclResult_t r = fobnccl::check_comm(comm, "ncclCommRegister"); r != ncclSuccess) {
    return r;
  }
  if (handle == nullptr) return ncclSuccess;
  std::lock_guard<std::mutex> lock(comm->mu);
  auto& regs = comm->registrations;
  for (auto it = regs.begin(); it != regs.end(); ++it) {
    if (it->get() != handle) continue;
    if (--(*it)->refs == 0) regs.erase(it);
    return ncclSuccess;
  }
  return fobnccl::warn(ncclInvalidUsage, "Deregister: Could not find handle");
}

}  // extern "C"
