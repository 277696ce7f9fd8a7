// The MoE router (fob/moe.h): the same seed gives the same routing and another seed another one;
// every token's experts are distinct with weights 1..3; the counts add up; uniform popularity
// spreads tokens evenly and strong skew piles them on the seeded hot expert; the capacity drops
// exactly the choices past it in GShard's priority; bad settings name their key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "fob/moe.h"
#include "fob/types.h"

namespace fob {
namespace {

MoeRouter router(int64_t tokens, int64_t world, int64_t experts, int64_t top_k, uint64_t seed = 1) {
  return {.tokens = tokens, .world = world, .experts = experts, .top_k = top_k, .seed = seed};
}

// The settings every structural test runs: E dividing by N and not (E = 5 over 2, 3 and 4
// ranks, E = 3 over 4 so a rank has no expert), N = 1, top_k 1, 2 and all experts, skew and
// capacity on and off.
std::vector<MoeRouter> shapes() {
  std::vector<MoeRouter> all = {router(16, 1, 4, 2), router(24, 2, 5, 2), router(24, 3, 5, 1),
                                router(28, 4, 5, 2), router(12, 4, 3, 2), router(32, 4, 8, 8)};
  for (MoeRouter r : std::vector<MoeRouter>(all)) {
    r.skew = 1.5;
    all.push_back(r);
    r.capacity_factor = 1.0;
    all.push_back(r);
  }
  return all;
}

std::string name(const MoeRouter& r) {
  return "M=" + std::to_string(r.tokens) + " N=" + std::to_string(r.world) +
         " E=" + std::to_string(r.experts) + " k=" + std::to_string(r.top_k) +
         " skew=" + std::to_string(r.skew) + " cf=" + std::to_string(r.capacity_factor);
}

// Every rank's tokens over all experts: the kept choices per expert.
std::vector<int64_t> expert_totals(const MoeRouting& routing) {
  std::vector<int64_t> total(routing.experts, 0);
  for (int64_t rank = 0; rank < routing.world; ++rank) {
    for (int64_t e = 0; e < routing.experts; ++e)
      total[e] += routing.kept[rank * routing.experts + e];
  }
  return total;
}

TEST(MoeRouting, SameSeedSameRoutingOtherSeedAnother) {
  MoeRouter r = router(256, 4, 8, 2, 7);
  r.skew = 1.0;
  r.capacity_factor = 1.25;
  const MoeRouting a = route_tokens(r), b = route_tokens(r);
  EXPECT_EQ(a.expert, b.expert);
  EXPECT_EQ(a.weight, b.weight);
  EXPECT_EQ(a.kept, b.kept);
  EXPECT_EQ(a.dropped, b.dropped);
  r.seed = 8;
  const MoeRouting c = route_tokens(r);
  EXPECT_NE(a.expert, c.expert);
  EXPECT_NE(a.weight, c.weight);
}

// The routing is a function of the seed and the settings, never of the standard library: these
// choices are pinned, so a change in the hash or the draw shows here.
TEST(MoeRouting, PinnedChoices) {
  const MoeRouting routing = route_tokens(router(8, 2, 4, 2, 1));
  EXPECT_EQ(routing.expert, (std::vector<int64_t>{1, 2, 0, 2, 2, 3, 0, 1, 0, 2, 0, 1, 2, 0, 1, 0}));
  EXPECT_EQ(routing.weight, (std::vector<int>{2, 3, 2, 3, 2, 1, 1, 1, 2, 1, 2, 2, 3, 3, 3, 2}));
}

TEST(MoeRouting, DistinctExpertsAndWeightsInRange) {
  for (const MoeRouter& r : shapes()) {
    SCOPED_TRACE(name(r));
    const MoeRouting routing = route_tokens(r);
    ASSERT_EQ(routing.expert.size(), static_cast<size_t>(r.tokens * r.top_k));
    for (int64_t t = 0; t < r.tokens; ++t) {
      std::set<int64_t> seen;
      for (int64_t q = 0; q < r.top_k; ++q) {
        const int64_t e = routing.expert[routing.choice(t, q)];
        const int w = routing.weight[routing.choice(t, q)];
        EXPECT_GE(w, 1);
        EXPECT_LE(w, kMoeMaxWeight);
        if (e < 0) continue;
        EXPECT_LT(e, r.experts);
        EXPECT_TRUE(seen.insert(e).second) << "token " << t << " picks expert " << e << " twice";
      }
    }
  }
}

TEST(MoeRouting, EveryWeightOccurs) {
  const MoeRouting routing = route_tokens(router(64, 2, 8, 2));
  for (int w = 1; w <= kMoeMaxWeight; ++w) {
    EXPECT_NE(std::count(routing.weight.begin(), routing.weight.end(), w), 0) << w;
  }
}

// With top_k = E every token is routed to every expert, in a drawn order.
TEST(MoeRouting, TopKOfAllExpertsIsAPermutation) {
  MoeRouter r = router(40, 4, 5, 5);
  r.skew = 3;
  const MoeRouting routing = route_tokens(r);
  std::set<int64_t> first_choices;
  for (int64_t t = 0; t < r.tokens; ++t) {
    std::vector<int64_t> picked(routing.expert.begin() + routing.choice(t, 0),
                                routing.expert.begin() + routing.choice(t + 1, 0));
    first_choices.insert(picked[0]);
    std::sort(picked.begin(), picked.end());
    EXPECT_EQ(picked, (std::vector<int64_t>{0, 1, 2, 3, 4})) << "token " << t;
  }
  EXPECT_GT(first_choices.size(), 1u);
}

TEST(MoeRouting, CountsAddUp) {
  for (const MoeRouter& r : shapes()) {
    SCOPED_TRACE(name(r));
    const MoeRouting routing = route_tokens(r);
    const int64_t per_rank = r.tokens / r.world;
    for (int64_t rank = 0; rank < r.world; ++rank) {
      std::vector<int64_t> kept(r.experts, 0);
      int64_t dropped = 0;
      for (int64_t t = rank * per_rank; t < (rank + 1) * per_rank; ++t) {
        for (int64_t q = 0; q < r.top_k; ++q) {
          const int64_t e = routing.expert[routing.choice(t, q)];
          if (e < 0) {
            ++dropped;
          } else {
            ++kept[e];
          }
        }
      }
      EXPECT_EQ(dropped, routing.dropped[rank]);
      EXPECT_TRUE(std::equal(kept.begin(), kept.end(), routing.kept.begin() + rank * r.experts));
      if (r.capacity_factor == 0) {
        EXPECT_EQ(dropped, 0);
      }
    }
  }
}

// 4096 tokens, 2 choices, 8 experts: the mean is 1024 and its binomial spread about 30, so the
// bound [mean / 2, 2 * mean] holds for any seed.
TEST(MoeRouting, UniformSpreadsEvenly) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const MoeRouting routing = route_tokens(router(4096, 4, 8, 2, seed));
    for (int64_t total : expert_totals(routing)) {
      EXPECT_GE(total, 512) << "seed " << seed;
      EXPECT_LE(total, 2048) << "seed " << seed;
    }
  }
}

