// The engine across real processes: point-to-point matching, groups, deadlocks, abort, and the
// rendezvous' checks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "internal.h"
#include "ranks.h"

namespace fobnccl::test {
namespace {

Call send_to(int peer, const void* buf, size_t count, DType t = DType::f32) {
  return make_call(Kind::send, buf, nullptr, count, t, peer);
}

Call recv_from(int peer, void* buf, size_t count, DType t = DType::f32) {
  return make_call(Kind::recv, nullptr, buf, count, t, peer);
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Both ranks send first and then receive, each call outside a group: on a GPU each send waits
// for a receive that is queued behind the other rank's send.
TEST(NcclEngine, SendRecvOrderThatDeadlocksOutsideAGroupIsReportedNamingBothRanks) {
  const Outcome o = run_ranks(2, [](Comm& c) {
    std::vector<float> out(256, 1.0f), in(256);
    const int peer = 1 - c.rank();
    c.run({send_to(peer, out.data(), out.size())});
    c.run({recv_from(peer, in.data(), in.size())});
    return 0;
  });
  EXPECT_LT(o.seconds, 30) << o.err;
  int reported = 0;
  for (int code : o.codes) {
    EXPECT_NE(code, 0) << o.err;
    reported += code == kViolationExit;
  }
  EXPECT_GE(reported, 1) << o.err;
  EXPECT_TRUE(has(o.err, "[cuda model] deadlock: ranks wait for each other")) << o.err;
  EXPECT_TRUE(has(o.err,
                  "rank 0's ncclSend #1 to rank 1 (256 x float32), waiting for rank 1 "
                  "to post its ncclRecv #1 from rank 0"))
      << o.err;
  EXPECT_TRUE(has(o.err,
                  "rank 1's ncclSend #1 to rank 0 (256 x float32), waiting for rank 0 "
                  "to post its ncclRecv #1 from rank 1"))
      << o.err;
}

// The same calls in one group progress together; the data is larger than a channel's ring.
TEST(NcclEngine, TheSameOrderInsideAGroupCompletes) {
  const Outcome o = run_ranks(2, [](Comm& c) {
    const size_t n = (ring_bytes_for(2) * 3) / sizeof(float) + 123;
    std::vector<float> out(n), in(n, -1.0f);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(c.rank() * 1000000 + i);
    const int peer = 1 - c.rank();
    if (c.run({send_to(peer, out.data(), n), recv_from(peer, in.data(), n)}) != kSuccess) return 1;
    for (size_t i = 0; i < n; ++i) {
      if (in[i] != static_cast<float>(peer * 1000000 + i)) return 2;
    }
    return 0;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{0, 0})) << o.err;
}

TEST(NcclEngine, SendsAndReceivesToOnePeerMatchInCallOrder) {
  const Outcome o = run_ranks(3, [](Comm& c) {
    // Every rank sends two messages to every rank (itself included) and receives them back.
    const int n = c.nranks();
    std::vector<std::vector<float>> out(2 * n, std::vector<float>(64)), in = out;
    std::vector<Call> calls;
    for (int p = 0; p < n; ++p) {
      for (int m = 0; m < 2; ++m) {
        for (float& v : out[2 * p + m]) v = static_cast<float>(100 * c.rank() + 10 * p + m);
        calls.push_back(send_to(p, out[2 * p + m].data(), 64));
        calls.push_back(recv_from(p, in[2 * p + m].data(), 64));
      }
    }
    if (c.run(calls) != kSuccess) return 1;
    for (int p = 0; p < n; ++p) {
      for (int m = 0; m < 2; ++m) {
        if (in[2 * p + m][5] != static_cast<float>(100 * p + 10 * c.rank() + m)) return 2;
      }
    }
    return 0;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{0, 0, 0})) << o.err;
}

// Loopback: a 1-rank communicator sends to itself in a group, as nccl_transport.cpp does.
TEST(NcclEngine, OneRankSendsToItselfInAGroup) {
  const Outcome o = run_ranks(1, [](Comm& c) {
    std::vector<double> a(1000, 3.5), b(1000, 0);
    if (c.run({send_to(0, a.data(), 1000, DType::f64), recv_from(0, b.data(), 1000, DType::f64)}) !=
        kSuccess) {
      return 1;
    }
    return b == a ? 0 : 2;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{0})) << o.err;
}

TEST(NcclEngine, ACountMismatchNamesBothCalls) {
  const Outcome o = run_ranks(2, [](Comm& c) {
    std::vector<float> buf(16);
    if (c.rank() == 0) c.run({send_to(1, buf.data(), 10)});
    if (c.rank() == 1) c.run({recv_from(0, buf.data(), 12)});
    return 0;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{kViolationExit, kViolationExit})) << o.err;
  EXPECT_TRUE(has(o.err,
                  "[cuda model] nccl: rank 0's ncclSend #1 to rank 1 (10 x float32) "
                  "meets rank 1's ncclRecv #1 from rank 0 (12 x float32)"))
      << o.err;
}

TEST(NcclEngine, AbortUnblocksAWaitingCallAndLaterCallsDoNothing) {
  const Outcome o = run_ranks(
      2,
      [](Comm& c) {
        if (c.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(1));
          return 0;
        }
        std::vector<float> buf(8);
        std::thread t([&] { c.run({send_to(1, buf.data(), 8)}); });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        c.abort();
        t.join();
        c.run({send_to(1, buf.data(), 8)});
        return c.aborted() ? 0 : 1;
      },
      30);
  EXPECT_EQ(o.codes, (std::vector<int>{0, 0})) << o.err;
}

TEST(NcclEngine, APeerThatExitedIsARemoteErrorNotAHang) {
  const Outcome o = run_ranks(
      2,
      [](Comm& c) {
        if (c.rank() == 1) return 0;
        std::vector<float> buf(8);
        const Result r = c.run({send_to(1, buf.data(), 8)});
        return r == kRemoteError && c.async_error() == kRemoteError ? 0 : 1;
      },
      1);
  EXPECT_EQ(o.codes, (std::vector<int>{0, 0})) << o.err;
  EXPECT_TRUE(has(o.err, "rank 1 (process")) << o.err;
}

TEST(NcclEngine, MismatchedNranksNameBothRanks) {
  Id id;
  std::string why;
  ASSERT_EQ(create_id(&id, &why), kSuccess) << why;
  Result r = kSuccess;
  Settings s;
  s.join_s = 1;
  // The first rank settles nranks = 2 and times out waiting; the second brings nranks = 3.
  std::thread first([&] { Comm::join(id, 2, 0, s, &r, &why); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Result r2 = kSuccess;
  std::string why2;
  EXPECT_EQ(Comm::join(id, 3, 1, s, &r2, &why2), nullptr);
  first.join();
  EXPECT_EQ(r2, kInvalidArgument);
  EXPECT_TRUE(has(why2, "rank 1 joins with nranks 3, but rank 0 joined the same id with nranks 2"))
      << why2;
}

TEST(NcclEngine, ADuplicateRankNamesBothProcesses) {
  Id id;
  std::string why;
  ASSERT_EQ(create_id(&id, &why), kSuccess) << why;
  Settings s;
  s.join_s = 1;
  Result r = kSuccess;
  std::thread first([&] { Comm::join(id, 2, 1, s, &r, &why); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Result r2 = kSuccess;
  std::string why2;
  EXPECT_EQ(Comm::join(id, 2, 1, s, &r2, &why2), nullptr);
  first.join();
  EXPECT_EQ(r2, kInvalidArgument);
  EXPECT_TRUE(has(why2, "rank 1 joined twice: by process")) << why2;
}

TEST(NcclEngine, ARendezvousReplacedByASymlinkIsRefused) {
  Id id;
  std::string why;
  ASSERT_EQ(create_id(&id, &why), kSuccess) << why;
  const std::string path = id.bytes + sizeof kIdMagic;
  ASSERT_EQ(unlink(path.c_str()), 0);
  char target[] = "/tmp/fobnccl-target-XXXXXX";
  const int fd = mkstemp(target);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(symlink(target, path.c_str()), 0);
  Result r = kSuccess;
  Settings s;
  EXPECT_EQ(Comm::join(id, 1, 0, s, &r, &why), nullptr);
  EXPECT_TRUE(has(why, "is a symlink: refused")) << why;
  unlink(path.c_str());
  unlink(target);
}

TEST(NcclEngine, TheRendezvousIsGoneOnceEveryRankJoined) {
  Id id;
  std::string why;
  ASSERT_EQ(create_id(&id, &why), kSuccess) << why;
  const std::string path = id.bytes + sizeof kIdMagic;
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result r = kSuccess;
  Settings s;
  auto comm = Comm::join(id, 1, 0, s, &r, &why);
  ASSERT_NE(comm, nullptr) << why;
  EXPECT_NE(lstat(path.c_str(), &st), 0);
}

}  // namespace
}  // namespace fobnccl::test
