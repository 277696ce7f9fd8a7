#include "journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "case_codec.h"
#include "fob/output_file.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr std::string_view kMagic("FOBJRNL\n", 8);
constexpr size_t kStartBytes = kMagic.size() + sizeof(uint32_t);
constexpr size_t kFrameBytes = sizeof(uint32_t) + sizeof(uint64_t) + sizeof(uint64_t);

enum class Tag : uint32_t { header = 1, whole_case = 2, rounds = 3 };

uint64_t checksum(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (const char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  return h;
}

// One record: the frame around `payload`.
std::string record(Tag tag, const std::string& payload) {
  codec::Encoder e;
  e.u32(static_cast<uint32_t>(tag));
  e.u64(payload.size());
  e.bytes() += payload;
  e.u64(checksum(e.bytes()));
  return std::move(e.bytes());
}

std::string rounds_payload(const CaseResult& c, int from_iter, int from_round) {
  const size_t ranks = static_cast<size_t>(c.ranks());
  const size_t per_iter = ranks * static_cast<size_t>(c.max_tasks);
  const size_t from = static_cast<size_t>(from_iter);
  auto tail = [](const auto& v, size_t at) {
    return std::vector<typename std::decay_t<decltype(v)>::value_type>(
        v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  };
  codec::Encoder e;
  e.str(c.id);
  e.i32(from_iter);
  e.i32(from_round);
  e.i32(c.iters);
  e.i32(c.verified);
  e.f64(c.max_abs_err);
  e.str(c.auto_slices);
  e.array(tail(c.rounds(), static_cast<size_t>(from_round)));
  e.array(tail(c.step_seconds, from * ranks));
  e.array(tail(c.task_start, from * per_iter));
  e.array(tail(c.task_end, from * per_iter));
  codec::put_lines(e, c.timers);
  // Whole, as `timers` is: small ([iters][ranks] bytes), and a round may add a timer.
  e.array(c.iteration_timer);
  // Whole too: a round before the first that recorded them holds NaN.
  e.array(c.launch_seconds);
  codec::put_lines(e, c.facts);
  // The rounds' probes from `from_round` on, where any round recorded one.
  e.array(c.round_probe.size() > static_cast<size_t>(from_round)
              ? tail(c.round_probe, static_cast<size_t>(from_round))
              : std::vector<double>());
  return std::move(e.bytes());
}

template <typename T>
void extend(std::vector<T>& into, const std::vector<T>& more) {
  into.insert(into.end(), more.begin(), more.end());
}

void apply_rounds(codec::Decoder& d, std::vector<CaseResult>& cases) {
  const std::string id = d.text(h5io::Text::line);
  auto it =
      std::find_if(cases.begin(), cases.end(), [&](const CaseResult& c) { return c.id == id; });
  if (it == cases.end()) d.fail("rounds of a case recorded nowhere before");
  CaseResult& c = *it;
  const int32_t from_iter = d.i32(), from_round = d.i32();
  if (from_iter != c.iters || from_round != static_cast<int32_t>(c.rounds().size())) {
    d.fail("rounds that do not follow case " + c.id + "'s last one");
  }
  c.round_iters = c.rounds();
  const size_t rounds_before = c.round_iters.size();
  c.iters = d.i32();
  c.verified = d.i32();
  c.max_abs_err = d.f64();
  c.auto_slices = d.text(h5io::Text::lines);
  extend(c.round_iters, d.array<int32_t>("round_iters"));
  extend(c.step_seconds, d.array<double>("step_seconds"));
  extend(c.task_start, d.array<double>("task_start"));
  extend(c.task_end, d.array<double>("task_end"));
  c.timers = codec::get_lines(d, "timers");
  c.iteration_timer = d.array<int8_t>("iteration_timer");
  c.launch_seconds = d.array<double>("launch_seconds");
  c.facts = codec::get_lines(d, "facts");
  const std::vector<double> probes = d.array<double>("round_probe");
  if (!probes.empty()) {
    c.round_probe.resize(rounds_before, std::numeric_limits<double>::quiet_NaN());
    extend(c.round_probe, probes);
  }
  codec::check_case(c, d);
}

void apply_case(codec::Decoder& d, std::vector<CaseResult>& cases) {
  CaseResult c = codec::get_case(d);
  auto it =
      std::find_if(cases.begin(), cases.end(), [&](const CaseResult& k) { return k.id == c.id; });
  if (it != cases.end()) {
    *it = std::move(c);
  } else {
    cases.push_back(std::move(c));
  }
}

std::string where(const std::string& path, size_t index) {
  return "'" + path + "', journal record " + std::to_string(index + 1);
}

}  // namespace

bool is_journal(std::string_view head) {
  return head.substr(0, kMagic.size()) == kMagic;
}

ResultFile read_journal(std::string_view bytes, const std::string& path, size_t* intact_bytes) {
  if (!is_journal(bytes) || bytes.size() < kStartBytes) {
    throw InputError("'" + path + "' is not a fobench journal");
  }
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + kMagic.size(), sizeof version);
  if (version != kJournalVersion) {
    throw InputError("'" + path + "': journal format " + std::to_string(version) +
                     ", this fobench reads format " + std::to_string(kJournalVersion) +
                     " only; read it with the fobench that wrote it");
  }
  ResultFile file;
  size_t at = kStartBytes, index = 0;
  std::string damage;
  for (; at < bytes.size(); ++index) {
    codec::Decoder frame(bytes.substr(at), where(path, index));
    if (frame.left() < kFrameBytes) {
      damage = "a record cut short";
      break;
    }
    const uint32_t tag = frame.u32();
    const uint64_t length = frame.u64();
    if (length > frame.left() - sizeof(uint64_t)) {
      damage = "a record cut short";
      break;
    }
    const size_t framed = sizeof(uint32_t) + sizeof(uint64_t) + static_cast<size_t>(length);
    uint64_t sum = 0;
    std::memcpy(&sum, bytes.data() + at + framed, sizeof sum);
    if (sum != checksum(bytes.substr(at, framed))) {
      damage = "a record whose checksum does not match";
      break;
    }
    codec::Decoder d(bytes.substr(at + framed - length, length), where(path, index));
    if ((index == 0) != (tag == static_cast<uint32_t>(Tag::header))) {
      d.fail(index == 0 ? "the journal does not start with its header" : "a second header");
    }
    if (tag == static_cast<uint32_t>(Tag::header)) {
      file.run = codec::get_run(d);
      file.system = codec::get_system(d);
    } else if (tag == static_cast<uint32_t>(Tag::whole_case)) {
      apply_case(d, file.cases);
    } else if (tag == static_cast<uint32_t>(Tag::rounds)) {
      apply_rounds(d, file.cases);
    } else {
      d.fail("a record of kind " + std::to_string(tag) + ", which this fobench does not know");
    }
    if (d.left() != 0) d.fail("bytes left over after the record");
    at += framed + sizeof(uint64_t);
  }
  if (index == 0) throw InputError("'" + path + "': the journal's header is missing or damaged");
  if (!damage.empty()) {
    file.system.notes += (file.system.notes.empty() ? "" : "; ") + std::string("journal: ") +
                         damage + " after " + std::to_string(index) + " intact record(s) (" +
                         std::to_string(bytes.size() - at) +
                         " bytes: a write in progress, or one a crash cut short) is left out";
  }
  std::sort(file.cases.begin(), file.cases.end(),
            [](const CaseResult& a, const CaseResult& b) { return a.id < b.id; });
  // As the HDF5 file says them: the timer asked for, and the one(s) that took the times.
  file.system.timer_requested = file.system.requested_timer();
  if (!file.cases.empty()) {
    file.system.timer = files_timer(file.system.timer_requested, file.cases);
  }
  if (intact_bytes) *intact_bytes = at;
  return file;
}

