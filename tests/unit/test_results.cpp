// Results file round trip, its refusal rules, the section-3 metrics and the report formats.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "../common/temp_dir.h"
#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/types.h"
#include "report/report_columns.h"

namespace fob {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kWorld = 2;
constexpr int kIters = 3;

// A case with one shape (ag_gemm 2x8x4x16 fp32, N=2, 3 iterations) and the step time of every
// (iteration, rank); rank 1 is the slowest unless a test says otherwise.
CaseResult make_case(const std::string& id, const std::string& strategy,
                     const std::vector<double>& slowest_steps) {
  CaseResult c = case_result({.id = id,
                              .strategy = strategy,
                              .world = kWorld,
                              .iters = kIters,
                              .warmup = 1,
                              .verified = 1});
  c.max_abs_err = 0;
  for (int i = 0; i < kIters; ++i) {
    c.step_seconds.push_back(slowest_steps[i] * 0.9);  // rank 0
    c.step_seconds.push_back(slowest_steps[i]);        // rank 1
  }
  return c;
}

TaskRecord task(int rank, int id, StreamId stream, TaskKind kind, int peer, int64_t bytes,
                double flops, const std::string& label) {
  return TaskRecord{
      rank, id, static_cast<int8_t>(stream), static_cast<int8_t>(kind), peer, bytes, flops, label};
}

// Per rank: gemm (compute), send (comm), gemm (compute). Rank 0's GEMMs take 3.0 ms each,
// rank 1's 3.1 ms each, so the slowest compute-stream busy time is 6.2 ms in every iteration.
void add_flash_tasks(CaseResult& c) {
  c.max_tasks = 3;
  for (int r = 0; r < kWorld; ++r) {
    c.tasks.push_back(task(r, 0, StreamId::compute, TaskKind::gemm, -1, 0, 1e9, "gemm step 0"));
    c.tasks.push_back(
        task(r, 1, StreamId::comm, TaskKind::send, (r + 1) % kWorld, 1000, 0, "send to next"));
    c.tasks.push_back(task(r, 2, StreamId::compute, TaskKind::gemm, -1, 0, 1e9, "gemm step 1"));
    c.deps.push_back(DepRecord{r, 2, 0});
    c.deps.push_back(DepRecord{r, 2, 1});
  }
  for (int i = 0; i < kIters; ++i) {
    for (int r = 0; r < kWorld; ++r) {
      const double g = r == 0 ? 3.0e-3 : 3.1e-3;
      c.task_start.insert(c.task_start.end(), {0.0, 0.0, g});
      c.task_end.insert(c.task_end.end(), {g, 1.5e-3, 2 * g});
    }
  }
}

// Rank 0 has two GEMMs, rank 1 one and a padding row: the NaN padding must survive.
void add_padded_tasks(CaseResult& c) {
  c.max_tasks = 2;
  c.tasks.push_back(task(0, 0, StreamId::compute, TaskKind::gemm, -1, 0, 5e8, "gemm a"));
  c.tasks.push_back(task(0, 1, StreamId::compute, TaskKind::gemm, -1, 0, 5e8, "gemm b"));
  c.tasks.push_back(task(1, 0, StreamId::compute, TaskKind::gemm, -1, 0, 1e9, "gemm"));
  c.tasks.push_back(TaskRecord{1, -1, 0, 0, -1, 0, 0, ""});
  c.deps.push_back(DepRecord{0, 1, 0});
  for (int i = 0; i < kIters; ++i) {
    c.task_start.insert(c.task_start.end(), {0.0, 2e-3, 0.0, kNaN});
    c.task_end.insert(c.task_end.end(), {2e-3, 4e-3, 5e-3, kNaN});
  }
}

// Rank 0 sends 1000 bytes and receives (0 sent bytes); no deps at all.
void add_comm_tasks(CaseResult& c) {
  c.max_tasks = 2;
  for (int r = 0; r < kWorld; ++r) {
    const int peer = (r + 1) % kWorld;
    c.tasks.push_back(task(r, 0, StreamId::comm, TaskKind::send, peer, 1000, 0, "send"));
    c.tasks.push_back(task(r, 1, StreamId::comm, TaskKind::recv, -1, 0, 0, "recv"));
  }
  for (int i = 0; i < kIters; ++i) {
    for (int r = 0; r < kWorld; ++r) {
      c.task_start.insert(c.task_start.end(), {0.0, 0.0});
      c.task_end.insert(c.task_end.end(), {3e-3, 3e-3});
    }
  }
}

// Slowest-rank medians: baseline 11 ms, compute_only 6 ms, comm_only 4 ms, flash 7.2 ms.
std::vector<CaseResult> sample_cases() {
  CaseResult base = make_case("0000", "baseline", {10e-3, 12e-3, 11e-3});
  add_flash_tasks(base);
  CaseResult comp = make_case("0001", "compute_only", {6e-3, 6.5e-3, 6e-3});
  add_padded_tasks(comp);
  CaseResult comm = make_case("0002", "comm_only", {4e-3, 5e-3, 4e-3});
  add_comm_tasks(comm);
  CaseResult flash = make_case("0003", "flash", {7.0e-3, 7.5e-3, 7.2e-3});
  add_flash_tasks(flash);
  flash.verified = 0;
  flash.max_abs_err = 0.5;
  return {base, comp, comm, flash};
}

RunInfo sample_run() {
  return RunInfo{"abc1234", "2025-01-02T03:04:05Z", "fobench run --strategies flash",
                 "workload: ag_gemm\nbatch: 2\n"};
}

SystemInfo sample_system() {
  SystemInfo s;
  s.backend = "cpu";
  s.transport = "mpi";
  s.world_size = kWorld;
  s.hostnames = "node1,node1";
  s.devices = "cpu0,cpu1";
  s.mpi_version = "Open MPI v4.1.4";
  s.nccl_version = "";
  s.cuda_version = "";
  s.blas = "OpenBLAS 0.3.21";
  s.link_emulation = "emulated: 10 Gbit/s, 5 us latency";
  s.timer = "host steady_clock";
  s.env = "OMP_NUM_THREADS=1\nOPENBLAS_NUM_THREADS=1";
  return s;
}

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

void expect_same_doubles(const std::vector<double>& a, const std::vector<double>& b,
                         const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same(a[i], b[i])) << what << "[" << i << "]";
}

