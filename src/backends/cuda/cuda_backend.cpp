#include "cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "ce_transport.h"
#include "fob/device_plan.h"
#include "kernels.h"
#include "nccl_transport.h"
#include "nvtx3/nvToolsExt.h"
#include "staged_mpi_transport.h"

namespace fob {
namespace {

constexpr int64_t kWorkspaceBytes = 32 << 20;

// What an eager iteration queues on its busier stream, counted as the launch does: a wait per
// dependency on the other stream, the completion record, the timing records where events time
// the tasks, and the work (a GEMM or a kernel one; an NCCL call a few: its kernel and the
// waits and records it orders its own streams with).
int queued_operations(const Plan& plan, bool events) {
  int per_stream[kNumStreams] = {0, 0};
  for (const Task& t : plan.tasks) {
    int ops = 1 + (events ? 2 : 0) + (t.is_transfer() ? 4 : 1);
    for (int d : t.deps) ops += plan.tasks[d].stream != t.stream;
    per_stream[static_cast<int>(t.stream)] += ops;
  }
  return std::max(per_stream[0], per_stream[1]) + 4;  // the gate, origin and fork
}

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options) : options_(options), check_(0) {
  MPI_Comm_rank(options_.comm, &rank_);
  MPI_Comm_size(options_.comm, &world_);
  check_ = Checker(rank_);
  // The transport is chosen here, once. It is known before the device is checked: NCCL and the
  // copy engines need a GPU per rank, and only NCCL SMs of its own.
  const std::string& kind = options_.transport;
  const bool device_queued = kind != "mpi";
  if (options_.loopback && world_ != 1) {
    throw InputError("loopback: one process plays every rank; run it on 1 rank, not " +
                     std::to_string(world_));
  }
  if (options_.loopback && kind == "ce") {
    throw InputError(
        "loopback: NCCL's sends to itself stand in for the peers; transport ce "
        "copies into peers' memory and has none to stand in for: valid: nccl");
  }
  if (kind == "ce") ce_refuse_several_nodes(options_.comm, rank_, world_);
  select_and_check_device(device_queued);
  resolve_comm_sms(kind == "nccl");
  check_.cuda(cudaSetDevice(device_), "cudaSetDevice");
  // Bound before the transport starts its threads (NCCL's proxy, the staged transport's), which
  // inherit the binding.
  monitor_ = std::make_unique<GpuMonitor>(bus_id_);
  setup_notes_.push_back("cpu_binding=" + monitor_->bind_to_gpu_cpus());
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
  configure_math();
  check_.cuda(cudaMalloc(&workspace_, kWorkspaceBytes), "allocating the cuBLAS workspace");
  check_.blas(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
  if (device_queued) {
    if (kind == "ce") {
      transport_ = std::make_unique<CeTransport>(options_.comm, rank_, world_, device_, check_);
    } else {
      transport_ = std::make_unique<NcclTransport>(options_.comm, rank_, world_, comm_sms_,
                                                   options_.loopback, mem_pitch_, check_);
    }
    // Host-staged transfers make a launch wait for a transfer that waits for the device: only
    // transfers all queued on the device (NCCL's, the copy engines') can be held behind the gate.
    gate_ = std::make_unique<LaunchGate>(check_);
    if (!gate_->unavailable().empty())
      setup_notes_.push_back("launch_gate=" + gate_->unavailable());
  } else {
    transport_ =
        std::make_unique<StagedMpiTransport>(options_, device_, greatest, mem_pitch_, check_);
    setup_notes_.push_back(
        "launch_gate=none: host-staged transfers make launches wait for the device");
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
    if (gate_) gate_->open();
    transport_.reset();
    return;
  }
  cudaDeviceSynchronize();
  // Every plan's transport state first (collective where peers map each other's buffers: every
  // rank has closed its peers' buffers before any rank frees its own), then the memory.
  for (auto& [plan, p] : prepared_) transport_->unprepare(p);
  while (!prepared_.empty()) {
    release_memory(prepared_.begin()->second);
    prepared_.erase(prepared_.begin());
  }
  gate_.reset();
  monitor_.reset();
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
  const bool fast = options_.math == "fast";
  return "cuBLAS " + std::to_string(version) + " (cublasGemmEx; math " + options_.math +
         (fast ? ": TF32 for fp32 (CUBLAS_COMPUTE_32F_FAST_TF32), reduced-precision split-K "
                 "reductions allowed"
               : ": fp32 accumulation for fp32, bf16 and fp16, no reduced-precision split-K "
                 "reduction") +
         "; GEMMs beside a transfer leave " + std::to_string(comm_sms_) + " of " +
         std::to_string(sm_count_) + " SMs to communication, --comm-sms " +
         (options_.comm_sms < 0 ? "auto" : std::to_string(options_.comm_sms)) + ")";
}

int64_t CudaBackend::bytes_needed(const Plan& plan) const {
  // ncclMemAlloc rounds every allocation (each buffer, the stage, the row maps) up to the
  // allocation granularity (2 MiB on current GPUs).
  constexpr int64_t kGranularity = 2 << 20;
  const size_t allocations = plan.buffers.size() + 1 + (plan.row_maps.empty() ? 0 : 1);
  const int64_t rounding =
      options_.transport != "nccl" ? 0 : kGranularity * static_cast<int64_t>(allocations);
  return device_bytes_needed(plan, 0) + stage_elements(plan) * dtype_bytes(plan.dtype) + rounding +
         transport_->extra_bytes(plan);
}

int64_t CudaBackend::bytes_free() const {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(free_bytes);
}

void CudaBackend::setup(const Plan& plan) {
  Prepared& p = prepared_[&plan];
  // Every rank must pick the same communicator for the plan, or their transfers would never
  // meet: the plan overlaps where it does on any rank.
  int overlaps = plan_overlaps(plan) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &overlaps, 1, MPI_INT, MPI_MAX, options_.comm);
  p.overlaps = overlaps != 0;
  p.beside_transfer = tasks_beside_transfers(plan);
  p.queued_ops = queued_operations(plan, cupti_ == nullptr);
  // Allocated once per case, by the transport (NCCL's memory where NCCL registers it).
  const DeviceAllocator allocator{
      .allocate = [](void* t, size_t bytes) { return static_cast<Transport*>(t)->allocate(bytes); },
      .free = [](void* t, void* ptr) { static_cast<Transport*>(t)->free(ptr); },
      .ctx = transport_.get()};
  allocate_device_buffers(plan, p, allocator);
  upload_row_maps(plan, p, check_);
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
  // Cases interleave in rounds, so their ranges overlap rather than nest.
  const std::string name =
      std::string("case ") + to_string(plan.workload) + " " + plan.strategy.text;
  p.nvtx_case = nvtxRangeStartA(name.c_str());
}

void CudaBackend::release_memory(Prepared& p) {
  if (monitored_ == &p) monitored_ = nullptr;
  transport_->unprepare(p);
  release_prepared(p);
}

void CudaBackend::release(const Plan& plan) {
  auto it = prepared_.find(&plan);
  if (it == prepared_.end()) return;
  if (monitored_ == &it->second) stop_monitor();
  nvtxRangeEnd(it->second.nvtx_case);
  cudaDeviceSynchronize();
  release_memory(it->second);
  prepared_.erase(it);
}

void CudaBackend::poison(const Plan& plan) {
  poison_buffers(plan, options_.seed, prepared(plan), check_);
}

void CudaBackend::fill_timing_data(const Plan& plan) {
  fill_timing(plan, options_.seed, prepared(plan), check_);
}

std::vector<double> CudaBackend::read(const Plan& plan, int buffer) {
  return read_buffer(plan, prepared(plan), buffer, check_);
}

void CudaBackend::stop_monitor() {
  if (monitored_ && monitor_->running()) monitored_->gpu.merge(monitor_->stop());
  monitored_ = nullptr;
}

namespace {

// A timed iteration waits behind the gate where the gate works and the iteration's launches fit
// in the queue it holds back (a graph's launch always does).
bool gate_holds(const LaunchGate* gate, bool graphs, const Prepared& p) {
  return gate && gate->unavailable().empty() && (graphs || p.queued_ops <= LaunchGate::kMaxQueued);
}

// A graph captured without the per-task events cannot time a plan that now records them.
void drop_graph_without_events(Prepared& p) {
  if (p.graph && p.events && !p.graph_has_events) {
    cudaGraphExecDestroy(p.graph);
    p.graph = nullptr;
  }
}

}  // namespace

void CudaBackend::begin(const Plan& plan, bool timed) {
  plan_ = &plan;
  current_ = &prepared(plan);
  in_iteration_ = true;
  timed_ = timed;
  launch_start_ = now_seconds();
  transport_->begin(buffers());
  // NVML samples the plan's timed iterations and nothing else.
  if (!timed || monitored_ != current_) stop_monitor();
  if (timed && monitored_ != current_ && monitor_->unavailable().empty()) {
    monitor_->start();
    monitored_ = current_;
  }
  gated_ = timed && gate_holds(gate_.get(), options_.graphs, *current_);
  events_on_ = cupti_ == nullptr || current_->events;
  // Graphs: the first iteration of a case (the verification run) is eager, so that NCCL
  // connects its peers and cuBLAS loads its kernels outside the capture; the second is
  // captured, and every later one replays the captured graph. A plan that must now record
  // events is captured again with them.
  if (options_.graphs) drop_graph_without_events(*current_);
  replaying_ = options_.graphs && current_->graph != nullptr;
  capturing_ = options_.graphs && !replaying_ && current_->eager_runs > 0;
  if (options_.graphs && !replaying_ && !capturing_) ++current_->eager_runs;
  if (replaying_) {
    // The graph is launched in finish(), behind the gate and the origin.
    nvtxRangePushA("iteration (graph replay)");
    return;
  }
  if (capturing_) {
    std::string why;
    if (!graph_capture_eligible(plan, transport(), &why)) {
      throw InputError("--graphs: cannot capture this plan: " + why);
    }
    current_->graph_has_events = events_on_;
    check_.cuda(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture");
    nvtxRangePushA("iteration (captured)");
    // Captured work forks the comm stream from the capture origin; the gate and the iteration's
    // origin come with the graph's launch in finish().
    check_.cuda(cudaEventRecord(fork_, compute_), "forking the comm stream");
    check_.cuda(cudaStreamWaitEvent(comm_, fork_, 0), "forking the comm stream");
    return;
  }
  nvtxRangePushA("iteration");
  start_iteration();
  check_.cuda(cudaEventRecord(fork_, compute_), "forking the comm stream");
  check_.cuda(cudaStreamWaitEvent(comm_, fork_, 0), "forking the comm stream");
}

// Behind the gate (a timed iteration) the iteration's origin: the events' it0_ and CUPTI's
// marker, on the compute stream, which everything of the iteration follows.
void CudaBackend::start_iteration() {
  if (gated_) gate_->close(compute_);
  // Host-timed transfers align their clock to the origin: it completed after this instant.
  const double before_origin = now_seconds();
  check_.cuda(cudaEventRecord(it0_, compute_), "recording the iteration start");
  mark_origin();
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
  if (events_on_) record_timing(p.start[task.id], stream);
  // Tagged during a capture too: the graph nodes it creates carry the task into replays.
  if (cupti_) cupti_->push(cupti_id(task.id));
  enqueue(task, stream);
  if (cupti_) cupti_->pop();
  if (events_on_) record_timing(p.end[task.id], stream);
  nvtxRangePop();
  check_.cuda(cudaEventRecord(p.done[task.id], stream), "recording a task's completion");
}

// Joins the comm stream back into the capture origin, then instantiates the graph.
void CudaBackend::end_capture() {
  Prepared& p = *current_;
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

IterationTimes CudaBackend::finish(double timeout_s) {
  if (capturing_) end_capture();
  if (replaying_) {
    start_iteration();
    check_.cuda(cudaGraphLaunch(current_->graph, compute_), "cudaGraphLaunch");
  }
  const double launched = now_seconds() - launch_start_;
  const bool early = gated_ && gate_->open();
  wait_for_iteration(timeout_s);
  in_iteration_ = false;
  nvtxRangePop();
  transport_->iteration_done();
  IterationTimes times = read_times();
  times.launch = launched;
  times.gate_early = early;
  return times;
}

std::string CudaBackend::gate_text(const Prepared& p) const {
  if (!gate_) return "none: host-staged transfers make launches wait for the device";
  if (!gate_->unavailable().empty()) return "none: " + gate_->unavailable();
  if (!options_.graphs && p.queued_ops > LaunchGate::kMaxQueued) {
    return "none: an iteration queues " + std::to_string(p.queued_ops) +
           " operations on one stream, more than the " + std::to_string(LaunchGate::kMaxQueued) +
           " a gate may hold (--graphs queues one)";
  }
  return "timed iterations start on the device after their last launch";
}

std::vector<std::string> CudaBackend::case_facts(const Plan& plan) {
  Prepared& p = prepared(plan);
  if (monitored_ == &p) stop_monitor();
  int beside = 0, gemms = 0;
  for (const Task& t : plan.tasks) {
    if (t.kind != TaskKind::gemm) continue;
    ++gemms;
    beside += p.beside_transfer[t.id] != 0;
  }
  std::vector<std::string> facts = transport_->case_facts(p);
  facts.push_back("overlapping_plan=" + std::string(p.overlaps ? "yes" : "no"));
  facts.push_back("gemm_sm_target=" + std::to_string(beside) + " of " + std::to_string(gemms) +
                  " GEMMs beside a transfer on " +
                  std::to_string(comm_sms_ > 0 ? std::max(1, sm_count_ - comm_sms_) : sm_count_) +
                  " of " + std::to_string(sm_count_) + " SMs, the rest on all");
  facts.push_back("math=" + options_.math);
  facts.push_back(std::string("execution=") + (options_.graphs ? "CUDA graph replay" : "eager"));
  facts.push_back(std::string("launch_gate=") +
                  (gate_ && gate_->unavailable().empty()
                       ? "timed iterations start after their last launch"
                       : "none"));
  facts.push_back(std::string("task_timing=") +
                  (cupti_ ? (p.events ? "CUPTI kernel activity, with per-task events after "
                                        "CUPTI lost records"
                                      : "CUPTI kernel activity, no per-task events")
                          : "per-task CUDA events"));
  if (p.retried > 0) facts.push_back("iterations_run_again=" + std::to_string(p.retried));
  for (std::string& f : monitor_->window_facts(p.gpu)) facts.push_back(std::move(f));
  return facts;
}

std::vector<std::string> CudaBackend::run_facts() {
  std::vector<std::string> facts = setup_notes_;
  for (std::string& f : transport_->run_facts()) facts.push_back(std::move(f));
  for (std::string& f : monitor_->run_facts(node_peers_)) facts.push_back(std::move(f));
  facts.push_back("comm_sms=" + std::to_string(comm_sms_) + " of " + std::to_string(sm_count_));
  return facts;
}

int CudaBackend::transfer_sms(const Plan& plan) {
  // A plan without transfers (compute_only) takes no SMs for them, whatever its communicator.
  if (std::none_of(plan.tasks.begin(), plan.tasks.end(),
                   [](const Task& t) { return t.is_transfer(); })) {
    return 0;
  }
  const int sms = transport_->transfer_sms(prepared(plan));
  return sms >= 0 ? sms : -1;
}

Prepared& CudaBackend::prepared(const Plan& plan) {
  auto it = prepared_.find(&plan);
  if (it == prepared_.end()) throw std::logic_error("plan used before setup()");
  return it->second;
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
                                : cudaEventQuery(current_->done[t.id]) == cudaSuccess;
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
