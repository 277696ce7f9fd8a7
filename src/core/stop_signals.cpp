#include "stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "fob/types.h"

namespace fob::stop {
namespace {

// Two buffers, so that a note being replaced never shows half-written to the handler.
constexpr size_t kNoteLen = 1024;
char g_notes[2][kNoteLen];
std::atomic<int> g_current{0};
std::atomic<int> g_rank{0};
std::atomic<int> g_writing{0};
std::atomic<int> g_held{0};

// Only async-signal-safe calls from here on: write(2) and _exit(2).
void put(const char* text) {
  if (write(STDERR_FILENO, text, strlen(text)) < 0) {
    // stderr is gone: nothing to report to.
  }
}

void put_int(long value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 23);
  char text[24];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  text[n] = '\0';
  put(text);
}

[[noreturn]] void stop_now(int sig) {
  const char* note = g_notes[g_current.load()];
  if (note[0] != '\0') {
    put("fobench: rank ");
    put_int(g_rank.load());
    put(sig == SIGINT   ? ": interrupted (SIGINT)"
        : sig == SIGHUP ? ": stopped by SIGHUP"
                        : ": stopped by SIGTERM");
    put("; ");
    put(note);
    put("\n");
  }
  _exit(kExitInterrupted);
}

extern "C" void on_stop_signal(int sig) {
  if (g_writing.load()) {
    g_held.store(sig);
    return;
  }
  stop_now(sig);
}

}  // namespace

void install(int rank) {
  g_rank.store(rank);
  static const bool installed = [] {
    struct sigaction action = {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &action, nullptr);
    // A write to a closed pipe then fails with EPIPE, which stdio keeps to itself: what is
    // printed is a copy of what the results file holds, so losing it must not end the run.
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
    return true;
  }();
  (void)installed;
}

void set_note(const std::string& text) {
  // Made printable here: the handler can only copy it out.
  const std::string note = printable(text);
  const int next = 1 - g_current.load();
  const size_t n = std::min(note.size(), kNoteLen - 1);
  std::memcpy(g_notes[next], note.data(), n);
  g_notes[next][n] = '\0';
  g_current.store(next);
}

std::string note() {
  return g_notes[g_current.load()];
}

WriteSection::WriteSection() {
  g_writing.fetch_add(1);
}

WriteSection::~WriteSection() {
  if (g_writing.fetch_sub(1) == 1) {
    if (const int sig = g_held.exchange(0)) stop_now(sig);
  }
}

}  // namespace fob::stop
