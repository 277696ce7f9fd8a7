// libFuzzer target over the journal reader (src/results/journal.h): the bytes of a NAME.h5.partial
// as `fobench report` and `--resume` read them, parsed by fobench's own decoder, in process. Any
// crash, sanitizer report, exception other than InputError, or a case whose arrays do not hold
// what it says, is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fob/types.h"
#include "results/journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    fob::JournalScan scan;
    const fob::ResultFile file = fob::read_journal(bytes, "fuzz.h5.partial", &scan);
    if (scan.intact_bytes > size) std::abort();
    // What a resume would write in the journal's place reads back to the same cases.
    if (!scan.image.empty()) {
      const fob::ResultFile again = fob::read_journal(scan.image, "fuzz.h5.partial");
      if (again.cases.size() != file.cases.size()) std::abort();
    }
    for (const fob::CaseResult& c : file.cases) {
      if (!c.arrays_match() || !c.timers_match()) std::abort();
      for (int i = 0; i < c.iters; ++i) (void)c.step(i);
    }
  } catch (const fob::InputError&) {
    // Refused as bad input, naming the record: what the reader is for.
  }
  return 0;
}