void expect_same_case(const CaseResult& a, const CaseResult& b) {
  SCOPED_TRACE("case " + a.id);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.workload, b.workload);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.ffn, b.ffn);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.world, b.world);
  EXPECT_EQ(a.iters, b.iters);
  EXPECT_EQ(a.warmup, b.warmup);
  EXPECT_EQ(a.verified, b.verified);
  EXPECT_EQ(a.max_abs_err, b.max_abs_err);
  EXPECT_EQ(a.max_tasks, b.max_tasks);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    const TaskRecord& x = a.tasks[i];
    const TaskRecord& y = b.tasks[i];
    EXPECT_EQ(x.rank, y.rank) << i;
    EXPECT_EQ(x.task, y.task) << i;
    EXPECT_EQ(x.stream, y.stream) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.peer, y.peer) << i;
    EXPECT_EQ(x.bytes, y.bytes) << i;
    EXPECT_EQ(x.flops, y.flops) << i;
    EXPECT_EQ(x.label, y.label) << i;
  }
  ASSERT_EQ(a.deps.size(), b.deps.size());
  for (size_t i = 0; i < a.deps.size(); ++i) {
    EXPECT_EQ(a.deps[i].rank, b.deps[i].rank);
    EXPECT_EQ(a.deps[i].task, b.deps[i].task);
    EXPECT_EQ(a.deps[i].on, b.deps[i].on);
  }
  expect_same_doubles(a.step_seconds, b.step_seconds, "step_seconds");
  expect_same_doubles(a.task_start, b.task_start, "task_start");
  expect_same_doubles(a.task_end, b.task_end, "task_end");
}

