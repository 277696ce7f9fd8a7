// The cuda backend: cuBLAS GEMMs on a compute stream, NCCL point-to-point and collectives on a
// higher-priority comm stream, one cudaEvent per dependency and two timing events per task.
// `--transport mpi` stages transfers through host memory on a host thread instead, so that
// several ranks can share one GPU and clusters without NCCL still run.
//
// With --transport mpi a compute task that needs a transfer is launched only once the host
// thread has finished it (launch() waits, bounded by --timeout): nothing on the GPU ever waits
// for host work, which CUDA forbids host functions to do and which could otherwise serialise
// behind a blocked callback.
//
// Launch order and the cross-rank deadlock. Transformer Engine launches a tiny delay kernel so
// that a GEMM queued before an exchange on another stream cannot starve the exchange of SMs
// while the peer waits for it. Here every rank launches its tasks in plan order, which is the
// same order on every rank and independent of host timing, and a plan's transfers never wait
// for a GEMM that is launched after them: the PlanBuilder only makes a task depend on earlier
// tasks. NCCL kernels run on the higher-priority comm stream, so once launched they are
// scheduled ahead of queued GEMM blocks; a GEMM that is already running leaves SMs free as its
// blocks retire, and the peer's matching transfer is launched in the same plan position, so
// both sides of every exchange are in flight together and neither waits for host timing.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "../host/cpu_stream.h"
#include "../host/link.h"
#include "../host/ring.h"
#include "core/gather.h"
#include "fob/backend.h"
#include "fob/device_plan.h"
#include "fob/reference.h"
#include "kernels.h"

namespace fob {
namespace {

constexpr int64_t kWorkspaceBytes = 32 << 20;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Errors name the rank: a fault on one of 512 GPUs must say which.
class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}
  void cuda(cudaError_t e, const char* what) const {
    if (e != cudaSuccess) fail(what, cudaGetErrorString(e));
  }
  void blas(cublasStatus_t s, const char* what) const {
    if (s != CUBLAS_STATUS_SUCCESS) fail(what, cublasGetStatusString(s));
  }
  void nccl(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) fail(what, ncclGetErrorString(r));
  }
  [[noreturn]] void fail(const std::string& what, const std::string& why) const {
    throw RuntimeFault("rank " + std::to_string(rank_) + ": " + what + ": " + why);
  }

 private:
  int rank_;
};

cudaDataType_t blas_type(DType d) {
  switch (d) {
    case DType::fp32:
      return CUDA_R_32F;
    case DType::fp64:
      return CUDA_R_64F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::fp16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::fp32:
      return ncclFloat32;
    case DType::fp64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
  }
  return ncclFloat32;
}

// Host-side element conversions for inputs, verification and host-staged reductions.
void to_device_type(DType d, const double* in, int64_t n, void* out) {
  for (int64_t i = 0; i < n; ++i) {
    switch (d) {
      case DType::fp32:
        static_cast<float*>(out)[i] = static_cast<float>(in[i]);
        break;
      case DType::fp64:
        static_cast<double*>(out)[i] = in[i];
        break;
      case DType::bf16:
        static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16(static_cast<float>(in[i]));
        break;
      case DType::fp16:
        static_cast<__half*>(out)[i] = __float2half(static_cast<float>(in[i]));
        break;
    }
  }
}

double element_as_double(DType d, const void* data, int64_t i) {
  switch (d) {
    case DType::fp32:
      return static_cast<const float*>(data)[i];
    case DType::fp64:
      return static_cast<const double*>(data)[i];
    case DType::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case DType::fp16:
      return __half2float(static_cast<const __half*>(data)[i]);
  }
  return 0;
}

