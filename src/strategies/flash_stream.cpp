// Flash-All-to-All with the attention streamed (ulysses): all-to-all #1 hides behind the
// attention itself, not only behind the QKV projection. With the online softmax of
// FlashAttention and ring attention (a running maximum, sum and unnormalised output per query
// row, rescaled when a new block of keys arrives), a rank's heads attend over its own tokens'
// keys while the other ranks' pieces are in flight, and fold each piece in as it lands; the
// queries that arrive with a piece attend to the keys already there. Once a sequence's last
// keys are in, the other ranks' tokens are finished first, so all-to-all #2 starts while this
// rank's own tokens' attention still runs. #1 is flash's (own heads projected last), #2 sends
// in the order the outputs are finished.
#include <map>
#include <string>
#include <vector>

#include "a2a_pieces.h"
#include "flash.h"

namespace fob {
namespace {

// The rows of one source rank's tokens of one sequence that arrive together: a sequence run of
// one sub-slice of one piece of all-to-all #1 (the own tokens: one run per sequence).
struct Unit {
  int source = 0;
  int64_t local = 0, rows = 0;  // local rows (of the source rank's L) and their count
};

// Every unit in the order its keys and values are here: the own tokens first, then rank r-k's
// pieces for k = 1 .. N-1 (the order flash's #1 receives them), sub-slice by sub-slice.
std::vector<Unit> arrival_order(PlanBuilder& b, const A2aProblem& p, int m) {
  const int64_t rows = p.local_rows();
  std::vector<Unit> units;
  for (const auto& [local, run] : sequence_runs(p, 0, rows))
    units.push_back({b.rank(), local, run});
  for (int k = 1; k < b.world(); ++k) {
    for (int i = 0; i < m; ++i) {
      for (const auto& [local, run] :
           sequence_runs(p, piece_begin(rows, m, i), piece_rows(rows, m, i))) {
        units.push_back({b.peer(-k), local, run});
      }
    }
  }
  return units;
}

class StreamedAttention {
 public:
  StreamedAttention(PlanBuilder& b, const A2aProblem& p, int m)
      : b_(b), p_(p), units_(arrival_order(b, p, m)), folded_(units_.size(), 0) {
    for (const Unit& u : units_) ++keys_of_sequence_[sequence(u)];
  }

  // As each unit arrives: the queries already here (the other ranks' first) take its keys, it
  // takes every key of its sequence already here, then this rank's own queries take its keys.
  void run() {
    for (size_t t = 0; t < units_.size(); ++t) {
      for (size_t q = 0; q < t; ++q) {
        if (!own(q)) fold(q, t);
      }
      for (size_t k = 0; k <= t; ++k) fold(t, k);
      for (size_t q = 0; q < t; ++q) {
        if (own(q)) fold(q, t);
      }
    }
  }

 private:
  int64_t sequence(const Unit& u) const { return u.local / p_.tokens; }
  bool own(size_t u) const { return units_[u].source == b_.rank(); }
  int64_t row(const Unit& u) const { return p_.seq_row(u.source, u.local); }

  // Query unit q takes key unit k's keys and values, if they are of one sequence; once it has
  // every key of its sequence, its output is normalised.
  void fold(size_t q, size_t k) {
    const Unit &queries = units_[q], &keys = units_[k];
    if (sequence(queries) != sequence(keys)) return;
    p_.attend(b_, row(queries), queries.rows, row(keys), keys.rows, folded_[q] == 0);
    if (++folded_[q] == keys_of_sequence_.at(sequence(queries))) {
      p_.finish_o(b_, row(queries), queries.rows);
    }
  }

  PlanBuilder& b_;
  const A2aProblem& p_;
  std::vector<Unit> units_;
  std::vector<int64_t> folded_;  // key units each query unit has taken
  std::map<int64_t, int64_t> keys_of_sequence_;
};

void stream_gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int m) {
  flash_gemm_all_to_all(b, p, m);
  if (p.attend && p.finish_o) StreamedAttention(b, p, m).run();
}

// #2 sends to r+k for k = N-1 down to 1: the tokens of rank r-1 were the first to arrive and
// are the first finished, rank r+1's (#1's last) the last of the other ranks'. Z starts on the
// own heads, then takes each piece in the order it was posted.
void stream_all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int m) {
  const int n = b.world();
  const int64_t rows = p.local_rows();
  b.reserve_tasks(2 * n * m);
  for (int k = n - 1; k >= 1; --k) {
    const int to = b.peer(k);
    for (int i = 0; i < m; ++i) {
      for (const auto& [local, run] :
           sequence_runs(p, piece_begin(rows, m, i), piece_rows(rows, m, i))) {
        exchange_o(b, p, to, b.peer(-k), local, run, kSecondAllToAllTag + k * m + i,
                   "O to " + piece_name(to, i, m) +
                       (p.batch > 1 ? " seq " + std::to_string(local / p.tokens) : ""));
      }
    }
  }
  project_out_own(b, p, 0, rows, false, "Z = O own heads * WO");
  for (int k = n - 1; k >= 1; --k) {
    const int from = b.peer(-k);
    for (int i = 0; i < m; ++i) {
      project_out(b, p, from, piece_begin(rows, m, i), piece_rows(rows, m, i), true,
                  "Z += O heads " + piece_name(from, i, m));
    }
  }
}

}  // namespace

extern constinit const Strategy kFlashStream = {
    .name = "flash_stream",
    .summary = "Flash-All-to-All with the attention streamed over arriving keys (ulysses)",
    .param_name = "m",
    .default_param = 1,
    .role = StrategyRole::overlapping,
    .tune_params = {1, 2, 4, 8},
    .gemm_all_to_all = stream_gemm_all_to_all,
    .all_to_all_gemm = stream_all_to_all_gemm,
    .streams_attention = true,
};

}  // namespace fob
