// The op log: with FOB_MODEL_OP_LOG set to a path ("%p" in it becomes the process id), every op
// that runs on a stream or a graph lane appends one line when it finishes, so that a test can see
// what ran where and when, on the model's GPU clock, with the facts the libraries noted:
//
//   op seq=<n> stream=<id> enqueue_ns=<n> start_ns=<n> end_ns=<n> task="<task>" name="<name>"
//   note="<note>" range="<range>"
//
// (one line). The file is opened once, with O_APPEND, and each line is one write(), so that the
// lines of several streams and processes sharing a file never interleave within a line.
#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "internal.h"

namespace fobmodel::detail {
namespace {

std::string expand_pid(const std::string& pattern) {
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      path += std::to_string(getpid());
      ++i;
    } else {
      path += pattern[i];
    }
  }
  return path;
}

// Read once, at the first op that finishes: later changes of the environment do not move the log.
int log_fd() {
  static const int fd = [] {
    const char* pattern = std::getenv("FOB_MODEL_OP_LOG");
    if (pattern == nullptr || *pattern == '\0') return -1;
    const std::string path = expand_pid(pattern);
    const int opened = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (opened < 0) violation("setup", "FOB_MODEL_OP_LOG: cannot open " + path);
    return opened;
  }();
  return fd;
}

// A field between double quotes never holds one, nor a line break: a parser reads up to the next
// '"' and lines stay lines.
std::string field(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c == '"') c = '\'';
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace

void log_op(const QueuedOp& op, uint64_t start_ns, uint64_t end_ns) {
  const int fd = log_fd();
  if (fd < 0) return;
  char head[192];
  std::snprintf(head, sizeof head,
                "op seq=%" PRIu64 " stream=%" PRIu32 " enqueue_ns=%" PRIu64 " start_ns=%" PRIu64
                " end_ns=%" PRIu64,
                op.identity->sequence, op.stream_id, op.enqueue_ns, start_ns, end_ns);
  const std::string line = std::string(head) + " task=\"" + field(op.op.task) + "\" name=\"" +
                           field(op.op.name) + "\" note=\"" + field(op.op.note) + "\" range=\"" +
                           field(op.op.range) + "\"\n";
  // One write per line: appends of one write() land whole (O_APPEND), a loop could split them.
  if (write(fd, line.data(), line.size()) < 0) return;
}

}  // namespace fobmodel::detail
