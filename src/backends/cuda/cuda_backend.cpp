#include "cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "fob/device_plan.h"
#include "kernels.h"
#include "nccl_transport.h"
#include "nvtx3/nvToolsExt.h"
#include "staged_mpi_transport.h"

namespace fob {
namespace {

constexpr int64_t kWorkspaceBytes = 32 << 20;

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options) : options_(options), check_(0) {
  MPI_Comm_rank(options_.comm, &rank_);
  MPI_Comm_size(options_.comm, &world_);
  check_ = Checker(rank_);
  // The transport is chosen here, once. It is known before the device is checked: only NCCL
  // needs a GPU per rank and SMs of its own.
  const bool nccl = options_.transport != "mpi";
  if (options_.loopback && world_ != 1) {
    throw InputError("loopback: one process plays every rank; run it on 1 rank, not " +
                     std::to_string(world_));
  }
  select_and_check_device(nccl);
  resolve_comm_sms(nccl);
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
  // Split-K reductions in fp32 even for bf16/fp16 outputs: the stated verification bound counts
  // one rounding per store, which a reduced-precision reduction would exceed.
  check_.blas(cublasSetMathMode(blas_, static_cast<cublasMath_t>(
                                           CUBLAS_DEFAULT_MATH |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
              "cublasSetMathMode");
  check_.cuda(cudaMalloc(&workspace_, kWorkspaceBytes), "allocating the cuBLAS workspace");
  check_.blas(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
  if (nccl) {
    transport_ = std::make_unique<NcclTransport>(options_.comm, rank_, world_, comm_sms_,
                                                 options_.loopback, mem_pitch_, check_);
  } else {
    transport_ =
        std::make_unique<StagedMpiTransport>(options_, device_, greatest, mem_pitch_, check_);
  }
  start_cupti();
  if (const char* c = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
      c && std::atoi(c) == 1 && rank_ == 0) {
    std::fprintf(stderr,
                 "[fobench] warning: CUDA_DEVICE_MAX_CONNECTIONS=1 puts the compute and comm "
                 "streams in one hardware queue, where a comm-stream wait holds back every later "
                 "GEMM: overlap measured under it is not what the strategies can reach\n");
  }
}

CudaBackend::~CudaBackend() {
  if (transport_) transport_->stop();
  if (in_iteration_) {
    // An iteration did not finish (a timeout or a fault): its NCCL kernels may wait for a peer
    // that is gone, and cudaDeviceSynchronize would wait with them forever. Aborting the
    // communicator ends them; the device memory goes with the process, which is exiting.
    abort_comm();
    transport_.reset();
    return;
  }
  cudaDeviceSynchronize();
  while (!prepared_.empty()) {
    release_prepared(prepared_.begin()->second);
    prepared_.erase(prepared_.begin());
  }
  transport_.reset();
  if (blas_) cublasDestroy(blas_);
  cudaFree(workspace_);
  cudaFree(origin_);
  if (origin_end_) cudaEventDestroy(origin_end_);
  cupti_.reset();
  cudaEventDestroy(it0_);
  cudaEventDestroy(fork_);
  cudaStreamDestroy(compute_);
  cudaStreamDestroy(comm_);
}

std::string CudaBackend::device() const {
  return device_name_ + " (GPU " + std::to_string(device_) + ", bus " + bus_id_ + ")";
}

std::string CudaBackend::blas() const {
  int version = 0;
  cublasGetVersion(blas_, &version);
  return "cuBLAS " + std::to_string(version) +
         " (cublasGemmEx; fp32 accumulation for fp32, bf16 and fp16, no reduced-precision "
         "split-K reduction; overlapping cases leave " +
         std::to_string(comm_sms_) + " of " + std::to_string(sm_count_) +
         " SMs to communication, --comm-sms " +
         (options_.comm_sms < 0 ? "auto" : std::to_string(options_.comm_sms)) + ")";
}

int64_t CudaBackend::bytes_needed(const Plan& plan) const {
  return device_bytes_needed(plan, 0) + stage_elements(plan) * dtype_bytes(plan.dtype);
}

int64_t CudaBackend::bytes_free() const {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(free_bytes);
}

void CudaBackend::setup(const Plan& plan) {
  Prepared& p = prepared_[&plan];
  // Allocated once per case.
  allocate_device_buffers(plan, p, check_);
  transport_->prepare(plan, p);
  const size_t n = plan.tasks.size();
  p.done.resize(n);
  p.start.resize(n);
  p.end.resize(n);
  const unsigned sync_flag = transport_->event_flags();
  for (size_t i = 0; i < n; ++i) {
    check_.cuda(cudaEventCreateWithFlags(&p.done[i], cudaEventDisableTiming | sync_flag),
                "creating a dependency event");
    check_.cuda(cudaEventCreateWithFlags(&p.start[i], sync_flag), "creating a timing event");
    check_.cuda(cudaEventCreateWithFlags(&p.end[i], sync_flag), "creating a timing event");
  }
  fill_inputs(plan, options_.seed, p, check_);
  p.overlaps = plan_overlaps(plan);
  // Cases interleave in rounds, so their ranges overlap rather than nest.
  const std::string name =
      std::string("case ") + to_string(plan.workload) + " " + plan.strategy.text;
  p.nvtx_case = nvtxRangeStartA(name.c_str());
}

void CudaBackend::release(const Plan& plan) {
  auto it = prepared_.find(&plan);
  if (it == prepared_.end()) return;
  nvtxRangeEnd(it->second.nvtx_case);
  cudaDeviceSynchronize();
  release_prepared(it->second);
  prepared_.erase(it);
}

void CudaBackend::poison(const Plan& plan) {
  poison_buffers(plan, options_.seed, prepared(plan), check_);
}

std::vector<double> CudaBackend::read(const Plan& plan, int buffer) {
  return read_buffer(plan, prepared(plan), buffer, check_);
}

void CudaBackend::begin(const Plan& plan) {
  plan_ = &plan;
  current_ = &prepared(plan);
  in_iteration_ = true;
  transport_->begin(buffers());
  // Graphs: the first iteration of a case (the verification run) is eager, so that NCCL
  // connects its peers and cuBLAS loads its kernels outside the capture; the second is
  // captured, and every later one replays the captured graph.
  replaying_ = options_.graphs && current_->graph != nullptr;
  capturing_ = options_.graphs && !replaying_ && current_->eager_runs > 0;
  if (options_.graphs && !replaying_ && !capturing_) ++current_->eager_runs;
  if (replaying_) {
    // The origin is recorded outside the graph, just before it is launched in finish().
    nvtxRangePushA("iteration (graph replay)");
    cupti_on_ = cupti_ != nullptr;
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
  // Overlapping plans leave NCCL its SMs; a serial one (baseline) runs its GEMMs on all of them.
  const int target = current_->overlaps && comm_sms_ > 0 ? std::max(1, sm_count_ - comm_sms_) : 0;
  if (target != sm_target_) {
    check_.blas(cublasSetSmCountTarget(blas_, target), "cublasSetSmCountTarget");
    sm_target_ = target;
  }
  nvtxRangePushA(capturing_ ? "iteration (captured)" : "iteration");
  cupti_on_ = cupti_ != nullptr && !capturing_;
  // Host-timed transfers align their clock to the origin: it completed after this instant.
  const double before_origin = now_seconds();
  if (!capturing_) check_.cuda(cudaEventRecord(it0_, compute_), "recording the iteration start");
  mark_origin();
  check_.cuda(cudaEventRecord(fork_, compute_), "forking the comm stream");
  check_.cuda(cudaStreamWaitEvent(comm_, fork_, 0), "forking the comm stream");
  transport_->origin_recorded(it0_, before_origin);
}

void CudaBackend::launch(const Task& task, const std::vector<int>& wait_for) {
  if (replaying_) return;  // the captured graph holds every task
  if (transport_->runs_on_host(task)) {
    transport_->launch_on_host(task, wait_for);
    return;
  }
  cudaStream_t stream = task.stream == StreamId::compute ? compute_ : comm_;
  Prepared& p = *current_;
  for (int dep : wait_for) {
    if (transport_->runs_on_host(plan_->tasks[dep])) {
      // Bounded by --timeout: a transfer that never finishes must not hold the launch forever.
      if (!transport_->wait_for_host(dep, options_.timeout_s)) {
        timed_out(options_.timeout_s, " task " + std::to_string(task.id) + " '" + task.label +
                                          "' waits for transfer " + std::to_string(dep) + ";");
      }
    } else {
      check_.cuda(cudaStreamWaitEvent(stream, p.done[dep], 0), "cudaStreamWaitEvent");
    }
  }
  // What nsys and ncu show under the task's name, and what CUPTI's records are tagged with.
  nvtxRangePushA(task.label.c_str());
  record_timing(p.start[task.id], stream);
  // Tagged during a capture too: the graph nodes it creates carry the task into replays.
  if (cupti_) cupti_->push(cupti_id(task.id));
  enqueue(task, stream);
  if (cupti_) cupti_->pop();
  record_timing(p.end[task.id], stream);
  nvtxRangePop();
  check_.cuda(cudaEventRecord(p.done[task.id], stream), "recording a task's completion");
}

IterationTimes CudaBackend::finish(double timeout_s) {
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
    mark_origin();
    check_.cuda(cudaGraphLaunch(p.graph, compute_), "cudaGraphLaunch");
  }
  wait_for_iteration(timeout_s);
  in_iteration_ = false;
  nvtxRangePop();

  return read_times();
}

Prepared& CudaBackend::prepared(const Plan& plan) {
  auto it = prepared_.find(&plan);
  if (it == prepared_.end()) throw std::logic_error("plan used before setup()");
  return it->second;
}

void CudaBackend::enqueue(const Task& t, cudaStream_t stream) {
  const PlanBuffers at = buffers();
  switch (t.kind) {
    case TaskKind::gemm:
      gemm(t);
      break;
    case TaskKind::add:
      check_.cuda(cuda::add(plan_->dtype, at.device_at(t.c), at.device_at(t.a), t.m * t.n, stream),
                  "launching the add kernel");
      break;
    case TaskKind::copy:
      check_.cuda(cudaMemcpyAsync(at.device_at(t.c), at.device_at(t.a), t.m * t.n * at.elem(),
                                  cudaMemcpyDeviceToDevice, stream),
                  "cudaMemcpyAsync");
      break;
    case TaskKind::softmax:
      check_.cuda(cuda::softmax(plan_->dtype, at.device_at(t.c), t.m, t.n, at.cols(t.c.buffer),
                                t.scale, stream),
                  "launching the softmax kernel");
      break;
    case TaskKind::online_softmax: {
      cuda::OnlineSoftmax args;
      args.scores = at.device_at(t.c);
      args.rows = t.m;
      args.cols = t.n;
      args.ld = at.cols(t.c.buffer);
      args.state = at.device_at(t.a);
      args.ld_state = at.cols(t.a.buffer);
      args.out = at.device_at(t.b);
      args.ld_out = at.cols(t.b.buffer);
      args.heads = t.batch;
      args.head_width = t.k;
      args.scale = t.scale;
      args.first = !t.accumulate;
      check_.cuda(cuda::online_softmax(plan_->dtype, args, stream),
                  "launching the online softmax kernel");
      break;
    }
    case TaskKind::softmax_finish:
      check_.cuda(
          cuda::softmax_finish(plan_->dtype, at.device_at(t.c), t.m, at.cols(t.c.buffer),
                               at.device_at(t.a), at.cols(t.a.buffer), t.batch, t.k, stream),
          "launching the softmax normalisation kernel");
      break;
    case TaskKind::send:
    case TaskKind::recv:
    case TaskKind::exchange:
    case TaskKind::collective:
      transport_->enqueue(t, stream);
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
void CudaBackend::gemm(const Task& t) {
  const PlanBuffers at = buffers();
  const cudaDataType_t type = blas_type(plan_->dtype);
  const bool fp64 = plan_->dtype == DType::fp64;
  const cublasComputeType_t compute = fp64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const float alpha32 = 1.0f, beta32 = t.accumulate ? 1.0f : 0.0f;
  const double alpha64 = 1.0, beta64 = t.accumulate ? 1.0 : 0.0;
  const void* alpha = fp64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = fp64 ? static_cast<const void*>(&beta64) : &beta32;
  const int m = static_cast<int>(t.m), n = static_cast<int>(t.n), k = static_cast<int>(t.k);
  const int64_t lda = at.cols(t.a.buffer), ldb = at.cols(t.b.buffer), ldc = at.cols(t.c.buffer);
  const cublasOperation_t op_b = t.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = t.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (t.batch == 1) {
    check_.blas(
        cublasGemmEx(blas_, op_b, op_a, n, m, k, alpha, at.device_at(t.b), type,
                     static_cast<int>(ldb), at.device_at(t.a), type, static_cast<int>(lda), beta,
                     at.device_at(t.c), type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
    return;
  }
  // A task covering several blocks or heads is one strided-batched call; each operand moves by
  // its step (rows * ld + cols elements), which may be 0 for an operand shared by every entry.
  const long long stride_a = t.a_step.rows * lda + t.a_step.cols;
  const long long stride_b = t.b_step.rows * ldb + t.b_step.cols;
  const long long stride_c = t.c_step.rows * ldc + t.c_step.cols;
  check_.blas(cublasGemmStridedBatchedEx(blas_, op_b, op_a, n, m, k, alpha, at.device_at(t.b), type,
                                         static_cast<int>(ldb), stride_b, at.device_at(t.a), type,
                                         static_cast<int>(lda), stride_a, beta, at.device_at(t.c),
                                         type, static_cast<int>(ldc), stride_c, t.batch, compute,
                                         CUBLAS_GEMM_DEFAULT),
              "cublasGemmStridedBatchedEx");
}

// Timing events inside a capture must be external event nodes to be recorded when the graph
// runs (a plain record only marks a fork or join point).
void CudaBackend::record_timing(cudaEvent_t event, cudaStream_t stream) {
  check_.cuda(capturing_ ? cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal)
                         : cudaEventRecord(event, stream),
              "recording a timing event");
}

void CudaBackend::wait_for_iteration(double timeout_s) {
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
    if (transport_->host_busy()) idle = false;
    if (const auto error = transport_->async_error()) {
      const std::string where = stuck_tasks();
      abort_comm();
      check_.fail(error->what + where, error->why);
    }
    if (idle) break;
    if (now_seconds() > deadline) timed_out(timeout_s, "");
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(backoff_us));
    backoff_us = std::min(backoff_us * 2, 1000.0);
  }
}

void CudaBackend::timed_out(double timeout_s, const std::string& what) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", timeout_s);
  const std::string where = stuck_tasks();
  abort_comm();
  throw RuntimeFault("rank " + std::to_string(rank_) + ": iteration did not finish within " +
                     limit + " s (--timeout):" + what + where);
}

// The first unfinished task on each stream.
std::string CudaBackend::stuck_tasks() const {
  std::string text;
  for (StreamId s : {StreamId::compute, StreamId::comm}) {
    text += std::string(" ") + to_string(s) + " stream";
    int stuck = -1;
    for (const Task& t : plan_->tasks) {
      if (t.stream != s) continue;
      const bool finished = transport_->runs_on_host(t)
                                ? !std::isnan(transport_->host_end(t.id))
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
      if (transport_->runs_on_host(plan_->tasks[stuck])) {
        text += " (" + transport_->host_state() + ")";
      }
      text += ";";
    }
  }
  return text;
}

void CudaBackend::abort_comm() {
  // A capture a fault interrupted would keep this thread capturing and its NCCL operations
  // alive: end it and drop what it held.
  if (capturing_) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(compute_, &partial);
    if (partial) cudaGraphDestroy(partial);
    capturing_ = false;
  }
  // Every captured NCCL operation holds a reference on the communicator, and NCCL's teardown
  // waits until the graphs holding them are gone: destroy them first, or the abort would wait
  // forever. (A graph still running is freed by CUDA once the aborted kernels return.)
  for (auto& [plan, p] : prepared_) {
    if (p.graph) cudaGraphExecDestroy(p.graph);
    p.graph = nullptr;
  }
  replaying_ = false;
  transport_->abort();
}

}  // namespace fob
