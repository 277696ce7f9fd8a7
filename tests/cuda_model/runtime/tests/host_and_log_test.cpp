// Mapped pinned memory (cudaHostAlloc, cudaHostGetDevicePointer), the op log (FOB_MODEL_OP_LOG)
// with notes and graph replays, and what model.h tells the other libraries about the machine.
#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "model_test_util.h"

namespace fobmodel_test {
namespace {

using HostMemoryTest = Model;
using OpLogTest = Model;
using MachineTest = Model;

TEST_F(HostMemoryTest, HostAllocTakesTheDocumentedFlagsAndMapsToTheSamePointer) {
  void* host = nullptr;
  ASSERT_EQ(cudaHostAlloc(&host, 64, cudaHostAllocMapped), cudaSuccess);
  EXPECT_EQ(fobmodel::memory_of(host), fobmodel::Memory::pinned_host);
  void* device = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&device, host, 0), cudaSuccess);
  EXPECT_EQ(device, host);
  // Inside the allocation too; flags must be 0.
  ASSERT_EQ(cudaHostGetDevicePointer(&device, static_cast<char*>(host) + 8, 0), cudaSuccess);
  EXPECT_EQ(device, static_cast<char*>(host) + 8);
  EXPECT_EQ(cudaHostGetDevicePointer(&device, host, 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  // Pageable and device memory are not mapped pinned memory.
  int pageable = 0;
  EXPECT_EQ(cudaHostGetDevicePointer(&device, &pageable, 0), cudaErrorInvalidValue);
  void* on_device = nullptr;
  ASSERT_EQ(cudaMalloc(&on_device, 64), cudaSuccess);
  EXPECT_EQ(cudaHostGetDevicePointer(&device, on_device, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostGetDevicePointer(nullptr, host, 0), cudaErrorInvalidValue);
  // Every documented flag, combined; anything else is not a flag.
  void* all = nullptr;
  EXPECT_EQ(cudaHostAlloc(&all, 32,
                          cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined),
            cudaSuccess);
  EXPECT_EQ(cudaHostAlloc(&all, 32, cudaHostAllocDefault), cudaSuccess);
  EXPECT_EQ(cudaHostAlloc(&all, 32, 0x10), cudaErrorInvalidValue);
  // cudaFreeHost frees it, cudaFree does not; a freed buffer maps no more.
  EXPECT_EQ(cudaFree(host), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(host), cudaSuccess);
  EXPECT_EQ(cudaHostGetDevicePointer(&device, host, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(on_device), cudaSuccess);
  cudaGetLastError();
}

// The log files a child process wrote into `dir` (one: its pid replaced "%p").
std::vector<std::string> log_files(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("ops.", 0) == 0) files.push_back(dir + "/" + name);
  }
  closedir(d);
  return files;
}

struct Line {
  uint64_t seq, stream, enqueue_ns, start_ns, end_ns;
  std::string task, name, note;
};

std::vector<Line> parse(const std::string& path) {
  static const std::regex format(
      "op seq=([0-9]+) stream=([0-9]+) enqueue_ns=([0-9]+) start_ns=([0-9]+) end_ns=([0-9]+) "
      "task=\"([^\"]*)\" name=\"([^\"]*)\" note=\"([^\"]*)\" range=\"([^\"]*)\"");
  std::vector<Line> lines;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(text, m, format)) << text;
    if (m.empty()) continue;
    lines.push_back({std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4]),
                     std::stoull(m[5]), m[6], m[7], m[8]});
  }
  return lines;
}

