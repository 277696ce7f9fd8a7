#include "fob/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fob/types.h"
#include "output_file_detail.h"

namespace fob {
namespace {

// A temporary is ".NAME.XXXXXX.tmp" beside its target.
constexpr size_t kTempRandomChars = 6;
constexpr const char kTempSuffix[] = ".tmp";
// How much longer than an output's name the names fobench keeps beside it may be: the
// temporary of NAME.partial, ".NAME.partial.XXXXXX.tmp".
constexpr size_t kRoomForFobench =
    sizeof(".partial") - 1 + 2 + kTempRandomChars + sizeof(kTempSuffix) - 1;
// Names that fobench makes beside its outputs; an output so named could be taken for one, or
// be removed or replaced as one.
constexpr const char* kReservedSuffixes[] = {".partial", ".lock", kTempSuffix};

TempNameSource temp_name_source = nullptr;

std::string random_chars() {
  if (temp_name_source != nullptr) return temp_name_source();
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[kTempRandomChars] = {};
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    std::random_device device;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(device());
  }
  std::string out;
  for (const unsigned char b : bytes) out += kAlphabet[b % (sizeof kAlphabet - 1)];
  return out;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The folder part with its slash ("" for a bare name), and the name.
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

std::string folder_of(const std::string& path) {
  const std::string prefix = split_path(path).first;
  return prefix.empty() ? "." : prefix;
}

void check_name(const std::string& where, const std::string& path, const std::string& name) {
  if (name.empty() || name == "." || name == "..") {
    throw InputError(where + " names a directory; name a file, e.g. '" + path +
                     (ends_with(path, "/") ? "" : "/") + "out'");
  }
  constexpr size_t kMaxName = NAME_MAX - kRoomForFobench;
  constexpr size_t kMaxPath = PATH_MAX - 1 - kRoomForFobench;
  if (name.size() > kMaxName || path.size() > kMaxPath) {
    const bool name_long = name.size() > kMaxName;
    throw InputError(where + ": the " + (name_long ? "name" : "path") + " is " +
                     std::to_string(name_long ? name.size() : path.size()) +
                     " bytes, and fobench keeps files beside it whose names are up to " +
                     std::to_string(kRoomForFobench) + " bytes longer: at most " +
                     std::to_string(name_long ? kMaxName : kMaxPath) + " bytes, choose a shorter " +
                     (name_long ? "name" : "path"));
  }
  for (const char* suffix : kReservedSuffixes) {
    if (ends_with(name, suffix)) {
      throw InputError(where + ": names ending in " + suffix +
                       " are fobench's own (unfinished results, locks and temporaries); "
                       "choose another name");
    }
  }
}

void check_existing(const std::string& where, const std::string& path, const struct stat& st,
                    bool force, const std::vector<std::string>& inputs) {
  if (S_ISLNK(st.st_mode)) {
    throw InputError(where +
                     " is a symbolic link; fobench never writes through one (it may point at "
                     "anything): remove it or choose another name");
  }
  if (S_ISDIR(st.st_mode)) {
    throw InputError(where + " is a directory; name a file in it, e.g. '" + path + "/out'");
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(where + " is " + file_kind(st.st_mode) +
                     ", not a regular file; choose another name");
  }
  for (const std::string& input : inputs) {
    struct stat in = {};
    if (stat(input.c_str(), &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
      throw InputError(where + " is one of this command's inputs ('" + input +
                       "'); fobench never writes over what it reads: name a new file");
    }
  }
  if (st.st_nlink != 1) {
    throw InputError(where + " has " + std::to_string(st.st_nlink) +
                     " hard links; fobench replaces only a file that is its name's alone: "
                     "remove it or choose another name");
  }
  if (!force) throw InputError(where + " already exists; pass --force to overwrite it");
}

void check_folder(const std::string& where, const std::string& folder) {
  struct stat st = {};
  if (stat(folder.c_str(), &st) != 0) {
    throw InputError(where + ": the folder '" + folder + "' " +
                     (errno == ENOENT ? std::string("does not exist; create it first")
                                      : "cannot be read: " + std::string(std::strerror(errno))));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw InputError(where + ": '" + folder + "' is " + file_kind(st.st_mode) + ", not a folder");
  }
  if (access(folder.c_str(), W_OK | X_OK) != 0) {
    throw InputError(where + ": cannot write in the folder '" + folder +
                     "': " + std::strerror(errno));
  }
}

}  // namespace

const char* file_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "a device";
}

std::string not_own_regular(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return std::string("is ") + file_kind(st.st_mode);
  if (st.st_nlink != 1) return "has " + std::to_string(st.st_nlink) + " hard links";
  return "";
}

void set_temp_name_source(TempNameSource source) {
  temp_name_source = source;
}

void check_output_path(const std::string& flag, const std::string& path, bool force,
                       const std::vector<std::string>& inputs) {
  if (path.empty()) throw InputError(flag + ": name the file to write");
  const std::string where = flag + " '" + path + "'";
  check_name(where, path, split_path(path).second);
  struct stat st = {};
  if (lstat(path.c_str(), &st) == 0) {
    check_existing(where, path, st, force, inputs);
  } else if (errno != ENOENT) {
    throw InputError(where + ": cannot look at it: " + std::strerror(errno));
  }
  check_folder(where, folder_of(path));
}

TempFile::TempFile(const std::string& target) : target_(target) {
  const auto [prefix, name] = split_path(target);
  // O_EXCL with O_NOFOLLOW creates a new file or fails: a link or FIFO planted at the name is
  // never opened, and another name is tried.
  constexpr int kFlags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate = prefix + "." + name + "." + random_chars() + kTempSuffix;
    const int fd = open(candidate.c_str(), kFlags, 0644);
    if (fd >= 0) {
      fd_ = fd;
      path_ = std::move(candidate);
      return;
    }
    if (errno != EEXIST && errno != EINTR) {
      throw RuntimeFault("cannot create a temporary for '" + target + "' in the folder '" +
                         folder_of(target) + "': " + std::strerror(errno));
    }
  }
  throw RuntimeFault("cannot create a temporary for '" + target + "' in the folder '" +
                     folder_of(target) + "': every name tried was taken");
}

