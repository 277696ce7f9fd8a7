// ResultWriter: cases go to the journal NAME.h5.partial as they finish (journal.h says why a
// journal), and NAME.h5 is written once at the end: an HDF5 image built in memory from the
// journal, written to a fresh temporary beside the target and renamed over it, so the finished
// file has no space left behind by replaced objects and nothing planted at a fixed name is
// ever opened.
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/stop_signals.h"
#include "core/watchdog.h"
#include "fob/metrics.h"
#include "fob/output_file.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/text_file.h"
#include "fob/types.h"
#include "h5_schema.h"
#include "h5_util.h"
#include "journal.h"
#include "output_lock.h"

namespace fob {

using namespace h5io;  // NOLINT: the helpers this file is written in

namespace {

constexpr size_t kCoreIncrement = 1 << 20;

// The finished file as an HDF5 image in memory (the core driver, never written back by itself).
std::vector<char> hdf5_image(const ResultFile& file, const std::string& path) {
  silence_hdf5();
  H5Eclear2(H5E_DEFAULT);
  Where w{path, "/"};
  H5Id fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), w, "creating access list"), H5Pclose);
  check(H5Pset_fapl_core(fapl, kCoreIncrement, false), w, "choosing the in-memory driver");
  check(H5Pset_file_locking(fapl, false, true), w, "leaving file locks to OutputLock");
  H5Id h5(check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), w,
                   "creating the file in memory"),
          H5Fclose);
  write_header(h5, file.run, file.system, path);
  {
    H5Id cases(check_id(H5Gopen2(h5, "cases", H5P_DEFAULT), w, "opening /cases"), H5Gclose);
    for (const CaseResult& c : file.cases) write_case(cases, c, path);
  }
  write_summary(h5, file.cases, file.stats, path);
  write_timer(h5, file.system.timer, path);
  check(H5Fflush(h5, H5F_SCOPE_GLOBAL), w, "flushing");
  const ssize_t size = H5Fget_file_image(h5, nullptr, 0);
  if (size < 0) fail(w, "sizing the file image");
  std::vector<char> image(static_cast<size_t>(size));
  if (H5Fget_file_image(h5, image.data(), image.size()) != size) fail(w, "copying the image");
  return image;
}

// Room for `bytes` more on the file system holding `path`, with a sixteenth and 16 KiB to spare
// for everything else.
std::string space_for(const std::string& path, size_t bytes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
  struct statvfs vfs = {};
  if (statvfs(dir.c_str(), &vfs) != 0) return "";
  const unsigned long long free_bytes =
      static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
  if (free_bytes >= bytes + bytes / 16 + (16 << 10)) return "";
  return "not enough space on the file system (" + std::to_string(bytes) + " bytes to write, " +
         std::to_string(free_bytes) + " free)";
}

// Whether `now` is `before` with more rounds: then only those rounds need writing.
bool continues(const CaseResult& before, const CaseResult& now) {
  const std::vector<int32_t> had = before.rounds(), has = now.rounds();
  return before.world == now.world && before.ranks() == now.ranks() &&
         before.max_tasks == now.max_tasks && before.iters < now.iters && had.size() < has.size() &&
         std::equal(had.begin(), had.end(), has.begin());
}

}  // namespace