void write_file(const std::string& path, bool force, const std::vector<CaseResult>& cases) {
  ResultWriter writer(path, force, sample_run(), sample_system());
  for (const CaseResult& c : cases) writer.add_case(c);
  writer.finish();
}

TEST(CaseResult, StepIsTheSlowestRank) {
  CaseResult c = make_case("0", "flash", {1.0, 3.0, 2.0});
  c.step_seconds[4] = 5.0;  // iteration 2, rank 0 now slower than rank 1
  EXPECT_EQ(c.step(0), 1.0);
  EXPECT_EQ(c.step(1), 3.0);
  EXPECT_EQ(c.step(2), 5.0);
}

TEST(ResultFile, RoundTripKeepsEveryField) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  const std::vector<CaseResult> cases = sample_cases();
  {
    ResultWriter writer(path, false, sample_run(), sample_system());
    EXPECT_EQ(writer.final_path(), path);
    EXPECT_EQ(writer.partial_path(), path + ".partial");
    // Added out of order: the reader sorts by id.
    for (int i : {2, 0, 3, 1}) writer.add_case(cases[i]);
    EXPECT_TRUE(fs::exists(path + ".partial"));
    EXPECT_FALSE(fs::exists(path));
    writer.finish();
  }
  EXPECT_FALSE(fs::exists(path + ".partial"));
  ASSERT_TRUE(fs::exists(path));

  const ResultFile file = read_results(path);
  const RunInfo run = sample_run();
  EXPECT_EQ(file.run.git_commit, run.git_commit);
  EXPECT_EQ(file.run.created_utc, run.created_utc);
  EXPECT_EQ(file.run.command_line, run.command_line);
  EXPECT_EQ(file.run.config_yaml, run.config_yaml);
  const SystemInfo sys = sample_system();
  EXPECT_EQ(file.system.backend, sys.backend);
  EXPECT_EQ(file.system.transport, sys.transport);
  EXPECT_EQ(file.system.world_size, sys.world_size);
  EXPECT_EQ(file.system.hostnames, sys.hostnames);
  EXPECT_EQ(file.system.devices, sys.devices);
  EXPECT_EQ(file.system.mpi_version, sys.mpi_version);
  EXPECT_EQ(file.system.nccl_version, sys.nccl_version);
  EXPECT_EQ(file.system.cuda_version, sys.cuda_version);
  EXPECT_EQ(file.system.blas, sys.blas);
  EXPECT_EQ(file.system.link_emulation, sys.link_emulation);
  EXPECT_EQ(file.system.timer, sys.timer);
  EXPECT_EQ(file.system.env, sys.env);
  ASSERT_EQ(file.cases.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) expect_same_case(cases[i], file.cases[i]);
}

TEST(ResultFile, InterruptedRunLeavesReadablePartial) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  const std::vector<CaseResult> cases = sample_cases();
  {
    ResultWriter writer(path, false, sample_run(), sample_system());
    writer.add_case(cases[0]);
    writer.add_case(cases[1]);
  }  // destroyed without finish(), as when a sweep is interrupted
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(fs::exists(path + ".partial"));
  const ResultFile file = read_results(path + ".partial");
  ASSERT_EQ(file.cases.size(), 2u);
  expect_same_case(cases[1], file.cases[1]);

  // The leftover is data: a new run refuses to clobber it without --force.
  EXPECT_THROW(ResultWriter(path, false, sample_run(), sample_system()), InputError);
  EXPECT_NO_THROW(write_file(path, true, {cases[0]}));
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

TEST(ResultFile, ExistingFileNeedsForce) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  const std::vector<CaseResult> cases = sample_cases();
  write_file(path, false, cases);
  try {
    write_file(path, false, cases);
    FAIL() << "overwrote without --force";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_results(path).cases.size(), cases.size());  // untouched
  write_file(path, true, {cases[3]});
  const ResultFile file = read_results(path);
  ASSERT_EQ(file.cases.size(), 1u);
  expect_same_case(cases[3], file.cases[0]);
}

