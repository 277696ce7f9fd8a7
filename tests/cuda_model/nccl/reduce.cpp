// Reductions for ncclReduceScatter. Contributions are combined in rank order 0..n-1; NCCL's ring
// combines them in ring order, so fp32 and fp64 results may differ from NCCL's in the last bit.
// bfloat16 and float16 are widened to fp32, combined in fp32 and rounded once (to nearest even)
// at the end; NCCL's kernels also compute in fp32 but round to the type after every ring step,
// so with more than two ranks the model's result may be one rounding closer than NCCL's.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "internal.h"

namespace fobnccl {
namespace {

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000;
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00);
  float a = std::fabs(f);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);
  if (a < 6.103515625e-05f) {  // subnormal: a multiple of 2^-24, rounded to nearest even
    const float q = std::nearbyint(a * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(q));
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint32_t man = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));  // 11 bits + carry
  if (man == 2048) {
    man = 1024;
    ++e;
  }
  const uint32_t exp = static_cast<uint32_t>(e + 14);
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  return static_cast<uint16_t>(sign | (exp << 10) | (man & 0x3ff));
}

template <typename Acc>
Acc combine(RedOp op, Acc a, Acc b) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return a + b;
    case RedOp::prod:
      return a * b;
    case RedOp::max:
      return b > a ? b : a;
    case RedOp::min:
      return b < a ? b : a;
  }
  return a;
}

// T: the stored type; Acc: what it is combined in; load/store convert.
template <typename T, typename Acc, typename Load, typename Store>
void reduce_as(RedOp op, const std::vector<const unsigned char*>& parts, void* out, size_t count,
               Load load, Store store) {
  const auto n = static_cast<Acc>(parts.size());
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, parts[0] + i * sizeof(T), sizeof v);
    Acc acc = load(v);
    for (size_t p = 1; p < parts.size(); ++p) {
      std::memcpy(&v, parts[p] + i * sizeof(T), sizeof v);
      acc = combine(op, acc, load(v));
    }
    if (op == RedOp::avg) acc = acc / n;
    const T r = store(acc);
    std::memcpy(static_cast<unsigned char*>(out) + i * sizeof(T), &r, sizeof r);
  }
}

template <typename T>
void reduce_plain(RedOp op, const std::vector<const unsigned char*>& parts, void* out,
                  size_t count) {
  reduce_as<T, T>(
      op, parts, out, count, [](T v) { return v; }, [](T v) { return v; });
}

}  // namespace

bool reduce(DType t, RedOp op, const std::vector<const unsigned char*>& parts, void* out,
            size_t count) {
  switch (t) {
    case DType::i8:
      reduce_plain<int8_t>(op, parts, out, count);
      return true;
    case DType::u8:
      reduce_plain<uint8_t>(op, parts, out, count);
      return true;
    case DType::i32:
      reduce_plain<int32_t>(op, parts, out, count);
      return true;
    case DType::u32:
      reduce_plain<uint32_t>(op, parts, out, count);
      return true;
    case DType::i64:
      reduce_plain<int64_t>(op, parts, out, count);
      return true;
    case DType::u64:
      reduce_plain<uint64_t>(op, parts, out, count);
      return true;
    case DType::f32:
      reduce_plain<float>(op, parts, out, count);
      return true;
    case DType::f64:
      reduce_plain<double>(op, parts, out, count);
      return true;
    case DType::bf16:
      reduce_as<uint16_t, float>(op, parts, out, count, bf16_to_float, float_to_bf16);
      return true;
    case DType::f16:
      reduce_as<uint16_t, float>(op, parts, out, count, half_to_float, float_to_half);
      return true;
    case DType::f8e4m3:
    case DType::f8e5m2:
      return false;
  }
  return false;
}

float to_float(DType t, const void* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return t == DType::bf16 ? bf16_to_float(h) : half_to_float(h);
}

void from_float(DType t, float f, void* p) {
  const uint16_t h = t == DType::bf16 ? float_to_bf16(f) : float_to_half(f);
  std::memcpy(p, &h, sizeof h);
}

}  // namespace fobnccl