// The draws follow the popularity: a first choice is e with chance p(e), a second choice with
// chance sum over f != e of p(f) p(e) / (1 - p(f)) (sampling without replacement). 60000
// tokens put every count within 6 binomial deviations of that for any seed. At skew 4 the hot
// expert, usually the first choice, holds 92% of the weight, so the second choices check the
// draw's skipping of taken experts.
TEST(MoeRouting, DrawsFollowThePopularity) {
  constexpr int64_t kTokens = 60000;
  for (double skew : {0.0, 1.0, 4.0}) {
    MoeRouter r = router(kTokens, 1, 4, 2, 5);
    r.skew = skew;
    const MoeRouting routing = route_tokens(r);
    const std::vector<double>& p = routing.popularity;
    EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
    EXPECT_EQ(std::max_element(p.begin(), p.end()) - p.begin(), routing.hot_expert);
    for (int64_t e = 0; e < r.experts; ++e) {
      double second = 0;
      for (int64_t f = 0; f < r.experts; ++f) {
        if (f != e) second += p[f] * p[e] / (1 - p[f]);
      }
      for (int64_t q = 0; q < 2; ++q) {
        const double chance = q == 0 ? p[e] : second;
        int64_t count = 0;
        for (int64_t t = 0; t < kTokens; ++t) count += routing.expert[routing.choice(t, q)] == e;
        const double spread = std::sqrt(kTokens * chance * (1 - chance));
        EXPECT_NEAR(count, kTokens * chance, 6 * spread + 1)
            << "skew " << skew << " expert " << e << " choice " << q;
      }
    }
  }
}

