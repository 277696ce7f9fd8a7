// Every plan fobench makes — each workload, each strategy in the table (strategy_specs.h: bare
// and at its parameter values), N = 1..8, every rank, plain and loopback — is fingerprinted field
// by field and compared, case by case, with tests/data/plan_fingerprints.txt: code that moves
// knowledge around must not change what any rank runs, and a new strategy's cases must be
// recorded.
// Regenerate deliberately with FOB_UPDATE_PLAN_FINGERPRINTS=1 when a plan is meant to change, and
// say why in the commit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../common/strategy_specs.h"
#include "fob/types.h"
#include "fob/workload.h"

namespace fob {
namespace {

void put_view(std::ostream& out, const View& v) {
  out << "(" << v.buffer << " " << v.row << " " << v.rows << " " << v.col << " " << v.cols << ")";
}

void put_step(std::ostream& out, const Step& s) {
  out << "<" << s.rows << " " << s.cols << ">";
}

// Every field of the plan, in a fixed order: any change to any of them changes the text.
std::string serialize(const Plan& plan) {
  std::ostringstream out;
  out.precision(17);
  out << to_string(plan.workload) << " " << plan.strategy.text << " " << plan.shape.batch << " "
      << plan.shape.seq << " " << plan.shape.hidden << " " << plan.shape.ffn << " "
      << plan.shape.heads << " " << to_string(plan.dtype) << " " << plan.world << " " << plan.rank
      << " " << plan.input_period << "\n";
  for (const BufferSpec& b : plan.buffers) {
    out << "B " << b.name << " " << b.rows << " " << b.cols;
    for (const RowRun& run : b.layout)
      out << " " << run.row << ":" << run.logical_row << "+" << run.rows;
    out << "\n";
  }
  for (const InputRegion& r : plan.inputs) {
    out << "I " << r.buffer << " " << r.row << " " << r.rows << " " << r.tensor << " "
        << r.global_row << " " << r.global_col << " " << r.select_from << " " << r.weight << "\n";
  }
  for (const OutputCheck& c : plan.checks)
    out << "C " << c.buffer << " " << to_string(c.kind) << "\n";
  for (const Task& t : plan.tasks) {
    out << "T " << t.id << " " << to_string(t.stream) << " " << to_string(t.kind) << " '" << t.label
        << "' deps";
    for (int d : t.deps) out << " " << d;
    out << " a";
    put_view(out, t.a);
    out << " b";
    put_view(out, t.b);
    out << " c";
    put_view(out, t.c);
    out << " mnk " << t.m << " " << t.n << " " << t.k << " batch " << t.batch;
    put_step(out, t.a_step);
    put_step(out, t.b_step);
    put_step(out, t.c_step);
    out << " acc " << t.accumulate << " ta " << t.transpose_a << " tb " << t.transpose_b
        << " scale " << t.scale << " peers " << t.send_peer << " " << t.recv_peer << " tag "
        << t.tag << " op " << to_string(t.op) << " strides " << t.src_stride_rows << " "
        << t.dst_stride_rows << " bytes " << t.bytes << " flops " << t.flops;
    // Fields that only some kinds have enter only where a task has them, so that the plans
    // recorded before those kinds existed keep their fingerprints.
    if (t.row_map >= 0) out << " map " << t.row_map;
    out << "\n";
  }
  for (const RowMap& map : plan.row_maps) {
    out << "R";
    for (size_t i = 0; i < map.src.size(); ++i) {
      out << " " << map.src[i];
      if (!map.weight.empty()) out << "*" << map.weight[i];
    }
    out << "\n";
  }
  return out.str();
}

// A case's key: workload, strategy spec, world size, and whether it runs as loopback (the shape
// is the one below for all). The fingerprints are compared key by key, so a strategy or workload
// added to the tables brings new keys that are reported missing, never a shifted line.
using Fingerprints = std::map<std::string, std::string>;

// The fingerprint of each rank's plan of one case, or "invalid" when validate_case refuses it.
std::string case_fingerprints(const CaseSpec& spec) {
  try {
    validate_case(spec);
  } catch (const InputError&) {
    return "invalid";
  }
  std::ostringstream out;
  for (int rank = 0; rank < (spec.loopback ? 1 : spec.world); ++rank) {
    out << (rank ? " " : "") << std::hex << fnv1a(serialize(make_plan(spec, rank)));
  }
  return out.str();
}

// Every case: every workload with every strategy spec, N = 1..8, plain and loopback (a strategy
// that does not apply is recorded invalid: validate_case must go on refusing it).
const Fingerprints& current() {
  static const Fingerprints cases = [] {
    // 840 divides by 1..8; attn gets 840 heads of 2 columns, so every N splits the heads too.
    const Shape shape{2, 840, 1680, 3360, 840};
    Fingerprints out;
    for (Workload workload : all_workloads()) {
      for (const std::string& strategy : strategy_specs(kPlanParams)) {
        for (int world = 1; world <= 8; ++world) {
          for (bool loopback : {false, true}) {
            if (loopback && world == 1) continue;
            CaseSpec spec;
            spec.workload = workload;
            spec.shape = shape;
            spec.world = world;
            spec.strategy = parse_strategy(strategy);
            spec.loopback = loopback;
            const std::string key = std::string(to_string(workload)) + " " + strategy +
                                    " N=" + std::to_string(world) + (loopback ? " loopback" : "");
            out[key] = case_fingerprints(spec);
          }
        }
      }
    }
    return out;
  }();
  return cases;
}

// A recorded line is its key (three words, a fourth when it is "loopback") and the fingerprints.
std::pair<std::string, std::string> split_line(const std::string& line) {
  size_t end = 0;
  for (int word = 0; word < 3 && end != std::string::npos; ++word) end = line.find(' ', end + 1);
  if (end != std::string::npos && line.compare(end + 1, 9, "loopback ") == 0) end += 9;
  if (end == std::string::npos) return {line, ""};
  return {line.substr(0, end), line.substr(end + 1)};
}

std::string path() {
  const char* source = std::getenv("FOB_SOURCE_DIR");
  return std::string(source ? source : "") + "/tests/data/plan_fingerprints.txt";
}

// The recorded lines in file order.
std::vector<std::pair<std::string, std::string>> recorded() {
  std::vector<std::pair<std::string, std::string>> lines;
  std::ifstream in(path());
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(split_line(line));
  }
  return lines;
}

// Rewrites the file: recorded cases keep their place (with today's fingerprints), cases no
// longer made are dropped, new ones follow in table order, so its diff shows what changed.
void record() {
  const Fingerprints& now = current();
  const auto lines = recorded();  // before the file is opened for writing, which empties it
  std::ofstream out(path());
  std::set<std::string> written;
  for (const auto& [key, value] : lines) {
    auto it = now.find(key);
    if (it == now.end()) continue;
    out << key << " " << it->second << "\n";
    written.insert(key);
  }
  for (const auto& [key, value] : now) {
    if (!written.count(key)) out << key << " " << value << "\n";
  }
}

constexpr const char* kRegenerate =
    "regenerate with FOB_UPDATE_PLAN_FINGERPRINTS=1 (and say why in the commit)";

class PlanIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("FOB_SOURCE_DIR"), nullptr) << "FOB_SOURCE_DIR must name the source tree";
    if (std::getenv("FOB_UPDATE_PLAN_FINGERPRINTS")) {
      static const bool once = (record(), true);
      (void)once;
      GTEST_SKIP() << "recorded " << path();
    }
    recorded_ = recorded();
    ASSERT_FALSE(recorded_.empty()) << "cannot read " << path();
  }
  std::vector<std::pair<std::string, std::string>> recorded_;
};

