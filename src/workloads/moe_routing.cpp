// The MoE router and its row layouts (include/fob/moe.h; docs/method.md#the-moe-router).
#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "fob/input_hash.h"
#include "fob/moe.h"
#include "fob/moe_keys.h"
#include "fob/types.h"

namespace fob {
namespace {

// Independent hash streams of the one seed, so that the popularity order, the experts drawn and
// the weights drawn do not correlate.
constexpr uint64_t kOrderStream = 0x6f72646572ULL;
constexpr uint64_t kChoiceStream = 0x63686f696365ULL;
constexpr uint64_t kWeightStream = 0x776569676874ULL;

// The hot expert's integer popularity. Integers make the draw exact integer arithmetic, the
// same under every compiler and library; only the per-expert pow() runs in floating point.
constexpr double kHotWeight = 4294967296.0;  // 2^32
// The keys' bound on the experts (moe_keys.h) keeps E popularities of at most 2^32 summing
// below 2^64 with room to spare.
static_assert(kMaxExperts <= (int64_t{1} << 30), "expert popularities could overflow their sum");

uint64_t stream_hash(uint64_t seed, uint64_t stream) {
  return input_mix(input_mix(seed) ^ stream);
}

void check_router(const MoeRouter& r) {
  auto fail = [](const std::string& text) { throw InputError(text); };
  if (r.world < 1) {
    fail("world size " + std::to_string(r.world) + " cannot route; choose 1 or more");
  }
  if (r.experts < 1 || r.experts > kMaxExperts) {
    fail("experts: " + std::to_string(r.experts) + " is not an expert count the router takes; " +
         "choose 1 to " + std::to_string(kMaxExperts));
  }
  if (r.top_k < 1 || r.top_k > r.experts) {
    fail("top_k: " + std::to_string(r.top_k) + " is not between 1 and the experts (" +
         std::to_string(r.experts) + "); choose 1 to " + std::to_string(r.experts));
  }
  // The keys' ranges (moe_keys.h), so that a router built by hand takes no skew or capacity
  // a config would refuse.
  MoeShape ranges;
  ranges.skew = r.skew;
  ranges.capacity_factor = r.capacity_factor;
  if (const std::string problem = moe_shape_problem(ranges); !problem.empty()) fail(problem);
  if (r.tokens < 1 || r.tokens % r.world != 0) {
    fail("tokens (batch * seq): " + std::to_string(r.tokens) + " do not divide into " +
         std::to_string(r.world) + " equal shares; choose a positive multiple of " +
         std::to_string(r.world));
  }
}

// Weighted draws over the experts, with popularity p(e) proportional to 1 / (1 + pi(e))^skew
// for a seeded permutation pi of the experts.
class ExpertSampler {
 public:
  ExpertSampler(int64_t experts, double skew, uint64_t seed) : weight_(experts), end_(experts) {
    std::vector<int64_t> order(experts);
    std::iota(order.begin(), order.end(), 0);
    const uint64_t order_hash = stream_hash(seed, kOrderStream);
    for (int64_t i = experts - 1; i > 0; --i) {  // Fisher-Yates, from the hash alone
      const uint64_t pick = input_mix(order_hash ^ static_cast<uint64_t>(i));
      std::swap(order[i], order[pick % static_cast<uint64_t>(i + 1)]);
    }
    hot_ = order[0];
    for (int64_t place = 0; place < experts; ++place) {
      const double share = std::pow(1.0 + static_cast<double>(place), -skew);
      weight_[order[place]] = std::max<uint64_t>(1, std::llround(kHotWeight * share));
    }
    std::partial_sum(weight_.begin(), weight_.end(), end_.begin());
  }

  int64_t hot() const { return hot_; }
  uint64_t weight(int64_t expert) const { return weight_[expert]; }
  std::vector<double> shares() const {
    std::vector<double> share(weight_.size());
    for (size_t e = 0; e < weight_.size(); ++e) {
      share[e] = static_cast<double>(weight_[e]) / static_cast<double>(end_.back());
    }
    return share;
  }

