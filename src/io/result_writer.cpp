// ResultWriter: the results file, built in memory (HDF5's core driver) and flushed by replacing
// NAME.h5.partial whole. HDF5 updates a file in place (superblock, object headers, heaps), so
// a write cut short by a full disk or a kill leaves a file that no longer opens; writing the
// new image beside the old one and renaming it over is the only way a failed flush cannot
// damage what an earlier one put on disk. The cost is rewriting the file at every flush
// (outside the timed iterations).
#include <fcntl.h>
#include <hdf5.h>
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
#include "fob/metrics.h"
#include "fob/results.h"
#include "fob/types.h"
#include "h5_schema.h"
#include "h5_util.h"
#include "output_lock.h"

namespace fob {

using namespace h5io;  // NOLINT: the helpers this file is written in

namespace {

constexpr size_t kCoreIncrement = 1 << 20;
// Room left on the file system beyond the new image (an eighth of it, and 16 KiB), so that a
// flush neither fills the disk for everything else nor fails half-way on a racing writer.
unsigned long long spare_bytes(size_t image) {
  return image / 8 + (16 << 10);
}

// A file access list that keeps the file in memory and never writes it back by itself.
H5Id in_memory_access(const Where& w) {
  H5Id fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), w, "creating access list"), H5Pclose);
  check(H5Pset_fapl_core(fapl, kCoreIncrement, false), w, "choosing the in-memory driver");
  check(H5Pset_file_locking(fapl, false, true), w, "leaving file locks to OutputLock");
  return fapl;
}

std::string size_text(unsigned long long bytes) {
  char text[32];
  if (bytes >= (1ULL << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  } else {
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  }
  return text;
}

// Writes `image` to `tmp`, syncs it, renames it over `target` and syncs the directory; on any
// failure removes `tmp` and returns why, leaving `target` as it was.
std::string replace_file(const std::string& tmp, const std::string& target,
                         const std::vector<char>& image) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(target).has_parent_path() ? fs::path(target).parent_path() : ".";
  struct statvfs vfs = {};
  if (statvfs(dir.c_str(), &vfs) == 0) {
    const unsigned long long free_bytes =
        static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
    const unsigned long long spare = spare_bytes(image.size());
    if (free_bytes < image.size() + spare) {
      return "not enough space on the file system (the file needs " + size_text(image.size()) +
             " and " + size_text(spare) + " spare, " + size_text(free_bytes) + " are free)";
    }
  }
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create '" + tmp + "': " + std::strerror(errno);
  std::string error;
  size_t done = 0;
  while (done < image.size() && error.empty()) {
    const ssize_t n = write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = "writing '" + tmp + "': " + std::strerror(n < 0 ? errno : EIO);
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (error.empty() && fsync(fd) != 0) error = "syncing '" + tmp + "': " + std::strerror(errno);
  if (close(fd) != 0 && error.empty()) error = "closing '" + tmp + "': " + std::strerror(errno);
  if (error.empty() && std::rename(tmp.c_str(), target.c_str()) != 0) {
    error = "renaming '" + tmp + "' to '" + target + "': " + std::strerror(errno);
  }
  if (!error.empty()) {
    unlink(tmp.c_str());
    return error;
  }
  // The rename is durable once the directory is.
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return "";
}

void require_not_special(const std::string& path, const std::string& role) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || !fs::exists(st)) return;
  if (!fs::is_regular_file(st)) {
    throw InputError("-o '" + path + "': " + role + " exists and is " +
                     (fs::is_directory(st)
                          ? "a directory; name a results file in it, e.g. '" + path + "/results.h5'"
                          : std::string("not a regular file; name a results "
                                        "file (.h5)")));
  }
}

}  // namespace

