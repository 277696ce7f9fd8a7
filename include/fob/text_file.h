// Input files read whole: configs, machine files, results. Only regular files: a directory
// would read as empty (and run the defaults), a FIFO would block the run forever. Each is sized
// before it is read, so what one takes in memory is what it really holds.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace fob {

// What a config or a machine file may hold (kMaxConfigBytes, config.h).
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{64} << 20;

// Throws InputError ("WHAT: 'PATH' is a directory, not a file") unless `path` names an existing
// regular file (symbolic links followed).
void require_regular_file(const std::string& path, const std::string& what);

// Throws InputError unless `st` (a regular file's) claims at most `max_bytes`, and, past 1 MiB,
// has at least an eighth of its size on disk: a sparse file whose holes make up its size is not
// what it claims, and is refused by its size before any of it is read.
void require_plausible_size(const struct stat& st, const std::string& path, const std::string& what,
                            uint64_t max_bytes);

// What the open file `fd` (then closed) holds, refused as require_plausible_size refuses it, or
// when it is not a regular file; InputError ("WHAT: 'PATH' ...") when it cannot be read.
std::string read_open_file(int fd, const std::string& path, const std::string& what,
                           uint64_t max_bytes);

// The file's contents, after require_regular_file and require_plausible_size on the open
// file; InputError when it cannot be read.
std::string read_regular_file(const std::string& path, const std::string& what,
                              uint64_t max_bytes = kMaxTextFileBytes);

}  // namespace fob
