// SIGTERM and SIGINT (Slurm's time limit, scancel, Ctrl-C) end a run with exit 4 and one line on
// stderr saying what the rank keeps: rank 0 names its results file and how many finished cases
// it holds. A results file being replaced is never left half-written: while a WriteSection is
// open the signal is held and acted on as soon as the section closes.
#pragma once

#include <string>

namespace fob::stop {

// Installs the handlers (once) for this rank.
void install(int rank);

// What the rank keeps if it stops now, said when a signal or the watchdog ends it ("" says
// nothing). Kept in a fixed buffer so that the signal handler may read it.
void set_note(const std::string& note);
std::string note();

class WriteSection {
 public:
  WriteSection();
  ~WriteSection();
  WriteSection(const WriteSection&) = delete;
  WriteSection& operator=(const WriteSection&) = delete;
};

}  // namespace fob::stop