// Strong skew piles tokens on the hot expert, which the seed picks: it is not always expert 0,
// and over seeds it lands on both ranks.
TEST(MoeRouting, SkewFavoursTheSeededHotExpert) {
  std::set<int64_t> hot, hot_ranks;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    MoeRouter r = router(128, 2, 8, 2, seed);
    r.skew = 2;
    const MoeRouting routing = route_tokens(r);
    const std::vector<int64_t> total = expert_totals(routing);
    const auto largest = std::max_element(total.begin(), total.end()) - total.begin();
    EXPECT_EQ(largest, routing.hot_expert) << "seed " << seed;
    hot.insert(routing.hot_expert);
    hot_ranks.insert(routing.hot_expert % r.world);
  }
  EXPECT_GT(hot.size(), 1u);
  EXPECT_EQ(hot_ranks.size(), 2u);
}

// Seed 1 at skew 2 with one choice per token leaves experts 4 and 7 without a token; uniform
// popularity with the same seed feeds every expert.
TEST(MoeRouting, StrongSkewLeavesAnExpertEmpty) {
  MoeRouter r = router(64, 2, 8, 1, 1);
  r.skew = 2;
  const MoeRouting skewed = route_tokens(r);
  EXPECT_EQ(skewed.hot_expert, 3);
  EXPECT_EQ(expert_totals(skewed), (std::vector<int64_t>{11, 1, 1, 47, 0, 2, 2, 0}));
  r.skew = 0;
  for (int64_t total : expert_totals(route_tokens(r))) EXPECT_GT(total, 0);
}

// Seed 1, 8 tokens on 2 ranks, 4 experts, top 2 (choices pinned above), capacity factor 0.5:
// cap = ceil(0.5 * 4 * 2 / 4) = 1. Rank 0 (tokens 0-3) picks 1 2 | 0 2 | 2 3 | 0 1: its first
// choices in token order keep t0->1, t1->0, t2->2 and drop t3->0; then its second choices drop
// t0->2 and t1->2 (2 is full), keep t2->3 and drop t3->1. Rank 1 (tokens 4-7) picks
// 0 2 | 0 1 | 2 0 | 1 0: first choices keep t4->0, drop t5->0, keep t6->2 and t7->1; every
// second choice finds its expert full. Tokens 3 and 5 lose both choices and output zero.
// Token order alone would have kept t0->2 and dropped t2->2: under GShard's priority t2's first
// choice goes before t0's second.
TEST(MoeRouting, CapacityDropsInGShardPriority) {
  MoeRouter r = router(8, 2, 4, 2, 1);
  r.capacity_factor = 0.5;
  const MoeRouting routing = route_tokens(r);
  EXPECT_EQ(routing.capacity, 1);
  EXPECT_EQ(routing.expert,
            (std::vector<int64_t>{1, -1, 0, -1, 2, 3, -1, -1, 0, -1, -1, -1, 2, -1, 1, -1}));
  EXPECT_EQ(routing.dropped, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(routing.kept, (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 0}));
  // A dropped choice keeps its drawn weight: the others are not renormalised.
  EXPECT_EQ(routing.weight, route_tokens(router(8, 2, 4, 2, 1)).weight);
}