ResultWriter::ResultWriter(const std::string& path, bool force, const RunInfo& run,
                           const SystemInfo& sys, const std::vector<std::string>& inputs)
    : path_(path), partial_(path + ".partial") {
  namespace fs = std::filesystem;
  // Named before anything else happens to it: no other run may be writing this file.
  check_output_path("-o", path_, true, inputs);
  lock_ = std::make_unique<OutputLock>(path_);
  name_stale_temporaries();
  check_output_path("-o", path_, force, inputs);
  std::error_code ec;
  const fs::file_status partial = fs::symlink_status(partial_, ec);
  if (fs::exists(partial) && !fs::is_regular_file(partial)) {
    throw InputError("-o '" + path_ + "': '" + partial_ +
                     "' exists and is not a regular file; remove it or choose another -o");
  }
  // A leftover journal is what an interrupted run kept; it is data too.
  if (!force && fs::exists(partial)) {
    throw InputError("'" + partial_ +
                     "' exists (left by an interrupted run?); pass --force to overwrite it, or "
                     "--resume it");
  }
  const stop::WriteSection section;
  const std::string full = space_for(partial_, 4 << 10);
  try {
    if (!full.empty()) throw RuntimeFault(full);
    journal_ = std::make_unique<JournalWriter>(partial_, run, sys);
  } catch (const std::exception& e) {
    throw InputError("-o '" + path_ + "': cannot write '" + partial_ + "': " + e.what() +
                     "; nothing was measured");
  }
}

std::string not_a_journal(const std::string& path) {
  return "--resume: '" + path +
         "' is not a journal this fobench writes (an HDF5 .partial of an earlier version: "
         "`fobench report` reads it; resume it with the fobench that wrote it, or start again)";
}

std::string partial_target(const std::string& partial) {
  const std::string suffix = ".partial";
  if (partial.size() <= suffix.size() ||
      partial.compare(partial.size() - suffix.size(), suffix.size(), suffix) != 0) {
    throw InputError("--resume: '" + partial + "' is not a .h5.partial file");
  }
  return partial.substr(0, partial.size() - suffix.size());
}

ResultWriter::ResultWriter(const std::string& partial_path)
    : path_(partial_target(partial_path)), partial_(partial_path) {
  lock_ = std::make_unique<OutputLock>(path_);
  name_stale_temporaries();
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(path_, ec))) {
    throw InputError("--resume: '" + path_ + "' already exists; the run it belongs to finished");
  }
  const int fd = open_existing_regular(partial_, "--resume");
  std::string bytes;
  try {
    struct stat st {};
    if (fstat(fd, &st) != 0) throw InputError("--resume: cannot read '" + partial_ + "'");
    require_plausible_size(st, partial_, "results file", kMaxResultsFileBytes);
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError("--resume: cannot read '" + partial_ + "': " + strerror(errno));
      if (n == 0) break;
      bytes.append(buf, static_cast<size_t>(n));
    }
    if (!is_journal(bytes)) throw InputError(not_a_journal(partial_));
  } catch (...) {
    close(fd);
    throw;
  }
  JournalScan scan;
  const ResultFile existing = read_journal(bytes, partial_, &scan);
  for (const std::string& note : scan.left_out) {
    std::fprintf(stderr, "%s\n",
                 printable("fobench: --resume '" + partial_ + "': journal " + note).c_str());
  }
  if (scan.image.empty()) {
    journal_ =
        std::make_unique<JournalWriter>(partial_, fd, scan.intact_bytes, existing.run.run_id);
  } else {
    // More than a torn tail left out, or an older format: the journal is written anew without
    // the left-out records (its header saying what they were), in the current format, so that
    // what is appended follows intact records of its own format.
    close(fd);
    const stop::WriteSection section;
    journal_ = std::make_unique<JournalWriter>(partial_, scan.image, existing.run.run_id);
    const std::string why = scan.left_out.empty()
                                ? "rewritten in the current journal format"
                                : "rewritten without the " + std::to_string(scan.left_out.size()) +
                                      " record(s) left out";
    std::fprintf(stderr, "%s\n",
                 printable("fobench: --resume '" + partial_ + "': " + why + "; the " +
                           std::to_string(existing.cases.size()) + " case(s) it holds go on")
                     .c_str());
  }
  for (const CaseResult& c : existing.cases) remember(c);
}

ResultWriter::~ResultWriter() = default;

