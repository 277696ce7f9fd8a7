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
#include <optional>
#include <string>

#include "case_codec.h"
#include "fob/output_file.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr std::string_view kMagic("FOBJRNL\n", 8);
constexpr size_t kStartBytes = kMagic.size() + sizeof(uint32_t);
// Each record opens with this mark, so that past a damaged record the next one is found by
// its mark (and then its checksum), not by the damaged record's length.
constexpr uint32_t kRecordMark = 0x52424F46;  // "FOBR"
constexpr size_t kHeadBytes = 2 * sizeof(uint32_t) + 2 * sizeof(uint64_t);
constexpr size_t kFrameBytes = kHeadBytes + sizeof(uint64_t);

enum class Tag : uint32_t { header = 1, whole_case = 2, rounds = 3 };

uint64_t checksum(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (const char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  return h;
}

// The run a record belongs to, as its frame carries it: RunInfo::run_id's 16 hex digits.
uint64_t run_tag(const std::string& run_id) {
  uint64_t tag = 0;
  for (const char ch : run_id) {
    const int digit = ch >= '0' && ch <= '9'   ? ch - '0'
                      : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                               : 0;
    tag = tag << 4 | static_cast<uint64_t>(digit);
  }
  return tag;
}

// One record: the frame around `payload`.
std::string record(Tag tag, uint64_t run, const std::string& payload) {
  codec::Encoder e;
  e.u32(kRecordMark);
  e.u32(static_cast<uint32_t>(tag));
  e.u64(run);
  e.u64(payload.size());
  e.bytes() += payload;
  e.u64(checksum(e.bytes()));
  return std::move(e.bytes());
}

std::string header_record(const RunInfo& run, const SystemInfo& sys) {
  codec::Encoder header;
  codec::put_run(header, run);
  codec::put_system(header, sys);
  return record(Tag::header, run_tag(run.run_id), header.bytes());
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
  // Applied to a copy, so that a record refused halfway leaves its case as it was.
  CaseResult c = *it;
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
  *it = std::move(c);
}

void apply_case(codec::Decoder& d, std::vector<CaseResult>& cases, bool with_moe_load) {
  CaseResult c = codec::get_case(d, with_moe_load);
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

// A record's frame found intact at `at`: its mark, a length the bytes hold, its checksum.
struct Frame {
  uint32_t tag = 0;
  uint64_t run = 0;
  size_t at = 0, length = 0, end = 0;
  std::string_view payload(std::string_view bytes) const {
    return bytes.substr(at + kHeadBytes, length);
  }
};

// Reads a journal's records in order. A record whose frame does not verify is damage: the next
// record is sought by its mark, each candidate checked by its checksum, within a budget of
// hashing (kResyncBudget times the journal's size) so that a file planted with marks cannot
// make the search quadratic. Records of another run, and records that contradict the ones
// before, are left out too. Everything left out is said, with its record number and offset.
class JournalReader {
 public:
  static constexpr size_t kResyncBudget = 4;

  JournalReader(std::string_view bytes, const std::string& path, uint32_t version)
      : bytes_(bytes),
        path_(path),
        budget_(kResyncBudget * bytes.size() + (1 << 20)),
        version_(version) {}

  ResultFile read(JournalScan* scan) {
    size_t at = kStartBytes;
    while (at < bytes_.size()) {
      const std::optional<Frame> frame = frame_at(at);
      if (!frame) {
        at = skip_damage(at);
        continue;
      }
      take(*frame);
      at = frame->end;
    }
    if (!header_) throw InputError("'" + path_ + "': the journal's header is missing or damaged");
    for (const std::string& note : notes_) {
      file_.system.notes += (file_.system.notes.empty() ? "" : "; ") + ("journal: " + note);
    }
    if (scan) fill(*scan);
    return std::move(file_);
  }

 private:
  std::optional<Frame> frame_at(size_t at) {
    if (bytes_.size() - at < kFrameBytes) return std::nullopt;
    codec::Decoder d(bytes_.substr(at, kHeadBytes), where(path_, index_));
    if (d.u32() != kRecordMark) return std::nullopt;
    Frame f;
    f.tag = d.u32();
    f.run = d.u64();
    const uint64_t length = d.u64();
    if (length > bytes_.size() - at - kFrameBytes) return std::nullopt;
    f.at = at;
    f.length = static_cast<size_t>(length);
    f.end = at + kFrameBytes + f.length;
    uint64_t sum = 0;
    std::memcpy(&sum, bytes_.data() + f.end - sizeof sum, sizeof sum);
    hashed_ += kHeadBytes + f.length;
    if (sum != checksum(bytes_.substr(at, kHeadBytes + f.length))) return std::nullopt;
    return f;
  }

  // Past the damage at `at`: the offset of the next record that verifies, or the journal's
  // end when none does (or the search's budget runs out).
  size_t skip_damage(size_t at) {
    size_t next = at + 1;
    const std::string_view mark(reinterpret_cast<const char*>(&kRecordMark), sizeof kRecordMark);
    for (;; ++next) {
      next = bytes_.find(mark, next);
      if (next == std::string_view::npos || hashed_ > budget_) {
        next = bytes_.size();
        break;
      }
      if (frame_at(next)) break;
    }
    if (first_left_out_ == std::string_view::npos) first_left_out_ = at;
    const std::string span = std::to_string(next - at) + " bytes at byte " + std::to_string(at);
    if (next == bytes_.size()) {
      std::string note = "record " + std::to_string(index_ + 1) + " (" + span +
                         ") is cut short or damaged (a write in progress, or one a crash cut "
                         "short) and is left out";
      if (hashed_ > budget_) note += " with the rest of the journal, too damaged to search";
      notes_.push_back(note);
    } else {
      rewrite_ = true;
      notes_.push_back("record " + std::to_string(index_ + 1) + " (" + span +
                       ") is damaged (its checksum does not match) and is left out; the "
                       "records after it are read");
    }
    ++index_;
    return next;
  }

  void take(const Frame& f) {
    codec::Decoder d(f.payload(bytes_), where(path_, index_));
    const std::string at =
        "record " + std::to_string(index_ + 1) + " at byte " + std::to_string(f.at);
    ++index_;
    if (!header_) {
      if (f.tag != static_cast<uint32_t>(Tag::header)) {
        d.fail("the journal does not start with its header");
      }
      file_.run = codec::get_run(d);
      file_.system = codec::get_system(d);
      if (d.left() != 0) d.fail("bytes left over after the record");
      if (run_tag(file_.run.run_id) != f.run) d.fail("a header whose run id is not its frame's");
      header_ = f;
      return;
    }
    std::string why;
    if (f.run != header_->run) {
      char run[24];
      std::snprintf(run, sizeof run, "%016llx", static_cast<unsigned long long>(f.run));
      why = "belongs to another run (run id " + std::string(run) + ", this journal's " +
            file_.run.run_id + ")";
    } else {
      why = apply(f, d);
    }
    if (why.empty()) {
      kept_.push_back(f);
      return;
    }
    if (first_left_out_ == std::string_view::npos) first_left_out_ = f.at;
    rewrite_ = true;
    notes_.push_back(at + " " + why + " and is left out");
  }

  // Why the record cannot be applied, or "" once it is.
  std::string apply(const Frame& f, codec::Decoder& d) {
    try {
      if (f.tag == static_cast<uint32_t>(Tag::whole_case)) {
        apply_case(d, file_.cases, version_ >= kJournalVersionMoeLoad);
      } else if (f.tag == static_cast<uint32_t>(Tag::rounds)) {
        apply_rounds(d, file_.cases);
      } else if (f.tag == static_cast<uint32_t>(Tag::header)) {
        return "is a second header";
      } else {
        return "is of kind " + std::to_string(f.tag) + ", which this fobench does not know";
      }
      if (d.left() != 0) d.fail("bytes left over after the record");
    } catch (const InputError& e) {
      return std::string("cannot be applied (") + e.what() + ")";
    }
    return "";
  }

  void fill(JournalScan& scan) const {
    scan.intact_bytes = first_left_out_ == std::string_view::npos ? bytes_.size() : first_left_out_;
    scan.left_out = notes_;
    // A torn tail alone is what any crash leaves: cut off, it leaves nothing to say. Anything
    // else left out is said in the header of the journal a resume writes in its place,
    // without the left-out records.
    if (version_ != kJournalVersion) {
      // Records are appended in the current format only: the journal is written anew in it.
      scan.image = JournalWriter::start_bytes() + header_record(file_.run, file_.system);
      for (const CaseResult& c : file_.cases) {
        codec::Encoder e;
        codec::put_case(e, c);
        scan.image += record(Tag::whole_case, header_->run, e.bytes());
      }
      return;
    }
    if (!rewrite_) return;
    scan.image =
        std::string(bytes_.substr(0, kStartBytes)) + header_record(file_.run, file_.system);
    for (const Frame& f : kept_) scan.image += bytes_.substr(f.at, f.end - f.at);
  }

  std::string_view bytes_;
  const std::string& path_;
  size_t budget_, hashed_ = 0, index_ = 0;
  size_t first_left_out_ = std::string_view::npos;
  bool rewrite_ = false;  // something other than a torn tail was left out
  uint32_t version_;
  std::optional<Frame> header_;
  std::vector<Frame> kept_;
  std::vector<std::string> notes_;
  ResultFile file_;
};

}  // namespace

bool is_journal(std::string_view head) {
  return head.substr(0, kMagic.size()) == kMagic;
}

ResultFile read_journal(std::string_view bytes, const std::string& path, JournalScan* scan) {
  if (!is_journal(bytes) || bytes.size() < kStartBytes) {
    throw InputError("'" + path + "' is not a fobench journal");
  }
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + kMagic.size(), sizeof version);
  if (version < kJournalVersionOldest || version > kJournalVersion) {
    throw InputError("'" + path + "': journal format " + std::to_string(version) +
                     ", this fobench reads formats " + std::to_string(kJournalVersionOldest) +
                     ".." + std::to_string(kJournalVersion) +
                     " only; read it with the fobench that wrote it");
  }
  ResultFile file = JournalReader(bytes, path, version).read(scan);
  std::sort(file.cases.begin(), file.cases.end(),
            [](const CaseResult& a, const CaseResult& b) { return a.id < b.id; });
  // As the HDF5 file says them: the timer asked for, and the one(s) that took the times.
  file.system.timer_requested = file.system.requested_timer();
  if (!file.cases.empty()) {
    file.system.timer = files_timer(file.system.timer_requested, file.cases);
  }
  return file;
}

