// What a file records of how its transfers ran (issue 46): /system copy_engines and each case's
// transfer_sms, written and read back (through the journal and the HDF5 file), -1 in files from
// before them; the report's transport line; and compare's refusal of two measured files whose
// transports differ unless --across-transports, which lists the difference instead.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <sstream>
#include <string>
#include <vector>

#include "../common/cli_call.h"
#include "../common/temp_dir.h"
#include "compare_fixtures.h"
#include "fob/compare.h"
#include "fob/compare_history.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/table.h"
#include "results/case_codec.h"

namespace fob {
namespace {

using namespace compare_fixtures;  // NOLINT(google-build-using-namespace): the tests' fixtures

SystemInfo gpu_system(const std::string& transport, int copy_engines) {
  SystemInfo s;
  s.backend = "cuda";
  s.transport = transport;
  s.world_size = kWorld;
  s.devices = "NVIDIA H100 80GB HBM3 (0000:18:00.0),NVIDIA H100 80GB HBM3 (0000:2a:00.0)";
  s.link_emulation = "none";
  s.timer = "cuda events (stream order)";
  s.copy_engines = copy_engines;
  return s;
}

// Five rounds of five iterations around `level` seconds, its transfers on `sms` SMs.
CaseResult measured_case(const std::string& strategy, int32_t sms, double level, uint64_t seed) {
  CaseResult c = rounds_case(std::vector<double>(5, level), 5, 0.002, seed);
  c.id = strategy == "baseline" ? "0000" : "0001";
  c.strategy = strategy;
  c.transfer_sms = sms;
  return c;
}

ResultFile gpu_file(const std::string& transport, int copy_engines, std::vector<int32_t> sms) {
  ResultFile f;
  f.system = gpu_system(transport, copy_engines);
  f.cases.push_back(measured_case("baseline", sms.at(0), 10e-3, 1));
  if (sms.size() > 1) f.cases.push_back(measured_case("flash", sms.at(1), 8e-3, 2));
  return f;
}

std::string write_file(const TempDir& dir, const std::string& name, const ResultFile& f) {
  const std::string path = dir.file(name);
  ResultWriter writer(path, false, RunInfo{"abc", "2026-01-01T00:00:00Z", "fobench run", "a: 1\n"},
                      f.system);
  for (const CaseResult& c : f.cases) writer.add_case(c);
  writer.finish();
  return path;
}

std::string render(const ResultFile& file, const char* format) {
  std::ostringstream out;
  write_report(out, file, parse_table_format(format));
  return out.str();
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(TransferSms, BothFieldsRoundTripThroughTheFile) {
  TempDir dir;
  const std::string path = write_file(dir, "ce.h5", gpu_file("ce", 3, {0, 16}));
  const ResultFile back = read_results(path);
  EXPECT_EQ(back.system.copy_engines, 3);
  ASSERT_EQ(back.cases.size(), 2u);
  EXPECT_EQ(back.cases[0].transfer_sms, 0);
  EXPECT_EQ(back.cases[1].transfer_sms, 16);
}

TEST(TransferSms, TheJournalCodecCarriesBoth) {
  const ResultFile f = gpu_file("nccl", 7, {24});
  codec::Encoder e;
  codec::put_system(e, f.system);
  codec::put_case(e, f.cases[0]);
  codec::Decoder d(e.bytes(), "test");
  EXPECT_EQ(codec::get_system(d).copy_engines, 7);
  EXPECT_EQ(codec::get_case(d).transfer_sms, 24);
}

TEST(TransferSms, TheJournalCodecRefusesAbsurdValues) {
  SystemInfo sys = gpu_system("ce", kMaxDeviceUnits + 1);
  codec::Encoder e;
  codec::put_system(e, sys);
  codec::Decoder d(e.bytes(), "test");
  EXPECT_THROW(codec::get_system(d), InputError);

  CaseResult c = gpu_file("ce", 3, {0}).cases[0];
  c.transfer_sms = -2;
  codec::Encoder ec;
  codec::put_case(ec, c);
  codec::Decoder dc(ec.bytes(), "test");
  EXPECT_THROW(codec::get_case(dc), InputError);
}

TEST(TransferSms, FilesFromBeforeReadAsUnknown) {
  TempDir dir;
  const std::string path = write_file(dir, "old.h5", gpu_file("nccl", 3, {16}));
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Adelete_by_name(f, "system", "copy_engines", H5P_DEFAULT), 0);
    ASSERT_GE(H5Adelete_by_name(f, "cases/0000", "transfer_sms", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  const ResultFile back = read_results(path);
  EXPECT_EQ(back.system.copy_engines, -1);
  EXPECT_EQ(back.cases.at(0).transfer_sms, -1);
  EXPECT_EQ(back.system.transport, "nccl");  // the rest still reads
}

TEST(TransferSms, TheReportNamesTheTransportWithItsEnginesAndSms) {
  const std::string ce = render(gpu_file("ce", 3, {0, 0}), "md");
  EXPECT_TRUE(has(ce, "transport: ce (copy engines: 3; transfers take 0 SMs), world size: 2"))
      << ce;
  const std::string nccl = render(gpu_file("nccl", 3, {24, 16}), "md");
  EXPECT_TRUE(has(nccl, "transport: nccl (copy engines: 3; transfers take up to 24 SMs)")) << nccl;
  EXPECT_TRUE(has(render(gpu_file("nccl", 3, {24, 16}), "latex"), "copy engines: 3")) << nccl;

  // Copy engines known, SMs not (a case of an older run): only what is known.
  EXPECT_EQ(transport_text(gpu_file("nccl", 2, {-1})), "nccl (copy engines: 2)");
}

TEST(TransferSms, ScriptsGetEachCasesSmsAndTheFilesCounts) {
  const ResultFile f = gpu_file("nccl", 3, {24, 16});
  const std::string csv = render(f, "csv");
  EXPECT_TRUE(has(csv, "# copy_engines: 3\n")) << csv;
  EXPECT_TRUE(has(csv, "# transfer_sms: 24\n")) << csv;
  EXPECT_TRUE(has(csv, "transfer_sms")) << csv;
  const std::string json = render(f, "json");
  EXPECT_TRUE(has(json, "\"copy_engines\": 3")) << json;
  EXPECT_TRUE(has(json, "\"transfer_sms\": 16")) << json;
}

// A CPU file knows neither: its report says nothing of them.
TEST(TransferSms, CpuFilesSayNothingOfThem) {
  ResultFile f = gpu_file("mpi", -1, {-1});
  f.system.backend = "cpu";
  const std::string md = render(f, "md");
  EXPECT_TRUE(has(md, "transport: mpi, world size: 2")) << md;
  EXPECT_FALSE(has(md, "copy engines")) << md;
  const std::string csv = render(f, "csv");
  EXPECT_FALSE(has(csv, "# copy_engines")) << csv;
  EXPECT_FALSE(has(csv, "# transfer_sms")) << csv;
  // The case's column holds the file's -1, as the file's readers give it.
  EXPECT_TRUE(has(render(f, "json"), "\"transfer_sms\": -1"));
}

TEST(TransferSms, CompareRefusesMeasuredFilesOfDifferentTransports) {
  const SystemInfo nccl = gpu_system("nccl", 3), ce = gpu_system("ce", 3);
  const std::string why = incomparable_transports(nccl, ce);
  EXPECT_TRUE(has(why, "BASE moved its data with transport nccl and NEW with ce")) << why;
  EXPECT_EQ(incomparable_transports(nccl, nccl), "");

  // With the flag the difference is one of the settings compare warns about.
  const auto diffs = setting_differences(nccl, ce);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].setting, "transport");
  EXPECT_EQ(diffs[0].base, "nccl");
  EXPECT_EQ(diffs[0].next, "ce");

  // A simulated file is left to the rules for predictions.
  SystemInfo sim = gpu_system("sim (ce)", -1);
  sim.backend = "sim";
  sim.simulated = "machine.yaml";
  EXPECT_EQ(incomparable_transports(nccl, sim), "");
  for (const SettingDifference& d : setting_differences(nccl, sim)) {
    EXPECT_NE(d.setting, "transport");
  }
}

TEST(TransferSms, PooledRunsMustShareTheirTransport) {
  try {
    pool_results({gpu_file("nccl", 3, {16}), gpu_file("ce", 3, {0})}, {"a", "b"});
    ADD_FAILURE() << "pooled runs of two transports";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "its transport is 'ce'")) << e.what();
  }
}

