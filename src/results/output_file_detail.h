// The parts of output_file.cpp that the lock file (output_lock.cpp) and the tests share: what a
// name in a shared folder is, in the words fobench's messages use, and the random part of a
// temporary's name.
#pragma once

#include <sys/stat.h>

#include <string>

namespace fob {

// "a symbolic link", "a directory", "a FIFO", "a socket", "a device" or "a regular file".
const char* file_kind(mode_t mode);

// Empty for a regular file with exactly one link; else what it is instead: "is a symbolic
// link", "is a directory", "has 2 hard links", ...
std::string not_own_regular(const struct stat& st);

// Where TempFile takes the random part of its names from; null restores the random default.
// Tests plant links at the names it will try, which they cannot guess otherwise.
using TempNameSource = std::string (*)();
void set_temp_name_source(TempNameSource source);

}  // namespace fob
