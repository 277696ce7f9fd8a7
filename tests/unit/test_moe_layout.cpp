// The MoE layouts (fob/moe.h) for worlds 1 to 4, E dividing by N and not, chunk counts 1 to 3
// with T not dividing by C: the send side holds every kept (token, choice) once in (c, j, l,
// token) order; rank r's expert side is its peers' send blocks to r in (l, c, i) order; the n-th
// span r sends j is the n-th span j receives from r; and a dispatch, expert GEMM, combine and
// weighted sum moved along those spans gives every token the sum of its experts' outputs.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "fob/moe.h"

namespace fob {
namespace {

struct Setting {
  int64_t tokens, world, experts, top_k;
  double skew, capacity_factor;
};

// T = 7 tokens per rank (not dividing by 2 or 3) or 6; E = 5 over 2, 3, 4 ranks, E = 3 over
// 4 (rank 3 hosts no expert), N = 1; capacity on for some, so that dropped choices are skipped.
const std::vector<Setting> kSettings = {
    {7, 1, 4, 2, 0, 0},       {14, 2, 5, 2, 1.0, 0}, {21, 3, 5, 1, 0, 0},
    {28, 4, 5, 2, 2.0, 0.75}, {24, 4, 3, 2, 0, 1.0}, {24, 3, 6, 3, 0.5, 0},
};

std::string name(const Setting& s, int64_t chunks) {
  return "M=" + std::to_string(s.tokens) + " N=" + std::to_string(s.world) +
         " E=" + std::to_string(s.experts) + " k=" + std::to_string(s.top_k) +
         " skew=" + std::to_string(s.skew) + " cf=" + std::to_string(s.capacity_factor) +
         " C=" + std::to_string(chunks);
}

MoeRouting route(const Setting& s) {
  return route_tokens({.tokens = s.tokens,
                       .world = s.world,
                       .experts = s.experts,
                       .top_k = s.top_k,
                       .skew = s.skew,
                       .capacity_factor = s.capacity_factor,
                       .seed = 3});
}

std::vector<MoeLayout> all_ranks(const MoeRouting& routing, int64_t chunks) {
  std::vector<MoeLayout> layouts;
  for (int64_t r = 0; r < routing.world; ++r) layouts.push_back(moe_layout(routing, r, chunks));
  return layouts;
}

// Runs `check` over every setting and chunk count 1..3, with the routing and all ranks' layouts.
template <typename Check>
void for_each_case(Check check) {
  for (const Setting& s : kSettings) {
    const MoeRouting routing = route(s);
    for (int64_t chunks = 1; chunks <= 3; ++chunks) {
      SCOPED_TRACE(name(s, chunks));
      check(routing, all_ranks(routing, chunks));
    }
  }
}

int64_t chunk_of(const MoeLayout& layout, int64_t token) {
  int64_t c = 0;
  while (moe_chunk_begin(layout.tokens_per_rank, layout.chunks, c + 1) <= token) ++c;
  return c;
}

// A send row's sort key: chunk, destination, destination's local expert, token.
std::tuple<int64_t, int64_t, int64_t, int64_t> send_key(const MoeRouting& routing,
                                                        const MoeLayout& layout, int64_t row) {
  const int64_t t = layout.send_token[row];
  const int64_t global = layout.rank * layout.tokens_per_rank + t;
  const int64_t e = routing.expert[routing.choice(global, layout.send_choice[row])];
  return {chunk_of(layout, t), e % layout.world, e / layout.world, t};
}

// The rows rank `layout` sends `dest` in chunk c.
int64_t rows_to(const MoeLayout& layout, int64_t c, int64_t dest) {
  int64_t rows = 0;
  for (int64_t l = 0; l < moe_local_experts(layout.experts, layout.world, dest); ++l) {
    rows += layout.send_rows(c, dest, l);
  }
  return rows;
}

TEST(MoeLayout, SendSideHoldsEveryKeptChoiceOnceInDispatchOrder) {
  for_each_case([](const MoeRouting& routing, const std::vector<MoeLayout>& layouts) {
    for (const MoeLayout& layout : layouts) {
      const int64_t first = layout.rank * layout.tokens_per_rank;
      std::vector<int> seen(layout.tokens_per_rank * layout.top_k, 0);
      for (int64_t row = 0; row < layout.send_total(); ++row) {
        ++seen[layout.send_token[row] * layout.top_k + layout.send_choice[row]];
        if (row > 0) {
          EXPECT_LT(send_key(routing, layout, row - 1), send_key(routing, layout, row));
        }
      }
      for (int64_t t = 0; t < layout.tokens_per_rank; ++t) {
        for (int64_t q = 0; q < layout.top_k; ++q) {
          const bool kept = routing.expert[routing.choice(first + t, q)] >= 0;
          EXPECT_EQ(seen[t * layout.top_k + q], kept ? 1 : 0) << "token " << t << " choice " << q;
        }
      }
    }
  });
}

// Each block's count and offset agree with its rows, and the counts add up to the routing's.
TEST(MoeLayout, SendBlocksMatchTheirRows) {
  for_each_case([](const MoeRouting& routing, const std::vector<MoeLayout>& layouts) {
    for (const MoeLayout& layout : layouts) {
      int64_t row = 0;
      for (int64_t c = 0; c < layout.chunks; ++c) {
        for (int64_t j = 0; j < layout.world; ++j) {
          for (int64_t l = 0; l < moe_local_experts(layout.experts, layout.world, j); ++l) {
            EXPECT_EQ(layout.send_offset(c, j, l), row);
            for (int64_t n = 0; n < layout.send_rows(c, j, l); ++n, ++row) {
              const auto [chunk, dest, local, token] = send_key(routing, layout, row);
              EXPECT_EQ(std::make_tuple(chunk, dest, local), std::make_tuple(c, j, l));
            }
          }
        }
      }
      EXPECT_EQ(row, layout.send_total());
      int64_t kept = 0;
      for (int64_t e = 0; e < layout.experts; ++e) {
        kept += routing.kept[layout.rank * layout.experts + e];
      }
      EXPECT_EQ(layout.send_total(), kept);
    }
  });
}

// Rank r's expert-side block (l, c, i) is rank i's send block (c, r, l), row for row, and the
// blocks lie in (l, c, i) order, so each local expert's rows are one contiguous GEMM input.
TEST(MoeLayout, ExpertSideIsThePeersSendBlocksInExpertOrder) {
  for_each_case([](const MoeRouting& routing, const std::vector<MoeLayout>& layouts) {
    for (const MoeLayout& layout : layouts) {
      const int64_t r = layout.rank;
      int64_t row = 0;
      for (int64_t l = 0; l < layout.local_experts; ++l) {
        EXPECT_EQ(layout.recv_offset(l, 0, 0), row);
        int64_t expert_total = 0;
        for (int64_t i = 0; i < layout.world; ++i) {
          expert_total += routing.kept[i * layout.experts + l * layout.world + r];
        }
        EXPECT_EQ(layout.expert_rows(l), expert_total);
        for (int64_t c = 0; c < layout.chunks; ++c) {
          for (int64_t i = 0; i < layout.world; ++i) {
            const MoeLayout& source = layouts[i];
            ASSERT_EQ(layout.recv_offset(l, c, i), row);
            ASSERT_EQ(layout.recv_rows(l, c, i), source.send_rows(c, r, l));
            for (int64_t n = 0; n < layout.recv_rows(l, c, i); ++n, ++row) {
              const int64_t sent = source.send_offset(c, r, l) + n;
              EXPECT_EQ(layout.recv_source[row], i);
              EXPECT_EQ(layout.recv_token[row], source.send_token[sent]);
              EXPECT_EQ(layout.recv_choice[row], source.send_choice[sent]);
            }
          }
        }
      }
      EXPECT_EQ(row, layout.recv_total());
    }
  });
}

// For every chunk and ordered pair (r, j), the n-th span r sends j and the n-th span j receives
// from r have the same rows, holding the same (token, choice)s; r's spans to j cover its
// (c, j) rows in one run. Skew, capacity and chunks of a few tokens leave some blocks empty, so the
// skipping is exercised.
TEST(MoeLayout, SpansPairAcrossEveryRankPair) {
  int64_t skipped = 0;
  for_each_case([&skipped](const MoeRouting&, const std::vector<MoeLayout>& layouts) {
    for (const MoeLayout& sender : layouts) {
      for (const MoeLayout& receiver : layouts) {
        const int64_t r = sender.rank, j = receiver.rank;
        for (int64_t c = 0; c < sender.chunks; ++c) {
          const std::vector<MoeSpan> sent = sender.send_spans(c, j);
          const std::vector<MoeSpan> got = receiver.recv_spans(c, r);
          ASSERT_EQ(sent.size(), got.size()) << r << " -> " << j << " chunk " << c;
          skipped += moe_local_experts(sender.experts, sender.world, j) -
                     static_cast<int64_t>(sent.size());
          int64_t next = sender.send_offset(c, j, 0);
          for (size_t n = 0; n < sent.size(); ++n) {
            EXPECT_GT(sent[n].rows, 0);
            EXPECT_EQ(sent[n].row, next);
            next += sent[n].rows;
            ASSERT_EQ(sent[n].rows, got[n].rows);
            for (int64_t k = 0; k < sent[n].rows; ++k) {
              EXPECT_EQ(sender.send_token[sent[n].row + k], receiver.recv_token[got[n].row + k]);
              EXPECT_EQ(sender.send_choice[sent[n].row + k], receiver.recv_choice[got[n].row + k]);
              EXPECT_EQ(receiver.recv_source[got[n].row + k], r);
            }
          }
          EXPECT_EQ(next, sender.send_offset(c, j, 0) + rows_to(sender, c, j));
        }
      }
    }
  });
  EXPECT_GT(skipped, 0);
}

// The combine's table names, for each token and choice, the send row of that choice, or -1
// with weight 0 where the capacity dropped it.
TEST(MoeLayout, CombineTableFindsEachChoice) {
  for_each_case([](const MoeRouting& routing, const std::vector<MoeLayout>& layouts) {
    for (const MoeLayout& layout : layouts) {
      const int64_t per_rank = layout.tokens_per_rank;
      for (int64_t q = 0; q < layout.top_k; ++q) {
        for (int64_t t = 0; t < per_rank; ++t) {
          const int64_t choice = routing.choice(layout.rank * per_rank + t, q);
          const int64_t row = layout.combine_row[q * per_rank + t];
          const int weight = layout.combine_weight[q * per_rank + t];
          if (routing.expert[choice] < 0) {
            EXPECT_EQ(row, -1);
            EXPECT_EQ(weight, 0);
            continue;
          }
          ASSERT_GE(row, 0);
          EXPECT_EQ(layout.send_token[row], t);
          EXPECT_EQ(layout.send_choice[row], q);
          EXPECT_EQ(weight, routing.weight[choice]);
        }
      }
    }
  });
}

// The whole layer on integers: token g's value is g + 1, expert e multiplies by e + 2. Dispatch
// copies the send spans into the paired receive spans, each expert scales its contiguous rows,
// the combine copies the receive spans back, and the weighted sum over the combine's table must
// give every token the sum over its kept choices of weight * (e + 2) * (g + 1).
TEST(MoeLayout, DispatchExpertsCombineGiveTheWeightedSum) {
  for_each_case([](const MoeRouting& routing, const std::vector<MoeLayout>& layouts) {
    const int64_t world = routing.world, per_rank = routing.tokens_per_rank();
    std::vector<std::vector<int64_t>> sent(world), expert_side(world), returned(world);
    for (const MoeLayout& layout : layouts) {
      for (int64_t t : layout.send_token)
        sent[layout.rank].push_back(layout.rank * per_rank + t + 1);
      expert_side[layout.rank].assign(layout.recv_total(), -1);
      returned[layout.rank].assign(layout.send_total(), -1);
    }
    auto exchange = [&](bool back) {
      for (const MoeLayout& a : layouts) {
        for (const MoeLayout& b : layouts) {
          for (int64_t c = 0; c < a.chunks; ++c) {
            const std::vector<MoeSpan> out = a.send_spans(c, b.rank), in = b.recv_spans(c, a.rank);
            for (size_t n = 0; n < out.size(); ++n) {
              for (int64_t k = 0; k < out[n].rows; ++k) {
                if (back) {
                  returned[a.rank][out[n].row + k] = expert_side[b.rank][in[n].row + k];
                } else {
                  expert_side[b.rank][in[n].row + k] = sent[a.rank][out[n].row + k];
                }
              }
            }
          }
        }
      }
    };
    exchange(false);
    for (const MoeLayout& layout : layouts) {
      for (int64_t l = 0; l < layout.local_experts; ++l) {
        const int64_t scale = l * world + layout.rank + 2, first = layout.recv_offset(l, 0, 0);
        for (int64_t row = first; row < first + layout.expert_rows(l); ++row) {
          ASSERT_GT(expert_side[layout.rank][row], 0) << "row " << row << " never dispatched";
          expert_side[layout.rank][row] *= scale;
        }
      }
    }
    exchange(true);
    for (const MoeLayout& layout : layouts) {
      for (int64_t t = 0; t < per_rank; ++t) {
        const int64_t global = layout.rank * per_rank + t;
        int64_t output = 0, expected = 0;
        for (int64_t q = 0; q < layout.top_k; ++q) {
          const int64_t row = layout.combine_row[q * per_rank + t];
          if (row >= 0)
            output += layout.combine_weight[q * per_rank + t] * returned[layout.rank][row];
          const int64_t e = routing.expert[routing.choice(global, q)];
          if (e >= 0)
            expected += routing.weight[routing.choice(global, q)] * (e + 2) * (global + 1);
        }
        EXPECT_EQ(output, expected) << "token " << global;
      }
    }
  });
}

// Chunk c holds local tokens [c*T/C, (c+1)*T/C); C = T gives one token a chunk; C outside
// [1, T] and a rank outside the world are the plan's error, a logic_error.
TEST(MoeLayout, ChunkBoundsAndTheirLimits) {
  const MoeRouting routing = route({14, 2, 5, 2, 0, 0});
  const MoeLayout layout = moe_layout(routing, 1, 3);
  for (int64_t row = 0; row < layout.send_total(); ++row) {
    const int64_t c = std::get<0>(send_key(routing, layout, row));
    EXPECT_GE(layout.send_token[row], c * 7 / 3);
    EXPECT_LT(layout.send_token[row], (c + 1) * 7 / 3);
  }
  const MoeLayout single = moe_layout(routing, 0, 7);
  for (int64_t c = 0; c < 7; ++c) {
    for (const MoeSpan& span : single.send_spans(c, 1)) {
      EXPECT_EQ(single.send_token[span.row], c);
    }
  }
  EXPECT_THROW(moe_layout(routing, 0, 0), std::logic_error);
  EXPECT_THROW(moe_layout(routing, 0, 8), std::logic_error);
  EXPECT_THROW(moe_layout(routing, 2, 1), std::logic_error);
  EXPECT_THROW(moe_layout(routing, -1, 1), std::logic_error);
}

}  // namespace
}  // namespace fob