TEST_F(PlanIdentity, EveryRecordedPlanIsUnchanged) {
  const Fingerprints& now = current();
  int differ = 0, gone = 0;
  for (const auto& [key, value] : recorded_) {
    auto it = now.find(key);
    if (it == now.end()) {
      if (++gone <= 5) ADD_FAILURE() << "'" << key << "' is recorded but no longer made";
    } else if (it->second != value && ++differ <= 5) {
      ADD_FAILURE() << "'" << key << "': recorded '" << value << "', now '" << it->second << "'";
    }
  }
  EXPECT_EQ(differ, 0) << differ << " case(s) plan differently; " << kRegenerate
                       << " only if that is meant";
  EXPECT_EQ(gone, 0) << gone << " recorded case(s) are no longer made; " << kRegenerate;
}

TEST_F(PlanIdentity, EveryCaseIsRecorded) {
  std::set<std::string> keys;
  for (const auto& line : recorded_) keys.insert(line.first);
  std::string missing;
  int count = 0;
  for (const auto& [key, value] : current()) {
    if (keys.count(key)) continue;
    if (++count <= 20) missing += "\n  " + key;
  }
  EXPECT_EQ(count, 0) << count << " case(s) not in " << path() << ", " << kRegenerate << ":"
                      << missing << (count > 20 ? "\n  ..." : "");
}

}  // namespace
}  // namespace fob