void ResultWriter::name_stale_temporaries() const {
  for (const std::string& tmp : stale_temporaries(path_)) {
    std::fprintf(
        stderr, "%s\n",
        printable("fobench: note: " + tmp + " is a temporary a run killed while writing '" + path_ +
                  "' left behind; this run holds the file's lock, so no run is writing "
                  "it: it is safe to delete")
            .c_str());
  }
}

void ResultWriter::remember(const CaseResult& result) {
  CaseResult kept = described(result);
  kept.stored = result.stored;
  kept.max_tasks = result.max_tasks;
  auto same = [&](const CaseResult& c) { return c.id == result.id; };
  auto it = std::find_if(cases_.begin(), cases_.end(), same);
  if (it != cases_.end()) {
    *it = std::move(kept);
  } else {
    cases_.push_back(std::move(kept));
  }
}

void ResultWriter::add_case(const CaseResult& result) {
  if (!journal_) throw RuntimeFault("'" + partial_ + "' is already closed; cannot add a case");
  if (!result.arrays_match() || !result.timers_match()) {
    throw RuntimeFault("cannot write case '" + result.id + "' to '" + partial_ +
                       "': its arrays do not match its iterations");
  }
  auto kept = std::find_if(cases_.begin(), cases_.end(),
                           [&](const CaseResult& c) { return c.id == result.id; });
  const stop::WriteSection section;
  try {
    if (kept != cases_.end() && continues(*kept, result)) {
      // A case measured in rounds: each round appends its iterations.
      journal_->add_rounds(result, kept->iters, static_cast<int>(kept->rounds().size()));
    } else {
      journal_->add_case(result);
    }
  } catch (const RuntimeFault& e) {
    throw WriteFault("cannot write case " + result.id + " to '" + partial_ + "': " + e.what() +
                     "; the " + std::to_string(cases_.size()) +
                     " case(s) flushed before are kept there, readable and resumable "
                     "(--resume)");
  }
  remember(result);
}

void ResultWriter::add_cases(const std::vector<CaseResult>& results) {
  if (!journal_) throw RuntimeFault("'" + partial_ + "' is already closed; cannot add a case");
  for (const CaseResult& result : results) {
    const bool known = std::any_of(cases_.begin(), cases_.end(),
                                   [&](const CaseResult& c) { return c.id == result.id; });
    if (known) throw std::logic_error("add_cases: case " + result.id + " is in the file already");
  }
  const stop::WriteSection section;
  try {
    journal_->add_cases(results);
  } catch (const RuntimeFault& e) {
    throw WriteFault("cannot write " + std::to_string(results.size()) + " cases to '" + partial_ +
                     "': " + e.what() + "; the " + std::to_string(cases_.size()) +
                     " case(s) flushed before are kept there, readable and resumable");
  }
  for (const CaseResult& result : results) remember(result);
}

ResultFile ResultWriter::finish() {
  if (!journal_) throw RuntimeFault("'" + partial_ + "' is already closed");
  const stop::WriteSection section;
  ResultFile file = read_journal(journal_->contents(), partial_);
  for (const CaseResult& c : file.cases) file.stats.push_back(case_stats(c));
  const std::vector<char> image = hdf5_image(file, path_);
  const std::string kept = "; the " + std::to_string(file.cases.size()) +
                           " case(s) flushed before are kept there ('" + partial_ +
                           "'), readable and resumable (--resume)";
  try {
    const std::string full = space_for(path_, image.size());
    if (!full.empty()) throw RuntimeFault(full);
    TempFile tmp(path_);
    tmp.write_all(std::string_view(image.data(), image.size()));
    tmp.commit();
  } catch (const std::exception& e) {
    throw WriteFault("cannot write the finished file '" + path_ + "': " + e.what() + kept);
  }
  // From here the results are in NAME.h5: a signal acted on when this section closes says so.
  stop::set_note("the run finished; its results are in '" + path_ + "'");
  watchdog::test_stop_point("finishing the results file");
  journal_->remove();
  journal_.reset();
  lock_->release();
  return file;
}

}  // namespace fob
