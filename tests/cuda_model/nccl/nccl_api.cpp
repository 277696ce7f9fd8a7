// The NCCL model's C API: what the cuda module imports from libnccl.so.2, with nccl.h's exact
// signatures. Arguments are checked as NCCL checks them (ncclInvalidArgument, with the reason on
// stderr as NCCL_DEBUG=WARN prints it); the calls themselves go to group.cpp and the engine.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "api.h"
#include "fobmodel/model.h"

static_assert(sizeof(ncclUniqueId) == fobnccl::kIdBytes, "nccl.h's id size");
static_assert(static_cast<int>(fobnccl::DType::bf16) == ncclBfloat16, "nccl.h's types");
static_assert(static_cast<int>(fobnccl::DType::f8e5m2) == ncclFloat8e5m2, "nccl.h's types");
static_assert(static_cast<int>(fobnccl::RedOp::avg) == ncclAvg, "nccl.h's operators");
static_assert(static_cast<int>(fobnccl::kRemoteError) == static_cast<int>(ncclRemoteError) &&
                  static_cast<int>(fobnccl::kInProgress) == static_cast<int>(ncclInProgress),
              "nccl.h's results");

namespace fobnccl {
namespace {

std::mutex g_comms_mu;
std::set<ncclComm_t> g_live, g_dead;  // dead handles stay allocated, so a stale one is known

Settings model_settings() {
  Settings s = settings_from_env();
  s.report = [](const std::string& rule, const std::string& text) {
    fobmodel::violation(rule, text);
  };
  return s;
}

// NCCL's ncclConfig_t checks (parseCommConfig): the initializer's magic, blocking 0 or 1, CTA
// bounds positive and ordered. "Config initializer must be assigned to initialize config
// structure when it is created. Not initialized config will result in NCCL error." (nccl.h)
ncclResult_t check_config(const ncclConfig_t* c, bool* blocking) {
  *blocking = true;
  if (!c) return ncclSuccess;
  if (c->magic != 0xcafebeef || c->size < offsetof(ncclConfig_t, netName)) {
    return warn(ncclInvalidArgument,
                "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
  }
  if (c->blocking != NCCL_CONFIG_UNDEF_INT && c->blocking != 0 && c->blocking != 1) {
    return warn(ncclInvalidArgument,
                "Invalid config blocking attribute value " + std::to_string(c->blocking));
  }
  if ((c->minCTAs != NCCL_CONFIG_UNDEF_INT && c->minCTAs <= 0) ||
      (c->maxCTAs != NCCL_CONFIG_UNDEF_INT && c->maxCTAs <= 0) || c->minCTAs > c->maxCTAs) {
    return warn(ncclInvalidArgument, "Invalid config min/max channels attribute value " +
                                         std::to_string(c->minCTAs) + "/" +
                                         std::to_string(c->maxCTAs));
  }
  *blocking = c->blocking != 0;
  return ncclSuccess;
}

// The checks NCCL makes of every call's arguments (ArgsCheck): a valid type and operator, a
// peer within the communicator, buffers for a non-empty call.
ncclResult_t check_call(ncclComm_t comm, const Call& c, const char* fn) {
  if (const ncclResult_t r = check_comm(comm, fn); r != ncclSuccess) return r;
  const std::string where = std::string(fn) + ": ";
  if (static_cast<int>(c.dtype) < 0 || static_cast<int>(c.dtype) >= ncclNumTypes) {
    return warn(ncclInvalidArgument, where + "invalid type " + std::to_string(int(c.dtype)));
  }
  if (static_cast<int>(c.op) < 0 || static_cast<int>(c.op) >= ncclNumOps) {
    return warn(ncclInvalidArgument, where + "invalid reduction operation");
  }
  const int n = comm->engine->nranks();
  if ((c.kind == Kind::send || c.kind == Kind::recv) && (c.peer < 0 || c.peer >= n)) {
    return warn(ncclInvalidArgument, where + "peer " + std::to_string(c.peer) +
                                         " is out of range [0, " + std::to_string(n) + ")");
  }
  const bool needs_send = c.kind != Kind::recv, needs_recv = c.kind != Kind::send;
  if (c.count > 0 && ((needs_send && !c.send) || (needs_recv && !c.recv))) {
    return warn(ncclInvalidArgument, where + "a buffer is NULL");
  }
  if (c.kind == Kind::reduce_scatter && (c.dtype == DType::f8e4m3 || c.dtype == DType::f8e5m2)) {
    return warn(ncclInvalidArgument, where + "fp8 reductions are not modelled");
  }
  return ncclSuccess;
}

ncclResult_t call(ncclComm_t comm, cudaStream_t stream, const Call& c, const char* fn) {
  ncclResult_t r = check_call(comm, c, fn);
  if (r == ncclSuccess) r = submit(comm, stream, c);
  if (r != ncclSuccess) note_group_error(r);
  return r;
}

}  // namespace

ncclResult_t warn(ncclResult_t r, const std::string& text) {
  std::fprintf(stderr, "[cuda model nccl] WARN %s\n", text.c_str());
  return r;
}

ncclResult_t check_comm(ncclComm_t comm, const char* fn) {
  if (!comm) return warn(ncclInvalidArgument, std::string(fn) + ": comm is NULL");
  std::lock_guard<std::mutex> lock(g_comms_mu);
  if (g_live.count(comm)) return ncclSuccess;
  if (g_dead.count(comm)) {
    fobmodel::violation("nccl", std::string(fn) +
                                    " on a communicator already destroyed or "
                                    "aborted (NCCL API, ncclCommDestroy and "
                                    "ncclCommAbort free it)");
  }
  return warn(ncclInvalidArgument, std::string(fn) + ": not a live communicator");
}

}  // namespace fobnccl

using fobnccl::Kind;
using fobnccl::make_call;

namespace {
fobnccl::DType dtype(ncclDataType_t t) {
  return static_cast<fobnccl::DType>(t);
}
}  // namespace

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

// "The version number returned will be the same as the NCCL_VERSION_CODE defined in nccl.h"
// (NCCL API, ncclGetVersion): the model answers for the header it was compiled against.
ncclResult_t ncclGetVersion(int* version) {
  if (!version) return fobnccl::warn(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) return fobnccl::warn(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  fobnccl::Id id;
  std::string why;
  if (fobnccl::create_id(&id, &why) != fobnccl::kSuccess) {
    return fobnccl::warn(ncclSystemError, "ncclGetUniqueId: " + why);
  }
  std::memcpy(uniqueId->internal, id.bytes, sizeof id.bytes);
  return ncclSuccess;
}

// "Creates a new communicator (multi thread/process version) with a configuration set by
// users." With config->blocking = 0 it "may return ncclInProgress" and the application polls
// ncclCommGetAsyncError until ncclSuccess (NCCL API, ncclCommInitRankConfig; User Guide,
// Creating a communicator with options): the model does, once.
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  if (!comm) return fobnccl::warn(ncclInvalidArgument, "ncclCommInitRankConfig: comm is NULL");
  bool blocking = true;
  if (const ncclResult_t r = fobnccl::check_config(config, &blocking); r != ncclSuccess) return r;
  if (fobnccl::group_depth() > 0) {
    return fobnccl::warn(ncclInvalidUsage, "the model does not take ncclCommInitRank in a group");
  }
  fobnccl::Id id;
  std::memcpy(id.bytes, commId.internal, sizeof id.bytes);
  fobnccl::Result result = fobnccl::kSuccess;
  std::string why;
  auto engine = fobnccl::Comm::join(id, nranks, rank, fobnccl::model_settings(), &result, &why);
  if (!engine) return fobnccl::warn(static_cast<ncclResult_t>(result), why);
  auto* c = new ncclComm();
  c->engine = std::move(engine);
  c->init_pending.store(!blocking);
  {
    std::lock_guard<std::mutex> lock(fobnccl::g_comms_mu);
    fobnccl::g_live.insert(c);
  }
  *comm = c;
  return blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

// "Queries the progress and potential errors of asynchronous NCCL operations ... If an error
// occurs, destroy the communicator with abort()" (NCCL API, ncclCommGetAsyncError): ncclInProgress
// while a nonblocking init is unconfirmed, then the first error an operation met (a mismatch:
// ncclInvalidUsage; a peer that exited or aborted: ncclRemoteError), else ncclSuccess.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (const ncclResult_t r = fobnccl::check_comm(comm, "ncclCommGetAsyncError"); r != ncclSuccess) {
    return r;
  }
  if (!asyncError) return fobnccl::warn(ncclInvalidArgument, "ncclCommGetAsyncError: NULL");
  if (comm->init_pending.exchange(false)) {
    *asyncError = ncclInProgress;
    return ncclSuccess;
  }
  *asyncError = static_cast<ncclResult_t>(comm->engine->async_error());
  return ncclSuccess;
}