  // A draw from the experts not in `taken` (ascending), whose weights sum to taken_weight: the
  // point h mod the remaining weight, carried past each taken expert's interval that starts at
  // or before it, falls in the interval of the expert drawn. The modulo's bias is below
  // total / 2^64, at most E * 2^-32.
  int64_t pick(uint64_t h, const std::vector<int64_t>& taken, uint64_t taken_weight) const {
    uint64_t point = h % (end_.back() - taken_weight);
    for (int64_t e : taken) {
      if (end_[e] - weight_[e] > point) break;
      point += weight_[e];
    }
    return std::upper_bound(end_.begin(), end_.end(), point) - end_.begin();
  }

 private:
  std::vector<uint64_t> weight_, end_;  // end_: inclusive prefix sums of weight_
  int64_t hot_ = 0;
};

// Token `token`'s top_k distinct experts, drawn in order without replacement, into out;
// `taken` is scratch space.
void choose_experts(const ExpertSampler& sampler, uint64_t choice_hash, int64_t token,
                    int64_t top_k, int64_t* out, std::vector<int64_t>& taken) {
  const uint64_t token_hash = input_mix(choice_hash ^ static_cast<uint64_t>(token));
  taken.clear();
  uint64_t taken_weight = 0;
  for (int64_t q = 0; q < top_k; ++q) {
    const int64_t e =
        sampler.pick(input_mix(token_hash ^ static_cast<uint64_t>(q)), taken, taken_weight);
    out[q] = e;
    taken.insert(std::upper_bound(taken.begin(), taken.end(), e), e);
    taken_weight += sampler.weight(e);
  }
}

// ceil(capacity_factor * T * top_k / E): the factor times each expert's even share of a rank's
// choices; 0 (no cap) for a factor of 0.
int64_t capacity_of(const MoeRouter& r) {
  if (r.capacity_factor == 0) return 0;
  // The factor times the whole count first: for a factor with few mantissa bits (1, 1.25, 2)
  // that product is exact, so a quotient that is a whole number is not rounded up past it.
  const auto choices = static_cast<double>(r.tokens / r.world * r.top_k);
  return static_cast<int64_t>(
      std::ceil(r.capacity_factor * choices / static_cast<double>(r.experts)));
}

// GShard's order: a rank's first choices in token order, then its second choices, ...; a choice
// past its expert's capacity from this rank is dropped.
void apply_capacity(MoeRouting& routing) {
  const int64_t per_rank = routing.tokens_per_rank();
  for (int64_t rank = 0; rank < routing.world; ++rank) {
    int64_t* kept = routing.kept.data() + rank * routing.experts;
    for (int64_t q = 0; q < routing.top_k; ++q) {
      for (int64_t t = rank * per_rank; t < (rank + 1) * per_rank; ++t) {
        int64_t& e = routing.expert[routing.choice(t, q)];
        if (routing.capacity > 0 && kept[e] >= routing.capacity) {
          e = -1;
          ++routing.dropped[rank];
        } else {
          ++kept[e];
        }
      }
    }
  }
}

// MoeRouting::by_expert: a counting sort of the kept choices by expert, stable in choice order
// (token order, as a token's choices go to distinct experts).
void index_by_expert(MoeRouting& routing) {
  std::vector<int64_t> count(static_cast<size_t>(routing.experts), 0);
  for (int64_t e : routing.expert) {
    if (e >= 0) ++count[static_cast<size_t>(e)];
  }
  routing.by_expert_first.assign(count.size() + 1, 0);
  std::partial_sum(count.begin(), count.end(), routing.by_expert_first.begin() + 1);
  routing.by_expert.resize(static_cast<size_t>(routing.by_expert_first.back()));
  std::vector<int64_t> next(routing.by_expert_first.begin(), routing.by_expert_first.end() - 1);
  for (size_t i = 0; i < routing.expert.size(); ++i) {
    const int64_t e = routing.expert[i];
    if (e >= 0)
      routing.by_expert[static_cast<size_t>(next[static_cast<size_t>(e)]++)] =
          static_cast<int64_t>(i);
  }
}

}  // namespace

MoeRouting route_tokens(const MoeRouter& router) {
  check_router(router);
  const int64_t choices = router.tokens * router.top_k;
  const ExpertSampler sampler(router.experts, router.skew, router.seed);
  MoeRouting routing{.tokens = router.tokens,
                     .world = router.world,
                     .experts = router.experts,
                     .top_k = router.top_k,
                     .capacity = capacity_of(router),
                     .expert = std::vector<int64_t>(choices),
                     .weight = std::vector<int>(choices),
                     .dropped = std::vector<int64_t>(router.world, 0),
                     .kept = std::vector<int64_t>(router.world * router.experts, 0),
                     .popularity = sampler.shares(),
                     .hot_expert = sampler.hot(),
                     .by_expert = {},
                     .by_expert_first = {}};
  const uint64_t choice_hash = stream_hash(router.seed, kChoiceStream);
  const uint64_t weight_hash = stream_hash(router.seed, kWeightStream);
  std::vector<int64_t> taken;
  taken.reserve(router.top_k);
  for (int64_t t = 0; t < router.tokens; ++t) {
    choose_experts(sampler, choice_hash, t, router.top_k, &routing.expert[routing.choice(t, 0)],
                   taken);
  }
  static_assert(kMoeMaxWeight == 3, "weights are 1 + a hash mod 3");
  for (int64_t i = 0; i < choices; ++i) {
    routing.weight[i] =
        1 + static_cast<int>(input_mod3(input_mix(weight_hash ^ static_cast<uint64_t>(i))));
  }
  apply_capacity(routing);
  index_by_expert(routing);
  return routing;
}

std::shared_ptr<const MoeRouting> shared_routing(const MoeRouter& router) {
  // A sim's cases run on several threads, mostly a few routers at a time (a shape at one world
  // under every strategy); a handful kept bounds the memory a sweep's many shapes hold.
  constexpr size_t kKept = 4;
  static std::mutex mutex;
  static std::deque<std::pair<MoeRouter, std::shared_ptr<const MoeRouting>>> kept;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [r, routing] : kept) {
      if (r == router) return routing;
    }
  }
  // Routed outside the lock, so that other routers are not held up; two threads asking for the
  // same new router at once both route it, and the same result is kept once.
  auto routing = std::make_shared<const MoeRouting>(route_tokens(router));
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [r, theirs] : kept) {
    if (r == router) return theirs;
  }
  kept.emplace_front(router, routing);
  if (kept.size() > kKept) kept.pop_back();
  return routing;
}

