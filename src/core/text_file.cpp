#include "fob/text_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fob/types.h"

namespace fob {

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    throw InputError(what + ": cannot read '" + path + "': " + std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return;
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "a device";
  throw InputError(what + ": '" + path + "' is " + kind + ", not a regular file");
}

std::string read_regular_file(const std::string& path, const std::string& what) {
  require_regular_file(path, what);
  std::ifstream in(path);
  if (!in) throw InputError(what + ": cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace fob
