// The journal NAME.h5.partial: a flush appends what is new and nothing else, a torn or damaged
// tail is left out and cut off by a resume, rounds add up to the case they extend, and hostile
// bytes are refused without a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/types.h"
#include "io/case_codec.h"
#include "io/journal.h"

namespace fob {
namespace {

namespace fs = std::filesystem;

SystemInfo system_info() {
  return small_system("cpu", "mpi", 2, "host steady_clock");
}

// Two ranks, one task each, `iters` iterations valued by `seed` so that cases differ.
CaseResult measured(const std::string& id, int iters, double seed = 1) {
  CaseResult c = small_case(id, 2);
  c.iters = iters;
  for (int i = 0; i < iters * 2; ++i) {
    c.step_seconds.push_back(seed * 1e-3 + i * 1e-6);
    c.task_start.push_back(seed * 1e-5);
    c.task_end.push_back(seed * 1e-3 + i * 1e-6);
  }
  c.timers = {"host steady_clock"};
  c.iteration_timer.assign(static_cast<size_t>(iters) * 2, 0);
  return c;
}

// `c` with `more` iterations in a new round.
CaseResult with_round(CaseResult c, int more) {
  const CaseResult tail = measured(c.id, more, 7);
  c.round_iters = c.rounds();
  c.round_iters.push_back(more);
  c.iters += more;
  c.step_seconds.insert(c.step_seconds.end(), tail.step_seconds.begin(), tail.step_seconds.end());
  c.task_start.insert(c.task_start.end(), tail.task_start.begin(), tail.task_start.end());
  c.task_end.insert(c.task_end.end(), tail.task_end.begin(), tail.task_end.end());
  c.iteration_timer.insert(c.iteration_timer.end(), tail.iteration_timer.begin(),
                           tail.iteration_timer.end());
  return c;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_same_timings(const CaseResult& got, const CaseResult& want) {
  EXPECT_EQ(got.key(), want.key());
  EXPECT_EQ(got.iters, want.iters);
  EXPECT_EQ(got.rounds(), want.rounds());
  EXPECT_EQ(got.step_seconds, want.step_seconds);
  EXPECT_EQ(got.task_start, want.task_start);
  EXPECT_EQ(got.task_end, want.task_end);
  EXPECT_EQ(got.iteration_timer, want.iteration_timer);
}

// The journal a run stopped after two 5-iteration cases leaves behind.
void stopped_after_two_cases(const std::string& path) {
  ResultWriter writer(path, false, RunInfo{}, system_info());
  writer.add_case(measured("0000", 5));
  writer.add_case(measured("0001", 5));
}

TEST(Journal, EachFlushAppendsOnlyItsCase) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  ResultWriter writer(path, false, RunInfo{}, system_info());
  std::string before = bytes_of(path + ".partial");
  for (int i = 0; i < 30; ++i) {
    const CaseResult c = measured("00" + std::to_string(10 + i), 20, i);
    writer.add_case(c);
    const std::string after = bytes_of(path + ".partial");
    // Everything flushed before is still there, byte for byte, and the flush added one record
    // of this case's size (its encoding and a 20-byte frame), however many came before.
    ASSERT_EQ(after.compare(0, before.size(), before), 0) << "case " << i << " rewrote the file";
    codec::Encoder e;
    codec::put_case(e, c);
    EXPECT_EQ(after.size() - before.size(), e.bytes().size() + 20) << "case " << i;
    before = after;
  }
  const ResultFile file = writer.finish();
  EXPECT_EQ(file.cases.size(), 30u);
  EXPECT_FALSE(fs::exists(path + ".partial"));
  const ResultFile back = read_results(path);
  ASSERT_EQ(back.cases.size(), 30u);
  expect_same_timings(back.cases[17], measured("0027", 20, 17));
}

TEST(Journal, RoundsAppendToTheirCase) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  ResultWriter writer(path, false, RunInfo{}, system_info());
  CaseResult c = measured("0000", 4);
  c.round_iters = {4};
  writer.add_case(c);
  const std::string one = bytes_of(path + ".partial");
  const CaseResult two = with_round(c, 3);
  writer.add_case(two);
  const CaseResult three = with_round(two, 5);
  writer.add_case(three);
  // A round's record holds its own iterations, not the ones before: less than the whole case.
  const std::string now = bytes_of(path + ".partial");
  EXPECT_EQ(now.compare(0, one.size(), one), 0);
  codec::Encoder whole_two, whole_three;
  codec::put_case(whole_two, two);
  codec::put_case(whole_three, three);
  EXPECT_LT(now.size() - one.size(), whole_two.bytes().size() + whole_three.bytes().size() -
                                         2 * (c.step_seconds.size() * 3 * sizeof(double)));
  const ResultFile partial = read_results(path + ".partial");
  ASSERT_EQ(partial.cases.size(), 1u);
  expect_same_timings(partial.cases[0], three);
  writer.finish();
  expect_same_timings(read_results(path).cases[0], three);
}

TEST(Journal, TornTailIsLeftOutAndCutByResume) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  stopped_after_two_cases(path);
  const std::string whole = bytes_of(path + ".partial");
  // A crash in the middle of the second case's record.
  fs::resize_file(path + ".partial", whole.size() - 37);
  const ResultFile torn = read_results(path + ".partial");
  ASSERT_EQ(torn.cases.size(), 1u);
  EXPECT_NE(torn.system.notes.find("left out"), std::string::npos) << torn.system.notes;
  {
    ResultWriter resumed(path + ".partial");
    ASSERT_EQ(resumed.cases().size(), 1u);
    resumed.add_case(measured("0001", 5, 3));
  }
  const ResultFile back = read_results(path + ".partial");
  ASSERT_EQ(back.cases.size(), 2u);
  EXPECT_TRUE(back.system.notes.empty()) << back.system.notes;
  expect_same_timings(back.cases[1], measured("0001", 5, 3));
}