namespace {

// Moves a handle to the dead set; false if it was not live.
bool retire(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(fobnccl::g_comms_mu);
  if (!fobnccl::g_live.erase(comm)) return false;
  fobnccl::g_dead.insert(comm);
  return true;
}

}  // namespace

// ncclCommDestroy "will call ncclCommFinalize internally" when it was not called, and finalize
// "flushes all issued communications" (NCCL API, ncclCommDestroy and ncclCommFinalize): the
// operations already on streams run first. A graph captured with the communicator must be gone
// by then; one replayed later is reported (group.cpp).
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (const ncclResult_t r = fobnccl::check_comm(comm, "ncclCommDestroy"); r != ncclSuccess) {
    return r;
  }
  const fobnccl::Settings s = fobnccl::settings_from_env();
  const auto limit =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(2 * s.deadlock_s);
  while (comm->queued.load() > 0 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (comm->queued.load() > 0) {
    fobmodel::violation("deadlock", "ncclCommDestroy on rank " +
                                        std::to_string(comm->engine->rank()) + " waits for " +
                                        std::to_string(comm->queued.load()) +
                                        " operation(s) on its streams that do not finish");
  }
  retire(comm);
  comm->engine->destroy();
  return ncclSuccess;
}

// "Frees resources associated with communicator object and aborts any uncompleted operations"
// (NCCL API, ncclCommAbort): operations blocked in the communicator return at once, those
// still queued do nothing when they run, and peers waiting for this rank get ncclRemoteError.
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (const ncclResult_t r = fobnccl::check_comm(comm, "ncclCommAbort"); r != ncclSuccess) {
    return r;
  }
  retire(comm);
  comm->engine->abort();
  return ncclSuccess;
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return fobnccl::call(comm, stream,
                       make_call(Kind::send, sendbuff, nullptr, count, dtype(datatype), peer),
                       "ncclSend");
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return fobnccl::call(comm, stream,
                       make_call(Kind::recv, nullptr, recvbuff, count, dtype(datatype), peer),
                       "ncclRecv");
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return fobnccl::call(comm, stream,
                       make_call(Kind::all_gather, sendbuff, recvbuff, sendcount, dtype(datatype)),
                       "ncclAllGather");
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return fobnccl::call(comm, stream,
                       make_call(Kind::reduce_scatter, sendbuff, recvbuff, recvcount,
                                 dtype(datatype), -1, static_cast<fobnccl::RedOp>(op)),
                       "ncclReduceScatter");
}

}  // extern "C"
