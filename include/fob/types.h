// Basic vocabulary shared by plans, backends, results and the CLI.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "fob/moe_shape.h"

namespace fob {

// Exit codes are part of the contract (docs/cli.md#exit-codes).
inline constexpr int kExitOk = 0;
inline constexpr int kExitVerifyFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitRuntimeFault = 3;
// SIGTERM, SIGINT or SIGHUP ended the run; the cases finished before it are kept
// (docs/cli.md#exit-codes).
inline constexpr int kExitInterrupted = 4;
// `fobench compare`: no case regressed, but some case's interval reaches past the threshold
// without lying past it, so a regression of the threshold's size could have gone unseen.
inline constexpr int kExitInconclusive = 5;
// `fobench compare`: NEW lacks cases that BASE has, so it was not held to all of BASE.
inline constexpr int kExitMissingCases = 6;

// Bad input: unknown key, bad value, shape that does not divide. Exit 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A fault while running: MPI, a hung transfer, a backend error. Exit 3.
class RuntimeFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A results file that could not be written: its message already says which measured cases are
// kept and where, so nothing adds that again.
class WriteFault : public RuntimeFault {
 public:
  using RuntimeFault::RuntimeFault;
};

// A message as it may reach a terminal: control characters (but line breaks and tabs) shown as
// \xNN, so that a path or value from anyone cannot send an escape sequence; the message cut at
// kMaxMessageBytes, so that none floods it.
inline constexpr size_t kMaxMessageBytes = 4096;
std::string printable(const std::string& message);

enum class DType : uint8_t { fp32, fp64, bf16, fp16 };
const char* to_string(DType dtype);
DType parse_dtype(const std::string& text);  // throws InputError naming the choices
std::string dtype_choices();                 // "fp32, fp64, bf16, fp16"
int dtype_bytes(DType dtype);

// A workload (workload.h): its entry in the workload table, which says how to build, check and
// price it. Every workload, built in or registered, is used through this pointer.
struct WorkloadDef;
using Workload = const WorkloadDef*;
const char* to_string(Workload workload);          // its name; "(none)" for nullptr
Workload parse_workload(const std::string& text);  // throws InputError naming the choices
std::string workload_choices();                    // every workload, comma separated
Workload default_workload();                       // mlp, the TPSP MLP layer

// The most elements any one tensor of a shape may have, 2^50 (8 PiB in fp64, far beyond any
// machine): shapes past it are refused up front, so that no byte count (an int64_t) can wrap.
inline constexpr long double kMaxTensorElements = 1125899906842624.0L;

// Problem shape. Tokens M = batch * seq; the FFN width defaults to 4 * hidden. Rows of every
// [M, .] tensor are batch-major: token t of sequence b is row b * seq + t.
struct Shape {
  int64_t batch = 1;
  int64_t seq = 1;
  int64_t hidden = 1;
  int64_t ffn = 4;
  int64_t heads = 0;  // attention heads; 0 means hidden / kDefaultHeadDim
  // The mixture-of-experts layer (workload moe); every field 0 is its default. Last, so that a
  // shape written as {batch, seq, hidden, ffn, heads} leaves it at its defaults.
  MoeShape moe = {};
  int64_t tokens() const { return batch * seq; }
  int64_t head_count() const { return heads > 0 ? heads : hidden / kDefaultHeadDim; }
  int64_t experts() const { return moe.experts > 0 ? moe.experts : MoeShape::kDefaultExperts; }
  // The default k never exceeds the experts, so that `--experts 1` alone is a valid layer.
  int64_t top_k() const {
    if (moe.top_k > 0) return moe.top_k;
    return experts() < MoeShape::kDefaultTopK ? experts() : MoeShape::kDefaultTopK;
  }
  int64_t expert_ffn() const {
    if (moe.expert_ffn > 0) return moe.expert_ffn;
    return ffn > 0 ? ffn : 4 * hidden;
  }
  int64_t moe_seed() const { return moe.seed > 0 ? moe.seed : MoeShape::kDefaultSeed; }
  // Every field, so that what is kept per shape (the executor's oracle outputs) tells shapes
  // apart by all of them: a field added above must join it. Spelled out, not defaulted, for
  // nvcc's C++17 (moe_shape.h).
  bool operator==(const Shape& o) const {
    return batch == o.batch && seq == o.seq && hidden == o.hidden && ffn == o.ffn &&
           heads == o.heads && moe == o.moe;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  // Llama, GPT-3 and Megatron's defaults all use 128-wide heads.
  static constexpr int64_t kDefaultHeadDim = 128;
};

// The 64-bit FNV-1a hash of `text`: stable across ranks, machines and builds, for what must
// agree between them (input values per tensor, the config fingerprint ranks compare, the plan
// fingerprints tests pin).
uint64_t fnv1a(const std::string& text);

}  // namespace fob