// ---- writing --------------------------------------------------------------------------------

JournalWriter::JournalWriter(const std::string& path, const RunInfo& run, const SystemInfo& sys)
    : JournalWriter(path, start_bytes() + header_record(run, sys), run.run_id) {}

std::string JournalWriter::start_bytes() {
  codec::Encoder start;
  start.bytes() += kMagic;
  start.u32(kJournalVersion);
  return std::move(start.bytes());
}

JournalWriter::JournalWriter(const std::string& path, const std::string& image,
                             const std::string& run_id)
    : path_(path), run_(run_tag(run_id)) {
  TempFile tmp(path);
  tmp.write_all(image);
  tmp.commit(true);
  fd_ = tmp.release_fd();
  size_ = image.size();
}

JournalWriter::JournalWriter(const std::string& path, int fd, size_t intact_bytes,
                             const std::string& run_id)
    : path_(path), fd_(fd), size_(intact_bytes), run_(run_tag(run_id)) {
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
  append(record(Tag::whole_case, run_, e.bytes()));
}

void JournalWriter::add_cases(const std::vector<CaseResult>& cases) {
  std::string records;
  for (const CaseResult& c : cases) {
    codec::Encoder e;
    codec::put_case(e, c);
    records += record(Tag::whole_case, run_, e.bytes());
  }
  append(records);
}

void JournalWriter::add_rounds(const CaseResult& c, int from_iter, int from_round) {
  append(record(Tag::rounds, run_, rounds_payload(c, from_iter, from_round)));
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