// A plan's device buffers, host mirrors for staged transfers, events and captured graph.
struct Prepared {
  std::vector<void*> device;
  std::vector<void*> host;  // pinned mirrors, only for --transport mpi
  void* host_scratch[2] = {nullptr, nullptr};
  std::vector<cudaEvent_t> done, start, end;
  cudaGraphExec_t graph = nullptr;
  int eager_runs = 0;  // iterations run before capturing a graph
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options) : options_(options), check_(0) {
    MPI_Comm_rank(options_.comm, &rank_);
    MPI_Comm_size(options_.comm, &world_);
    check_ = Checker(rank_);
    staged_ = options_.transport == "mpi";
    select_and_check_device();
    check_.cuda(cudaSetDevice(device_), "cudaSetDevice");
    int least = 0, greatest = 0;
    check_.cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities");
    check_.cuda(cudaStreamCreateWithPriority(&compute_, cudaStreamNonBlocking, least),
                "creating the compute stream");
    // Transfers outrank queued GEMM blocks, so a late GEMM cannot hold up a peer's exchange.
    check_.cuda(cudaStreamCreateWithPriority(&comm_, cudaStreamNonBlocking, greatest),
                "creating the comm stream");
    check_.cuda(cudaEventCreateWithFlags(&it0_, cudaEventBlockingSync), "creating an event");
    check_.cuda(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "creating an event");
    check_.blas(cublasCreate(&blas_), "cublasCreate");
    check_.blas(cublasSetStream(blas_, compute_), "cublasSetStream");
    check_.cuda(cudaMalloc(&workspace_, kWorkspaceBytes), "allocating the cuBLAS workspace");
    check_.blas(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
    if (options_.comm_sms > 0) {
      const int target = std::max(1, sm_count_ - options_.comm_sms);
      check_.blas(cublasSetSmCountTarget(blas_, target), "cublasSetSmCountTarget");
    }
    if (staged_) {
      copy_ = nullptr;
      check_.cuda(cudaStreamCreateWithPriority(&copy_, cudaStreamNonBlocking, greatest),
                  "creating the staging stream");
      link_ = std::make_unique<Link>(options_.comm, options_.link, abort_);
      const int device = device_;
      host_comm_ = std::make_unique<CpuStream>([device] { cudaSetDevice(device); });
    } else {
      // Rank 0's result travels with the id, so a failure there cannot leave the others waiting.
      ncclUniqueId id;
      int status = rank_ == 0 ? static_cast<int>(ncclGetUniqueId(&id)) : 0;
      MPI_Bcast(&status, 1, MPI_INT, 0, options_.comm);
      check_.nccl(static_cast<ncclResult_t>(status), "ncclGetUniqueId on rank 0");
      MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, options_.comm);
      check_.nccl(ncclCommInitRank(&nccl_, world_, id, rank_), "ncclCommInitRank");
    }
  }

  ~CudaBackend() override {
    {
      std::lock_guard<std::mutex> lock(flag_mu_);
      abort_ = true;
    }
    flag_cv_.notify_all();
    if (host_comm_) host_comm_->wait_idle(5);
    cudaDeviceSynchronize();
    while (!prepared_.empty()) release_prepared(prepared_.begin()->second);
    prepared_.clear();
    if (nccl_) ncclCommDestroy(nccl_);
    host_comm_.reset();
    if (blas_) cublasDestroy(blas_);
    cudaFree(workspace_);
    cudaEventDestroy(it0_);
    cudaEventDestroy(fork_);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(comm_);
    if (copy_) cudaStreamDestroy(copy_);
  }

  std::string name() const override { return "cuda"; }
  std::string transport() const override { return staged_ ? "mpi" : "nccl"; }
  std::string device() const override {
    return device_name_ + " (GPU " + std::to_string(device_) + ", bus " + bus_id_ + ")";
  }
  std::string blas() const override {
    int version = 0;
    cublasGetVersion(blas_, &version);
    return "cuBLAS " + std::to_string(version) +
           " (cublasGemmEx; fp32 accumulation for fp32, bf16 and fp16)";
  }

  int64_t bytes_needed(const Plan& plan) const override { return device_bytes_needed(plan, 0); }
  int64_t bytes_free() const override {
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return -1;
    return static_cast<int64_t>(free_bytes);
  }

  void setup(const Plan& plan) override {
    Prepared& p = prepared_[&plan];
    const int elem = dtype_bytes(plan.dtype);
    // Allocated once per case with cudaMalloc, never managed memory.
    for (const BufferSpec& b : plan.buffers) {
      void* ptr = nullptr;
      check_.cuda(cudaMalloc(&ptr, std::max<int64_t>(b.rows * b.cols * elem, 1)),
                  "cudaMalloc for a plan buffer");
      p.device.push_back(ptr);
    }
    if (staged_) allocate_mirrors(plan, p);
    const size_t n = plan.tasks.size();
    p.done.resize(n);
    p.start.resize(n);
    p.end.resize(n);
    const unsigned sync_flag = staged_ ? cudaEventBlockingSync : 0;
    for (size_t i = 0; i < n; ++i) {
      check_.cuda(cudaEventCreateWithFlags(&p.done[i], cudaEventDisableTiming | sync_flag),
                  "creating a dependency event");
      check_.cuda(cudaEventCreateWithFlags(&p.start[i], sync_flag), "creating a timing event");
      check_.cuda(cudaEventCreateWithFlags(&p.end[i], sync_flag), "creating a timing event");
    }
    fill_inputs(plan, p);
  }

  void release(const Plan& plan) override {
    auto it = prepared_.find(&plan);
    if (it == prepared_.end()) return;
    cudaDeviceSynchronize();
    release_prepared(it->second);
    prepared_.erase(it);
  }

  void poison(const Plan& plan) override {
    Prepared& p = prepared(plan);
    // All-ones bytes are a NaN in every floating-point type used here.
    for (size_t i = 0; i < p.device.size(); ++i) {
      const int64_t bytes = plan.buffers[i].rows * plan.buffers[i].cols * dtype_bytes(plan.dtype);
      check_.cuda(cudaMemset(p.device[i], 0xff, bytes), "poisoning a buffer");
    }
    fill_inputs(plan, p);
  }

  std::vector<double> read(const Plan& plan, int buffer) override {
    Prepared& p = prepared(plan);
    const int64_t count = plan.buffers[buffer].rows * plan.buffers[buffer].cols;
    std::vector<char> raw(count * dtype_bytes(plan.dtype));
    check_.cuda(cudaMemcpy(raw.data(), p.device[buffer], raw.size(), cudaMemcpyDeviceToHost),
                "reading a buffer back");
    std::vector<double> out(count);
    for (int64_t i = 0; i < count; ++i) out[i] = element_as_double(plan.dtype, raw.data(), i);
    return out;
  }

  void begin(const Plan& plan) override {
    plan_ = &plan;
    current_ = &prepared(plan);
    abort_ = false;
    const size_t n = plan.tasks.size();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    host_start_.assign(n, nan);
    host_end_.assign(n, nan);
    {
      std::lock_guard<std::mutex> lock(flag_mu_);
      host_done_.assign(n, 0);
      staged_error_.clear();
    }
    // Graphs: the first iteration runs eagerly (NCCL connects its peers, cuBLAS loads its
    // kernels), the second is captured and every later one replays it.
    replaying_ = options_.graphs && current_->graph != nullptr;
    capturing_ = options_.graphs && !replaying_ && current_->eager_runs > 0;
    if (options_.graphs && !replaying_ && !capturing_) ++current_->eager_runs;
    if (replaying_) {
      // The origin is recorded outside the graph, just before it is launched in finish().
      return;
    }
    if (capturing_) {
      std::string why;
      if (!graph_capture_eligible(plan, transport(), &why)) {
        throw InputError("--graphs: cannot capture this plan: " + why);
      }
      check_.cuda(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal),
                  "cudaStreamBeginCapture");
    }
    if (!capturing_) check_.cuda(cudaEventRecord(it0_, compute_), "recording the iteration start");
    check_.cuda(cudaEventRecord(fork_, compute_), "forking the comm stream");
    check_.cuda(cudaStreamWaitEvent(comm_, fork_, 0), "forking the comm stream");
    if (staged_) {
      // Host-timed transfers share the GPU's time origin: the stream is idle, so the event
      // completes at once and the host clock read right after it marks the same instant.
      check_.cuda(cudaEventSynchronize(it0_), "synchronising the iteration start");
      t0_host_ = now_seconds();
    }
  }

  void launch(const Task& task, const std::vector<int>& wait_for) override {
    if (replaying_) return;  // the captured graph holds every task
    if (staged_ && task.stream == StreamId::comm) {
      host_comm_->push([this, &task, &wait_for] { run_staged(task, wait_for); });
      return;
    }
    cudaStream_t stream = task.stream == StreamId::compute ? compute_ : comm_;
    Prepared& p = *current_;
    for (int dep : wait_for) {
      if (staged_ && plan_->tasks[dep].stream == StreamId::comm) {
        wait_for_staged(dep, task);
      } else {
        check_.cuda(cudaStreamWaitEvent(stream, p.done[dep], 0), "cudaStreamWaitEvent");
      }
    }
    record_timing(p.start[task.id], stream);
    enqueue(task, stream);
    record_timing(p.end[task.id], stream);
    check_.cuda(cudaEventRecord(p.done[task.id], stream), "recording a task's completion");
  }

  IterationTimes finish(double timeout_s) override {
    Prepared& p = *current_;
    if (capturing_) {
      // Join the comm stream back into the capture origin, then instantiate and run.
      cudaEvent_t joined = nullptr;
      check_.cuda(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming), "creating an event");
      check_.cuda(cudaEventRecord(joined, comm_), "joining streams");
      check_.cuda(cudaStreamWaitEvent(compute_, joined, 0), "joining streams");
      cudaGraph_t graph = nullptr;
      check_.cuda(cudaStreamEndCapture(compute_, &graph), "cudaStreamEndCapture");
      // Keep the comm stream's higher priority for the nodes captured from it.
      check_.cuda(cudaGraphInstantiate(&p.graph, graph, cudaGraphInstantiateFlagUseNodePriority),
                  "cudaGraphInstantiate");
      cudaGraphDestroy(graph);
      cudaEventDestroy(joined);
      capturing_ = false;
      replaying_ = true;
    }
    if (replaying_) {
      check_.cuda(cudaEventRecord(it0_, compute_), "recording the iteration start");
      check_.cuda(cudaGraphLaunch(p.graph, compute_), "cudaGraphLaunch");
    }
    wait_for_iteration(timeout_s);

    IterationTimes times;
    const size_t n = plan_->tasks.size();
    times.start.assign(n, std::numeric_limits<double>::quiet_NaN());
    times.end.assign(n, std::numeric_limits<double>::quiet_NaN());
    for (size_t i = 0; i < n; ++i) {
      if (staged_ && plan_->tasks[i].stream == StreamId::comm) {
        times.start[i] = host_start_[i];
        times.end[i] = host_end_[i];
      } else {
        float start_ms = 0, end_ms = 0;
        check_.cuda(cudaEventElapsedTime(&start_ms, it0_, p.start[i]), "reading a task start");
        check_.cuda(cudaEventElapsedTime(&end_ms, it0_, p.end[i]), "reading a task end");
        times.start[i] = start_ms * 1e-3;
        times.end[i] = end_ms * 1e-3;
      }
      if (!std::isnan(times.end[i])) times.step = std::max(times.step, times.end[i]);
    }
    return times;
  }

 private:
  void select_and_check_device() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    MPI_Comm local;
    MPI_Comm_split_type(options_.comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);

    std::string error;
    try {
      device_ = select_device(local_rank, count, std::getenv("FOB_DEVICE"));
      char bus[64] = {};
      check_.cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, device_), "cudaDeviceGetPCIBusId");
      bus_id_ = bus;
      cudaDeviceProp prop;
      check_.cuda(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
      device_name_ = prop.name;
      sm_count_ = prop.multiProcessorCount;
    } catch (const std::exception& e) {
      error = "rank " + std::to_string(rank_) + ": " + e.what();
    }
    // Every rank learns whether any rank failed, and whether two NCCL ranks share a GPU,
    // before anything is allocated.
    std::vector<std::string> ids = gather_strings(options_.comm, hostname() + "/" + bus_id_);
    std::vector<std::string> errors = gather_strings(options_.comm, error);
    std::string verdict;
    if (rank_ == 0) {
      for (const std::string& e : errors) {
        if (!e.empty() && verdict.empty()) verdict = e;
      }
      auto [a, b] = ranks_sharing_a_device(ids);
      if (verdict.empty() && a >= 0 && !staged_) {
        verdict = "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share one GPU (" +
                  ids[a] +
                  "); NCCL needs a GPU per rank: run one rank "
                  "per GPU, or pass --transport mpi to share GPUs for functional runs";
      }
    }
    int len = static_cast<int>(verdict.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, options_.comm);
    verdict.resize(len);
    MPI_Bcast(verdict.data(), len, MPI_CHAR, 0, options_.comm);
    if (!verdict.empty()) throw InputError(verdict);
  }

  Prepared& prepared(const Plan& plan) {
    auto it = prepared_.find(&plan);
    if (it == prepared_.end()) throw std::logic_error("plan used before setup()");
    return it->second;
  }

  void release_prepared(Prepared& p) {
    for (void* ptr : p.device) cudaFree(ptr);
    for (void* ptr : p.host) {
      if (ptr) cudaFreeHost(ptr);
    }
    for (void* ptr : p.host_scratch) {
      if (ptr) cudaFreeHost(ptr);
    }
    for (auto* events : {&p.done, &p.start, &p.end}) {
      for (cudaEvent_t e : *events) cudaEventDestroy(e);
    }
    if (p.graph) cudaGraphExecDestroy(p.graph);
    p = Prepared{};
  }

  void allocate_mirrors(const Plan& plan, Prepared& p) {
    const int elem = dtype_bytes(plan.dtype);
    p.host.assign(plan.buffers.size(), nullptr);
    int64_t scratch = 0;
    for (const Task& t : plan.tasks) {
      if (!t.is_transfer()) continue;
      for (const View* v : {&t.a, &t.c}) {
        if (v->buffer < 0 || p.host[v->buffer]) continue;
        const BufferSpec& b = plan.buffers[v->buffer];
        check_.cuda(
            cudaMallocHost(&p.host[v->buffer], std::max<int64_t>(b.rows * b.cols * elem, 1)),
            "allocating a pinned staging buffer");
      }
      if (t.kind == TaskKind::collective) {
        scratch = std::max(scratch, t.c.rows * plan.buffers[t.c.buffer].cols);
      }
    }
    for (void*& s : p.host_scratch) {
      check_.cuda(cudaMallocHost(&s, std::max<int64_t>(scratch * elem, 1)),
                  "allocating pinned reduction scratch");
    }
  }

  void fill_inputs(const Plan& plan, Prepared& p) {
    std::vector<double> values;
    std::vector<char> converted;
    const int elem = dtype_bytes(plan.dtype);
    for (const InputRegion& region : plan.inputs) {
      const int64_t cols = plan.buffers[region.buffer].cols;
      values.resize(region.rows * cols);
      fill_input(region, cols, options_.seed, values.data());
      converted.resize(values.size() * elem);
      to_device_type(plan.dtype, values.data(), static_cast<int64_t>(values.size()),
                     converted.data());
      char* dst = static_cast<char*>(p.device[region.buffer]) + region.row * cols * elem;
      check_.cuda(cudaMemcpy(dst, converted.data(), converted.size(), cudaMemcpyHostToDevice),
                  "copying inputs to the device");
    }
    check_.cuda(cudaDeviceSynchronize(), "filling inputs");
  }

  int64_t cols(int buffer) const { return plan_->buffers[buffer].cols; }
  int elem() const { return dtype_bytes(plan_->dtype); }
  int64_t count(const View& v) const { return v.rows * cols(v.buffer); }

  // The address of a view's first element (row and column offset), `extra_rows` further down.
  // Host mirrors have the device buffers' layout.
  int64_t offset_bytes(const View& v, int64_t extra_rows) const {
    return (view_offset(*plan_, v) + extra_rows * cols(v.buffer)) * elem();
  }
  void* device_at(const View& v, int64_t extra_rows = 0) const {
    return static_cast<char*>(current_->device[v.buffer]) + offset_bytes(v, extra_rows);
  }
  void* host_at(const View& v, int64_t extra_rows = 0) const {
    return static_cast<char*>(current_->host[v.buffer]) + offset_bytes(v, extra_rows);
  }

  void enqueue(const Task& t, cudaStream_t stream) {
    switch (t.kind) {
      case TaskKind::gemm:
        gemm(t);
        break;
      case TaskKind::add:
        check_.cuda(cuda::add(plan_->dtype, device_at(t.c), device_at(t.a), t.m * t.n, stream),
                    "launching the add kernel");
        break;
      case TaskKind::copy:
        check_.cuda(cudaMemcpyAsync(device_at(t.c), device_at(t.a), t.m * t.n * elem(),
                                    cudaMemcpyDeviceToDevice, stream),
                    "cudaMemcpyAsync");
        break;
      case TaskKind::softmax:
        check_.cuda(cuda::softmax(plan_->dtype, device_at(t.c), t.m, t.n, cols(t.c.buffer), t.scale,
                                  stream),
                    "launching the softmax kernel");
        break;
      case TaskKind::send:
      case TaskKind::recv:
      case TaskKind::exchange: {
        const ncclDataType_t type = nccl_type(plan_->dtype);
        check_.nccl(ncclGroupStart(), "ncclGroupStart");
        if (t.kind != TaskKind::recv) {
          check_.nccl(ncclSend(device_at(t.a), count(t.a), type, t.send_peer, nccl_, stream),
                      "ncclSend");
        }
        if (t.kind != TaskKind::send) {
          check_.nccl(ncclRecv(device_at(t.c), count(t.c), type, t.recv_peer, nccl_, stream),
                      "ncclRecv");
        }
        check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
      case TaskKind::collective:
        collective(t, stream);
        break;
    }
  }

  // Row-major C[m, n] = op(A) * op(B), each operand's leading dimension its buffer's width and
  // its base the view's first element (column views such as one attention head are strided).
  // A row-major matrix X with leading dimension ld is, read column-major, X^T with the same ld,
  // so cuBLAS computes the column-major C^T = op(B)^T * op(A)^T with the operands swapped:
  //   B as stored is op(B) (k x n) unless transpose_b (then n x k, op(B) = b^T); read
  //   column-major it is op(B)^T already (op N), or b^T whose transpose b = op(B)^T (op T).
  //   A likewise: op N unless transpose_a (a stored k x m, read column-major as a^T: op T).
  void gemm(const Task& t) {
    const cudaDataType_t type = blas_type(plan_->dtype);
    const bool fp64 = plan_->dtype == DType::fp64;
    const cublasComputeType_t compute = fp64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const float alpha32 = 1.0f, beta32 = t.accumulate ? 1.0f : 0.0f;
    const double alpha64 = 1.0, beta64 = t.accumulate ? 1.0 : 0.0;
    const void* alpha = fp64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = fp64 ? static_cast<const void*>(&beta64) : &beta32;
    const int m = static_cast<int>(t.m), n = static_cast<int>(t.n), k = static_cast<int>(t.k);
    const int64_t lda = cols(t.a.buffer), ldb = cols(t.b.buffer), ldc = cols(t.c.buffer);
    const cublasOperation_t op_b = t.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = t.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (t.batch == 1) {
      check_.blas(
          cublasGemmEx(blas_, op_b, op_a, n, m, k, alpha, device_at(t.b), type,
                       static_cast<int>(ldb), device_at(t.a), type, static_cast<int>(lda), beta,
                       device_at(t.c), type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
      return;
    }
    // A task covering several blocks or heads is one strided-batched call; each operand moves by
    // its step (rows * ld + cols elements), which may be 0 for an operand shared by every entry.
    const long long stride_a = t.a_step.rows * lda + t.a_step.cols;
    const long long stride_b = t.b_step.rows * ldb + t.b_step.cols;
    const long long stride_c = t.c_step.rows * ldc + t.c_step.cols;
    check_.blas(cublasGemmStridedBatchedEx(blas_, op_b, op_a, n, m, k, alpha, device_at(t.b), type,
                                           static_cast<int>(ldb), stride_b, device_at(t.a), type,
                                           static_cast<int>(lda), stride_a, beta, device_at(t.c),
                                           type, static_cast<int>(ldc), stride_c, t.batch, compute,
                                           CUBLAS_GEMM_DEFAULT),
                "cublasGemmStridedBatchedEx");
  }

  void collective(const Task& t, cudaStream_t stream) {
    const ncclDataType_t type = nccl_type(plan_->dtype);
    const int64_t block = count(t.c);
    if (t.op == CollectiveOp::all_gather) {
      if (t.dst_stride_rows == t.c.rows) {
        // Contiguous blocks in rank order: NCCL's in-place all-gather.
        check_.nccl(ncclAllGather(device_at(t.a), device_at(t.c), block, type, nccl_, stream),
                    "ncclAllGather");
        return;
      }
      // Strided blocks (a slicing chunk): the same exchange as grouped point-to-point calls.
      check_.nccl(ncclGroupStart(), "ncclGroupStart");
      for (int j = 0; j < world_; ++j) {
        if (j == rank_) continue;
        check_.nccl(ncclSend(device_at(t.a), block, type, j, nccl_, stream), "ncclSend");
        check_.nccl(ncclRecv(device_at(t.c, j * t.dst_stride_rows), block, type, j, nccl_, stream),
                    "ncclRecv");
      }
      check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
      return;
    }
    if (t.op == CollectiveOp::reduce_scatter && t.src_stride_rows == t.c.rows) {
      check_.nccl(
          ncclReduceScatter(device_at(t.a), device_at(t.c), block, type, ncclSum, nccl_, stream),
          "ncclReduceScatter");
      return;
    }
    check_.fail(
        "task " + std::to_string(t.id) + " '" + t.label + "'",
        std::string("collective ") + to_string(t.op) + " with this layout is not supported");
  }

  // --transport mpi: one transfer on the host thread, staged through pinned host memory.
  void run_staged(const Task& t, const std::vector<int>& wait_for) {
    // A fault here must not end the process from this thread: it is handed to the thread that
    // launches and finishes iterations, which names the case and exits 3.
    try {
      run_staged_unchecked(t, wait_for);
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(flag_mu_);
        if (staged_error_.empty()) staged_error_ = e.what();
        abort_ = true;
      }
      flag_cv_.notify_all();
    }
  }

  void run_staged_unchecked(const Task& t, const std::vector<int>& wait_for) {
    for (int dep : wait_for) {
      // Compute-stream events were recorded before this task was queued.
      check_.cuda(cudaEventSynchronize(current_->done[dep]),
                  "waiting for a GEMM before a transfer");
      if (abort_) return;
    }
    host_start_[t.id] = now_seconds() - t0_host_;
    const MPI_Datatype type = elem() == 8 ? MPI_DOUBLE : elem() == 4 ? MPI_FLOAT : MPI_UINT16_T;
    if (t.kind == TaskKind::collective) {
      staged_collective(t, type);
    } else {
      if (t.kind != TaskKind::recv) to_host(t.a);
      link_->transfer(t.kind == TaskKind::recv ? nullptr : host_at(t.a),
                      t.kind == TaskKind::recv ? 0 : count(t.a), t.send_peer,
                      t.kind == TaskKind::send ? nullptr : host_at(t.c),
                      t.kind == TaskKind::send ? 0 : count(t.c), t.recv_peer, t.tag, type, elem());
      if (t.kind != TaskKind::send) to_device(t.c);
    }
    host_end_[t.id] = now_seconds() - t0_host_;
    {
      std::lock_guard<std::mutex> lock(flag_mu_);
      host_done_[t.id] = 1;
    }
    flag_cv_.notify_all();
  }

  void staged_collective(const Task& t, MPI_Datatype type) {
    const int64_t block = count(t.c);
    if (t.op == CollectiveOp::all_gather) {
      to_host(t.a);
      auto at = [&](int j) { return host_at(t.c, j * t.dst_stride_rows); };
      ring_all_gather(*link_, rank_, world_, block, at, type, elem(), abort_);
      for (int j = 0; j < world_; ++j) {
        if (j != rank_) to_device(shifted(t.c, j * t.dst_stride_rows));
      }
      return;
    }
    for (int j = 0; j < world_; ++j) to_host(shifted(t.a, j * t.src_stride_rows));
    switch (plan_->dtype) {
      case DType::fp32:
        staged_reduce<float>(t, type, [](float x, float y) { return x + y; });
        break;
      case DType::fp64:
        staged_reduce<double>(t, type, [](double x, double y) { return x + y; });
        break;
      case DType::bf16:
        staged_reduce<__nv_bfloat16>(t, type, [](__nv_bfloat16 x, __nv_bfloat16 y) {
          return __float2bfloat16(__bfloat162float(x) + __bfloat162float(y));
        });
        break;
      case DType::fp16:
        staged_reduce<__half>(t, type, [](__half x, __half y) {
          return __float2half(__half2float(x) + __half2float(y));
        });
        break;
    }
    to_device(t.c);
  }

  template <typename T, typename Add>
  void staged_reduce(const Task& t, MPI_Datatype type, Add add) {
    auto local = [&](int j) { return static_cast<const T*>(host_at(t.a, j * t.src_stride_rows)); };
    T* temp[2] = {static_cast<T*>(current_->host_scratch[0]),
                  static_cast<T*>(current_->host_scratch[1])};
    ring_reduce_scatter<T>(*link_, rank_, world_, count(t.c), local, static_cast<T*>(host_at(t.c)),
                           temp, add, type, elem(), abort_);
  }

  // `v` moved down by `rows` rows, every other field kept.
  static View shifted(View v, int64_t rows) {
    v.row += rows;
    return v;
  }

  void to_host(const View& v) {
    check_.cuda(
        cudaMemcpyAsync(host_at(v), device_at(v), count(v) * elem(), cudaMemcpyDeviceToHost, copy_),
        "staging to the host");
    check_.cuda(cudaStreamSynchronize(copy_), "staging to the host");
  }
  void to_device(const View& v) {
    check_.cuda(
        cudaMemcpyAsync(device_at(v), host_at(v), count(v) * elem(), cudaMemcpyHostToDevice, copy_),
        "staging to the device");
    check_.cuda(cudaStreamSynchronize(copy_), "staging to the device");
  }

  // Timing events inside a capture must be external event nodes to be recorded when the graph
  // runs (a plain record only marks a fork or join point).
  void record_timing(cudaEvent_t event, cudaStream_t stream) {
    check_.cuda(capturing_ ? cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal)
                           : cudaEventRecord(event, stream),
                "recording a timing event");
  }

  // --transport mpi: hold the launch of `task` until the host thread has finished transfer
  // `dep`, within the iteration's time limit.
  void wait_for_staged(int dep, const Task& task) {
    std::unique_lock<std::mutex> lock(flag_mu_);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(options_.timeout_s));
    const bool done = flag_cv_.wait_until(
        lock, deadline, [&] { return host_done_[dep] || abort_ || !staged_error_.empty(); });
    if (!staged_error_.empty()) throw RuntimeFault(staged_error_);
    if (!done || abort_) {
      lock.unlock();
      const std::string where = stuck_tasks();
      abort_comm();
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", options_.timeout_s);
      throw RuntimeFault("rank " + std::to_string(rank_) + ": iteration did not finish within " +
                         limit + " s (--timeout): task " + std::to_string(task.id) + " '" +
                         task.label + "' waits for transfer " + std::to_string(dep) + ";" + where);
    }
  }

  void wait_for_iteration(double timeout_s) {
    const double deadline = now_seconds() + timeout_s;
    double backoff_us = 20;
    while (true) {
      bool idle = true;
      for (cudaStream_t s : {compute_, comm_}) {
        cudaError_t e = cudaStreamQuery(s);
        if (e == cudaErrorNotReady) {
          idle = false;
        } else {
          check_.cuda(e, "a task on the GPU");
        }
      }
      if (staged_ && !host_comm_->wait_idle(0)) idle = false;
      if (staged_) {
        std::lock_guard<std::mutex> lock(flag_mu_);
        if (!staged_error_.empty()) throw RuntimeFault(staged_error_);
      }
      if (nccl_) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(nccl_, &async);
        if (async != ncclSuccess) {
          const std::string where = stuck_tasks();
          abort_comm();
          check_.fail("NCCL error while" + where, ncclGetErrorString(async));
        }
      }
      if (idle) break;
      if (now_seconds() > deadline) {
        char limit[32];
        std::snprintf(limit, sizeof limit, "%g", timeout_s);
        const std::string where = stuck_tasks();
        abort_comm();
        throw RuntimeFault("rank " + std::to_string(rank_) + ": iteration did not finish within " +
                           limit + " s (--timeout):" + where);
      }
      std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(backoff_us));
      backoff_us = std::min(backoff_us * 2, 1000.0);
    }
  }

  // The first unfinished task on each stream.
  std::string stuck_tasks() const {
    std::string text;
    for (StreamId s : {StreamId::compute, StreamId::comm}) {
      text += std::string(" ") + to_string(s) + " stream";
      int stuck = -1;
      for (const Task& t : plan_->tasks) {
        if (t.stream != s) continue;
        const bool host = staged_ && s == StreamId::comm;
        const bool finished = host ? !std::isnan(host_end_[t.id])
                                   : cudaEventQuery(current_->end[t.id]) == cudaSuccess;
        if (!finished) {
          stuck = t.id;
          break;
        }
      }
      if (stuck < 0) {
        text += " idle;";
      } else {
        text += " in task " + std::to_string(stuck) + " '" + plan_->tasks[stuck].label + "'";
        if (staged_ && s == StreamId::comm) text += " (" + link_->state() + ")";
        text += ";";
      }
    }
    return text;
  }

  void abort_comm() {
    {
      std::lock_guard<std::mutex> lock(flag_mu_);
      abort_ = true;
    }
    flag_cv_.notify_all();
    // Aborting the communicator is what unblocks NCCL kernels waiting for a peer that will
    // never come; a hung rank then exits instead of holding its GPU.
    if (nccl_) {
      ncclCommAbort(nccl_);
      nccl_ = nullptr;
    }
  }

  BackendOptions options_;
  Checker check_;
  int rank_ = 0, world_ = 1;
  bool staged_ = false;
  int device_ = 0;
  std::string device_name_, bus_id_;
  int sm_count_ = 0;
  cudaStream_t compute_ = nullptr, comm_ = nullptr, copy_ = nullptr;
  cudaEvent_t it0_ = nullptr;   // the iteration's time origin
  cudaEvent_t fork_ = nullptr;  // orders the comm stream after the iteration's start
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  ncclComm_t nccl_ = nullptr;
  std::atomic<bool> abort_{false};
  std::unique_ptr<Link> link_;
  std::unique_ptr<CpuStream> host_comm_;

  std::map<const Plan*, Prepared> prepared_;
  const Plan* plan_ = nullptr;
  Prepared* current_ = nullptr;
  bool capturing_ = false, replaying_ = false;
  double t0_host_ = 0;
  std::vector<double> host_start_, host_end_;
  std::vector<char> host_done_;
  std::mutex flag_mu_;
  std::condition_variable flag_cv_;
  std::string staged_error_;  // a fault on the host thread, rethrown on the launching thread
};

}  // namespace

bool cuda_backend_built() {
  return true;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

std::string cuda_versions() {
  int runtime = 0, driver = 0, nccl = 0, blas_major = 0, blas_minor = 0, blas_patch = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  ncclGetVersion(&nccl);
  cublasGetProperty(MAJOR_VERSION, &blas_major);
  cublasGetProperty(MINOR_VERSION, &blas_minor);
  cublasGetProperty(PATCH_LEVEL, &blas_patch);
  char text[256];
  std::snprintf(
      text, sizeof text, "CUDA runtime %d.%d, driver %s, cuBLAS %d.%d.%d, NCCL %d.%d.%d",
      runtime / 1000, (runtime % 1000) / 10,
      driver ? (std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10)).c_str()
             : "none (no GPU driver on this machine)",
      blas_major, blas_minor, blas_patch, nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  return text;
}

}  // namespace fob
