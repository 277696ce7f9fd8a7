// The config keys, in one table: each key's YAML name, command-line option, help, value kind
// and its way into and out of a Config. The YAML parser, the YAML emitter, the `run` and `sim`
// options and the test of README's key table all read it, so that a key is added in one place.
#pragma once

#include <string>
#include <vector>

#include "fob/config.h"

namespace fob {

// How a key's value is written, and so which member of ConfigValue carries it.
enum class ConfigKind {
  text,     // a name or a path, in ConfigValue::text
  list,     // a comma list, or in YAML a sequence; in ConfigValue::text, items joined by ", "
  integer,  // decimal digits in ConfigValue::text, read by parse_integer on every source
  number,   // a double in ConfigValue::number, converted by YAML's or CLI11's rule
  flag,     // a command-line flag, true or false in YAML; in ConfigValue::flag
};

// One key's value between a source (a YAML document, the command line) and a Config.
struct ConfigValue {
  std::string text;
  double number = 0;
  bool flag = false;
};

struct ConfigKey {
  const char* name;   // the YAML key
  const char* flags;  // the `run` option as CLI11 takes it: "-n,--iters", "--verify,!--no-verify"
  const char* help;   // the option's help; config_key_help adds the valid choices
  ConfigKind kind;
  // What a YAML value that does not convert "is not": "a number". For a list, what an item is
  // not; a whole value that is no list is not EXPECTED + " list".
  const char* expected;
  // The `sim` option's help; nullptr: `sim` does not take the key on its command line.
  const char* sim_help;
  bool sweepable;            // a YAML list of values is a sweep, and a `cases` entry may set it
  std::string (*choices)();  // the valid values, comma-separated; nullptr: not a fixed set
  // Checks and stores a value; InputError "KEY: 'VALUE' is not ...", naming the valid values.
  void (*set)(Config& c, const ConfigValue& value);
  ConfigValue (*get)(const Config& c);  // the effective value, as to_yaml writes it
  // A key added after files were written: to_yaml leaves it out at its default (a number 0, an
  // empty text), so the text --resume compares stays that of the files that predate it.
  bool omitted_at_default = false;
};

// Every key, in the order to_yaml writes them. `cases` is not one: it holds keys, not a value.
const std::vector<ConfigKey>& config_keys();
// nullptr when no key has this name.
const ConfigKey* find_config_key(const std::string& name);
// The key's help on the command line: its help, then its valid choices when it has a fixed set.
std::string config_key_help(const ConfigKey& key);

// A value given on the command line, applied over the config's by apply_settings.
struct ConfigSetting {
  const ConfigKey* key;
  ConfigValue value;
};
// Sets each key in turn; a value given replaces a list (a sweep) in the config.
void apply_settings(Config& c, const std::vector<ConfigSetting>& settings);

}  // namespace fob