TempFile::~TempFile() {
  if (fd_ < 0) return;
  if (!committed_) unlink(path_.c_str());
  close(fd_);
}

void TempFile::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = fd_ < 0 ? -1 : write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = fd_ < 0 ? "it is closed"
                              : n < 0 ? std::strerror(errno)
                                      : "no byte was taken";
      throw RuntimeFault("cannot write '" + target_ + "' (through '" + path_ + "'): " + why);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void TempFile::commit(bool keep_open) {
  if (fd_ < 0 || committed_) throw RuntimeFault("'" + target_ + "': nothing to commit");
  // Closes and removes the temporary: a failed commit leaves nothing behind.
  auto discard = [this] {
    unlink(path_.c_str());
    close(fd_);
    fd_ = -1;
  };
  if (fsync(fd_) != 0) {
    const int err = errno;
    discard();
    throw RuntimeFault("cannot write '" + target_ + "': " + std::strerror(err));
  }
  // Checked again because the folder is shared: what is there now is what rename replaces.
  struct stat st = {};
  if (lstat(target_.c_str(), &st) == 0) {
    const std::string why = not_own_regular(st);
    if (!why.empty()) {
      discard();
      throw InputError("'" + target_ + "' " + why +
                       " (put there while fobench wrote it); fobench replaces only a regular "
                       "file with one link: remove it and run again");
    }
  } else if (errno != ENOENT) {
    const int err = errno;
    discard();
    throw RuntimeFault("cannot look at '" + target_ + "': " + std::strerror(err));
  }
  if (rename(path_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw RuntimeFault("cannot rename '" + path_ + "' to '" + target_ + "': " + std::strerror(err));
  }
  committed_ = true;
  // The rename lasts a crash once the folder is synced. Some file systems cannot sync a folder;
  // the file's own bytes are synced already, which is the most they offer.
  const int folder = open(folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    fsync(folder);
    close(folder);
  }
  if (!keep_open) {
    close(fd_);
    fd_ = -1;
  }
}

int TempFile::release_fd() {
  // Before commit the descriptor's file is the temporary, which the destructor must remove.
  if (!committed_) throw RuntimeFault("'" + target_ + "': release_fd() before commit()");
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  TempFile file(path);
  file.write_all(bytes);
  file.commit();
}

int open_existing_regular(const std::string& path, const std::string& what) {
  const std::string where = what + " '" + path + "'";
  auto refuse = [&](const std::string& why) {
    return InputError(where + " " + why +
                      "; fobench opens only a regular file with one link, never through a "
                      "link: remove it or name another file");
  };
  // Looked at first so that a device or FIFO is never opened; then checked again on the
  // descriptor, which is what counts should the name change in between.
  struct stat st = {};
  if (lstat(path.c_str(), &st) != 0) {
    throw InputError(where + ": cannot open it: " + std::strerror(errno));
  }
  if (const std::string why = not_own_regular(st); !why.empty()) throw refuse(why);
  const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (lstat(path.c_str(), &st) == 0 && !not_own_regular(st).empty()) {
      throw refuse(not_own_regular(st));
    }
    throw InputError(where + ": cannot open it: " + std::strerror(err));
  }
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    throw RuntimeFault(where + ": cannot look at it: " + std::strerror(err));
  }
  if (const std::string why = not_own_regular(st); !why.empty()) {
    close(fd);
    throw refuse(why);
  }
  // Reads and writes of a regular file wait for the disk, as the caller expects.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::vector<std::string> stale_temporaries(const std::string& target) {
  const auto [prefix, name] = split_path(target);
  DIR* dir = opendir(folder_of(target).c_str());
  if (dir == nullptr) return {};
  std::vector<std::string> found;
  const auto now = std::chrono::system_clock::now();
  for (const dirent* entry; (entry = readdir(dir)) != nullptr;) {
    const std::string entry_name = entry->d_name;
    // ".NAME.XXXXXX.tmp" or ".NAME.partial.XXXXXX.tmp": a temporary of the results file or of
    // its journal.
    bool ours = false;
    for (const std::string& of : {name, name + ".partial"}) {
      ours = ours || (entry_name.size() == 1 + of.size() + 1 + kTempRandomChars + 4 &&
                      entry_name.compare(0, 1 + of.size() + 1, "." + of + ".") == 0 &&
                      ends_with(entry_name, kTempSuffix));
    }
    struct stat st {};
    if (!ours || fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const passwd* owner = getpwuid(st.st_uid);
    const auto age = std::chrono::duration_cast<std::chrono::minutes>(
        now - std::chrono::system_clock::from_time_t(st.st_mtime));
    found.push_back("'" + prefix + entry_name + "' (owner " +
                    (owner ? std::string(owner->pw_name) : std::to_string(st.st_uid)) + ", " +
                    std::to_string(age.count()) + " min old, " + std::to_string(st.st_size) +
                    " bytes" + (S_ISREG(st.st_mode) ? "" : ", not a regular file") + ")");
  }
  closedir(dir);
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace fob
