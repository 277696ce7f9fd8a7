// A YAML text's size in values, counted as it streams past, before yaml-cpp builds its nodes.
#pragma once

#include <string>

namespace fob {

// InputError, naming `source`, the line and the key, when the text is longer than
// kMaxConfigBytes, or the document holds more than kMaxConfigValues values or a list of more
// than kMaxSweepCases items (fob/config.h). A node of
// yaml-cpp costs hundreds of bytes: a 20 MB list of numbers would take gigabytes on every rank
// before any key could refuse it, so it is refused here, with memory that does not grow with it.
// Syntax errors are left to YAML::Load, which reports them.
// `what` names the kind of file in messages ("config", "machine file").
void check_yaml_size(const std::string& yaml_text, const std::string& source,
                     const std::string& what = "config");

}  // namespace fob
