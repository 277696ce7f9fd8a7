// Results files made to harm their reader (issue 28): each starts as a file the writer made, with
// one object then replaced by what a crafted file can hold. Every one must be refused as bad
// input (InputError, exit 2) naming the object, quickly, without following anything out of the
// file or allocating what the file only declares. The reads that once crashed, hung or
// exhausted memory run in a child process with a time and memory limit.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/text_file.h"
#include "fob/types.h"
#include "results/h5_reader.h"

namespace fob {
namespace {

constexpr int kIters = 3;
constexpr const char* kCase = "/cases/0001";

// A file as the writer makes it: one case of two ranks, one task, three iterations.
std::string good_file(const TempDir& dir, const std::string& name = "run.h5") {
  CaseResult c = small_case("0001", 2);
  RoundTimes round = empty_round(c, kIters);
  for (size_t i = 0; i < round.step_seconds.size(); ++i) round.step_seconds[i] = 0.5 + i;
  for (size_t i = 0; i < round.task_start.size(); ++i) {
    round.task_start[i] = 0.1 * i;
    round.task_end[i] = 0.1 * i + 0.05;
  }
  append_round(c, round);
  SystemInfo sys;
  sys.backend = "cpu";
  sys.world_size = 2;
  sys.hostnames = "node1,node2";
  sys.timer = "host steady_clock";
  const std::string path = dir.file(name);
  ResultWriter writer(path, false, RunInfo{"abc", "2025-01-01T00:00:00Z", "fobench run", "a: 1\n"},
                      sys);
  writer.add_case(c);
  writer.finish();
  return path;
}

// Opens a file for crafting, closing it (and everything opened in it) at the end of the scope.
class Craft {
 public:
  explicit Craft(const std::string& path)
      : file_(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {
    EXPECT_GE(file_, 0) << path;
  }
  ~Craft() {
    for (hid_t id : opened_) H5Oclose(id);
    H5Fclose(file_);
  }
  Craft(const Craft&) = delete;
  Craft& operator=(const Craft&) = delete;
  hid_t obj(const std::string& path) {
    const hid_t id = H5Oopen(file_, path.c_str(), H5P_DEFAULT);
    EXPECT_GE(id, 0) << path;
    opened_.push_back(id);
    return id;
  }
  // A dataset of the case.
  hid_t dataset(const char* name) { return obj(std::string(kCase) + "/" + name); }
  // Replaces attribute `name` of `path` by one of `type` with `count` elements (0: scalar).
  void attr(const char* path, const char* name, hid_t type, hsize_t count, const void* data) {
    const hid_t o = obj(path);
    if (H5Aexists(o, name) > 0) H5Adelete(o, name);
    const hid_t space = count == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr);
    const hid_t a = H5Acreate2(o, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Awrite(a, type, data), 0) << name;
    H5Aclose(a);
    H5Sclose(space);
  }
  void str_attr(const char* path, const char* name, const std::string& value) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const char* data = value.c_str();
    attr(path, name, type, 0, &data);
    H5Tclose(type);
  }