int64_t moe_local_experts(int64_t experts, int64_t world, int64_t rank) {
  return rank >= experts ? 0 : (experts - rank + world - 1) / world;
}

int64_t moe_chunk_begin(int64_t tokens_per_rank, int64_t chunks, int64_t chunk) {
  return chunk * tokens_per_rank / chunks;
}

namespace {

void check_layout(const MoeRouting& routing, int64_t rank, int64_t chunks) {
  if (routing.by_expert_first.size() != static_cast<size_t>(routing.experts) + 1) {
    throw std::logic_error(
        "moe_layout: a routing without its index by expert (route_tokens "
        "builds it)");
  }
  if (rank < 0 || rank >= routing.world) {
    throw std::logic_error("moe_layout: rank " + std::to_string(rank) + " outside the world of " +
                           std::to_string(routing.world));
  }
  if (chunks < 1 || chunks > routing.tokens_per_rank()) {
    throw std::logic_error("moe_layout: " + std::to_string(chunks) + " chunks of a rank's " +
                           std::to_string(routing.tokens_per_rank()) +
                           " tokens; a plan must choose 1 to the tokens per rank");
  }
}

// Exclusive prefix sums, one entry longer than the counts.
std::vector<int64_t> firsts(const std::vector<int64_t>& counts) {
  std::vector<int64_t> first(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), first.begin() + 1);
  return first;
}