TEST(ResultFile, SummaryTableHasOneRowPerCase) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  write_file(path, false, sample_cases());
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, "summary", H5P_DEFAULT);
  ASSERT_GE(d, 0);
  hid_t space = H5Dget_space(d);
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(space, &rows, nullptr);
  EXPECT_EQ(rows, 4u);
  hid_t type = H5Dget_type(d);
  EXPECT_GE(H5Tget_member_index(type, "overlap_pct"), 0);
  EXPECT_GE(H5Tget_member_index(type, "busbw"), 0);
  EXPECT_GE(H5Tget_member_index(type, "concurrency"), 0);
  // Every report column, named with the field it shows, so that readers of the file alone give
  // the report's columns.
  hid_t attr = H5Aopen(d, "report_columns", H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  hid_t attr_space = H5Aget_space(attr);
  hsize_t entries = 0;
  H5Sget_simple_extent_dims(attr_space, &entries, nullptr);
  EXPECT_EQ(entries, report_columns().size());
  for (const ReportColumn& c : report_columns()) {
    EXPECT_GE(H5Tget_member_index(type, c.field), 0) << c.field;
  }
  H5Sclose(attr_space);
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
}

TEST(ResultFile, RejectsWhatIsNotOurs) {
  TempDir dir;
  EXPECT_THROW(read_results(dir.file("missing.h5")), InputError);

  const std::string text = dir.file("text.h5");
  std::ofstream(text) << "not an HDF5 file\n";
  try {
    read_results(text);
    FAIL() << "read a text file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '" + text + "' as HDF5"), std::string::npos)
        << e.what();
  }

  // A valid HDF5 file without our schema attribute.
  const std::string foreign = dir.file("foreign.h5");
  H5Fclose(H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  try {
    read_results(foreign);
    FAIL() << "read a foreign file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a fobench results file"), std::string::npos)
        << e.what();
  }
}

