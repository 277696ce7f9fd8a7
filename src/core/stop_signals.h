// SIGTERM, SIGINT and SIGHUP (Slurm's time limit, scancel, Ctrl-C, a closed terminal or a
// dropped ssh session) end a run with exit 4 and one line on stderr saying what the rank keeps:
// rank 0 names its results file and how many finished cases it holds. SIGPIPE is ignored: a
// closed stdout (`fobench run ... | head -1`) loses the printed lines only, while the run goes on
// and finishes its results file with the exit code it would have had. A results file being replaced
// is never left half-written: while a WriteSection is open the signal is held and acted on as soon
// as the section closes.
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
