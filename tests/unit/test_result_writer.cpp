// ResultWriter's promises about the file on disk: one writer at a time, and a failed flush
// never damages what an earlier flush wrote.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <string>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

namespace fs = std::filesystem;

SystemInfo system_info() {
  return small_system("cpu", "mpi", 1, "host steady_clock");
}

// One rank, one task, `iters` timed iterations: a case whose size grows with `iters`.
CaseResult one_task_case(const std::string& id, int iters) {
  CaseResult c = small_case(id, 1);
  c.iters = iters;
  for (int i = 0; i < iters; ++i) {
    c.step_seconds.push_back(1e-3 + i * 1e-6);
    c.task_start.push_back(0);
    c.task_end.push_back(1e-3 + i * 1e-6);
  }
  return c;
}

// Holds the process's file size limit (RLIMIT_FSIZE) at `bytes` while it lives; writes past it
// fail with EFBIG, as on a full disk, with SIGXFSZ ignored.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
};

TEST(ResultWriter, FailedFlushKeepsWhatWasFlushedBefore) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  ResultWriter writer(path, false, RunInfo{}, system_info());
  writer.add_case(one_task_case("0000", 3));
  writer.add_case(one_task_case("0001", 3));
  const uintmax_t flushed = fs::file_size(path + ".partial");
  {
    const FileSizeLimit limit(flushed + 4096);
    try {
      writer.add_case(one_task_case("0002", 20000));  // ~500 KB: cannot fit
      FAIL() << "a write past the limit succeeded";
    } catch (const RuntimeFault& e) {
      EXPECT_NE(std::string(e.what()).find("2 case(s) flushed before are kept"), std::string::npos)
          << e.what();
    }
  }
  const ResultFile file = read_results(path + ".partial");
  ASSERT_EQ(file.cases.size(), 2u);
  EXPECT_EQ(file.cases[1].id, "0001");
  EXPECT_FALSE(fs::exists(path + ".partial.tmp"));
}

TEST(ResultWriter, SecondWriterIsRefusedWhateverForceSays) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  ResultWriter first(path, false, RunInfo{}, system_info());
  first.add_case(one_task_case("0000", 3));
  const uintmax_t size = fs::file_size(path + ".partial");
  std::string refusal = "a second writer was let in";
  try {
    const ResultWriter second(path, true, RunInfo{}, system_info());
  } catch (const InputError& e) {
    refusal = e.what();
  }
  EXPECT_NE(refusal.find("is writing it"), std::string::npos) << refusal;
  EXPECT_THROW(ResultWriter{path + ".partial"}, InputError);  // --resume of a live file
  EXPECT_EQ(fs::file_size(path + ".partial"), size);
  first.add_case(one_task_case("0001", 3));
  first.finish();
  EXPECT_EQ(read_results(path).cases.size(), 2u);
  EXPECT_FALSE(fs::exists(path + ".lock"));
  // Once the first has finished, --force may replace its file.
  ResultWriter third(path, true, RunInfo{}, system_info());
  third.finish();
  EXPECT_EQ(read_results(path).cases.size(), 0u);
}

TEST(ResultWriter, OutputThatCannotBeAFileIsBadInput) {
  TempDir dir;
  fs::create_directories(dir.file("a_dir"));
  EXPECT_THROW(ResultWriter(dir.file("a_dir"), true, RunInfo{}, system_info()), InputError);
  EXPECT_THROW(ResultWriter(dir.file("missing/run.h5"), true, RunInfo{}, system_info()),
               InputError);
  EXPECT_THROW(ResultWriter("/dev/null", true, RunInfo{}, system_info()), InputError);
}

}  // namespace
}  // namespace fob
