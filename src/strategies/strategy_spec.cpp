// A strategy as the config and the results file write it: a name from the strategy table and,
// for a strategy that takes one, its parameter ("flash:4"); and the names of its pieces.
#include <cstdlib>
#include <string>

#include "fob/config.h"
#include "fob/strategy.h"

namespace fob {

std::string piece_name(int block, int sub, int subs) {
  std::string text = std::to_string(block);
  if (subs > 1) {
    text += '.';
    text += std::to_string(sub);
  }
  return text;
}

StrategySpec parse_strategy(const std::string& text) {
  std::string name = text;
  std::string param_text;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    name = text.substr(0, colon);
    param_text = text.substr(colon + 1);
  }
  const Strategy* s = find_strategy(text);
  if (!s) {
    throw InputError("strategies: " + quote_value(text) +
                     " is not a strategy; valid: " + strategy_choices());
  }
  StrategySpec spec{s, s->default_param, text};
  if (colon == std::string::npos) return spec;
  if (!s->param_name) {
    throw InputError("strategies: " + quote_value(text) + ": " + name +
                     " takes no parameter; valid: " + strategy_choices());
  }
  char* end = nullptr;
  long value = std::strtol(param_text.c_str(), &end, 10);
  if (param_text.empty() || *end != '\0' || value < 1 || value > 1 << 20) {
    throw InputError("strategies: " + quote_value(text) + ": " + s->param_name +
                     " must be a positive integer, as in " + name + ":4");
  }
  spec.param = static_cast<int>(value);
  return spec;
}

}  // namespace fob
