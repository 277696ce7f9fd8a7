// The NCCL model's transport and matching engine: communicators between processes on one machine,
// point-to-point calls matched per peer in call order, collectives matched in order, deadlocks
// found and described, abort. It knows nothing of CUDA: nccl_api.cpp turns the C API into calls
// of Comm::run on a stream's thread, and the unit tests drive it from plain processes.
//
// Rendezvous: ncclGetUniqueId (Rendezvous::create) makes a file under $TMPDIR with a random name,
// mode 0600, created exclusively and never through a symlink; the id carries its path. Every rank
// maps it (MAP_SHARED) and the data moves through per-pair rings in it. The name is unlinked once
// every rank has joined, and by the creator at exit if nobody did.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fobnccl {

// ncclDataType_t's and ncclRedOp_t's values (nccl_api.cpp checks that they agree).
enum class DType : int {
  i8 = 0,
  u8 = 1,
  i32 = 2,
  u32 = 3,
  i64 = 4,
  u64 = 5,
  f16 = 6,
  f32 = 7,
  f64 = 8,
  bf16 = 9,
  f8e4m3 = 10,
  f8e5m2 = 11,
};
enum class RedOp : int { sum = 0, prod = 1, max = 2, min = 3, avg = 4 };
size_t elem_size(DType t);
const char* type_name(DType t);
const char* op_name(RedOp op);

// ncclResult_t's values for what the engine reports.
enum Result : int {
  kSuccess = 0,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

// A rule the program broke: "deadlock" or "nccl", and a text naming the ranks and calls.
using Reporter = std::function<void(const std::string& rule, const std::string& text)>;

struct Settings {
  double deadlock_s = 5;  // FOB_MODEL_DEADLOCK_S: a cycle of ranks stalled this long is reported
  double join_s = 60;     // how long ncclCommInitRank waits for the other ranks
  Reporter report;        // unset: "[cuda model] RULE: text" on stderr
};
// FOB_MODEL_DEADLOCK_S from the environment, else 5.
Settings settings_from_env();

enum class Kind : int { send = 0, recv = 1, all_gather = 2, reduce_scatter = 3 };

// One NCCL call as the program made it. count: ncclSend/ncclRecv's count, ncclAllGather's
// sendcount, ncclReduceScatter's recvcount.
struct Call {
  Kind kind = Kind::send;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DType dtype = DType::f32;
  int peer = -1;
  RedOp op = RedOp::sum;
};
Call make_call(Kind kind, const void* send, void* recv, size_t count, DType dtype, int peer = -1,
               RedOp op = RedOp::sum);
std::string describe(const Call& c);  // "ncclSend(peer 1, 1024 x float32)"

// ncclGetUniqueId: a fresh rendezvous. The id is NCCL's 128 opaque bytes.
constexpr size_t kIdBytes = 128;
struct Id {
  char bytes[kIdBytes] = {};
};
Result create_id(Id* id, std::string* why);

struct Segment;  // the mapped rendezvous (segment.cpp)

// One rank's communicator. join() returns when every rank has joined.
class Comm {
 public:
  static std::shared_ptr<Comm> join(const Id& id, int nranks, int rank, const Settings& settings,
                                    Result* result, std::string* why);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Runs the calls of one group (or one call outside a group) to completion, all progressing
  // together; returns early with an error after a mismatch, a peer gone, or abort().
  Result run(const std::vector<Call>& calls);

  // A host-side allgather among the ranks, as NCCL's bootstrap network does it for its own calls
  // (ncclCommSplit's colors and keys, a communicator's peer information): rank r's `bytes` bytes
  // land at r * bytes in `all`. It has channels of its own, so it neither waits for nor takes a
  // turn from the operations on streams; `call` names the API call in reports.
  Result bootstrap_allgather(const void* mine, size_t bytes, void* all, const std::string& call);

  // ncclCommAbort: every run() in progress returns, later ones do nothing, and the peers that
  // wait for this rank get kRemoteError instead of waiting forever.
  void abort();
  // ncclCommDestroy: the peers see this rank gone; later run()s are the caller's error.
  void destroy();
  bool aborted() const { return aborted_.load(); }
  bool destroyed() const { return destroyed_.load(); }
  // The asynchronous error (kSuccess until a run() failed), and its text.
  Result async_error() const { return static_cast<Result>(async_.load()); }
  std::string async_text() const;

 private:
  Comm() = default;
  friend struct Progress;
  void fail(Result r, const std::string& text);
  void report(const std::string& rule, const std::string& text) const;

  std::shared_ptr<Segment> seg_;
  int rank_ = 0, nranks_ = 0;
  Settings settings_;
  std::atomic<bool> aborted_{false}, destroyed_{false};
  std::atomic<int> async_{kSuccess};
  std::atomic<int> active_{0};
  std::mutex mu_;       // serializes run()s: NCCL runs a communicator's operations in order
  std::mutex boot_mu_;  // serializes bootstrap_allgather()s
  mutable std::mutex text_mu_;
  std::string async_text_;
  uint64_t colls_ = 0;  // collectives run so far: the sequence number that names them
  uint64_t boots_ = 0;  // bootstrap allgathers so far
};

}  // namespace fobnccl