 private:
  hid_t file_;
  std::vector<hid_t> opened_;
};

// Replaces dataset `name` of the case by one of `type` and `dims`, with creation properties
// `dcpl`; writes `data` where given.
void replace_dataset(Craft& f, const char* name, hid_t type, std::vector<hsize_t> dims, hid_t dcpl,
                     const void* data = nullptr, const hsize_t* max_dims = nullptr) {
  const hid_t group = f.obj(kCase);
  H5Ldelete(group, name, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims);
  const hid_t d = H5Dcreate2(group, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  EXPECT_GE(d, 0) << name;
  if (data) {
    EXPECT_GE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0) << name;
  }
  H5Dclose(d);
  H5Sclose(space);
}

// Reads `path` in a child process limited to `seconds` and 4 GiB of address space, so that
// what a file once did to the reader (hang, crash, allocate without bound) fails the test
// instead of the test run. Returns "refused: MESSAGE", "read", "threw: MESSAGE", "crashed" or
// "hung".
std::string read_in_child(const std::string& path, int seconds = 30) {
  int fds[2];
  if (pipe(fds) != 0) return "no pipe";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const rlimit mem{rlim_t{4} << 30, rlim_t{4} << 30};
    setrlimit(RLIMIT_AS, &mem);
    std::string out;
    try {
      read_results(path);
      out = "read";
    } catch (const InputError& e) {
      out = std::string("refused: ") + e.what();
    } catch (const std::exception& e) {
      out = std::string("threw: ") + e.what();
    }
    if (write(fds[1], out.data(), out.size()) < 0) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(fds[0]);
      return "hung";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "crashed";
}

void expect_refused(const std::string& path, const std::vector<std::string>& needles) {
  const std::string got = read_in_child(path);
  EXPECT_EQ(got.rfind("refused: ", 0), 0u) << got;
  for (const std::string& needle : needles) EXPECT_NE(got.find(needle), std::string::npos) << got;
}

TEST(HostileH5, ArrayValuedAttributesAreRefused) {
  TempDir dir;
  int64_t ints[12] = {};
  double doubles[12] = {};
  const struct {
    const char* object;
    const char* name;
    hid_t type;
    const void* data;
  } cases[] = {{kCase, "iters", H5T_NATIVE_INT64, ints},
               {"/", "version", H5T_NATIVE_INT64, ints},
               {"/system", "world_size", H5T_NATIVE_INT64, ints},
               {kCase, "max_abs_err", H5T_NATIVE_DOUBLE, doubles},
               {kCase, "stored_ranks", H5T_NATIVE_INT64, ints}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = good_file(dir, std::string(c.name) + ".h5");
    Craft(path).attr(c.object, c.name, c.type, 12, c.data);
    expect_refused(path, {std::string("attribute '") + c.name + "'", "holds 12 values"});
  }
}

TEST(HostileH5, AttributesOfAnotherClassAreRefused) {
  TempDir dir;
  std::string path = good_file(dir, "string_iters.h5");
  Craft(path).str_attr(kCase, "iters", "3");
  expect_refused(path, {"attribute 'iters'", "is not an integer"});

  path = good_file(dir, "float_iters.h5");
  const double three = 3.7;
  Craft(path).attr(kCase, "iters", H5T_NATIVE_DOUBLE, 0, &three);
  expect_refused(path, {"attribute 'iters'", "is not an integer"});

  path = good_file(dir, "number_strategy.h5");
  const int64_t five = 5;
  Craft(path).attr(kCase, "strategy", H5T_NATIVE_INT64, 0, &five);
  expect_refused(path, {"attribute 'strategy'", "is not a string"});
}

// /system copy_engines and a case's transfer_sms: integers from -1 (not known) to
// kMaxDeviceUnits, as the neighbouring counts are checked.
TEST(HostileH5, DeviceCountsOfAnotherClassOrPastTheirBoundAreRefused) {
  TempDir dir;
  std::string path = good_file(dir, "string_engines.h5");
  Craft(path).str_attr("/system", "copy_engines", "3");
  expect_refused(path, {"attribute 'copy_engines'", "is not an integer"});

  for (const int64_t sms : {int64_t{-2}, int64_t{kMaxDeviceUnits} + 1, int64_t{1} << 40}) {
    SCOPED_TRACE(sms);
    path = good_file(dir, "sms" + std::to_string(sms & 0xffff) + ".h5");
    Craft(path).attr(kCase, "transfer_sms", H5T_NATIVE_INT64, 0, &sms);
    expect_refused(path, {"attribute 'transfer_sms'", "outside -1 to"});
  }
  path = good_file(dir, "engines.h5");
  const int64_t engines = -5;
  Craft(path).attr("/system", "copy_engines", H5T_NATIVE_INT64, 0, &engines);
  expect_refused(path, {"attribute 'copy_engines'", "is -5, outside -1 to"});
}

// Only the schema this fobench writes, at a version from 1 to its own.
TEST(HostileH5, AnotherSchemaOrAVersionOutOfRangeIsRefused) {
  TempDir dir;
  std::string path = good_file(dir, "schema2.h5");
  Craft(path).str_attr("/", "schema", "fobench/2");
  expect_refused(path, {"schema 'fobench/2' is not one this fobench reads"});
  for (const int64_t version : {int64_t{-7}, int64_t{0}, int64_t{kSchemaVersion + 1}}) {
    SCOPED_TRACE(version);
    path = good_file(dir, "version" + std::to_string(version + 10) + ".h5");
    Craft(path).attr("/", "version", H5T_NATIVE_INT64, 0, &version);
    expect_refused(path, {"version"});
  }
}

TEST(HostileH5, StringsBeyondTheirBoundAreRefused) {
  TempDir dir;
  std::string path = good_file(dir, "long_strategy.h5");
  Craft(path).str_attr(kCase, "strategy", std::string(5000, 'x'));
  expect_refused(path, {"attribute 'strategy'", "more than 4096 bytes"});

  path = good_file(dir, "long_config.h5");
  Craft(path).str_attr("/", "config_yaml", std::string((5 << 20) + 1, 'y'));
  expect_refused(path, {"attribute 'config_yaml'", "more than 4194304 bytes"});
}

TEST(HostileH5, ExternalLinkToAFifoIsRefusedWithoutOpeningIt) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string path = good_file(dir);
  {
    Craft f(path);
    const hid_t cases = f.obj("/cases");
    H5Ldelete(cases, "0001", H5P_DEFAULT);
    ASSERT_GE(H5Lcreate_external(fifo.c_str(), "/x", cases, "0001", H5P_DEFAULT, H5P_DEFAULT), 0);
  }
  expect_refused(path, {"'0001'", "is an external link"});
}

