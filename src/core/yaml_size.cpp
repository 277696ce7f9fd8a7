#include "yaml_size.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <cstdint>
#include <sstream>
#include <vector>

#include "fob/config.h"

namespace fob {
namespace {

class SizeGuard : public YAML::EventHandler {
 public:
  SizeGuard(const std::string& source, const std::string& what) : source_(source), what_(what) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, ""); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, ""); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    node(mark, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark, "");
    open_.push_back({false, 0});
  }
  void OnSequenceEnd() override { open_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(mark, "");
    open_.push_back({true, 0});
  }
  void OnMapEnd() override { open_.pop_back(); }

 private:
  struct Open {
    bool map;
    int64_t items;  // a mapping's keys and values both count
  };

  std::string at(const YAML::Mark& mark) const {
    return source_ + ":" + std::to_string(mark.line + 1) + ": ";
  }

  void node(const YAML::Mark& mark, const std::string& scalar) {
    if (++values_ > kMaxConfigValues) {
      throw InputError(at(mark) + "the " + what_ + " holds more than " +
                       std::to_string(kMaxConfigValues) + " values" + hint());
    }
    if (open_.empty()) return;
    Open& parent = open_.back();
    ++parent.items;
    // A top-level key names, in the message, the list that follows it.
    if (open_.size() == 1 && parent.map && parent.items % 2 == 1) key_ = scalar;
    if (!parent.map && parent.items > static_cast<int64_t>(kMaxSweepCases)) {
      const std::string name = key_.empty()               ? what_
                               : key_.size() > kMaxQuoted ? quote_value(key_)
                                                          : key_;
      throw InputError(at(mark) + name + ": a list of more than " + std::to_string(kMaxSweepCases) +
                       " values" + hint());
    }
  }

  // Why the bound: a config's values become cases, a machine file's are a machine's.
  std::string hint() const {
    if (what_ != "config") return ", the most a " + what_ + " may hold";
    return "; one run takes at most " + std::to_string(kMaxSweepCases) + " cases; split the sweep";
  }

  const std::string& source_;
  const std::string& what_;
  std::vector<Open> open_;
  int64_t values_ = 0;
  std::string key_;
};

}  // namespace

void check_yaml_size(const std::string& yaml_text, const std::string& source,
                     const std::string& what) {
  if (static_cast<int64_t>(yaml_text.size()) > kMaxConfigBytes) {
    throw InputError(source + ": " + std::to_string(yaml_text.size()) + " bytes, more than the " +
                     std::to_string(kMaxConfigBytes) + " a " + what + " may hold");
  }
  std::istringstream in(yaml_text);
  SizeGuard guard(source, what);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(guard);
  } catch (const YAML::Exception&) {
    // Not valid YAML: YAML::Load says where and why.
  }
}

}  // namespace fob
