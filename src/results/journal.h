// NAME.h5.partial: the journal a run appends each finished case (or round) to while it runs,
// and turns into NAME.h5 once, at the end (ResultWriter).
//
// Why a journal and not HDF5 updated in place: HDF5 rewrites its superblock, object headers
// and heaps in place, so a flush cut short by a kill or a full disk can leave a file that no
// longer opens, and an HDF5 file that replaces whole objects keeps the space they held. Writing
// a fresh image at every flush is safe but rewrites everything measured so far, so a sweep's
// flushes grow with the square of its cases. The journal only ever appends: a flush writes one
// record and syncs it, so its cost is the case's own size however long the sweep; a record cut
// short by a crash fails its checksum and is left out (a resume drops it), and everything
// before it reads as it was written. (HDF5's SWMR does not serve: it cannot create the new
// groups and datasets each case needs.)
//
// Layout (little-endian): the 8 bytes "FOBJRNL\n", a u32 format version (kJournalVersion), then
// records, each the mark "FOBR", a u32 tag, the u64 run it belongs to (RunInfo::run_id), a u64
// payload length, the payload (case_codec.h) and a u64 FNV-1a of all before it. The first record
// is the header (RunInfo and SystemInfo); a `case` record holds a whole case and replaces any
// earlier one of its id; a `rounds` record appends rounds to a case recorded before. A record of
// another run, one that fails its checksum or one that contradicts those before it is left out
// and said; the records after it are read on (found by their mark).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fob/result_files.h"
#include "fob/results.h"

namespace fob {

// 4: every record carries its run's id and opens with a mark. 5: the header carries /system
// copy_engines and each case its transfer_sms. 6: each case's key carries the MoE fields. 7:
// each case carries its MoE load (CaseResult::moe_load). A journal of format 6 still reads, its
// cases without a load; a resume writes it anew in the current format.
inline constexpr uint32_t kJournalVersion = 7;
inline constexpr uint32_t kJournalVersionOldest = 6;
inline constexpr uint32_t kJournalVersionMoeLoad = 7;  // the first whose cases carry the load

// Whether `head` (a file's first bytes) starts like a journal.
bool is_journal(std::string_view head);

// What reading a journal left out, for a resume to act on.
struct JournalScan {
  // The leading bytes before the first record left out (all of them when none was).
  size_t intact_bytes = 0;
  // Where more than a torn tail was left out, or the journal is of an older format: the journal
  // without the left-out records, in the current format, its header's notes saying what they
  // were (a resume writes it in place of the file); else empty.
  std::string image;
  // Each record left out: its number, its offset and why.
  std::vector<std::string> left_out;
};

// What a journal's bytes hold: every intact record of its run applied in order. What is left
// out (a torn tail, a damaged record, a record of another run or one that contradicts the
// records before it) is said in system.notes and, where given, in `scan`. InputError when the
// header is missing or damaged or the version is not kJournalVersionOldest..kJournalVersion.
ResultFile read_journal(std::string_view bytes, const std::string& path,
                        JournalScan* scan = nullptr);

// Appends records to a journal: created fresh (the header written and synced, renamed over
// `path`), or continued after its last intact record. Each append is written whole and synced
// before it returns; one that fails is cut off again, so the journal stays as it was.
class JournalWriter {
 public:
  JournalWriter(const std::string& path, const RunInfo& run, const SystemInfo& sys);
  // Written fresh as `image` (JournalScan::image), renamed over `path`.
  JournalWriter(const std::string& path, const std::string& image, const std::string& run_id);
  // Takes over `fd` (an open journal of run `run_id` whose first `intact_bytes` are intact
  // records).
  JournalWriter(const std::string& path, int fd, size_t intact_bytes, const std::string& run_id);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  void add_case(const CaseResult& c);
  void add_cases(const std::vector<CaseResult>& cases);
  // Iterations [from_iter, c.iters) and rounds [from_round, ...) of a case recorded before.
  void add_rounds(const CaseResult& c, int from_iter, int from_round);

  // The whole journal as it is on disk.
  std::string contents() const;
  size_t size() const { return size_; }
  // Removes the journal (its run has written the finished file).
  void remove();
  // The magic and the current format's version a journal opens with.
  static std::string start_bytes();

 private:
  void append(const std::string& records);
  std::string path_;
  int fd_ = -1;
  size_t size_ = 0;
  uint64_t run_ = 0;  // the run its records belong to
};

}  // namespace fob
