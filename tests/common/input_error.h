// What the tests of bad input ask of a call: the InputError it raised, and whether a message
// holds a part.
#pragma once

#include <exception>
#include <string>

#include "fob/types.h"

namespace fob {

// The message of the InputError that `f` raised; "<no exception>" or "<another exception: ...>"
// otherwise, so that a test's failure says what happened instead.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<another exception: ") + e.what() + ">";
  }
  return "<no exception>";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace fob