// For any settings: each (rank, expert) keeps min(cap, demand) choices, and every dropped choice
// comes after all kept choices to its expert from its rank in the priority order (choice index,
// then token).
TEST(MoeRouting, CapacityKeepsTheEarliestChoices) {
  for (MoeRouter r : shapes()) {
    r.capacity_factor = 0.75;
    SCOPED_TRACE(name(r));
    const MoeRouting capped = route_tokens(r);
    r.capacity_factor = 0;
    const MoeRouting uncapped = route_tokens(r);
    const int64_t per_rank = r.tokens / r.world;
    for (int64_t rank = 0; rank < r.world; ++rank) {
      std::vector<bool> saw_drop(r.experts, false);
      for (int64_t q = 0; q < r.top_k; ++q) {
        for (int64_t t = rank * per_rank; t < (rank + 1) * per_rank; ++t) {
          const int64_t wanted = uncapped.expert[uncapped.choice(t, q)];
          const int64_t got = capped.expert[capped.choice(t, q)];
          if (got < 0) {
            saw_drop[wanted] = true;
            continue;
          }
          EXPECT_EQ(got, wanted);
          EXPECT_FALSE(saw_drop[got]) << "token " << t << " choice " << q << " kept after a drop";
        }
      }
      for (int64_t e = 0; e < r.experts; ++e) {
        const int64_t demand = uncapped.kept[rank * r.experts + e];
        EXPECT_EQ(capped.kept[rank * r.experts + e], std::min(capped.capacity, demand));
      }
    }
  }
}

// cap = ceil(capacity_factor * T * top_k / E), a whole quotient kept whole.
TEST(MoeRouting, CapacityIsTheCeilingOfTheScaledShare) {
  struct Case {
    int64_t tokens, world, experts, top_k;
    double factor;
    int64_t capacity;
  };
  for (const Case& c :
       {Case{20, 2, 5, 2, 1.0, 4}, Case{20, 2, 8, 2, 1.0, 3}, Case{12, 2, 3, 2, 1.25, 5},
        Case{8, 2, 4, 2, 1.5, 3}, Case{8, 2, 4, 2, 0.1, 1}, Case{8, 2, 4, 2, 0, 0}}) {
    MoeRouter r = router(c.tokens, c.world, c.experts, c.top_k);
    r.capacity_factor = c.factor;
    EXPECT_EQ(route_tokens(r).capacity, c.capacity) << c.factor << " T*k/E " << c.tokens;
  }
}

TEST(MoeRouting, LocalExpertsAndChunks) {
  EXPECT_EQ(moe_local_experts(5, 2, 0), 3);
  EXPECT_EQ(moe_local_experts(5, 2, 1), 2);
  EXPECT_EQ(moe_local_experts(5, 4, 0), 2);
  EXPECT_EQ(moe_local_experts(5, 4, 3), 1);
  EXPECT_EQ(moe_local_experts(3, 4, 3), 0);
  EXPECT_EQ(moe_chunk_begin(7, 3, 0), 0);
  EXPECT_EQ(moe_chunk_begin(7, 3, 1), 2);
  EXPECT_EQ(moe_chunk_begin(7, 3, 2), 4);
  EXPECT_EQ(moe_chunk_begin(7, 3, 3), 7);
}

// Each bad setting throws InputError naming its key and value.
TEST(MoeRouting, BadSettingsNameTheKey) {
  struct Bad {
    MoeRouter router;
    std::string says;
  };
  auto with = [](auto change) {
    MoeRouter r = router(16, 2, 8, 2);
    change(r);
    return r;
  };
  const std::vector<Bad> bad = {
      {with([](MoeRouter& r) { r.experts = 0; }), "experts: 0"},
      {with([](MoeRouter& r) { r.experts = (1 << 20) + 1; }), "experts: 1048577"},
      {with([](MoeRouter& r) { r.top_k = 9; }), "top_k: 9"},
      {with([](MoeRouter& r) { r.top_k = 0; }), "top_k: 0"},
      {with([](MoeRouter& r) { r.skew = -1; }), "moe_skew: -1"},
      {with([](MoeRouter& r) { r.capacity_factor = -0.5; }), "capacity_factor: -0.5"},
      // The keys' ranges hold for a router built by hand too.
      {with([](MoeRouter& r) { r.skew = 4.5; }), "moe_skew: 4.5"},
      {with([](MoeRouter& r) { r.skew = std::nan(""); }), "moe_skew: nan"},
      {with([](MoeRouter& r) { r.capacity_factor = 0.05; }), "capacity_factor: 0.05"},
      {with([](MoeRouter& r) { r.tokens = 15; }), "tokens (batch * seq): 15"},
      {with([](MoeRouter& r) { r.tokens = 0; }), "tokens (batch * seq): 0"},
  };
  for (const Bad& b : bad) {
    try {
      route_tokens(b.router);
      ADD_FAILURE() << "accepted: " << b.says;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fob
