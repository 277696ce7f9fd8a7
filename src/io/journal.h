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
// records, each a u32 tag, a u64 payload length, the payload (case_codec.h) and a u64 FNV-1a of
// tag, length and payload. The first record is the header (RunInfo and SystemInfo); a `case`
// record holds a whole case and replaces any earlier one of its id; a `rounds` record appends
// rounds to a case recorded before.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fob/result_files.h"
#include "fob/results.h"

namespace fob {

// 2: cases carry launch times and the hardware's account of them; /system its hardware.
inline constexpr uint32_t kJournalVersion = 3;

// Whether `head` (a file's first bytes) starts like a journal.
bool is_journal(std::string_view head);

// What a journal's bytes hold: every intact record applied in order. A torn or damaged tail (a
// write in progress, or one a crash cut short) is left out and said in system.notes;
// `intact_bytes`, where given, is how many leading bytes the intact records take. InputError
// when the header is missing or damaged, the version is not kJournalVersion, or an intact
// record contradicts the ones before it.
ResultFile read_journal(std::string_view bytes, const std::string& path,
                        size_t* intact_bytes = nullptr);

// Appends records to a journal: created fresh (the header written and synced, renamed over
// `path`), or continued after its last intact record. Each append is written whole and synced
// before it returns; one that fails is cut off again, so the journal stays as it was.
class JournalWriter {
 public:
  JournalWriter(const std::string& path, const RunInfo& run, const SystemInfo& sys);
  // Takes over `fd` (an open journal whose first `intact_bytes` are intact records).
  JournalWriter(const std::string& path, int fd, size_t intact_bytes);
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

 private:
  void append(const std::string& records);
  std::string path_;
  int fd_ = -1;
  size_t size_ = 0;
};

}  // namespace fob
