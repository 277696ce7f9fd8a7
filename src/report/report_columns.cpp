// The report's columns for scripts (report_columns.h): the one list that both the CSV/JSON
// report and the results file's /summary attribute `report_columns` are made from.
#include "report_columns.h"

#include <string>
#include <type_traits>

namespace fob {

namespace {

// Each entry names its Summary member once: the string (for the file) and the pointer (for the
// report) come from the same token, so they cannot disagree.
#define FOB_SOURCE(member) #member, &Summary::member

ReportColumn text(const char* name, const char* field, std::string Summary::*m) {
  return {Column{name}, field, 1, m};
}
ReportColumn integer(const char* name, const char* field, int64_t Summary::*m) {
  return {Column{name, "", CellType::integer}, field, 1, m};
}
ReportColumn integer(const char* name, const char* field, int32_t Summary::*m) {
  return {Column{name, "", CellType::integer}, field, 1, m};
}
ReportColumn boolean(const char* name, const char* field, int32_t Summary::*m) {
  return {Column{name, "", CellType::boolean}, field, 1, m};
}
// Summary's times are seconds; the report's are milliseconds.
ReportColumn real(const char* name, const char* unit, const char* field, double Summary::*m) {
  return {Column{name, unit, CellType::real}, field, std::string(unit) == "ms" ? 1e3 : 1.0, m};
}
ReportColumn real(const char* name, const char* field, double Summary::*m) {
  return real(name, "", field, m);
}

}  // namespace

const std::vector<ReportColumn>& report_columns() {
  static const std::vector<ReportColumn> columns = {
      text("case_id", FOB_SOURCE(case_id)),
      text("workload", FOB_SOURCE(workload)),
      text("strategy", FOB_SOURCE(strategy)),
      integer("batch", FOB_SOURCE(batch)),
      integer("seq", FOB_SOURCE(seq)),
      integer("hidden", FOB_SOURCE(hidden)),
      integer("ffn", FOB_SOURCE(ffn)),
      integer("heads", FOB_SOURCE(heads)),
      text("dtype", FOB_SOURCE(dtype)),
      integer("world", FOB_SOURCE(world)),
      integer("iters", FOB_SOURCE(iters)),
      boolean("verified", FOB_SOURCE(verified)),
      real("t", "ms", FOB_SOURCE(t_median)),
      real("t_min", "ms", FOB_SOURCE(t_min)),
      real("t_p90", "ms", FOB_SOURCE(t_p90)),
      real("t_p99", "ms", FOB_SOURCE(t_p99)),
      real("t_cv", FOB_SOURCE(t_cv)),
      real("t_comp", "ms", FOB_SOURCE(t_comp)),
      real("t_comm", "ms", FOB_SOURCE(t_comm)),
      real("t_lb", "ms", FOB_SOURCE(t_lb)),
      real("exposed_comm", "ms", FOB_SOURCE(exposed_comm)),
      real("slicing_penalty", "ms", FOB_SOURCE(slicing_penalty)),
      real("speedup", FOB_SOURCE(speedup)),
      real("ideal_speedup", FOB_SOURCE(ideal_speedup)),
      real("comm_reduction", FOB_SOURCE(comm_reduction)),
      real("e2e_reduction", FOB_SOURCE(e2e_reduction)),
      real("overlap_efficiency", FOB_SOURCE(overlap_efficiency)),
      real("hidden_frac", FOB_SOURCE(hidden_frac)),
      real("overlap_pct", FOB_SOURCE(overlap_pct)),
      real("tflops", FOB_SOURCE(tflops)),
      real("algbw", "GB/s", FOB_SOURCE(algbw)),
      real("busbw", "GB/s", FOB_SOURCE(busbw)),
      real("concurrency", FOB_SOURCE(concurrency)),
      real("t_ci_low", "ms", FOB_SOURCE(t_ci_low)),
      real("t_ci_high", "ms", FOB_SOURCE(t_ci_high)),
      real("speedup_ci_low", FOB_SOURCE(speedup_ci_low)),
      real("speedup_ci_high", FOB_SOURCE(speedup_ci_high)),
      real("t_over_tlb", FOB_SOURCE(t_over_tlb)),
      real("t_over_tlb_ci_low", FOB_SOURCE(t_over_tlb_ci_low)),
      real("t_over_tlb_ci_high", FOB_SOURCE(t_over_tlb_ci_high)),
      real("rank_t_min", "ms", FOB_SOURCE(rank_t_min)),
      real("rank_t_avg", "ms", FOB_SOURCE(rank_t_avg)),
      real("rank_t_max", "ms", FOB_SOURCE(rank_t_max)),
      integer("slowest_rank", FOB_SOURCE(slowest_rank)),
      real("rank_tflops_min", FOB_SOURCE(rank_tflops_min)),
      real("rank_tflops_avg", FOB_SOURCE(rank_tflops_avg)),
      real("rank_tflops_max", FOB_SOURCE(rank_tflops_max)),
      integer("slowest_gemm_rank", FOB_SOURCE(slowest_gemm_rank)),
      integer("transfer_sms", FOB_SOURCE(transfer_sms)),
      integer("experts", FOB_SOURCE(experts)),
      integer("top_k", FOB_SOURCE(top_k)),
      integer("expert_ffn", FOB_SOURCE(expert_ffn)),
      real("moe_skew", FOB_SOURCE(moe_skew)),
      real("capacity_factor", FOB_SOURCE(capacity_factor)),
      integer("moe_seed", FOB_SOURCE(moe_seed)),
      text("doubts", FOB_SOURCE(doubts)),
  };
  return columns;
}

#undef FOB_SOURCE

Cell report_cell(const ReportColumn& column, const Summary& s) {
  return std::visit(
      [&](auto member) -> Cell {
        using T = std::remove_cvref_t<decltype(s.*member)>;
        const T& value = s.*member;
        if constexpr (std::is_same_v<T, std::string>) {
          return Cell::of(value);
        } else if constexpr (std::is_same_v<T, double>) {
          return Cell::of_real(value * column.scale);
        } else {
          // A rank of -1 (slowest_rank: nothing timed) and a count of -1 (transfer_sms: not
          // known) are printed as the file holds them, so that the file's readers agree.
          if (column.column.type != CellType::boolean) return Cell::of_int(value);
          return value < 0 ? Cell::none() : Cell::of_bool(value != 0);
        }
      },
      column.member);
}

}  // namespace fob