TEST(ResultFile, RejectsNewerSchemaVersion) {
  TempDir dir;
  const std::string path = dir.file("future.h5");
  {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t scalar = H5Screate(H5S_SCALAR);
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    hid_t a = H5Acreate2(f, "schema", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const char* schema = "fobench/1";
    H5Awrite(a, str, &schema);
    H5Aclose(a);
    a = H5Acreate2(f, "version", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const int version = 99;
    H5Awrite(a, H5T_NATIVE_INT, &version);
    H5Aclose(a);
    H5Tclose(str);
    H5Sclose(scalar);
    H5Fclose(f);
  }
  try {
    read_results(path);
    FAIL() << "read a newer schema";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99 is newer than this fobench reads (2)"),
              std::string::npos)
        << e.what();
  }
}

const Summary& by_strategy(const std::vector<Summary>& rows, const std::string& strategy) {
  for (const Summary& s : rows) {
    if (s.strategy == strategy) return s;
  }
  throw std::runtime_error("no " + strategy);
}

TEST(Metrics, SectionThreeByHand) {
  const std::vector<Summary> rows = summarize(sample_cases());
  ASSERT_EQ(rows.size(), 4u);
  const double eps = 1e-12;

  const Summary& flash = by_strategy(rows, "flash");
  EXPECT_EQ(flash.case_id, "0003");
  EXPECT_EQ(flash.verified, 0);
  EXPECT_NEAR(flash.t_median, 7.2e-3, eps);
  EXPECT_NEAR(flash.t_min, 7.0e-3, eps);
  EXPECT_NEAR(flash.t_p90, 7.2e-3 + 0.8 * 0.3e-3, eps);  // linear interpolation
  EXPECT_NEAR(flash.t_comp, 6e-3, eps);
  EXPECT_NEAR(flash.t_comm, 4e-3, eps);
  EXPECT_NEAR(flash.t_lb, 6e-3, eps);
  EXPECT_NEAR(flash.exposed_comm, 1.2e-3, eps);
  EXPECT_NEAR(flash.speedup, 11.0 / 7.2, 1e-9);
  EXPECT_NEAR(flash.ideal_speedup, 11.0 / 6.0, 1e-9);
  EXPECT_NEAR(flash.comm_reduction, 1 - 1.2 / 5.0, 1e-9);  // baseline exposes 5 ms
  EXPECT_NEAR(flash.e2e_reduction, 1 - 7.2 / 11.0, 1e-9);
  EXPECT_NEAR(flash.overlap_efficiency, 3.8 / 5.0, 1e-9);
  EXPECT_NEAR(flash.hidden_frac, 1 - 1.2 / 4.0, 1e-9);
  EXPECT_NEAR(flash.overlap_pct, 100 * (4.0 + 6.0 - 7.2) / 4.0, 1e-7);
  // Busy times alike: compute_only's slowest rank kept its compute stream busy 5 ms.
  EXPECT_NEAR(flash.slicing_penalty, 6.2e-3 - 5e-3, eps);
  EXPECT_NEAR(by_strategy(rows, "compute_only").slicing_penalty, 0.0, eps);
  EXPECT_NEAR(flash.tflops, 2e9 / 7.2e-3 / 1e12, 1e-9);
  EXPECT_TRUE(std::isnan(flash.algbw));
  EXPECT_TRUE(std::isnan(flash.busbw));
  const double mean = (7.0 + 7.5 + 7.2) / 3 * 1e-3;
  const double var =
      (std::pow(7.0e-3 - mean, 2) + std::pow(7.5e-3 - mean, 2) + std::pow(7.2e-3 - mean, 2)) / 2;
  EXPECT_NEAR(flash.t_cv, std::sqrt(var) / mean, 1e-9);

  const Summary& base = by_strategy(rows, "baseline");
  EXPECT_NEAR(base.t_median, 11e-3, eps);
  EXPECT_NEAR(base.speedup, 1.0, eps);
  EXPECT_NEAR(base.comm_reduction, 0.0, eps);
  EXPECT_NEAR(base.overlap_pct, 0.0, eps);  // 4 + 6 - 11 < 0, clamped

  // nccl-tests: S = 1000 B * N / (N - 1) = 2000 B over 4 ms.
  const Summary& comm = by_strategy(rows, "comm_only");
  EXPECT_NEAR(comm.t_median, 4e-3, eps);
  EXPECT_NEAR(comm.algbw, 2000 / 4e-3 / 1e9, 1e-12);
  EXPECT_NEAR(comm.busbw, 2000 / 4e-3 / 1e9 / 2, 1e-12);
  EXPECT_TRUE(std::isnan(comm.speedup));

  const Summary& comp = by_strategy(rows, "compute_only");
  EXPECT_NEAR(comp.t_median, 6e-3, eps);
  EXPECT_EQ(comp.exposed_comm, 0.0);
  EXPECT_TRUE(std::isnan(comp.busbw));
}

TEST(Metrics, MissingReferencesGiveNaN) {
  std::vector<CaseResult> cases = sample_cases();
  const std::vector<Summary> rows = summarize({cases[3]});  // flash alone
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].t_median, 7.2e-3, 1e-12);
  EXPECT_TRUE(std::isnan(rows[0].t_comp));
  EXPECT_TRUE(std::isnan(rows[0].speedup));
  EXPECT_TRUE(std::isnan(rows[0].overlap_pct));
  EXPECT_TRUE(std::isnan(rows[0].comm_reduction));

  // A reference of another shape does not count.
  cases[1].hidden = 8;
  EXPECT_TRUE(std::isnan(by_strategy(summarize(cases), "flash").t_comp));
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(line);
  while (std::getline(in, item, sep)) out.push_back(item);
  if (!line.empty() && line.back() == sep) out.push_back("");
  return out;
}

