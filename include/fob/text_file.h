// Input files read whole: configs, machine files, results. Only regular files: a directory
// would read as empty (and run the defaults), a FIFO would block the run forever.
#pragma once

#include <string>

namespace fob {

// Throws InputError ("WHAT: 'PATH' is a directory, not a file") unless `path` names an existing
// regular file (symbolic links followed).
void require_regular_file(const std::string& path, const std::string& what);

// The file's contents, after require_regular_file; InputError when it cannot be read.
std::string read_regular_file(const std::string& path, const std::string& what);

}  // namespace fob
