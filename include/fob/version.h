// Which fobench this is: FOB_VERSION (a compile definition, from CMake's project version) and
// the git commit the build was made from.
#pragma once

namespace fob {

// "5f772c3", "5f772c3-dirty" (uncommitted changes to tracked files) or "unknown" (no git):
// read at build time.
const char* git_commit();

}  // namespace fob