// Every local token's chunk.
std::vector<int64_t> token_chunks(int64_t tokens_per_rank, int64_t chunks) {
  std::vector<int64_t> chunk_of(tokens_per_rank);
  for (int64_t c = 0; c < chunks; ++c) {
    std::fill(chunk_of.begin() + moe_chunk_begin(tokens_per_rank, chunks, c),
              chunk_of.begin() + moe_chunk_begin(tokens_per_rank, chunks, c + 1), c);
  }
  return chunk_of;
}

// The send side: the rank's kept choices by (c, j, l, token), and the combine's table.
void lay_out_send(const MoeRouting& routing, const std::vector<int64_t>& chunk_of,
                  MoeLayout& layout) {
  const int64_t per_rank = layout.tokens_per_rank, world = layout.world;
  const int64_t first_token = layout.rank * per_rank;
  auto block = [&](int64_t t, int64_t e) {
    return chunk_of[t] * layout.experts + layout.slot_first[e % world] + e / world;
  };
  layout.send_count.assign(layout.chunks * layout.experts, 0);
  for (int64_t t = 0; t < per_rank; ++t) {
    for (int64_t q = 0; q < layout.top_k; ++q) {
      const int64_t e = routing.expert[routing.choice(first_token + t, q)];
      if (e >= 0) ++layout.send_count[block(t, e)];
    }
  }
  layout.send_first = firsts(layout.send_count);
  std::vector<int64_t> next(layout.send_first.begin(), layout.send_first.end() - 1);
  layout.send_token.resize(layout.send_first.back());
  layout.send_choice.resize(layout.send_first.back());
  layout.combine_row.assign(layout.top_k * per_rank, -1);
  layout.combine_weight.assign(layout.top_k * per_rank, 0);
  for (int64_t t = 0; t < per_rank; ++t) {  // token order within each block: e is distinct per t
    for (int64_t q = 0; q < layout.top_k; ++q) {
      const int64_t choice = routing.choice(first_token + t, q);
      const int64_t e = routing.expert[choice];
      if (e < 0) continue;
      const int64_t row = next[block(t, e)]++;
      layout.send_token[row] = t;
      layout.send_choice[row] = static_cast<int>(q);
      layout.combine_row[q * per_rank + t] = row;
      layout.combine_weight[q * per_rank + t] = routing.weight[choice];
    }
  }
}

// The expert side: every rank's kept choices to this rank's experts by (l, c, i, token).
void lay_out_recv(const MoeRouting& routing, const std::vector<int64_t>& chunk_of,
                  MoeLayout& layout) {
  const int64_t per_rank = layout.tokens_per_rank, world = layout.world;
  auto block = [&](int64_t token, int64_t e) {
    const int64_t source = token / per_rank;
    return ((e / world) * layout.chunks + chunk_of[token % per_rank]) * world + source;
  };
  // Each local expert's choices in token order: within a block (one expert's) the rows go by
  // token, as a scan of every token would place them.
  auto for_each_choice_here = [&](auto&& visit) {
    for (int64_t e = layout.rank; e < routing.experts; e += world) {
      for (int64_t i = routing.by_expert_first[e]; i < routing.by_expert_first[e + 1]; ++i) {
        const int64_t choice = routing.by_expert[i];
        visit(choice / layout.top_k, choice % layout.top_k, e);
      }
    }
  };
  layout.recv_count.assign(layout.local_experts * layout.chunks * world, 0);
  for_each_choice_here(
      [&](int64_t token, int64_t, int64_t e) { ++layout.recv_count[block(token, e)]; });
  layout.recv_first = firsts(layout.recv_count);
  std::vector<int64_t> next(layout.recv_first.begin(), layout.recv_first.end() - 1);
  layout.recv_source.resize(layout.recv_first.back());
  layout.recv_token.resize(layout.recv_first.back());
  layout.recv_choice.resize(layout.recv_first.back());
  for_each_choice_here([&](int64_t token, int64_t q, int64_t e) {
    const int64_t row = next[block(token, e)]++;
    layout.recv_source[row] = token / per_rank;
    layout.recv_token[row] = token % per_rank;
    layout.recv_choice[row] = static_cast<int>(q);
  });
}

}  // namespace

