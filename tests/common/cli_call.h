// fobench's command line called in-process, with what it wrote to stderr: the error paths of the
// subcommands checked without a launcher. `run` is checked by check_run, as the ranks of a run of
// a given world size would check it, since MPI starts once per process.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "../common/input_error.h"
#include "../common/temp_dir.h"
#include "app/commands.h"
#include "fob/types.h"

namespace fob {

struct CliOutcome {
  int code = 0;
  std::string err;  // everything written to stderr (fd 2) meanwhile
};

// Points fd 2 at a file while it lives, then gives the old fd 2 back and holds what was written.
class StderrCapture {
 public:
  explicit StderrCapture(const std::string& path)
      : path_(path), file_(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600)), saved_(dup(2)) {
    std::fflush(stderr);
    dup2(file_, 2);
  }
  ~StderrCapture() { restore(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string text() {
    restore();
    std::ifstream in(path_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::cerr.flush();
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    close(file_);
    saved_ = -1;
  }
  std::string path_;
  int file_, saved_;
};

// `fobench ARGS...`, its `run` checked as a run of `world` ranks would check it.
inline CliOutcome call_cli(std::vector<std::string> args, const std::string& err_path,
                           int world = 1) {
  args.insert(args.begin(), "fobench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  StderrCapture capture(err_path);
  CliOutcome out;
  out.code = cli_main(static_cast<int>(args.size()), argv.data(),
                      [world](const RunArgs& run) { return check_run(run, world); });
  out.err = capture.text();
  return out;
}

// The shipped configs and machine files.
inline std::string source_file(const std::string& relative) {
  const char* root = std::getenv("FOB_SOURCE_DIR");
  return std::string(root ? root : ".") + "/" + relative;
}

// One bad input: fobench ARGS (a `run` unless ARGS start with another subcommand) must exit 2
// naming `message`. In ARGS, $D/NAME is NAME in the test's scratch directory, made by `files`
// when it has a maker for NAME; $SRC/PATH is PATH in the source tree, $SMOKE its
// bench_configs/smoke.yaml. `run` gets -c $SMOKE unless
// ARGS give a config, and -o $D/NAME.h5 unless they give an output, which must not appear.
struct BadInput {
  std::string name;
  std::vector<std::string> args;
  std::string message;
  int world = 1;
};

inline std::ostream& operator<<(std::ostream& os, const BadInput& c) {
  return os << c.name;
}

// Scratch files by name, each made by writing the text its function returns.
using ScratchFiles = std::map<std::string, std::function<std::string()>>;

// The scratch entries every test of bad input may name: a directory and a FIFO.
inline void make_scratch(const TempDir& dir, const std::string& name, const ScratchFiles& files) {
  if (name == "a_dir") {
    std::filesystem::create_directories(dir.file(name));
  } else if (name == "a_fifo") {
    mkfifo(dir.file(name).c_str(), 0600);
  } else if (auto it = files.find(name); it != files.end()) {
    std::ofstream(dir.file(name)) << it->second();
  }
}

inline CliOutcome expect_bad_input(const BadInput& c, const ScratchFiles& files) {
  const TempDir dir;
  std::vector<std::string> args;
  bool run = true, config = false, output = false;
  for (std::string arg : c.args) {
    if (arg == "$SMOKE") arg = source_file("bench_configs/smoke.yaml");
    if (arg.rfind("$SRC/", 0) == 0) arg = source_file(arg.substr(5));
    if (arg.rfind("$D/", 0) == 0) {
      make_scratch(dir, arg.substr(3), files);
      arg = dir.file(arg.substr(3));
    }
    if (args.empty() && (arg == "report" || arg == "sim")) run = false;
    config |= arg == "-c";
    output |= arg == "-o";
    args.push_back(arg);
  }
  const std::string out = dir.file(c.name + ".h5");
  if (run) {
    args.insert(args.begin(), "run");
    if (!config) args.insert(args.end(), {"-c", source_file("bench_configs/smoke.yaml")});
    if (!output) args.insert(args.end(), {"-o", out});
  }
  const CliOutcome got = call_cli(args, dir.file(c.name + ".err"), c.world);
  EXPECT_EQ(got.code, kExitBadInput) << got.err;
  EXPECT_TRUE(contains(got.err, c.message)) << "no '" << c.message << "' in: " << got.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "an output file was written";
  EXPECT_FALSE(std::filesystem::exists(out + ".partial")) << "an output file was written";
  return got;
}

}  // namespace fob