ResultWriter::ResultWriter(const std::string& path, bool force, const RunInfo& run,
                           const SystemInfo& sys)
    : path_(path),
      partial_(path + ".partial"),
      requested_timer_(sys.requested_timer()),
      written_timer_(sys.timer) {
  namespace fs = std::filesystem;
  // Named before anything else happens to it: no other run may be writing this file.
  require_not_special(path_, "it");
  lock_ = std::make_unique<OutputLock>(path_);
  require_not_special(partial_, "'" + partial_ + "'");
  std::error_code ec;
  if (!force && fs::exists(path_, ec)) {
    throw InputError("output file '" + path_ + "' already exists; pass --force to overwrite it");
  }
  // A leftover .partial is what an interrupted run kept; it is data too.
  if (!force && fs::exists(partial_, ec)) {
    throw InputError("'" + partial_ +
                     "' exists (left by an interrupted run?); pass --force to overwrite it, or "
                     "--resume it");
  }
  silence_hdf5();
  H5Eclear2(H5E_DEFAULT);
  Where w{partial_, "/"};
  H5Id fapl = in_memory_access(w);
  file_ = H5Fcreate(partial_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (file_ < 0) {
    throw InputError("cannot create HDF5 file '" + partial_ + "' in memory: " + h5_error_text());
  }
  try {
    write_header(static_cast<hid_t>(file_), run, sys, partial_);
    flush("starting the file", true);
  } catch (...) {
    H5Fclose(static_cast<hid_t>(file_));
    file_ = -1;
    throw;
  }
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
  std::error_code ec;
  if (std::filesystem::exists(path_, ec)) {
    throw InputError("--resume: '" + path_ + "' already exists; the run it belongs to finished");
  }
  // Reading first checks the schema and gives the cases the summary is computed over.
  ResultFile existing = read_results(partial_);
  cases_ = std::move(existing.cases);
  requested_timer_ = existing.system.requested_timer();
  written_timer_ = existing.system.timer;
  for (const CaseResult& c : cases_) stats_.push_back(case_stats(c));
  cases_on_disk_ = cases_.size();
  silence_hdf5();
  H5Eclear2(H5E_DEFAULT);
  Where w{partial_, "/"};
  H5Id fapl = in_memory_access(w);
  file_ = H5Fopen(partial_.c_str(), H5F_ACC_RDWR, fapl);
  if (file_ < 0) {
    throw InputError("--resume: cannot open '" + partial_ + "': " + h5_error_text());
  }
}

ResultWriter::~ResultWriter() {
  if (file_ >= 0) H5Fclose(static_cast<hid_t>(file_));
}

void ResultWriter::flush(const std::string& what, bool before_run) {
  const stop::WriteSection section;
  const hid_t file = static_cast<hid_t>(file_);
  Where w{partial_, ""};
  check(H5Fflush(file, H5F_SCOPE_GLOBAL), w, "flushing");
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  if (size < 0) fail(w, "sizing the file image");
  std::vector<char> image(static_cast<size_t>(size));
  if (H5Fget_file_image(file, image.data(), image.size()) != size) fail(w, "copying the image");
  const std::string error = replace_file(partial_ + ".tmp", partial_, image);
  if (error.empty()) {
    cases_on_disk_ = cases_.size();
    return;
  }
  if (before_run) {
    throw InputError("-o '" + path_ + "': cannot write '" + partial_ + "': " + error +
                     "; nothing was measured");
  }
  throw RuntimeFault("cannot write " + what + " to '" + partial_ + "': " + error + "; the " +
                     std::to_string(cases_on_disk_) +
                     " case(s) flushed before are kept there, readable and resumable "
                     "(--resume)");
}

namespace {

// Whether `now` is `before` with more rounds: then only those rounds need writing.
bool continues(const CaseResult& before, const CaseResult& now) {
  const std::vector<int32_t> had = before.rounds(), has = now.rounds();
  return before.world == now.world && before.ranks() == now.ranks() &&
         before.max_tasks == now.max_tasks && before.iters < now.iters && had.size() < has.size() &&
         std::equal(had.begin(), had.end(), has.begin());
}

// Appends iterations [from, now.iters) of `now`'s timings to `kept`.
void append_tail(CaseResult& kept, const CaseResult& now) {
  const size_t world = static_cast<size_t>(now.ranks());
  const size_t per_iter = world * static_cast<size_t>(now.max_tasks);
  const size_t from = static_cast<size_t>(kept.iters);
  auto tail = [](std::vector<double>& into, const std::vector<double>& from_v, size_t at) {
    into.insert(into.end(), from_v.begin() + static_cast<std::ptrdiff_t>(at), from_v.end());
  };
  tail(kept.step_seconds, now.step_seconds, from * world);
  tail(kept.task_start, now.task_start, from * per_iter);
  tail(kept.task_end, now.task_end, from * per_iter);
  kept.timers = now.timers;
  kept.iteration_timer = now.iteration_timer;
  kept.round_iters = now.rounds();
  kept.iters = now.iters;
  kept.verified = now.verified;
  kept.max_abs_err = now.max_abs_err;
  kept.auto_slices = now.auto_slices;
}

}  // namespace

void ResultWriter::add_case(const CaseResult& result) {
  if (file_ < 0) throw RuntimeFault("'" + partial_ + "' is already closed; cannot add a case");
  const hid_t file = static_cast<hid_t>(file_);
  Where w{partial_, "/cases"};
  H5Id cases(check_id(H5Gopen2(file, "cases", H5P_DEFAULT), w, "opening group"), H5Gclose);
  auto same = [&](const CaseResult& c) { return c.id == result.id; };
  auto kept = std::find_if(cases_.begin(), cases_.end(), same);
  const bool on_file = H5Lexists(cases, result.id.c_str(), H5P_DEFAULT) > 0;
  if (on_file && kept != cases_.end() && continues(*kept, result)) {
    // A case measured in rounds: each round appends its iterations, in the file and here.
    append_case(cases, result, kept->iters, static_cast<int>(kept->rounds().size()), partial_);
    append_tail(*kept, result);
    // Only this case's statistics changed; the others' are kept, so a round costs its case.
    stats_[static_cast<size_t>(kept - cases_.begin())] = case_stats(*kept);
  } else {
    if (on_file) {
      check(H5Ldelete(cases, result.id.c_str(), H5P_DEFAULT), w, "replacing case " + result.id);
    }
    write_case(cases, result, partial_);
    if (kept != cases_.end()) {
      stats_.erase(stats_.begin() + (kept - cases_.begin()));
      cases_.erase(kept);
    }
    cases_.push_back(result);
    stats_.push_back(case_stats(result));
  }
  write_summary(file, cases_, stats_, partial_);
  refresh_timer();
  flush("case " + result.id, false);
}

void ResultWriter::add_cases(const std::vector<CaseResult>& results) {
  if (file_ < 0) throw RuntimeFault("'" + partial_ + "' is already closed; cannot add a case");
  const hid_t file = static_cast<hid_t>(file_);
  Where w{partial_, "/cases"};
  H5Id cases(check_id(H5Gopen2(file, "cases", H5P_DEFAULT), w, "opening group"), H5Gclose);
  for (const CaseResult& result : results) {
    const bool known = std::any_of(cases_.begin(), cases_.end(),
                                   [&](const CaseResult& c) { return c.id == result.id; });
    if (known || H5Lexists(cases, result.id.c_str(), H5P_DEFAULT) > 0) {
      throw std::logic_error("add_cases: case " + result.id + " is in the file already");
    }
    write_case(cases, result, partial_);
    // Only what /summary and the stats read is kept: the file has the timings.
    cases_.push_back(described(result));
    stats_.push_back(case_stats(result));
  }
  write_summary(file, cases_, stats_, partial_);
  refresh_timer();
  flush(std::to_string(results.size()) + " cases", false);
}

void ResultWriter::refresh_timer() {
  const std::string timer = files_timer(requested_timer_, cases_);
  if (timer == written_timer_) return;
  write_timer(static_cast<hid_t>(file_), timer, partial_);
  written_timer_ = timer;
}

void ResultWriter::finish() {
  if (file_ < 0) throw RuntimeFault("'" + partial_ + "' is already closed");
  const stop::WriteSection section;
  // Every case is on disk already (add_case flushed it); closing the in-memory copy writes
  // nothing.
  const herr_t status = H5Fclose(static_cast<hid_t>(file_));
  file_ = -1;
  if (status < 0) {
    throw RuntimeFault("HDF5 error closing '" + partial_ + "': " + h5_error_text());
  }
  std::error_code ec;
  std::filesystem::rename(partial_, path_, ec);
  if (ec) {
    throw RuntimeFault("cannot rename '" + partial_ + "' to '" + path_ + "': " + ec.message());
  }
  lock_->release();
}

}  // namespace fob
