// Every iteration's timer in the results file: a case timed partly by a fallback timer says so
// per iteration and in words, /system says what took the times (not what was asked for), a
// resumed run still matches the timer it asked for, and a file naming a timer it does not list
// is refused.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <string>
#include <vector>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr const char* kCupti = "cupti kernel activity";
constexpr const char* kEvents = "cuda events (stream order)";

SystemInfo cuda_system() {
  return small_system("cuda", "nccl", 2, kCupti);
}

CaseResult two_rank_case(const std::string& id) {
  return small_case(id, 2);
}

// A round in which timers[it * 2 + rank] took each rank's iteration.
void add_round(CaseResult& c, const std::vector<std::string>& timers) {
  RoundTimes round = empty_round(c, static_cast<int>(timers.size() / 2));
  for (size_t i = 0; i < round.step_seconds.size(); ++i) {
    round.step_seconds[i] = 1e-3;
    round.task_start[i] = 0;
    round.task_end[i] = 1e-3;
  }
  round.timers = timers;
  append_round(c, round);
}

std::string case_attr(const std::string& path, const std::string& id, const char* name) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t g = H5Gopen2(f, ("cases/" + id).c_str(), H5P_DEFAULT);
  const hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  char* text = nullptr;
  std::string out;
  if (H5Aread(a, type, &text) >= 0 && text) out = text;
  H5free_memory(text);
  H5Tclose(type);
  H5Aclose(a);
  H5Gclose(g);
  H5Fclose(f);
  return out;
}

TEST(IterationTimers, RoundsMapEveryIterationToItsTimer) {
  CaseResult c = two_rank_case("0000");
  add_round(c, {kCupti, kCupti, kCupti, kEvents});
  add_round(c, {kCupti, kCupti});
  ASSERT_TRUE(c.timers_match());
  EXPECT_EQ(c.timers, (std::vector<std::string>{kCupti, kEvents}));
  EXPECT_EQ(c.iteration_timer, (std::vector<int8_t>{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(c.timer_text(), std::string("mixed: ") + kCupti + " in 5 of 6 rank-iterations; " +
                                kEvents + " in 1 of 6 rank-iterations");

  CaseResult one = two_rank_case("0001");
  add_round(one, {kEvents, kEvents});
  EXPECT_EQ(one.timer_text(), kEvents);  // one timer: named alone, never "mixed"

  // A round that does not say who timed it, after rounds that did, is a program error.
  RoundTimes silent = empty_round(c, 1);
  EXPECT_THROW(append_round(c, silent), std::logic_error);
}

TEST(IterationTimers, TheFileSaysWhatTookTheTimes) {
  TempDir dir;
  const std::string path = dir.file("t.h5");
  {
    ResultWriter writer(path, false, RunInfo{}, cuda_system());
    CaseResult all_cupti = two_rank_case("0000");
    add_round(all_cupti, {kCupti, kCupti});
    writer.add_case(all_cupti);
    EXPECT_EQ(read_results(writer.partial_path()).system.timer, kCupti);

    CaseResult fell_back = two_rank_case("0001");
    add_round(fell_back, {kCupti, kEvents});
    writer.add_case(fell_back);
    add_round(fell_back, {kEvents, kEvents});  // a second round, appended
    writer.add_case(fell_back);
    writer.finish();
  }
  const ResultFile file = read_results(path);
  ASSERT_EQ(file.cases.size(), 2u);
  const CaseResult& c = file.cases[1];
  EXPECT_EQ(c.iters, 2);
  EXPECT_EQ(c.timers, (std::vector<std::string>{kCupti, kEvents}));
  EXPECT_EQ(c.iteration_timer, (std::vector<int8_t>{0, 1, 1, 1}));
  EXPECT_EQ(case_attr(path, "0001", "timer"), c.timer_text());
  EXPECT_EQ(case_attr(path, "0000", "timer"), kCupti);
  // Not labelled CUPTI: /system names both, and what the run asked for stays apart.
  EXPECT_NE(file.system.timer, kCupti);
  EXPECT_EQ(file.system.timer.rfind("mixed", 0), 0u) << file.system.timer;
  EXPECT_NE(file.system.timer.find(kEvents), std::string::npos) << file.system.timer;
  EXPECT_EQ(file.system.timer_requested, kCupti);
}

TEST(IterationTimers, EveryIterationOnTheFallbackIsLabelledByIt) {
  CaseResult c = two_rank_case("0000");
  add_round(c, {kEvents, kEvents});
  EXPECT_EQ(files_timer(kCupti, {c}), kEvents);
  EXPECT_EQ(files_timer(kCupti, {}), kCupti);
  EXPECT_EQ(files_timer(kCupti, {two_rank_case("0001")}), kCupti);  // nothing recorded
}

TEST(IterationTimers, AResumedRunMatchesTheTimerItAskedFor) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  RunInfo run;
  run.config_yaml = "iters: 2\n";
  {
    ResultWriter writer(path, false, run, cuda_system());
    CaseResult c = two_rank_case("0000");
    add_round(c, {kEvents, kCupti});
    writer.add_case(c);
  }  // interrupted: the .partial stays
  const ResultFile partial = read_results(path + ".partial");
  EXPECT_NE(partial.system.timer, kCupti);
  EXPECT_EQ(resume_mismatch(partial, partial.run, cuda_system()), "");
  SystemInfo events = cuda_system();
  events.timer = kEvents;
  EXPECT_NE(resume_mismatch(partial, partial.run, events).find("timer"), std::string::npos);
}

TEST(IterationTimers, AFileNamingAnUnlistedTimerIsRefused) {
  TempDir dir;
  const std::string path = dir.file("bad.h5");
  {
    ResultWriter writer(path, false, RunInfo{}, cuda_system());
    CaseResult c = two_rank_case("0000");
    add_round(c, {kCupti, kEvents});
    writer.add_case(c);
    writer.finish();
  }
  // Point an iteration at a third timer the case does not list.
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, "cases/0000/iteration_timer", H5P_DEFAULT);
  ASSERT_GE(d, 0);
  const int8_t bad[2] = {0, 2};
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_INT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bad), 0);
  H5Dclose(d);
  H5Fclose(f);
  try {
    read_results(path);
    FAIL() << "read a case whose iteration names an unlisted timer";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("iteration_timer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fob
