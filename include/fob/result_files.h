// Results files on disk (docs/results-schema.md): written case by case through a journal,
// read back whatever they hold (src/results/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fob/results.h"

namespace fob {

class OutputLock;
class JournalWriter;

// Writes a results file case by case: each case (or round) is appended to the journal
// NAME.h5.partial and synced (src/results/journal.h), so a flush costs that case however long the
// sweep, and a full disk, a signal or a crash keeps every case flushed before, readable and
// resumable. finish() writes NAME.h5 once, whole and compact, from the journal. A second run
// writing the same file is refused (OutputLock) before either file is touched. Rank 0 only.
class ResultWriter {
 public:
  // Starts NAME.h5.partial. InputError (before anything is measured) when the file may not or
  // cannot be written: it exists without `force`, is one of `inputs`, another run holds it, or
  // the directory does not take the journal's header.
  ResultWriter(const std::string& path, bool force, const RunInfo& run, const SystemInfo& sys,
               const std::vector<std::string>& inputs = {});
  // Reopens an interrupted run's journal NAME.h5.partial to add cases to it (--resume).
  explicit ResultWriter(const std::string& partial_path);
  // The cases flushed so far: their keys, ids, iterations and rounds, not their timings.
  const std::vector<CaseResult>& cases() const { return cases_; }
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Flushes the case. A case flushed before with fewer rounds gets only its new rounds
  // appended; any other earlier version with its id is replaced. RuntimeFault, with what was
  // flushed before untouched, when the write fails.
  void add_case(const CaseResult& result);
  // Flushes new cases (none of whose ids were flushed before) at once: for cases computed
  // rather than measured (`fobench sim`).
  void add_cases(const std::vector<CaseResult>& results);
  // Writes NAME.h5 from the journal, then removes the journal; returns what it wrote.
  ResultFile finish();
  const std::string& final_path() const { return path_; }
  const std::string& partial_path() const { return partial_; }

 private:
  void remember(const CaseResult& result);
  // Says on stderr which temporaries of the file a killed run left (stale_temporaries).
  void name_stale_temporaries() const;
  std::string path_, partial_;
  std::unique_ptr<OutputLock> lock_;
  std::unique_ptr<JournalWriter> journal_;
  std::vector<CaseResult> cases_;
};

// The file an interrupted NAME.h5.partial becomes when its run finishes; InputError when the
// name does not end in .partial.
std::string partial_target(const std::string& partial);

// The most a results file (finished or journal) may hold: far past any sweep's (100,000 cases),
// and a bound a reader checks against the file's size before it reads a byte.
inline constexpr uint64_t kMaxResultsFileBytes = uint64_t{8} << 30;

// Reads a file written by ResultWriter: a finished HDF5 file (parsed in a child process under
// memory and time limits, src/results/read_results.cpp) or a journal NAME.h5.partial, also one
// still being written. Throws InputError when it is not a fobench file, is damaged or crafted,
// has a newer schema, is sparse or past kMaxResultsFileBytes, or cannot be opened; never
// crashes or hangs on what it holds.
ResultFile read_results(const std::string& path);
// Whether `path` starts like a journal (what --resume continues); InputError when it cannot
// be opened as a regular file.
bool is_journal_file(const std::string& path);
// Why --resume refuses `path`, which is not a journal.
std::string not_a_journal(const std::string& path);

}  // namespace fob
