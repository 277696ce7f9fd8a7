// The /system `timer` attribute: written and read back, reported as unknown for files that
// predate it, printed in every report format's header, and a difference between two files is
// one of the settings `fobench compare` warns about.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "../common/temp_dir.h"
#include "fob/compare.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"

namespace fob {
namespace {

namespace fs = std::filesystem;

SystemInfo system_with(const std::string& timer) {
  SystemInfo s;
  s.backend = "cpu";
  s.transport = "mpi";
  s.world_size = 1;
  s.link_emulation = "none";
  s.timer = timer;
  return s;
}

void write_empty_file(const std::string& path, const SystemInfo& sys) {
  ResultWriter writer(path, false, RunInfo{}, sys);
  writer.finish();
}

TEST(Timer, RoundTripsThroughTheFile) {
  TempDir dir;
  const std::string path = dir.file("t.h5");
  write_empty_file(path, system_with("cuda events (stream order)"));
  EXPECT_EQ(read_results(path).system.timer, "cuda events (stream order)");
}

TEST(Timer, FilesWithoutTheAttributeReadAsUnknown) {
  TempDir dir;
  const std::string path = dir.file("old.h5");
  write_empty_file(path, system_with("host steady_clock"));
  // Remove the attribute, as in a file written before it existed.
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t g = H5Gopen2(f, "system", H5P_DEFAULT);
  ASSERT_GE(g, 0);
  ASSERT_GE(H5Adelete(g, "timer"), 0);
  H5Gclose(g);
  H5Fclose(f);
  const ResultFile file = read_results(path);
  EXPECT_EQ(file.system.timer, kTimerUnknown);
  EXPECT_EQ(file.system.backend, "cpu");  // the rest still reads
}

TEST(Timer, EveryTableFormatNamesIt) {
  ResultFile file;
  file.system = system_with("host steady_clock");
  auto render = [&](TableFormat f) {
    std::ostringstream out;
    write_report(out, file, f);
    return out.str();
  };
  for (const TableFormat format : all_table_formats()) {
    EXPECT_NE(render(format).find("host steady_clock"), std::string::npos) << format->name;
  }
  EXPECT_NE(render(parse_table_format("md")).find("- timer: host steady_clock\n"),
            std::string::npos);
  EXPECT_NE(render(parse_table_format("csv")).find("# timer: host steady_clock\n"),
            std::string::npos);
  EXPECT_NE(render(parse_table_format("json")).find("\"timer\": \"host steady_clock\""),
            std::string::npos);
  EXPECT_NE(render(parse_table_format("latex")).find("% timer: host steady_clock\n"),
            std::string::npos);
}

TEST(Timer, CompareWarnsWhenTheTimersDiffer) {
  const SystemInfo host = system_with("host steady_clock");
  EXPECT_TRUE(setting_differences(host, host).empty());

  const SystemInfo cuda = system_with("cuda events (stream order)");
  const auto diffs = setting_differences(host, cuda);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].setting, "timer");
  EXPECT_EQ(diffs[0].base, "host steady_clock");
  EXPECT_EQ(diffs[0].next, "cuda events (stream order)");
  EXPECT_NE(diffs[0].consequence.find("different clocks"), std::string::npos);

  // An old file's timer is unknown: that is a difference, not a match.
  EXPECT_EQ(setting_differences(system_with(kTimerUnknown), host).size(), 1u);

  // Both settings differ: the link comes first, then the timer.
  SystemInfo emulated = cuda;
  emulated.link_emulation = "emulated: 1 Gbit/s, 0 us latency";
  const auto both = setting_differences(host, emulated);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].setting, "link emulation");
  EXPECT_EQ(both[1].setting, "timer");
}

}  // namespace
}  // namespace fob

namespace fob {
namespace {

TEST(Timer, CompareRefusesTheCudaModelAgainstAGpu) {
  SystemInfo gpu = system_with("cupti kernel activity");
  gpu.devices = "NVIDIA H200 (GPU 0, bus 0000:19:00.0)";
  SystemInfo model = system_with(
      "cupti kernel activity on the cuda model (CPU): CPU threads, "
      "not GPU times");
  model.devices = std::string(kCudaModelDevice) + " (GPU 0, bus 0000:01:00.0)";
  EXPECT_TRUE(model.on_cuda_model());
  EXPECT_FALSE(gpu.on_cuda_model());
  EXPECT_EQ(incomparable_machines(gpu, gpu), "");
  EXPECT_EQ(incomparable_machines(model, model), "");
  const std::string why = incomparable_machines(gpu, model);
  EXPECT_NE(why.find("NEW ran on the cuda model (CPU)"), std::string::npos) << why;
  EXPECT_NE(why.find("not GPU times"), std::string::npos) << why;
  EXPECT_NE(why.find("H200"), std::string::npos) << why;
  EXPECT_NE(incomparable_machines(model, gpu).find("BASE ran on"), std::string::npos);
}

}  // namespace
}  // namespace fob
