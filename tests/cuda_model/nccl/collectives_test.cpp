// Collectives across real processes: results for 1-3 ranks and every floating type, in place
// and not, and a mismatch naming both calls.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "internal.h"
#include "ranks.h"

namespace fobnccl::test {
namespace {

Call all_gather(const void* send, void* recv, size_t count, DType t) {
  return make_call(Kind::all_gather, send, recv, count, t);
}

Call reduce_scatter(const void* send, void* recv, size_t count, DType t) {
  return make_call(Kind::reduce_scatter, send, recv, count, t);
}

// Element i of rank r's input: small integers and halves, exact in every type.
double input(int rank, size_t i) {
  return 0.5 * static_cast<double>((rank + 1) * (i % 37));
}

void store(DType t, std::vector<unsigned char>& buf, size_t i, double v) {
  if (t == DType::f32) reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v);
  if (t == DType::f64) reinterpret_cast<double*>(buf.data())[i] = v;
  if (t == DType::bf16 || t == DType::f16) from_float(t, static_cast<float>(v), &buf[2 * i]);
}

double load(DType t, const std::vector<unsigned char>& buf, size_t i) {
  if (t == DType::f32) return reinterpret_cast<const float*>(buf.data())[i];
  if (t == DType::f64) return reinterpret_cast<const double*>(buf.data())[i];
  return to_float(t, &buf[2 * i]);
}

int check_all_gather(Comm& c, DType t, size_t count, bool in_place) {
  const int n = c.nranks(), me = c.rank();
  const size_t es = elem_size(t);
  std::vector<unsigned char> send(count * es), recv(n * count * es);
  for (size_t i = 0; i < count; ++i) store(t, send, i, input(me, i));
  if (in_place) std::copy(send.begin(), send.end(), recv.begin() + me * count * es);
  const void* src = in_place ? recv.data() + me * count * es : send.data();
  if (c.run({all_gather(src, recv.data(), count, t)}) != kSuccess) return 1;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      if (load(t, recv, r * count + i) != input(r, i)) return 2;
    }
  }
  return 0;
}

int check_reduce_scatter(Comm& c, DType t, size_t count) {
  const int n = c.nranks(), me = c.rank();
  const size_t es = elem_size(t);
  std::vector<unsigned char> send(n * count * es), recv(count * es);
  for (size_t i = 0; i < n * count; ++i) store(t, send, i, input(me, i));
  if (c.run({reduce_scatter(send.data(), recv.data(), count, t)}) != kSuccess) return 1;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += input(r, me * count + i);
    if (load(t, recv, i) != want) return 2;
  }
  return 0;
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllGatherAndReduceScatterAreCorrectForEveryType) {
  const Outcome o = run_ranks(GetParam(), [](Comm& c) {
    for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      for (size_t count : {size_t{1}, size_t{1000}, size_t{300000}}) {
        if (int e = check_all_gather(c, t, count, false)) return 10 + e;
        if (int e = check_all_gather(c, t, count, true)) return 20 + e;
        if (int e = check_reduce_scatter(c, t, count)) return 30 + e;
      }
    }
    return 0;
  });
  EXPECT_EQ(o.codes, std::vector<int>(GetParam(), 0)) << o.err;
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3));

TEST(NcclCollectives, ACountMismatchNamesBothCalls) {
  const Outcome o = run_ranks(2, [](Comm& c) {
    std::vector<float> send(8), recv(16);
    c.run({all_gather(send.data(), recv.data(), c.rank() == 0 ? 4 : 5, DType::f32)});
    return 0;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{kViolationExit, kViolationExit})) << o.err;
  EXPECT_NE(o.err.find("rank 0's ncclAllGather #1 (sendcount 4 x float32) meets rank 1's "
                       "ncclAllGather #1 (sendcount 5 x float32)"),
            std::string::npos)
      << o.err;
}

TEST(NcclCollectives, ADifferentCollectiveInTheSameSlotIsNamed) {
  const Outcome o = run_ranks(2, [](Comm& c) {
    std::vector<float> send(8), recv(8);
    if (c.rank() == 0) c.run({all_gather(send.data(), recv.data(), 4, DType::f32)});
    if (c.rank() == 1) c.run({reduce_scatter(send.data(), recv.data(), 4, DType::f32)});
    return 0;
  });
  EXPECT_NE(o.err.find("meets rank 1's ncclReduceScatter #1 (recvcount 4 x float32, ncclSum)"),
            std::string::npos)
      << o.err;
}

TEST(NcclReduce, HalfAndBfloatRoundToNearestEven) {
  unsigned char b[2];
  from_float(DType::bf16, 1.0f + 1.0f / 256, b);  // halfway between two bf16 values
  EXPECT_EQ(to_float(DType::bf16, b), 1.0f);
  from_float(DType::f16, 1.0f + 1.0f / 2048, b);
  EXPECT_EQ(to_float(DType::f16, b), 1.0f);
  from_float(DType::f16, 65504.0f, b);
  EXPECT_EQ(to_float(DType::f16, b), 65504.0f);
  from_float(DType::f16, 1e-7f, b);
  EXPECT_NEAR(to_float(DType::f16, b), 1.19209e-7f, 1e-10);
}

}  // namespace
}  // namespace fobnccl::test
