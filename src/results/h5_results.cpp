// HDF5 writer for results files (docs/results-schema.md), on the HDF5 C API; the reader is
// h5_reader.cpp.
//
// Every HDF5 call's return code is checked here, so the library's automatic error printing is
// switched off and its error stack is turned into the exception message instead.
#include <hdf5.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fob/metrics.h"
#include "fob/results.h"
#include "fob/types.h"
#include "h5_reader.h"
#include "h5_schema.h"
#include "h5_util.h"
#include "report/report_columns.h"

namespace fob {

using namespace h5io;  // NOLINT: the helpers this file is written in

namespace {

constexpr size_t kShortStrLen = 32;  // summary: case_id, workload, dtype
constexpr size_t kLongStrLen = 64;   // summary: strategy

// ---- compound rows --------------------------------------------------------------------------

// An enum over int8 with the names to_string() gives `values` 0..count-1, so that readers get
// the names from the file rather than from a copy of this program's numbering.
template <typename Enum>
H5Id enum_type(int count, const Where& w) {
  H5Id type = make_type(H5Tenum_create(H5T_NATIVE_INT8), w);
  for (int i = 0; i < count; ++i) {
    const int8_t value = static_cast<int8_t>(i);
    check(H5Tenum_insert(type, to_string(static_cast<Enum>(i)), &value), w, "building an enum");
  }
  return type;
}

}  // namespace

// The `tasks` row is TaskRecord itself (h5_reader.h).
H5Id h5io::task_mem_type(const Where& w, bool enums) {
  H5Id type = make_type(H5Tcreate(H5T_COMPOUND, sizeof(TaskRecord)), w);
  H5Id label = fixed_string_type(sizeof(TaskLabel::text), w);
  H5Id stream = enums ? enum_type<StreamId>(kNumStreams, w) : H5Id();
  H5Id kind = enums ? enum_type<TaskKind>(kNumTaskKinds, w) : H5Id();
  const std::string op = "building the tasks type";
  check(H5Tinsert(type, "rank", HOFFSET(TaskRecord, rank), H5T_NATIVE_INT32), w, op);
  check(H5Tinsert(type, "task", HOFFSET(TaskRecord, task), H5T_NATIVE_INT32), w, op);
  check(H5Tinsert(type, "stream", HOFFSET(TaskRecord, stream), enums ? stream : H5T_NATIVE_INT8), w,
        op);
  check(H5Tinsert(type, "kind", HOFFSET(TaskRecord, kind), enums ? kind : H5T_NATIVE_INT8), w, op);
  check(H5Tinsert(type, "peer", HOFFSET(TaskRecord, peer), H5T_NATIVE_INT32), w, op);
  check(H5Tinsert(type, "bytes", HOFFSET(TaskRecord, bytes), H5T_NATIVE_INT64), w, op);
  check(H5Tinsert(type, "flops", HOFFSET(TaskRecord, flops), H5T_NATIVE_DOUBLE), w, op);
  check(H5Tinsert(type, "label", HOFFSET(TaskRecord, label), label), w, op);
  return type;
}

// Whether a `tasks` dataset stores `kind` as an enum (files since schema 1's enums).
bool h5io::tasks_have_enums(hid_t dset, const Where& w) {
  H5Id type(check_id(H5Dget_type(dset), w, "reading the tasks type"), H5Tclose);
  const int member = H5Tget_member_index(type, "kind");
  return member >= 0 && H5Tget_member_class(type, static_cast<unsigned>(member)) == H5T_ENUM;
}

namespace {

struct SummaryRow {
  char case_id[kShortStrLen];
  char workload[kShortStrLen];
  char strategy[kLongStrLen];
  char dtype[kShortStrLen];
  int64_t batch, seq, hidden, ffn, heads;
  int64_t experts, top_k, expert_ffn;
  double moe_skew, capacity_factor;
  int64_t moe_seed;
  int32_t world, iters, verified;
  double t_median, t_min, t_p90, t_p99, t_cv;
  double t_comp, t_comm, t_lb;
  double exposed_comm, slicing_penalty;
  double speedup, ideal_speedup;
  double comm_reduction, e2e_reduction;
  double overlap_efficiency, hidden_frac, overlap_pct;
  double tflops, algbw, busbw;
  double concurrency;
  double t_ci_low, t_ci_high;
  const char* doubts;  // variable length: a row may give several reasons
  double speedup_ci_low, speedup_ci_high;
  double t_over_tlb, t_over_tlb_ci_low, t_over_tlb_ci_high;
  double rank_t_min, rank_t_avg, rank_t_max;
  int32_t slowest_rank;
  double rank_tflops_min, rank_tflops_avg, rank_tflops_max;
  int32_t slowest_gemm_rank;
  int32_t transfer_sms;
};

H5Id summary_mem_type(const Where& w) {
  H5Id type = make_type(H5Tcreate(H5T_COMPOUND, sizeof(SummaryRow)), w);
  H5Id short_str = fixed_string_type(kShortStrLen, w);
  H5Id long_str = fixed_string_type(kLongStrLen, w);
  H5Id any_str = make_type(H5Tcopy(H5T_C_S1), w);
  check(H5Tset_size(any_str, H5T_VARIABLE), w, "sizing a string type");
  check(H5Tset_cset(any_str, H5T_CSET_UTF8), w, "setting a string's character set");
  const std::string op = "building the summary type";
#define FOB_FIELD(name, type_id) \
  check(H5Tinsert(type, #name, HOFFSET(SummaryRow, name), type_id), w, op)
  FOB_FIELD(case_id, short_str);
  FOB_FIELD(workload, short_str);
  FOB_FIELD(strategy, long_str);
  FOB_FIELD(dtype, short_str);
  FOB_FIELD(batch, H5T_NATIVE_INT64);
  FOB_FIELD(seq, H5T_NATIVE_INT64);
  FOB_FIELD(hidden, H5T_NATIVE_INT64);
  FOB_FIELD(ffn, H5T_NATIVE_INT64);
  FOB_FIELD(heads, H5T_NATIVE_INT64);
  FOB_FIELD(experts, H5T_NATIVE_INT64);
  FOB_FIELD(top_k, H5T_NATIVE_INT64);
  FOB_FIELD(expert_ffn, H5T_NATIVE_INT64);
  FOB_FIELD(moe_skew, H5T_NATIVE_DOUBLE);
  FOB_FIELD(capacity_factor, H5T_NATIVE_DOUBLE);
  FOB_FIELD(moe_seed, H5T_NATIVE_INT64);
  FOB_FIELD(world, H5T_NATIVE_INT32);
  FOB_FIELD(iters, H5T_NATIVE_INT32);
  FOB_FIELD(verified, H5T_NATIVE_INT32);
  FOB_FIELD(t_median, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_min, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_p90, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_p99, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_cv, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_comp, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_comm, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_lb, H5T_NATIVE_DOUBLE);
  FOB_FIELD(exposed_comm, H5T_NATIVE_DOUBLE);
  FOB_FIELD(slicing_penalty, H5T_NATIVE_DOUBLE);
  FOB_FIELD(speedup, H5T_NATIVE_DOUBLE);
  FOB_FIELD(ideal_speedup, H5T_NATIVE_DOUBLE);
  FOB_FIELD(comm_reduction, H5T_NATIVE_DOUBLE);
  FOB_FIELD(e2e_reduction, H5T_NATIVE_DOUBLE);
  FOB_FIELD(overlap_efficiency, H5T_NATIVE_DOUBLE);
  FOB_FIELD(hidden_frac, H5T_NATIVE_DOUBLE);
  FOB_FIELD(overlap_pct, H5T_NATIVE_DOUBLE);
  FOB_FIELD(tflops, H5T_NATIVE_DOUBLE);
  FOB_FIELD(algbw, H5T_NATIVE_DOUBLE);
  FOB_FIELD(busbw, H5T_NATIVE_DOUBLE);
  FOB_FIELD(concurrency, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_ci_low, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_ci_high, H5T_NATIVE_DOUBLE);
  FOB_FIELD(doubts, any_str);
  FOB_FIELD(speedup_ci_low, H5T_NATIVE_DOUBLE);
  FOB_FIELD(speedup_ci_high, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_over_tlb, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_over_tlb_ci_low, H5T_NATIVE_DOUBLE);
  FOB_FIELD(t_over_tlb_ci_high, H5T_NATIVE_DOUBLE);
  FOB_FIELD(rank_t_min, H5T_NATIVE_DOUBLE);
  FOB_FIELD(rank_t_avg, H5T_NATIVE_DOUBLE);
  FOB_FIELD(rank_t_max, H5T_NATIVE_DOUBLE);
  FOB_FIELD(slowest_rank, H5T_NATIVE_INT32);
  FOB_FIELD(rank_tflops_min, H5T_NATIVE_DOUBLE);
  FOB_FIELD(rank_tflops_avg, H5T_NATIVE_DOUBLE);
  FOB_FIELD(rank_tflops_max, H5T_NATIVE_DOUBLE);
  FOB_FIELD(slowest_gemm_rank, H5T_NATIVE_INT32);
  FOB_FIELD(transfer_sms, H5T_NATIVE_INT32);
#undef FOB_FIELD
  return type;
}

// The file's copy of a compound type, without the in-memory alignment holes.
H5Id packed_copy(hid_t mem_type, const Where& w) {
  H5Id type = make_type(H5Tcopy(mem_type), w);
  check(H5Tpack(type), w, "packing a compound type");
  return type;
}

SummaryRow to_row(const Summary& s) {
  SummaryRow row{};
  copy_fixed(row.case_id, kShortStrLen, s.case_id);
  copy_fixed(row.workload, kShortStrLen, s.workload);
  copy_fixed(row.strategy, kLongStrLen, s.strategy);
  copy_fixed(row.dtype, kShortStrLen, s.dtype);
  row.batch = s.batch;
  row.seq = s.seq;
  row.hidden = s.hidden;
  row.ffn = s.ffn;
  row.heads = s.heads;
  row.experts = s.experts;
  row.top_k = s.top_k;
  row.expert_ffn = s.expert_ffn;
  row.moe_skew = s.moe_skew;
  row.capacity_factor = s.capacity_factor;
  row.moe_seed = s.moe_seed;
  row.world = s.world;
  row.iters = s.iters;
  row.verified = s.verified;
  row.t_median = s.t_median;
  row.t_min = s.t_min;
  row.t_p90 = s.t_p90;
  row.t_p99 = s.t_p99;
  row.t_cv = s.t_cv;
  row.t_comp = s.t_comp;
  row.t_comm = s.t_comm;
  row.t_lb = s.t_lb;
  row.exposed_comm = s.exposed_comm;
  row.slicing_penalty = s.slicing_penalty;
  row.speedup = s.speedup;
  row.ideal_speedup = s.ideal_speedup;
  row.speedup_ci_low = s.speedup_ci_low;
  row.speedup_ci_high = s.speedup_ci_high;
  row.t_over_tlb = s.t_over_tlb;
  row.t_over_tlb_ci_low = s.t_over_tlb_ci_low;
  row.t_over_tlb_ci_high = s.t_over_tlb_ci_high;
  row.comm_reduction = s.comm_reduction;
  row.e2e_reduction = s.e2e_reduction;
  row.overlap_efficiency = s.overlap_efficiency;
  row.hidden_frac = s.hidden_frac;
  row.overlap_pct = s.overlap_pct;
  row.tflops = s.tflops;
  row.algbw = s.algbw;
  row.busbw = s.busbw;
  row.concurrency = s.concurrency;
  row.t_ci_low = s.t_ci_low;
  row.t_ci_high = s.t_ci_high;
  row.rank_t_min = s.rank_t_min;
  row.rank_t_avg = s.rank_t_avg;
  row.rank_t_max = s.rank_t_max;
  row.slowest_rank = s.slowest_rank;
  row.rank_tflops_min = s.rank_tflops_min;
  row.rank_tflops_avg = s.rank_tflops_avg;
  row.rank_tflops_max = s.rank_tflops_max;
  row.slowest_gemm_rank = s.slowest_gemm_rank;
  row.transfer_sms = s.transfer_sms;
  row.doubts = s.doubts.c_str();  // valid while `s` is
  return row;
}

// One entry of /summary's attribute `report_columns` (report_columns.h): a report column's key,
// the /summary field it shows, its type ("text", "integer", "real", "boolean"), its unit and
// the factor from the field's value to the report's.
struct ReportColumnRow {
  char key[kShortStrLen];
  char field[kShortStrLen];
  char type[kShortStrLen];
  char unit[kShortStrLen];
  double scale;
};

void write_report_columns(hid_t summary, hid_t summary_type, const Where& w) {
  H5Id type = make_type(H5Tcreate(H5T_COMPOUND, sizeof(ReportColumnRow)), w);
  H5Id str = fixed_string_type(kShortStrLen, w);
  const std::string op = "building the report_columns type";
  check(H5Tinsert(type, "key", HOFFSET(ReportColumnRow, key), str), w, op);
  check(H5Tinsert(type, "field", HOFFSET(ReportColumnRow, field), str), w, op);
  check(H5Tinsert(type, "type", HOFFSET(ReportColumnRow, type), str), w, op);
  check(H5Tinsert(type, "unit", HOFFSET(ReportColumnRow, unit), str), w, op);
  check(H5Tinsert(type, "scale", HOFFSET(ReportColumnRow, scale), H5T_NATIVE_DOUBLE), w, op);
  std::vector<ReportColumnRow> rows;
  for (const ReportColumn& c : report_columns()) {
    // A report column without its field here would leave file readers a column short.
    if (H5Tget_member_index(summary_type, c.field) < 0) {
      throw std::logic_error(std::string("report column ") + c.field + " is not in /summary");
    }
    ReportColumnRow row{};
    copy_fixed(row.key, kShortStrLen, c.column.key());
    copy_fixed(row.field, kShortStrLen, c.field);
    copy_fixed(row.type, kShortStrLen, cell_type_name(c.column.type));
    copy_fixed(row.unit, kShortStrLen, c.column.unit);
    row.scale = c.scale;
    rows.push_back(row);
  }
  const hsize_t count = rows.size();
  H5Id space(check_id(H5Screate_simple(1, &count, nullptr), w, "creating a dataspace"), H5Sclose);
  H5Id packed = packed_copy(type, w);
  H5Id attr(check_id(H5Acreate2(summary, "report_columns", packed, space, H5P_DEFAULT, H5P_DEFAULT),
                     w, "creating attribute report_columns"),
            H5Aclose);
  check(H5Awrite(attr, type, rows.data()), w, "writing attribute report_columns");
}

// The arrays must match the shape attributes, or the file would be self-contradictory.
void check_case_shapes(const CaseResult& c, const std::string& file) {
  auto need = [&](const char* what, size_t got, size_t want) {
    if (got != want) {
      throw RuntimeFault("cannot write case '" + c.id + "' to '" + file + "': " + what + " holds " +
                         std::to_string(got) + " values, expected " + std::to_string(want));
    }
  };
  if (c.id.empty() || c.id.find('/') != std::string::npos || c.id == "." || c.id == "..") {
    throw RuntimeFault("cannot write case to '" + file + "': bad case id '" + c.id + "'");
  }
  if (c.world < 0 || c.iters < 0 || c.max_tasks < 0) {
    throw RuntimeFault("cannot write case '" + c.id + "' to '" + file +
                       "': negative world, iters or max_tasks");
  }
  if (!c.stored_fits()) {
    throw RuntimeFault("cannot write case '" + c.id + "' to '" + file +
                       "': " + std::to_string(c.stored) + " stored ranks do not divide its world " +
                       std::to_string(c.world));
  }
  const size_t world = static_cast<size_t>(c.ranks());
  const size_t iters = static_cast<size_t>(c.iters);
  const size_t tasks = static_cast<size_t>(c.max_tasks);
  need("step_seconds", c.step_seconds.size(), iters * world);
  need("tasks", c.tasks.size(), world * tasks);
  need("task_start", c.task_start.size(), iters * world * tasks);
  need("task_end", c.task_end.size(), iters * world * tasks);
  if (!c.timers_match()) {
    throw RuntimeFault("cannot write case '" + c.id + "' to '" + file +
                       "': its iteration timers do not match its iterations");
  }
}

}  // namespace

// ---- writing (h5_schema.h) ----------------------------------------------------------------

namespace h5io {

namespace {

void write_system(hid_t file, const SystemInfo& sys, const std::string& path) {
  Where w{path, "/system"};
  H5Id group = create_group(file, "system", w);
  write_attr_str(group, "backend", sys.backend, w);
  write_attr_str(group, "transport", sys.transport, w);
  write_attr_i32(group, "world_size", sys.world_size, w);
  write_attr_i32(group, "copy_engines", sys.copy_engines, w);
  write_attr_str(group, "hostnames", sys.hostnames, w);
  write_attr_str(group, "devices", sys.devices, w);
  write_attr_str(group, "mpi_version", sys.mpi_version, w);
  write_attr_str(group, "nccl_version", sys.nccl_version, w);
  write_attr_str(group, "cuda_version", sys.cuda_version, w);
  write_attr_str(group, "blas", sys.blas, w);
  write_attr_str(group, "link_emulation", sys.link_emulation, w);
  write_attr_str(group, "timer", sys.timer.empty() ? "unknown" : sys.timer, w);
  write_attr_str(group, "timer_requested", sys.requested_timer(), w);
  if (!sys.notes.empty()) write_attr_str(group, "notes", sys.notes, w);
  if (!sys.simulated.empty()) write_attr_str(group, "simulated", sys.simulated, w);
  if (!sys.hardware.empty()) write_attr_str(group, "hardware", sys.hardware, w);
  write_attr_str(group, "env", sys.env, w);
}

}  // namespace

void write_timer(hid_t file, const std::string& timer, const std::string& path) {
  Where w{path, "/system"};
  H5Id group(check_id(H5Gopen2(file, "system", H5P_DEFAULT), w, "opening group"), H5Gclose);
  write_attr_str(group, "timer", timer, w);
}

void write_header(hid_t file, const RunInfo& run, const SystemInfo& sys, const std::string& path) {
  Where w{path, "/"};
  write_attr_str(file, "schema", kSchema, w);
  write_attr_i32(file, "version", kSchemaVersionAllRanks, w);
  if (run.tuned) write_attr_i32(file, "tuned", 1, w);
  write_attr_str(file, "git_commit", run.git_commit, w);
  write_attr_str(file, "created_utc", run.created_utc, w);
  if (!run.run_id.empty()) write_attr_str(file, "run_id", run.run_id, w);
  write_attr_str(file, "command_line", run.command_line, w);
  write_attr_str(file, "config_yaml", run.config_yaml, w);
  write_system(file, sys, path);
  create_group(file, "cases", Where{path, "/cases"});
}

namespace {

void write_case_attrs(hid_t group, const CaseResult& c, const Where& w) {
  write_attr_i32(group, "iters", c.iters, w);
  write_attr_i32(group, "verified", c.verified, w);
  write_attr_f64(group, "max_abs_err", c.max_abs_err, w);
  if (!c.auto_slices.empty()) write_attr_str(group, "auto_slices", c.auto_slices, w);
}

// Iterations [from, iters) of a case's timings: where they start in its arrays.
const double* iteration_rows(const std::vector<double>& v, size_t per_iter, int from) {
  return v.data() + static_cast<size_t>(from) * per_iter;
}

}  // namespace

void write_case(hid_t cases_group, const CaseResult& c, const std::string& path) {
  check_case_shapes(c, path);
  Where w{path, "/cases/" + c.id};
  H5Id group = create_group(cases_group, c.id.c_str(), w);
  write_attr_str(group, "workload", c.workload, w);
  write_attr_str(group, "strategy", c.strategy, w);
  write_attr_i64(group, "batch", c.batch, w);
  write_attr_i64(group, "seq", c.seq, w);
  write_attr_i64(group, "hidden", c.hidden, w);
  write_attr_i64(group, "ffn", c.ffn, w);
  write_attr_i64(group, "heads", c.heads, w);
  // Only a case with experts records the MoE fields; a reader takes their absence as zeros.
  if (c.experts > 0) {
    for (const auto& [name, value] : {std::pair<const char*, int64_t>{"experts", c.experts},
                                      {"top_k", c.top_k},
                                      {"expert_ffn", c.expert_ffn},
                                      {"moe_seed", c.moe_seed}}) {
      write_attr_i64(group, name, value, w);
    }
    write_attr_f64(group, "moe_skew", c.moe_skew, w);
    write_attr_f64(group, "capacity_factor", c.capacity_factor, w);
  }
  write_attr_str(group, "dtype", c.dtype, w);
  write_attr_i32(group, "world", c.world, w);
  write_attr_i32(group, "warmup", c.warmup, w);
  write_attr_i32(group, "transfer_sms", c.transfer_sms, w);
  // Only a case that holds fewer ranks than its world says so, and makes the file version 2
  // (kSchemaVersion).
  if (c.stored > 0) {
    write_attr_i32(group, "stored_ranks", c.stored, w);
    H5Id file(check_id(H5Iget_file_id(cases_group), w, "finding the file"), H5Fclose);
    write_attr_i32(file, "version", kSchemaVersion, Where{path, "/"});
  }
  write_case_attrs(group, c, w);

  const hsize_t world = static_cast<hsize_t>(c.ranks());
  const hsize_t iters = static_cast<hsize_t>(c.iters);
  const hsize_t tasks = static_cast<hsize_t>(c.max_tasks);
  H5Id task_mem = task_mem_type(w);
  H5Id task_file = packed_copy(task_mem, w);
  write_dataset(group, "tasks", task_file, task_mem, {world, tasks}, c.tasks.data(), w);

  std::vector<int32_t> deps;
  deps.reserve(c.deps.size() * 3);
  for (const DepRecord& d : c.deps) deps.insert(deps.end(), {d.rank, d.task, d.on});
  write_dataset(group, "deps", H5T_STD_I32LE, H5T_NATIVE_INT32, {c.deps.size(), 3}, deps.data(), w);

  // The timings grow round by round (append_case).
  const std::vector<int32_t> rounds = c.rounds();
  write_growing_dataset(group, "round_iters", H5T_STD_I32LE, H5T_NATIVE_INT32, {rounds.size()},
                        rounds.data(), w);
  write_growing_dataset(group, "step_seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {iters, world},
                        c.step_seconds.data(), w);
  write_growing_dataset(group, "task_start", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                        {iters, world, tasks}, c.task_start.data(), w);
  write_growing_dataset(group, "task_end", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {iters, world, tasks},
                        c.task_end.data(), w);
  write_case_timers(group, c, w);
  write_case_hardware(group, c, w);
  write_case_moe_load(group, c, w);
}

void append_case(hid_t cases_group, const CaseResult& c, int from_iter, int from_round,
                 const std::string& path) {
  check_case_shapes(c, path);
  Where w{path, "/cases/" + c.id};
  H5Id group(check_id(H5Gopen2(cases_group, c.id.c_str(), H5P_DEFAULT), w, "opening group"),
             H5Gclose);
  write_case_attrs(group, c, w);
  const size_t world = static_cast<size_t>(c.ranks());
  const size_t per_iter = world * static_cast<size_t>(c.max_tasks);
  const hsize_t new_iters = static_cast<hsize_t>(c.iters - from_iter);
  const std::vector<int32_t> rounds = c.rounds();
  const hsize_t new_rounds = rounds.size() - static_cast<size_t>(from_round);
  append_to_dataset(group, "round_iters", H5T_NATIVE_INT32, new_rounds, rounds.data() + from_round,
                    w);
  append_to_dataset(group, "step_seconds", H5T_NATIVE_DOUBLE, new_iters,
                    iteration_rows(c.step_seconds, world, from_iter), w);
  append_to_dataset(group, "task_start", H5T_NATIVE_DOUBLE, new_iters,
                    iteration_rows(c.task_start, per_iter, from_iter), w);
  append_to_dataset(group, "task_end", H5T_NATIVE_DOUBLE, new_iters,
                    iteration_rows(c.task_end, per_iter, from_iter), w);
  append_case_timers(group, c, from_iter, w);
  append_case_hardware(group, c, from_iter, from_round, w);
}

void write_summary(hid_t file, const std::vector<CaseResult>& cases,
                   const std::vector<CaseStats>& stats, const std::string& path) {
  Where w{path, "/summary"};
  // Unlinking leaves the old table's bytes unused in the file; it is small and rewritten once
  // per case, so the waste stays far below the task arrays.
  if (H5Lexists(file, "summary", H5P_DEFAULT) > 0) {
    check(H5Ldelete(file, "summary", H5P_DEFAULT), w, "removing the old table");
  }
  const std::vector<Summary> summaries = summarize(cases, stats);
  std::vector<SummaryRow> rows;
  for (const Summary& s : summaries) rows.push_back(to_row(s));
  H5Id mem = summary_mem_type(w);
  H5Id packed = packed_copy(mem, w);
  write_dataset(file, "summary", packed, mem, {rows.size()}, rows.data(), w);
  H5Id dset(check_id(H5Dopen2(file, "summary", H5P_DEFAULT), w, "opening"), H5Dclose);
  write_report_columns(dset, mem, w);
}

}  // namespace h5io

}  // namespace fob
