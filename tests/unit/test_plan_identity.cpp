// Every plan fobench makes — each workload, each strategy (and its parameter), N = 1..8, every
// rank, plain and loopback — is fingerprinted field by field and compared with
// tests/data/plan_fingerprints.txt: code that moves knowledge around must not change what any
// rank runs.
// Regenerate deliberately with FOB_UPDATE_PLAN_FINGERPRINTS=1 when a plan is meant to change, and
// say why in the commit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
        << t.dst_stride_rows << " bytes " << t.bytes << " flops " << t.flops << "\n";
  }
  return out.str();
}

// One line per case: its name, and the fingerprint of each rank's plan (or why it is invalid).
std::string fingerprints() {
  // 840 divides by 1..8; attn gets 840 heads of 2 columns, so every N splits the heads too.
  const Shape shape{2, 840, 1680, 3360, 840};
  const char* strategies[] = {"baseline",  "compute_only", "comm_only",    "slicing:1",
                              "slicing:2", "slicing:3",    "decompose",    "flash",
                              "flash:2",   "flash:3",      "flash_direct", "flash_direct:2",
                              "flash_qs",  "flash_qs:2"};
  std::ostringstream out;
  for (Workload workload : all_workloads()) {
    for (const char* strategy : strategies) {
      for (int world = 1; world <= 8; ++world) {
        for (bool loopback : {false, true}) {
          if (loopback && world == 1) continue;
          CaseSpec spec;
          spec.workload = workload;
          spec.shape = shape;
          spec.world = world;
          spec.strategy = parse_strategy(strategy);
          spec.loopback = loopback;
          out << to_string(workload) << " " << strategy << " N=" << world
              << (loopback ? " loopback" : "");
          try {
            validate_case(spec);
          } catch (const InputError&) {
            out << " invalid\n";
            continue;
          }
          for (int rank = 0; rank < (loopback ? 1 : world); ++rank) {
            out << " " << std::hex << fnv1a(serialize(make_plan(spec, rank))) << std::dec;
          }
          out << "\n";
        }
      }
    }
  }
  return out.str();
}

TEST(PlanIdentity, EveryPlanIsTheRecordedOne) {
  const char* source = std::getenv("FOB_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "FOB_SOURCE_DIR must name the source tree";
  const std::string path = std::string(source) + "/tests/data/plan_fingerprints.txt";
  const std::string now = fingerprints();
  if (std::getenv("FOB_UPDATE_PLAN_FINGERPRINTS")) {
    std::ofstream(path) << now;
    GTEST_SKIP() << "recorded " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream recorded;
  recorded << in.rdbuf();
  std::istringstream want(recorded.str()), got(now);
  std::string want_line, got_line;
  int line = 0, differ = 0;
  while (std::getline(want, want_line)) {
    ++line;
    if (!std::getline(got, got_line)) got_line = "(missing)";
    if (want_line != got_line && ++differ <= 5) {
      ADD_FAILURE() << "line " << line << ": recorded '" << want_line << "', now '" << got_line
                    << "'";
    }
  }
  EXPECT_EQ(differ, 0) << differ << " case(s) plan differently";
  EXPECT_FALSE(std::getline(got, got_line)) << "more cases than recorded: " << got_line;
}

}  // namespace
}  // namespace fob