// ---- writing --------------------------------------------------------------------------------

JournalWriter::JournalWriter(const std::string& path, const RunInfo& run, const SystemInfo& sys)
    : path_(path) {
  codec::Encoder start;
  start.bytes() += kMagic;
  start.u32(kJournalVersion);
  codec::Encoder header;
  codec::put_run(header, run);
  codec::put_system(header, sys);
  const std::string image = start.bytes() + record(Tag::header, header.bytes());
  TempFile tmp(path);
  tmp.write_all(image);
  tmp.commit(true);
  fd_ = tmp.release_fd();
  size_ = image.size();
}

JournalWriter::JournalWriter(const std::string& path, int fd, size_t intact_bytes)
    : path_(path), fd_(fd), size_(intact_bytes) {
  // A torn record at the end (a crash mid-append) is cut off before anything follows it.
  if (ftruncate(fd_, static_cast<off_t>(size_)) != 0 || fsync(fd_) != 0) {
    const std::string why = std::strerror(errno);
    close(fd_);
    fd_ = -1;
    throw InputError("--resume: cannot cut '" + path_ + "' back to its intact records: " + why);
  }
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) close(fd_);
}

void JournalWriter::add_case(const CaseResult& c) {
  codec::Encoder e;
  codec::put_case(e, c);
  append(record(Tag::whole_case, e.bytes()));
}

void JournalWriter::add_cases(const std::vector<CaseResult>& cases) {
  std::string records;
  for (const CaseResult& c : cases) {
    codec::Encoder e;
    codec::put_case(e, c);
    records += record(Tag::whole_case, e.bytes());
  }
  append(records);
}

void JournalWriter::add_rounds(const CaseResult& c, int from_iter, int from_round) {
  append(record(Tag::rounds, rounds_payload(c, from_iter, from_round)));
}

void JournalWriter::append(const std::string& records) {
  if (fd_ < 0) throw RuntimeFault("'" + path_ + "' is closed");
  std::string error;
  struct statvfs vfs = {};
  if (fstatvfs(fd_, &vfs) == 0) {
    const unsigned long long free_bytes =
        static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
    if (free_bytes < records.size() + (16 << 10)) {
      error = "not enough space on the file system (" + std::to_string(records.size()) +
              " bytes to write, " + std::to_string(free_bytes) + " free)";
    }
  }
  size_t done = 0;
  while (error.empty() && done < records.size()) {
    const ssize_t n =
        pwrite(fd_, records.data() + done, records.size() - done, static_cast<off_t>(size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = std::strerror(n < 0 ? errno : EIO);
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (error.empty() && fdatasync(fd_) != 0) error = std::strerror(errno);
  if (error.empty()) {
    size_ += records.size();
    return;
  }
  // What was written of the record is cut off again: the journal keeps its intact records only.
  if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    // The torn record fails its checksum and is left out when read.
  }
  throw RuntimeFault(error);
}

std::string JournalWriter::contents() const {
  std::string bytes(size_, '\0');
  size_t done = 0;
  while (done < size_) {
    const ssize_t n = pread(fd_, bytes.data() + done, size_ - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw RuntimeFault("cannot read '" + path_ + "' back: " + std::strerror(n < 0 ? errno : EIO));
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

void JournalWriter::remove() {
  if (fd_ < 0) return;
  unlink(path_.c_str());
  close(fd_);
  fd_ = -1;
}

}  // namespace fob