TEST(Journal, AFlippedByteLeavesOutItsRecordAndWhatFollows) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  stopped_after_two_cases(path);
  std::string bytes = bytes_of(path + ".partial");
  bytes[bytes.size() - 60] ^= 0x10;
  const ResultFile file = read_journal(bytes, "flipped");
  EXPECT_EQ(file.cases.size(), 1u);
}

TEST(Journal, HostileBytesAreRefusedNeverTrusted) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  {
    ResultWriter writer(path, false, RunInfo{}, system_info());
    writer.add_case(measured("0000", 5));
  }
  const std::string good = bytes_of(path + ".partial");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    try {
      const ResultFile file = read_journal(bytes, "fuzzed");
      for (const CaseResult& c : file.cases) EXPECT_TRUE(c.arrays_match());
    } catch (const InputError&) {
    }
  }
  // A record whose checksum is right but whose counts are not: decoded, then refused.
  codec::Encoder e;
  CaseResult c = measured("0000", 5);
  c.iters = 1 << 29;
  codec::put_case(e, c);
  codec::Decoder d(e.bytes(), "crafted");
  EXPECT_THROW(codec::get_case(d), InputError);
  std::string huge(16, '\0');
  huge[7] = 0x7f;  // a count of 2^63 elements
  codec::Decoder h(huge, "crafted");
  EXPECT_THROW(h.array<double>("x"), InputError);
}

TEST(Journal, ResumeRefusesAnythingButAJournal) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  {
    ResultWriter writer(path, false, RunInfo{}, system_info());
    writer.add_case(measured("0000", 5));
    writer.finish();
  }
  fs::rename(path, path + ".partial");  // an HDF5 file where a journal should be
  try {
    ResultWriter resumed(path + ".partial");
    FAIL() << "an HDF5 .partial was resumed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a journal"), std::string::npos) << e.what();
  }
  // It still reads.
  EXPECT_EQ(read_results(path + ".partial").cases.size(), 1u);
}

}  // namespace
}  // namespace fob
