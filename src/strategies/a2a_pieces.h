// The pieces Ulysses' strategies build their all-to-all halves from (strategy.h's A2aProblem):
// a range of local rows, [begin, begin + rows), of one rank's heads, projected, exchanged or
// multiplied into the output. Transfers and collectives move whole rows of one sequence, so a
// range crossing a sequence boundary becomes one task per sequence it touches.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fob/strategy.h"

namespace fob {

// Tags of all-to-all #2, apart from #1's.
inline constexpr int kSecondAllToAllTag = 1 << 17;

// QKV of the range for rank j's heads into qkv_send's block j.
int project_qkv(PlanBuilder& b, const A2aProblem& p, int j, int64_t begin, int64_t rows,
                const std::string& label);
// The same for every rank's heads at once: one GEMM batched over the N blocks.
int project_qkv_all(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                    const std::string& label);
// This rank's own heads, straight into qkv where all-to-all #1 would have put them.
void project_qkv_own(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                     const std::string& label);

// Point-to-point halves of all-to-all #1: the range of qkv_send's block `to` goes to rank `to`,
// and the same range from rank `from` lands in qkv. One exchange per sequence touched; returns
// their ids.
std::vector<int> exchange_qkv(PlanBuilder& b, const A2aProblem& p, int to, int from, int64_t begin,
                              int64_t rows, int tag, const std::string& label);
// All-to-all #2's: rows of o holding rank `to`'s tokens go to `to`; rank `from`'s heads for this
// rank's tokens land in o_recv's block `from`.
std::vector<int> exchange_o(PlanBuilder& b, const A2aProblem& p, int to, int from, int64_t begin,
                            int64_t rows, int tag, const std::string& label);

// The range as collectives (a copy on one rank): all-to-all #1 from qkv_send into qkv, and #2
// from o into o_recv.
void all_to_all_qkv(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                    const std::string& label);
void all_to_all_o(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                  const std::string& label);

// Z rows of the range (+)= rank j's heads of them (o_recv's block j) * WO_j.
int project_out(PlanBuilder& b, const A2aProblem& p, int j, int64_t begin, int64_t rows,
                bool accumulate, const std::string& label);
// The same for this rank's own heads, read from o where they were computed (no transfer).
void project_out_own(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                     bool accumulate, const std::string& label);

// The runs of the range that stay inside one sequence: (first local row, rows) each.
std::vector<std::pair<int64_t, int64_t>> sequence_runs(const A2aProblem& p, int64_t begin,
                                                       int64_t rows);

// Query split: the tasks computing o's rows that hold rank j's tokens of the range.
void produce_o_for(PlanBuilder& b, const A2aProblem& p, int j, int64_t begin, int64_t rows);

}  // namespace fob
