#include <cstdio>
#include <exception>
#include <new>

#include "commands.h"
#include "fob/types.h"

namespace fob {

int guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "fobench %s: error: %s\n", command, printable(e.what()).c_str());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fobench %s: error: out of memory (std::bad_alloc)\n", command);
    return kExitRuntimeFault;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fobench %s: error: %s\n", command, printable(e.what()).c_str());
    return kExitRuntimeFault;
  }
}

}  // namespace fob
