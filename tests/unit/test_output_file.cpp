// Output files in a folder others can write to: a symbolic link, hard link, FIFO or directory
// planted at an output or at the name of its temporary never gets written through, an input
// is never an output, fobench's own names and over-long names are refused, an existing file is
// replaced only with --force, and a failed commit leaves no temporary behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "../common/temp_dir.h"
#include "fob/output_file.h"
#include "fob/types.h"
#include "results/output_file_detail.h"

namespace fob {
namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The InputError `body` throws; fails the test when it throws none.
std::string input_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

// The names in `dir`, so that a test sees every file a call left behind.
std::vector<std::string> names_in(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(dir.file("")))) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A folder with a file "victim" whose bytes must survive whatever is planted.
struct Planted {
  TempDir dir;
  std::string victim = dir.file("victim");
  std::string out = dir.file("out.svg");
  Planted() { write_text(victim, "precious"); }
};

TEST(CheckOutputPath, RefusesFobenchsOwnNames) {
  TempDir dir;
  for (const char* name : {"x.h5.partial", "x.h5.lock", "x.yaml.tmp", ".x.h5.Ab12Cd.tmp"}) {
    const std::string path = dir.file(name);
    const std::string error = input_error([&] { check_output_path("-o", path, true); });
    EXPECT_NE(error.find("-o '" + path + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("are fobench's own"), std::string::npos) << error;
    EXPECT_NE(error.find("choose another name"), std::string::npos) << error;
  }
  EXPECT_TRUE(names_in(dir).empty());
}

TEST(CheckOutputPath, RefusesTooLongNamesAndPathsBeforeCreatingAnything) {
  TempDir dir;
  const std::string long_name = dir.file(std::string(240, 'n') + ".svg");
  std::string error = input_error([&] { check_output_path("--timeline", long_name, false); });
  EXPECT_NE(error.find("--timeline '"), std::string::npos) << error;
  EXPECT_NE(error.find("the name is 244 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("choose a shorter name"), std::string::npos) << error;
  std::string long_path = dir.file("");
  while (long_path.size() < 4090) long_path += "d/";
  error = input_error([&] { check_output_path("-o", long_path + "x.yaml", false); });
  EXPECT_NE(error.find("choose a shorter path"), std::string::npos) << error;
  EXPECT_TRUE(names_in(dir).empty());
  // The longest name allowed leaves room for every name fobench keeps beside it.
  const std::string longest = dir.file(std::string(235, 'n'));
  check_output_path("-o", longest, false);
  write_file_atomically(longest + ".partial", "ok");
  EXPECT_EQ(read_text(longest + ".partial"), "ok");
}

TEST(CheckOutputPath, RefusesWhatIsPlantedAtTheTargetEvenWithForce) {
  Planted p;
  ASSERT_EQ(symlink(p.victim.c_str(), p.out.c_str()), 0);
  EXPECT_NE(input_error([&] { check_output_path("-o", p.out, true); }).find("is a symbolic link"),
            std::string::npos);
  fs::remove(p.out);
  ASSERT_EQ(symlink((p.victim + ".absent").c_str(), p.out.c_str()), 0);
  EXPECT_NE(input_error([&] { check_output_path("-o", p.out, true); }).find("is a symbolic link"),
            std::string::npos);
  fs::remove(p.out);
  ASSERT_EQ(link(p.victim.c_str(), p.out.c_str()), 0);
  EXPECT_NE(input_error([&] { check_output_path("-o", p.out, true); }).find("has 2 hard links"),
            std::string::npos);
  fs::remove(p.out);
  ASSERT_EQ(mkfifo(p.out.c_str(), 0644), 0);
  EXPECT_NE(input_error([&] { check_output_path("-o", p.out, true); }).find("is a FIFO"),
            std::string::npos);
  fs::remove(p.out);
  fs::create_directory(p.out);
  EXPECT_NE(input_error([&] { check_output_path("-o", p.out, true); }).find("is a directory"),
            std::string::npos);
  EXPECT_EQ(read_text(p.victim), "precious");
}

TEST(CheckOutputPath, NeverAnInputHoweverNamed) {
  Planted p;
  const std::string alias = p.dir.file("alias.h5");
  ASSERT_EQ(symlink(p.victim.c_str(), alias.c_str()), 0);
  const std::string dotted = p.dir.file("./victim");
  for (const std::string& input : {p.victim, alias}) {
    const std::string error = input_error([&] { check_output_path("-o", dotted, true, {input}); });
    EXPECT_NE(error.find("is one of this command's inputs ('" + input + "')"), std::string::npos)
        << error;
  }
  // A second hard link is named as the input it is, not only as a hard link.
  const std::string hard = p.dir.file("hard.svg");
  ASSERT_EQ(link(p.victim.c_str(), hard.c_str()), 0);
  EXPECT_NE(input_error([&] {
              check_output_path("--trace", hard, true, {p.victim});
            }).find("is one of this command's inputs"),
            std::string::npos);
  EXPECT_EQ(read_text(p.victim), "precious");
}

TEST(CheckOutputPath, AnExistingFileNeedsForce) {
  Planted p;
  const std::string error = input_error([&] { check_output_path("-o", p.victim, false); });
  EXPECT_NE(error.find("already exists; pass --force"), std::string::npos) << error;
  check_output_path("-o", p.victim, true, {p.dir.file("other.h5")});
  check_output_path("-o", p.out, false);
  EXPECT_NE(input_error([&] {
              check_output_path("-o", p.dir.file("no/x.svg"), false);
            }).find("does not exist; create it first"),
            std::string::npos);
  EXPECT_NE(input_error([&] { check_output_path("-o", "", false); }).find("-o: name the file"),
            std::string::npos);
}

TEST(TempFile, CommitReplacesTheTargetAndLeavesNothingElse) {
  Planted p;
  const mode_t mask = umask(027);
  {
    TempFile file(p.victim);
    EXPECT_EQ(fs::path(file.path()).parent_path(), fs::path(p.victim).parent_path());
    EXPECT_EQ(fs::path(file.path()).filename().string().rfind(".victim.", 0), 0u);
    EXPECT_EQ(fs::path(file.path()).extension(), ".tmp");
    file.write_all(std::string(3 << 20, 'x'));
    file.commit();
  }
  umask(mask);
  EXPECT_EQ(read_text(p.victim), std::string(3 << 20, 'x'));
  struct stat st = {};
  ASSERT_EQ(stat(p.victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(names_in(p.dir), std::vector<std::string>{"victim"});
}

TEST(TempFile, AnUncommittedTemporaryIsRemoved) {
  Planted p;
  std::string temp;
  {
    TempFile file(p.out);
    temp = file.path();
    file.write_all("half");
    EXPECT_TRUE(fs::exists(temp));
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(names_in(p.dir), std::vector<std::string>{"victim"});
}

TEST(TempFile, KeepsTheDescriptorOpenOnTheTarget) {
  Planted p;
  TempFile file(p.out);
  file.write_all("head ");
  file.commit(true);
  const int fd = file.release_fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(write(fd, "tail", 4), 4);
  close(fd);
  EXPECT_EQ(read_text(p.out), "head tail");
}

// The first names TempFile tries hold a symbolic link and a FIFO.
std::string guessed_name() {
  static int call = 0;
  const char* names[] = {"AAAAAA", "BBBBBB", "CCCCCC"};
  return names[std::min(call++, 2)];
}

TEST(TempFile, LinksAndFifosAtTheGuessedNameAreNeverOpened) {
  Planted p;
  const std::string link_name = p.dir.file(".out.svg.AAAAAA.tmp");
  const std::string fifo_name = p.dir.file(".out.svg.BBBBBB.tmp");
  ASSERT_EQ(symlink(p.victim.c_str(), link_name.c_str()), 0);
  ASSERT_EQ(mkfifo(fifo_name.c_str(), 0644), 0);
  set_temp_name_source(&guessed_name);
  write_file_atomically(p.out, "picture");
  set_temp_name_source(nullptr);
  EXPECT_EQ(read_text(p.out), "picture");
  EXPECT_EQ(read_text(p.victim), "precious");
  EXPECT_TRUE(fs::is_symlink(link_name));
  EXPECT_TRUE(fs::is_fifo(fifo_name));
}

TEST(TempFile, AFailedCommitLeavesTheTargetAndNoTemporary) {
  Planted p;
  const std::string victim_link = p.dir.file("victim_link");
  ASSERT_EQ(link(p.victim.c_str(), victim_link.c_str()), 0);
  // Planted after the temporary was made, between the check and the commit.
  const std::function<void()> plants[] = {
      [&] { ASSERT_EQ(symlink(p.victim.c_str(), p.out.c_str()), 0); },
      [&] { ASSERT_EQ(link(p.victim.c_str(), p.out.c_str()), 0); },
      [&] { ASSERT_EQ(mkfifo(p.out.c_str(), 0644), 0); }, [&] { fs::create_directory(p.out); }};
  const char* kinds[] = {"is a symbolic link", "has 3 hard links", "is a FIFO", "is a directory"};
  for (int i = 0; i < 4; ++i) {
    TempFile file(p.out);
    const std::string temp = file.path();
    file.write_all("evil");
    plants[i]();
    const std::string error = input_error([&] { file.commit(); });
    EXPECT_NE(error.find("'" + p.out + "' " + kinds[i]), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(temp)) << temp;
    EXPECT_EQ(read_text(p.victim), "precious");
    fs::remove(p.out);
  }
  EXPECT_EQ(names_in(p.dir), (std::vector<std::string>{"victim", "victim_link"}));
}

TEST(TempFile, AFolderThatCannotHoldItIsARuntimeFault) {
  TempDir dir;
  EXPECT_THROW(TempFile(dir.file("absent/out.svg")), RuntimeFault);
}

TEST(OpenExistingRegular, OpensOnlyARegularFileWithOneLink) {
  Planted p;
  const int fd = open_existing_regular(p.victim, "--resume");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(write(fd, "P", 1), 1);
  close(fd);
  EXPECT_EQ(read_text(p.victim), "Precious");
  const std::string planted = p.dir.file("x.h5.partial");
  const std::function<void()> plants[] = {
      [&] { ASSERT_EQ(symlink(p.victim.c_str(), planted.c_str()), 0); },
      [&] { ASSERT_EQ(link(p.victim.c_str(), planted.c_str()), 0); },
      [&] { ASSERT_EQ(mkfifo(planted.c_str(), 0644), 0); }, [&] { fs::create_directory(planted); }};
  const char* kinds[] = {"is a symbolic link", "has 2 hard links", "is a FIFO", "is a directory"};
  for (int i = 0; i < 4; ++i) {
    plants[i]();
    const std::string error = input_error([&] { open_existing_regular(planted, "--resume"); });
    EXPECT_NE(error.find("--resume '" + planted + "' " + kinds[i]), std::string::npos) << error;
    fs::remove(planted);
  }
  EXPECT_NE(input_error([&] { open_existing_regular(planted, "--resume"); }).find("cannot open"),
            std::string::npos);
  EXPECT_EQ(read_text(p.victim), "Precious");
}

// What a run killed while writing leaves beside its results file is listed with its owner, age
// and size; temporaries of other files, and other names, are not.
TEST(StaleTemporaries, NamesTheResultsFilesAndTheJournalsOnly) {
  TempDir dir;
  const std::string target = dir.file("run.h5");
  for (const char* name : {".run.h5.AbC123.tmp", ".run.h5.partial.xYz789.tmp",
                           ".other.h5.AbC123.tmp", ".run.h5.AbC12.tmp", "run.h5.AbC123.tmp"}) {
    std::ofstream(dir.file(name)) << "half";
  }
  const std::vector<std::string> found = stale_temporaries(target);
  ASSERT_EQ(found.size(), 2u) << (found.empty() ? "" : found[0]);
  EXPECT_EQ(found[0].rfind("'" + dir.file(".run.h5.AbC123.tmp") + "' (owner ", 0), 0u) << found[0];
  EXPECT_NE(found[0].find(", 0 min old, 4 bytes)"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find(".run.h5.partial.xYz789.tmp"), std::string::npos) << found[1];
  EXPECT_TRUE(stale_temporaries(dir.file("none.h5")).empty());
}

}  // namespace
}  // namespace fob
