// The NCCL model's C API: what the cuda module imports from libnccl.so.2, with nccl.h's exact
// signatures. Arguments are checked as NCCL checks them (ncclInvalidArgument, with the reason in a
// WARN line, debug.h); the calls themselves go to group.cpp and the engine. Making communicators
// is init.cpp and split.cpp; registration and ncclMemAlloc register.cpp.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "api.h"
#include "debug.h"
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
  if (r == ncclSuccess) require_registered(*comm, c, fn);
  if (r == ncclSuccess) r = submit(comm, stream, c);
  if (r != ncclSuccess) note_group_error(r);
  return r;
}

// "obtain a unique hash using the first commId" (init.cc:1567): NCCL's getHash of the id's 128
// bytes (eatHash and digestHash, src/include/bitops.h:437-478), the commId its Init lines print.
uint64_t id_hash(const Id& id) {
  uint64_t acc[2] = {1, 1};
  acc[0] ^= sizeof id.bytes;
  for (size_t at = 0; at < sizeof id.bytes; at += sizeof(uint64_t)) {
    acc[0] += acc[1];
    acc[1] ^= acc[0];
    acc[0] ^= acc[0] >> 31;
    acc[0] *= 0x9de62bbc8cef3ce3ull;
    acc[1] ^= acc[1] >> 32;
    acc[1] *= 0x485cd6311b599e79ull;
    uint64_t chunk = 0;
    std::memcpy(&chunk, id.bytes + at, sizeof chunk);
    acc[0] += chunk;
  }
  uint64_t h = acc[0];
  h ^= h >> 31;
  h *= 0xbac3bd562846de6bull;
  h += acc[1];
  h ^= h >> 32;
  h *= 0x995a187a14e7b445ull;
  return h;
}

// showVersion (init.cc:604-610), once, from the first init: VERSION where NCCL_DEBUG is VERSION
// or WARN (and only on rank 0), an INFO line on every rank from INFO up.
void show_version(int rank) {
  static std::once_flag once;
  const log::Level level = log::level();
  if (level <= log::kWarn && (level == log::kNone || rank != 0)) return;
  std::call_once(once, [level] {
    const std::string text = "NCCL version " + std::to_string(NCCL_MAJOR) + "." +
                             std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH) +
                             "+cuda" + std::to_string(CUDART_VERSION / 1000) + "." +
                             std::to_string(CUDART_VERSION % 1000 / 10);
    if (level == log::kVersion || level == log::kWarn) {
      log::version("%s", text.c_str());
    } else {
      log::info(log::kAll, "%s", text.c_str());
    }
  });
}

// ncclCommInitRank and ncclCommInitRankConfig, each under its own name (the "%s" of NCCL's Init
// lines is the API function, init.cc:1574).
ncclResult_t init_rank(ncclComm_t* comm, int nranks, const ncclUniqueId& commId, int rank,
                       const ncclConfig_t* config, const char* func) {
  show_version(rank);
  if (!comm) return warn(ncclInvalidArgument, std::string(func) + " : newcomm argument is NULL");
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return warn(ncclInvalidArgument,
                "Invalid rank requested : " + std::to_string(rank) + "/" + std::to_string(nranks));
  }
  CommConfig resolved;
  if (const ncclResult_t r = parse_config(config, &resolved); r != ncclSuccess) return r;
  if (group_depth() > 0) {
    return warn(ncclInvalidUsage, "the model does not take ncclCommInitRank in a group");
  }
  Id id;
  std::memcpy(id.bytes, commId.internal, sizeof id.bytes);
  Origin origin;
  origin.func = func;
  origin.comm_id = id_hash(id);
  return create_comm(comm, id, nranks, rank, resolved, origin);
}

}  // namespace

ncclResult_t warn(ncclResult_t r, const std::string& text, std::source_location where) {
  log::warn(text, where);
  return r;
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

// NCCL's ncclGetUniqueId initialises NCCL (ncclInit, whose bootstrap logs), which reads
// NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE for good: set after it, they are ignored.
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  fobnccl::log::level();
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
  return fobnccl::init_rank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return fobnccl::init_rank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
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

// "comm %p rank %d nranks %d cudaDev %d busId %lx - %s COMPLETE" (init.cc:333), after the
// registrations still there are cleaned up.
void log_teardown(ncclComm_t comm, const char* what) {
  fobnccl::cleanup_registrations(*comm);
  fobnccl::log::info(fobnccl::log::kInit,
                     "comm %p rank %d nranks %d cudaDev %d busId %lx - %s COMPLETE",
                     static_cast<void*>(comm), comm->engine->rank(), comm->engine->nranks(),
                     comm->cuda_dev, static_cast<long>(comm->bus_id), what);
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
  fobnccl::retire(comm);
  comm->engine->destroy();
  log_teardown(comm, "Destroy");
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
  fobnccl::retire(comm);
  comm->engine->abort();
  log_teardown(comm, "Abort");
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
