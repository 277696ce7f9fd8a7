// Data types, reduction operators and how calls are named in reports.
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine.h"

namespace fobnccl {

size_t elem_size(DType t) {
  switch (t) {
    case DType::i8:
    case DType::u8:
    case DType::f8e4m3:
    case DType::f8e5m2:
      return 1;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::i32:
    case DType::u32:
    case DType::f32:
      return 4;
    case DType::i64:
    case DType::u64:
    case DType::f64:
      return 8;
  }
  return 0;
}

const char* type_name(DType t) {
  switch (t) {
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::i32:
      return "int32";
    case DType::u32:
      return "uint32";
    case DType::i64:
      return "int64";
    case DType::u64:
      return "uint64";
    case DType::f16:
      return "float16";
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::bf16:
      return "bfloat16";
    case DType::f8e4m3:
      return "float8e4m3";
    case DType::f8e5m2:
      return "float8e5m2";
  }
  return "?";
}

const char* op_name(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return "ncclSum";
    case RedOp::prod:
      return "ncclProd";
    case RedOp::max:
      return "ncclMax";
    case RedOp::min:
      return "ncclMin";
    case RedOp::avg:
      return "ncclAvg";
  }
  return "?";
}

Call make_call(Kind kind, const void* send, void* recv, size_t count, DType dtype, int peer,
               RedOp op) {
  Call c;
  c.kind = kind;
  c.send = send;
  c.recv = recv;
  c.count = count;
  c.dtype = dtype;
  c.peer = peer;
  c.op = op;
  return c;
}

std::string describe(const Call& c) {
  const std::string n = std::to_string(c.count) + " x " + type_name(c.dtype);
  switch (c.kind) {
    case Kind::send:
      return "ncclSend(peer " + std::to_string(c.peer) + ", " + n + ")";
    case Kind::recv:
      return "ncclRecv(peer " + std::to_string(c.peer) + ", " + n + ")";
    case Kind::all_gather:
      return "ncclAllGather(sendcount " + n + ")";
    case Kind::reduce_scatter:
      return std::string("ncclReduceScatter(recvcount ") + n + ", " + op_name(c.op) + ")";
  }
  return "?";
}

Settings settings_from_env() {
  Settings s;
  if (const char* v = std::getenv("FOB_MODEL_DEADLOCK_S"); v && std::atof(v) > 0) {
    s.deadlock_s = std::atof(v);
  }
  return s;
}

}  // namespace fobnccl
