// The journal NAME.h5.partial: a flush appends what is new and nothing else, a torn or damaged
// tail is left out and cut off by a resume, rounds add up to the case they extend, and hostile
// bytes are refused without a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/types.h"
#include "results/case_codec.h"
#include "results/journal.h"

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
    // of this case's size (its encoding and a 32-byte frame), however many came before.
    ASSERT_EQ(after.compare(0, before.size(), before), 0) << "case " << i << " rewrote the file";
    codec::Encoder e;
    codec::put_case(e, c);
    EXPECT_EQ(after.size() - before.size(), e.bytes().size() + 32) << "case " << i;
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

TEST(Journal, AFlippedByteInTheLastRecordLeavesOutThatRecord) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  stopped_after_two_cases(path);
  std::string bytes = bytes_of(path + ".partial");
  bytes[bytes.size() - 60] ^= 0x10;
  const ResultFile file = read_journal(bytes, "flipped");
  EXPECT_EQ(file.cases.size(), 1u);
}

// The journal of a run stopped after cases 0000..0003 of `run_id`, and the offset of each
// case's record.
std::vector<size_t> four_cases(const std::string& path, const std::string& run_id) {
  RunInfo run;
  run.run_id = run_id;
  ResultWriter writer(path, false, run, system_info());
  std::vector<size_t> at;
  for (int i = 0; i < 4; ++i) {
    at.push_back(static_cast<size_t>(fs::file_size(path + ".partial")));
    writer.add_case(measured("000" + std::to_string(i), 5, i + 1));
  }
  return at;
}

// A damaged record in the middle leaves out that record alone: the ones after it are found by
// their mark and kept, the note names the record and its offset, and a resume writes the
// journal anew without it, saying so, and goes on with the rest.
TEST(Journal, ADamagedRecordLeavesOutItselfAndTheRecordsAfterItAreKept) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  const std::vector<size_t> at = four_cases(path, "00000000000000aa");
  std::string bytes = bytes_of(path + ".partial");
  bytes[at[1] + 100] ^= 0x10;
  { std::ofstream(path + ".partial", std::ios::binary | std::ios::trunc) << bytes; }
  JournalScan scan;
  const ResultFile file = read_journal(bytes, "flipped", &scan);
  ASSERT_EQ(file.cases.size(), 3u);
  EXPECT_EQ(file.cases[1].id, "0002");
  expect_same_timings(file.cases[2], measured("0003", 5, 4));
  const std::string note = "record 3 (" + std::to_string(at[2] - at[1]) + " bytes at byte " +
                           std::to_string(at[1]) + ") is damaged";
  EXPECT_NE(file.system.notes.find(note), std::string::npos) << file.system.notes;
  EXPECT_EQ(scan.intact_bytes, at[1]);
  ASSERT_FALSE(scan.image.empty());
  {
    ResultWriter resumed(path + ".partial");
    EXPECT_EQ(resumed.cases().size(), 3u);
    resumed.add_case(measured("0001", 5, 9));
  }
  const ResultFile back = read_results(path + ".partial");
  ASSERT_EQ(back.cases.size(), 4u);
  expect_same_timings(back.cases[1], measured("0001", 5, 9));
  EXPECT_NE(back.system.notes.find(note), std::string::npos) << back.system.notes;
  EXPECT_EQ(back.run.run_id, "00000000000000aa");
}

// A record of another run appended to a journal (both valid, of one config) is refused by the
// run id its frame carries, named with its offset, and never enters the finished file.
TEST(Journal, ARecordOfAnotherRunIsLeftOutAndNamed) {
  TempDir dir;
  const std::string ours = dir.file("ours.h5"), theirs = dir.file("theirs.h5");
  const std::vector<size_t> at = four_cases(ours, "00000000000000aa");
  const std::vector<size_t> other = four_cases(theirs, "00000000000000bb");
  const std::string foreign = bytes_of(theirs + ".partial").substr(other[3]);
  const size_t end = static_cast<size_t>(fs::file_size(ours + ".partial"));
  { std::ofstream(ours + ".partial", std::ios::binary | std::ios::app) << foreign; }
  const ResultFile file = read_results(ours + ".partial");
  ASSERT_EQ(file.cases.size(), 4u);
  expect_same_timings(file.cases[3], measured("0003", 5, 4));
  EXPECT_NE(file.system.notes.find("record 6 at byte " + std::to_string(end) +
                                   " belongs to another run (run id 00000000000000bb, this "
                                   "journal's 00000000000000aa) and is left out"),
            std::string::npos)
      << file.system.notes;
  {
    ResultWriter resumed(ours + ".partial");
    resumed.finish();
  }
  const ResultFile done = read_results(ours);
  ASSERT_EQ(done.cases.size(), 4u);
  expect_same_timings(done.cases[3], measured("0003", 5, 4));
  EXPECT_EQ(done.run.run_id, "00000000000000aa");
  (void)at;
}

// Marks planted everywhere cannot make the search past damage quadratic: a journal of a few MB
// whose every byte after its header is a mark with a huge claimed length reads in bounded work.
TEST(Journal, PlantedMarksAreSearchedWithinABudget) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  stopped_after_two_cases(path);
  std::string bytes = bytes_of(path + ".partial");
  const std::string mark = "FOBR";
  std::string planted;
  codec::Encoder e;
  e.u32(0x52424F46);
  e.u32(2);
  e.u64(0);
  e.u64(1 << 20);  // each claims a megabyte: hashing it all would be quadratic
  while (planted.size() < (4u << 20)) planted += e.bytes();
  bytes += planted;
  const auto start = std::chrono::steady_clock::now();
  const ResultFile file = read_journal(bytes, "planted");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(file.cases.size(), 2u);
  EXPECT_NE(file.system.notes.find("too damaged to search"), std::string::npos)
      << file.system.notes;
  // The budget is 4 passes over the bytes; a quadratic search would hash ~4e12 bytes.
  EXPECT_LT(seconds, 60.0);
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