TEST(TransferSms, ACommandLineCompareExitsTwoUnlessAskedAcrossTransports) {
  TempDir dir;
  const std::string base = write_file(dir, "nccl.h5", gpu_file("nccl", 3, {16}));
  const std::string next = write_file(dir, "ce.h5", gpu_file("ce", 3, {0}));
  const CliOutcome refused = call_cli({"compare", base, next}, dir.file("refused.err"));
  EXPECT_EQ(refused.code, kExitBadInput) << refused.err;
  EXPECT_TRUE(has(refused.err, "transport nccl and NEW with ce")) << refused.err;
  EXPECT_TRUE(has(refused.err, "--across-transports")) << refused.err;

  const CliOutcome across = call_cli(
      {"compare", base, next, "--across-transports", "--format", "json"}, dir.file("across.err"));
  EXPECT_NE(across.code, kExitBadInput) << across.err;
  EXPECT_TRUE(has(across.err, "the transport differs (BASE: nccl; NEW: ce)")) << across.err;
}

TEST(TransferSms, AResumeOnAnotherCountOfCopyEnginesIsRefused) {
  ResultFile existing;
  existing.system = gpu_system("ce", 3);
  existing.run.config_yaml = "a: 1\n";
  RunInfo run;
  run.config_yaml = "a: 1\n";
  EXPECT_EQ(resume_mismatch(existing, run, gpu_system("ce", 3)), "");
  const std::string why = resume_mismatch(existing, run, gpu_system("ce", 2));
  EXPECT_TRUE(has(why, "copy engines")) << why;
}

}  // namespace
}  // namespace fob
