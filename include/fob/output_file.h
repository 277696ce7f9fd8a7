// Output files in folders other people can write to. Every file fobench writes (results,
// journals, reports, pictures, machine files, locks) is made here, by rules that no planted
// symbolic link, hard link, FIFO or directory can bend:
// - a temporary is created in the target's own folder under a fresh random name with
//   O_CREAT|O_EXCL|O_NOFOLLOW, so nothing planted there is ever opened;
// - it replaces the target by rename(2), which replaces a name, never follows it, and only after
//   the target was checked again to be absent or a regular file with one link;
// - an output is never one of the command's inputs (same device and inode), a symbolic link or
//   a non-regular file, and an existing one is replaced only with --force.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fob {

// Refuses (InputError, exit 2, naming `flag` and `path`) an output path that:
// - is empty, or has a name or path too long for the files fobench keeps beside it (the
//   temporary of NAME.partial, ".NAME.partial.XXXXXX.tmp", must fit NAME_MAX and PATH_MAX);
// - ends in a name fobench keeps for its own files (.partial, .lock, .tmp, ...);
// - is a symbolic link, a directory or another non-regular file, or has more than one link;
// - names the same file as one of `inputs` (links in the inputs followed);
// - exists, unless `force`;
// - lies in a folder that does not exist.
// Creates nothing.
void check_output_path(const std::string& flag, const std::string& path, bool force,
                       const std::vector<std::string>& inputs = {});

// A new file beside `target`, ".NAME.XXXXXX.tmp" (random, mode 0644 less the umask), open for
// writing, removed again unless commit() renamed it over `target`. Throws RuntimeFault naming
// the folder when it cannot be created.
class TempFile {
 public:
  explicit TempFile(const std::string& target);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Writes all of `bytes` at the current offset; RuntimeFault on a short write or an error.
  void write_all(std::string_view bytes);

  // fsyncs the file, checks `target_` again (absent, or a regular file with one link: else
  // InputError, and the temporary is removed), renames the temporary over it and fsyncs the
  // folder. The descriptor stays open (and names the target now) when `keep_open`.
  void commit(bool keep_open = false);

  // Hands over the descriptor (after commit(true)); the caller closes it.
  int release_fd();

 private:
  std::string target_, path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The temporaries of `target` and of its journal (".NAME.XXXXXX.tmp", ".NAME.partial.XXXXXX.tmp")
// that a run killed while writing left beside it, each with its owner, age and size. Only
// lists: whoever holds `target`'s lock (OutputLock) knows no run of it is writing them.
std::vector<std::string> stale_temporaries(const std::string& target);

// `bytes` as the new contents of `path`, through a TempFile.
void write_file_atomically(const std::string& path, std::string_view bytes);

// Opens an existing file for reading and writing (a journal being resumed) without following a
// link: InputError unless it is a regular file with exactly one link.
int open_existing_regular(const std::string& path, const std::string& what);

}  // namespace fob