MoeLayout moe_layout(const MoeRouting& routing, int64_t rank, int64_t chunks) {
  check_layout(routing, rank, chunks);
  MoeLayout layout;
  layout.rank = rank;
  layout.world = routing.world;
  layout.experts = routing.experts;
  layout.top_k = routing.top_k;
  layout.chunks = chunks;
  layout.tokens_per_rank = routing.tokens_per_rank();
  layout.local_experts = moe_local_experts(routing.experts, routing.world, rank);
  std::vector<int64_t> per_rank_experts(routing.world);
  for (int64_t j = 0; j < routing.world; ++j) {
    per_rank_experts[j] = moe_local_experts(routing.experts, routing.world, j);
  }
  layout.slot_first = firsts(per_rank_experts);
  const std::vector<int64_t> chunk_of = token_chunks(layout.tokens_per_rank, chunks);
  lay_out_send(routing, chunk_of, layout);
  lay_out_recv(routing, chunk_of, layout);
  return layout;
}

int64_t MoeLayout::send_rows(int64_t chunk, int64_t dest, int64_t local_expert) const {
  return send_count[chunk * experts + slot_first[dest] + local_expert];
}

int64_t MoeLayout::send_offset(int64_t chunk, int64_t dest, int64_t local_expert) const {
  return send_first[chunk * experts + slot_first[dest] + local_expert];
}

int64_t MoeLayout::recv_rows(int64_t local_expert, int64_t chunk, int64_t source) const {
  return recv_count[(local_expert * chunks + chunk) * world + source];
}

int64_t MoeLayout::recv_offset(int64_t local_expert, int64_t chunk, int64_t source) const {
  return recv_first[(local_expert * chunks + chunk) * world + source];
}

int64_t MoeLayout::expert_rows(int64_t local_expert) const {
  return recv_offset(local_expert + 1, 0, 0) - recv_offset(local_expert, 0, 0);
}

std::vector<MoeSpan> MoeLayout::send_spans(int64_t chunk, int64_t dest) const {
  std::vector<MoeSpan> spans;
  for (int64_t l = 0; l < slot_first[dest + 1] - slot_first[dest]; ++l) {
    const int64_t rows = send_rows(chunk, dest, l);
    if (rows > 0) spans.push_back({send_offset(chunk, dest, l), rows});
  }
  return spans;
}

std::vector<MoeSpan> MoeLayout::recv_spans(int64_t chunk, int64_t source) const {
  std::vector<MoeSpan> spans;
  for (int64_t l = 0; l < local_experts; ++l) {
    const int64_t rows = recv_rows(l, chunk, source);
    if (rows > 0) spans.push_back({recv_offset(l, chunk, source), rows});
  }
  return spans;
}

MoeRouter moe_router(const Shape& shape, int64_t world) {
  MoeRouter r;
  r.tokens = shape.tokens();
  r.world = world;
  r.experts = shape.experts();
  r.top_k = shape.top_k();
  r.skew = shape.moe.skew;
  r.capacity_factor = shape.moe.capacity_factor;
  r.seed = static_cast<uint64_t>(shape.moe_seed());
  return r;
}

}  // namespace fob