// A file of doubles that is not the results file: what crafted storage would show as timings.
std::string secret_file(const TempDir& dir, size_t count) {
  const std::string secret = dir.file("secret.bin");
  const std::vector<double> values(count, 4242.0);
  std::ofstream(secret, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size() * sizeof(double)));
  return secret;
}

TEST(HostileH5, ExternalStorageIsRefused) {
  TempDir dir;
  const std::string secret = secret_file(dir, kIters * 2);
  const std::string path = good_file(dir);
  {
    Craft f(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, secret.c_str(), 0, kIters * 2 * sizeof(double));
    replace_dataset(f, "step_seconds", H5T_IEEE_F64LE, {kIters, 2}, dcpl);
    H5Pclose(dcpl);
  }
  expect_refused(path, {"dataset 'step_seconds'", "external files"});
}

TEST(HostileH5, VirtualDatasetIsRefused) {
  TempDir dir;
  const std::string source = dir.file("source.h5");
  {
    const hid_t f = H5Fcreate(source.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {kIters, 2};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const std::vector<double> values(kIters * 2, 4242.0);
    const hid_t d =
        H5Dcreate2(f, "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(f);
  }
  const std::string path = good_file(dir);
  {
    Craft f(path);
    const hsize_t dims[2] = {kIters, 2};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_virtual(dcpl, space, source.c_str(), "x", space);
    replace_dataset(f, "step_seconds", H5T_IEEE_F64LE, {kIters, 2}, dcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
  }
  expect_refused(path, {"dataset 'step_seconds'", "virtual"});
}

TEST(HostileH5, FilteredDatasetIsRefused) {
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) GTEST_SKIP() << "no deflate filter";
  TempDir dir;
  const std::string path = good_file(dir);
  {
    Craft f(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {1, 2};
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 6);
    const std::vector<double> values(kIters * 2, 1.0);
    replace_dataset(f, "step_seconds", H5T_NATIVE_DOUBLE, {kIters, 2}, dcpl, values.data());
    H5Pclose(dcpl);
  }
  expect_refused(path, {"dataset 'step_seconds'", "filtered"});
}

TEST(HostileH5, DeclaredRowsWithoutStorageAreRefused) {
  TempDir dir;
  const std::string path = good_file(dir);
  constexpr int64_t kRows = 10'000'000;
  {
    Craft f(path);
    f.attr(kCase, "iters", H5T_NATIVE_INT64, 0, &kRows);
    // A file from before rounds: no sum to match.
    H5Ldelete(f.obj(kCase), "round_iters", H5P_DEFAULT);
    for (const char* name : {"step_seconds", "task_start", "task_end"}) {
      const hid_t d = f.dataset(name);
      const hid_t space = H5Dget_space(d);
      hsize_t dims[3] = {};
      const int rank = H5Sget_simple_extent_dims(space, dims, nullptr);
      ASSERT_GT(rank, 0);
      dims[0] = kRows;
      EXPECT_GE(H5Dset_extent(d, dims), 0) << name;
      H5Sclose(space);
    }
  }
  ASSERT_LT(std::filesystem::file_size(path), 1u << 20);
  expect_refused(path, {"dataset 'step_seconds'", "declares 160000000 bytes but the file stores"});
}

TEST(HostileH5, DimensionsBeyondAnyCountAreRefused) {
  TempDir dir;
  const std::string path = good_file(dir);
  {
    Craft f(path);
    const hid_t type = H5Dget_type(f.dataset("tasks"));
    const hsize_t chunk[2] = {1, 1};
    const hsize_t max_dims[2] = {H5S_UNLIMITED, H5S_UNLIMITED};
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    replace_dataset(f, "tasks", type, {2, hsize_t{1} << 40}, dcpl, nullptr, max_dims);
    H5Pclose(dcpl);
    H5Tclose(type);
  }
  expect_refused(path, {"dataset 'tasks'", "dimension of 1099511627776"});
}

const std::string kBad = "\xEF\xBF\xBD";  // U+FFFD

TEST(HostileH5, ControlCharactersAndInvalidUtf8BecomeReplacementCharacters) {
  TempDir dir;
  const std::string path = good_file(dir);
  {
    Craft f(path);
    f.str_attr("/system", "hostnames", "node\x1b[31m1,node\r2");
    f.str_attr(kCase, "strategy", "base\x1bline\xff\xc0\xaf");
    f.str_attr("/", "config_yaml", "a: 1\n\tb: 2\r\n\x07");
    f.str_attr("/system", "timer",
               "host\n\x9b"
               "clock \xe2\x82\xac");
  }
  const ResultFile file = read_results(path);
  EXPECT_EQ(file.system.hostnames, "node" + kBad + "[31m1,node" + kBad + "2");
  ASSERT_EQ(file.cases.size(), 1u);
  EXPECT_EQ(file.cases[0].strategy, "base" + kBad + "line" + kBad + kBad + kBad);
  EXPECT_EQ(file.run.config_yaml, "a: 1\n\tb: 2" + kBad + "\n" + kBad);
  // A C1 control written as its byte is no UTF-8; the euro sign is.
  EXPECT_EQ(file.system.timer, "host" + kBad + kBad + "clock \xe2\x82\xac");
}

TEST(HostileH5, TaskLabelsEndWithinTheirField) {
  TempDir dir;
  const std::string path = good_file(dir);
  {
    Craft f(path);
    const hid_t d = f.dataset("tasks");
    // The file's own row type, so that HDF5 writes the label bytes as they are.
    const hid_t type = H5Dget_type(d);
    const size_t row = H5Tget_size(type);
    const size_t label =
        H5Tget_member_offset(type, static_cast<unsigned>(H5Tget_member_index(type, "label")));
    std::vector<char> rows(2 * row);
    ASSERT_GE(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
    std::memset(rows.data() + label, 'A', TaskLabel::kLabelChars + 1);
    std::memset(rows.data() + row + label, '\x1b', TaskLabel::kLabelChars + 1);
    ASSERT_GE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
    H5Tclose(type);
  }
  const ResultFile file = read_results(path);
  ASSERT_EQ(file.cases.size(), 1u);
  ASSERT_EQ(file.cases[0].tasks.size(), 2u);
  EXPECT_EQ(std::string(file.cases[0].tasks[0].label), std::string(TaskLabel::kLabelChars, 'A'));
  // 63 escapes become 21 whole replacement characters (63 bytes), never a cut one.
  std::string bad;
  for (int i = 0; i < 21; ++i) bad += kBad;
  EXPECT_EQ(std::string(file.cases[0].tasks[1].label), bad);
}

TEST(HostileH5, ImageInMemoryReadsAsTheFile) {
  TempDir dir;
  const std::string path = good_file(dir);
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> image((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const ResultFile from_image = read_h5_image("named.h5", image);
  const ResultFile from_file = read_results(path);
  ASSERT_EQ(from_image.cases.size(), 1u);
  EXPECT_EQ(from_image.cases[0].step_seconds, from_file.cases[0].step_seconds);
  EXPECT_EQ(from_image.system.hostnames, "node1,node2");
  // The image is read under its own name, also where a file of that name exists.
  EXPECT_EQ(read_h5_image(path, image).cases.size(), 1u);
  try {
    read_h5_image("named.h5", std::vector<char>(image.begin(), image.begin() + 600));
    FAIL() << "read a truncated image";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'named.h5'"), std::string::npos) << e.what();
  }
}

// A results file (finished or journal), a config or a machine file whose size is mostly holes,
// or past what such a file may hold, is refused by its size: nothing of it is read, so the
// reader takes no memory for what it only claims (a 6 GiB sparse file once took 6 GiB).
TEST(HostileH5, SparseOrOversizedFilesAreRefusedByTheirSize) {
  TempDir dir;
  const std::string h5 = good_file(dir);
  const std::string journal = dir.file("cut.h5.partial");
  { ResultWriter writer(dir.file("cut.h5"), false, RunInfo{}, small_system("cpu", "mpi", 2, "t")); }
  const std::string config = dir.file("big.yaml");
  std::ofstream(config) << "workload: mlp\n";
  for (const std::string& path : {h5, journal, config}) {
    ASSERT_EQ(truncate(path.c_str(), off_t{6} << 30), 0) << path;
  }
  expect_refused(h5, {"claims 6442450944 bytes", "sparse"});
  expect_refused(journal, {"sparse"});
  ASSERT_EQ(truncate(h5.c_str(), off_t{9} << 30), 0);
  expect_refused(h5, {"more than the 8589934592 a results file may hold"});
  try {
    read_regular_file(config, "config");
    FAIL() << "read a 6 GiB config";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a config may hold"), std::string::npos) << e.what();
  }
  ASSERT_EQ(truncate(config.c_str(), off_t{32} << 20), 0);
  try {
    read_regular_file(config, "machine file");
    FAIL() << "read a sparse machine file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sparse"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fob