std::string render(const ResultFile& file, TableFormat format) {
  std::ostringstream out;
  write_report(out, file, format);
  return out.str();
}

ResultFile sample_file() {
  return ResultFile{sample_run(), sample_system(), sample_cases(), {}};
}

TEST(Report, CsvAndJsonCarryTheSameNumbers) {
  const ResultFile file = sample_file();
  const std::string csv = render(file, parse_table_format("csv"));
  const std::string json = render(file, parse_table_format("json"));

  std::istringstream lines(csv);
  std::string line;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) continue;
    if (header.empty()) {
      header = split(line, ',');
    } else {
      rows.push_back(split(line, ','));
    }
  }
  ASSERT_EQ(header.size(), report_columns().size());
  // One name per column: the metric "hidden" once shadowed the shape's hidden in JSON.
  std::vector<std::string> names = header;
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_EQ(header.front(), "case_id");
  EXPECT_EQ(header.back(), "doubts");  // new columns are appended, never inserted
  ASSERT_EQ(rows.size(), 4u);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    ADD_FAILURE() << "no column " << name;
    return size_t{0};
  };
  const size_t t_ms = column("t_ms");
  const size_t busbw = column("busbw_gbps");
  const size_t verified = column("verified");

  // The JSON's t_ms values, in row order.
  std::vector<std::string> json_t;
  for (size_t at = json.find("\"t_ms\": "); at != std::string::npos;
       at = json.find("\"t_ms\": ", at + 1)) {
    const size_t start = at + 8;
    json_t.push_back(json.substr(start, json.find_first_of(",}", start) - start));
  }
  ASSERT_EQ(json_t.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), header.size()) << csv;
    EXPECT_EQ(rows[i][t_ms], json_t[i]);
  }
  EXPECT_EQ(std::stod(rows[3][t_ms]), 7.2);
  EXPECT_EQ(rows[0][busbw], "");         // baseline: not a comm_only case
  EXPECT_FALSE(rows[2][busbw].empty());  // comm_only
  EXPECT_EQ(rows[3][verified], "0");
  EXPECT_NE(json.find("\"busbw_gbps\": null"), std::string::npos);
  EXPECT_NE(json.find("\"verified\": false"), std::string::npos);
  // Multi-line values are escaped, not broken across lines.
  EXPECT_NE(json.find("workload: ag_gemm\\nbatch: 2\\n"), std::string::npos);
  EXPECT_NE(csv.find("# link_emulation: emulated: 10 Gbit/s, 5 us latency"), std::string::npos);
}

TEST(Report, MarkdownStatesItsDefinitions) {
  const std::string md = render(sample_file(), parse_table_format("md"));
  EXPECT_EQ(md.rfind("# fobench report", 0), 0u);
  EXPECT_NE(md.find("EMULATED link: 10 Gbit/s, 5 us latency"), std::string::npos);
  EXPECT_NE(md.find("machine: node1\n"), std::string::npos);  // deduplicated
  EXPECT_NE(md.find("denominator min(T_comm, T_comp)"), std::string::npos);
  EXPECT_NE(md.find("slowest rank's step time"), std::string::npos);
  EXPECT_NE(md.find("## ag_gemm b=2 s=8 d=4 f=16 fp32 N=2"), std::string::npos);
  EXPECT_NE(md.find("| flash | 7.200 | 3.5 | 6.000 | 4.000 | 6.000 | 1.200 | 76.0 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| FAIL |"), std::string::npos);
}

TEST(Report, ParseFormat) {
  EXPECT_STREQ(parse_table_format("md")->name, "md");
  EXPECT_STREQ(parse_table_format("csv")->name, "csv");
  EXPECT_STREQ(parse_table_format("json")->name, "json");
  try {
    parse_table_format("xml");
    FAIL() << "accepted xml";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--format"), std::string::npos) << msg;
    EXPECT_NE(msg.find("xml"), std::string::npos) << msg;
    EXPECT_NE(msg.find("md, csv, json"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fob