// What the child runs: a noted op, a memset in a task whose name has quotes, and a graph of one
// memset replayed twice.
void run_logged_work() {
  cudaStream_t stream = nonblocking_stream();
  void* a = nullptr;
  cudaMalloc(&a, 256);
  {
    InTask task("say \"hi\"\nthere");
    fobmodel::Op op;
    op.name = "noted";
    op.note = "before=1";
    op.run = [] { fobmodel::note_running_op("after=2"); };
    fobmodel::enqueue(stream, std::move(op));
    cudaMemsetAsync(a, 1, 256, stream);
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  {
    InTask task("replayed");
    cudaMemsetAsync(a, 2, 256, stream);
  }
  cudaStreamEndCapture(stream, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, stream);
  cudaGraphLaunch(exec, stream);
  cudaStreamSynchronize(stream);
}

TEST_F(OpLogTest, EveryOpThatRanIsOneParseableLineGraphReplaysIncluded) {
  // The death test's child runs this body again, with the parent's environment: it must find
  // the parent's directory, not make one of its own.
  std::string dir;
  if (const char* inherited = std::getenv("FOB_MODEL_OP_LOG")) {
    dir = std::string(inherited).substr(0, std::string(inherited).rfind('/'));
  } else {
    char dir_template[] = "/tmp/fobmodel-oplog-XXXXXX";
    dir = mkdtemp(dir_template);
    setenv("FOB_MODEL_OP_LOG", (dir + "/ops.%p.log").c_str(), 1);
  }
  EXPECT_EXIT(
      {
        run_logged_work();
        std::_Exit(fobmodel::violations() == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unsetenv("FOB_MODEL_OP_LOG");
  const std::vector<std::string> files = log_files(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].find("ops." + std::to_string(getpid()) + ".log"), std::string::npos);
  const std::vector<Line> lines = parse(files[0]);
  std::vector<const Line*> replayed;
  const Line* noted = nullptr;
  const Line* memset = nullptr;
  for (const Line& line : lines) {
    EXPECT_LE(line.enqueue_ns, line.start_ns) << line.name;
    EXPECT_LE(line.start_ns, line.end_ns) << line.name;
    if (line.name == "noted") noted = &line;
    if (line.name == "cudaMemsetAsync" && line.task == "replayed") replayed.push_back(&line);
    if (line.name == "cudaMemsetAsync" && line.task != "replayed") memset = &line;
  }
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->note, "before=1 after=2");
  // A quote becomes ', a line break a space: the line stays one parseable line.
  EXPECT_EQ(noted->task, "say 'hi' there");
  ASSERT_NE(memset, nullptr);
  EXPECT_EQ(memset->stream, noted->stream);
  EXPECT_GT(memset->seq, noted->seq);
  // Each replay runs the captured memset once more, on the launch stream's id.
  ASSERT_EQ(replayed.size(), 2u);
  EXPECT_NE(replayed[0]->seq, replayed[1]->seq);
  EXPECT_EQ(replayed[0]->stream, noted->stream);
  for (const std::string& file : files) std::remove(file.c_str());
  rmdir(dir.c_str());
}

TEST_F(OpLogTest, TheRunningOpIsNamedAsTheRaceDetectorNamesIt) {
  cudaStream_t stream = nonblocking_stream();
  std::string stream_name, task;
  bool found = false;
  {
    InTask in_task("probe");
    fobmodel::Op op;
    op.name = "probe";
    op.run = [&] { found = fobmodel::running_op(&stream_name, &task); };
    ASSERT_EQ(fobmodel::enqueue(stream, std::move(op)), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_TRUE(found);
  EXPECT_EQ(task, "probe");
  EXPECT_FALSE(stream_name.empty());
  EXPECT_FALSE(fobmodel::running_op(&stream_name, &task));  // the test's thread runs no op
}

TEST_F(MachineTest, PhysicalDevicesBusIdsAndWhetherOneIsRunning) {
  EXPECT_EQ(fobmodel::physical_device_count(), 4);
  EXPECT_EQ(fobmodel::physical_bus_id(2), "0000:38:00.0");
  EXPECT_EQ(fobmodel::physical_device_of(1), 1);
  EXPECT_EQ(fobmodel::physical_device_of(4), -1);
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 3), cudaSuccess);
  EXPECT_EQ(fobmodel::physical_bus_id(3), bus);
  EXPECT_EQ(fobmodel::topology(), fobmodel::Topology::nvlink);
  cudaStream_t stream = nonblocking_stream();
  sleep_on(stream, 300);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(fobmodel::device_running(0));
  EXPECT_FALSE(fobmodel::device_running(1));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_FALSE(fobmodel::device_running(0));
}

TEST_F(MachineTest, CudaVisibleDevicesRenumbersCudaOnly) {
  setenv("CUDA_VISIBLE_DEVICES", "2,0", 1);
  EXPECT_EXIT(
      {
        int count = 0;
        char bus[32];
        const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count == 2 &&
                        fobmodel::physical_device_count() == 4 &&
                        fobmodel::physical_device_of(0) == 2 &&
                        fobmodel::physical_device_of(1) == 0 &&
                        cudaDeviceGetPCIBusId(bus, sizeof bus, 0) == cudaSuccess &&
                        fobmodel::physical_bus_id(2) == bus;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_F(MachineTest, AnUnknownTopologyIsASetupError) {
  setenv("FOB_MODEL_TOPOLOGY", "torus", 1);
  EXPECT_EXIT(fobmodel::topology(), reported(), "setup: FOB_MODEL_TOPOLOGY=torus");
  unsetenv("FOB_MODEL_TOPOLOGY");
}

}  // namespace
}  // namespace fobmodel_test
