// A toy all-to-all-v (PlanBuilder::all_to_all_v) that the tests of the uneven form share: rank i
// sends rank j toy_rows(i, j) rows, some pairs none, its own block at least one. On the sending
// side a rank's blocks lie by destination, a block of two rows or more as two spans (its first
// row, then the rest); on the receiving side first every source's first span, sources in
// descending order, then every source's rest in the same order: the two sides lay a pair's rows
// out differently, and a peer's spans lie apart, as an expert layout's do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/plan.h"
#include "fob/plan_builder.h"

namespace fob::test {

inline int64_t toy_rows(int from, int to) {
  return from == to ? 1 + from : (2 * from + 3 * to + from * to) % 5;
}

// The block's spans: its first row, then the rest.
inline std::vector<RowSpan> toy_split(int64_t row, int64_t rows) {
  if (rows == 0) return {};
  if (rows == 1) return {{row, 1}};
  return {{row, 1}, {row + 1, rows - 1}};
}

// Where rank `from`'s block for rank `to` starts in `from`'s send buffer.
inline int64_t toy_send_row(int from, int to) {
  int64_t row = 0;
  for (int j = 0; j < to; ++j) row += toy_rows(from, j);
  return row;
}

inline int64_t toy_send_rows(int rank, int world) {
  return toy_send_row(rank, world);
}

// Rank `rank`'s spans: what it sends each peer, and where each peer's rows land.
inline PeerSpans toy_spans(int rank, int world) {
  PeerSpans spans;
  spans.send.resize(static_cast<size_t>(world));
  spans.recv.resize(static_cast<size_t>(world));
  for (int j = 0; j < world; ++j) {
    spans.send[static_cast<size_t>(j)] = toy_split(toy_send_row(rank, j), toy_rows(rank, j));
  }
  int64_t row = 0;
  for (int i = world - 1; i >= 0; --i) {  // first rows
    if (toy_rows(i, rank) == 0) continue;
    spans.recv[static_cast<size_t>(i)].push_back({row++, 1});
  }
  for (int i = world - 1; i >= 0; --i) {  // the rests
    const int64_t rest = toy_rows(i, rank) - 1;
    if (rest <= 0) continue;
    spans.recv[static_cast<size_t>(i)].push_back({row, rest});
    row += rest;
  }
  return spans;
}

inline int64_t toy_recv_rows(int rank, int world) {
  int64_t rows = 0;
  for (int i = 0; i < world; ++i) rows += toy_rows(i, rank);
  return rows;
}

// Rank b.rank()'s plan: "S" (its rows of the input "XA", from global row rank *
// kToyRowsPerRank) goes out by the toy's spans into "R", which is checked.
inline constexpr int64_t kToyRowsPerRank = 64;
inline void build_toy_all_to_all(PlanBuilder& b, int64_t width) {
  const int rank = b.rank(), world = b.world();
  const int src = b.buffer("S", toy_send_rows(rank, world), width);
  const int dst = b.buffer("R", toy_recv_rows(rank, world), width);
  InputRegion in;
  in.buffer = src;
  in.rows = toy_send_rows(rank, world);
  in.tensor = "XA";
  in.global_row = rank * kToyRowsPerRank;
  b.input(in);
  b.all_to_all_v(src, dst, toy_spans(rank, world), "a2av");
  b.check(dst, CheckKind::gathered);
}

inline Plan toy_all_to_all_plan(int rank, int world, int64_t width, Workload workload) {
  Plan plan;
  plan.workload = workload;
  plan.world = world;
  plan.rank = rank;
  PlanBuilder b(plan);
  build_toy_all_to_all(b, width);
  return plan;
}

// Which input row lands in each row of rank `rank`'s "R": the oracle of the toy.
inline std::vector<int64_t> toy_received_rows(int rank, int world) {
  std::vector<int64_t> global(static_cast<size_t>(toy_recv_rows(rank, world)), -1);
  const PeerSpans mine = toy_spans(rank, world);
  for (int i = 0; i < world; ++i) {
    const PeerSpans theirs = toy_spans(i, world);
    const std::vector<RowSpan>& from = theirs.send[static_cast<size_t>(rank)];
    const std::vector<RowSpan>& to = mine.recv[static_cast<size_t>(i)];
    for (size_t n = 0; n < to.size(); ++n) {
      for (int64_t q = 0; q < to[n].rows; ++q) {
        global[static_cast<size_t>(to[n].row + q)] = i * kToyRowsPerRank + from[n].row + q;
      }
    }
  }
  return global;
}

}  // namespace fob::test
