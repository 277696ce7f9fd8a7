#include "staged_mpi_transport.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "annotations.h"
#include "backends/host/ring.h"
#include "fob/transfer_messages.h"

namespace fob {

StagedMpiTransport::StagedMpiTransport(const BackendOptions& options, int device,
                                       int stream_priority, size_t mem_pitch, const Checker& check)
    : check_(check), mem_pitch_(mem_pitch) {
  check_.cuda(cudaStreamCreateWithPriority(&copy_, cudaStreamNonBlocking, stream_priority),
              "creating the staging stream");
  link_ = std::make_unique<Link>(options.comm, options.link, abort_, options.loopback);
  host_comm_ = std::make_unique<CpuStream>([device] { cudaSetDevice(device); });
}

StagedMpiTransport::~StagedMpiTransport() {
  // The host thread first: it uses the link and the staging stream.
  host_comm_.reset();
  link_.reset();
  if (copy_) cudaStreamDestroy(copy_);
}

void* StagedMpiTransport::allocate(size_t bytes) {
  void* ptr = nullptr;
  check_.cuda(cudaMalloc(&ptr, bytes), "cudaMalloc for a plan buffer");
  return ptr;
}

void StagedMpiTransport::prepare(const Plan& plan, Prepared& p) {
  const int elem = dtype_bytes(plan.dtype);
  p.host.assign(plan.buffers.size(), nullptr);
  int64_t scratch = 0;
  for (const Task& t : plan.tasks) {
    if (!t.is_transfer()) continue;
    for (const View* v : {&t.a, &t.c}) {
      if (v->buffer < 0 || p.host[v->buffer]) continue;
      const BufferSpec& b = plan.buffers[v->buffer];
      check_.cuda(cudaMallocHost(&p.host[v->buffer], std::max<int64_t>(b.rows * b.cols * elem, 1)),
                  "allocating a pinned staging buffer");
    }
    // Only a reduce-scatter adds what it receives; the other collectives receive in place.
    if (t.kind == TaskKind::collective && t.op == CollectiveOp::reduce_scatter) {
      scratch = std::max(scratch, t.c.rows * plan.buffers[t.c.buffer].cols);
    }
  }
  for (void*& s : p.host_scratch) {
    check_.cuda(cudaMallocHost(&s, std::max<int64_t>(scratch * elem, 1)),
                "allocating pinned reduction scratch");
  }
}

void StagedMpiTransport::begin(const PlanBuffers& buffers) {
  at_ = buffers;
  abort_ = false;
  const size_t n = buffers.plan().tasks.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  host_start_.assign(n, nan);
  host_end_.assign(n, nan);
  std::lock_guard<std::mutex> lock(flag_mu_);
  host_done_.assign(n, 0);
  error_.clear();
}

// Host-timed transfers share the GPU's time origin: the event completed after `host_before`
// (read before it was recorded) and before the synchronisation returned, and the host clock read
// then stands for it. The bracket is how far the two clocks can disagree: a thread woken late
// widens it, so it is measured every iteration rather than assumed.
void StagedMpiTransport::origin_recorded(cudaEvent_t origin, double host_before) {
  check_.cuda(cudaEventSynchronize(origin), "synchronising the iteration start");
  t0_host_ = now_seconds();
  t0_uncertainty_ = t0_host_ - host_before;
}

// Every transfer runs on the host thread (runs_on_host): one on a GPU stream has no
// communicator to run on.
void StagedMpiTransport::enqueue(const Task& t, cudaStream_t /*stream*/) {
  check_.fail("task " + std::to_string(t.id) + " '" + t.label + "'",
              "transport mpi runs transfers on the comm stream only");
}

void StagedMpiTransport::launch_on_host(const Task& t, const std::vector<int>& wait_for) {
  // What this thread enqueued and synchronised so far is before the transfer, for a race
  // detector that sees the CUDA calls of both threads but not the queue between them.
  happens_before(&t);
  host_comm_->push([this, &t, &wait_for] {
    happens_after(&t);
    run(t, wait_for);
  });
}

bool StagedMpiTransport::wait_for_host(int task, double timeout_s) {
  std::unique_lock<std::mutex> lock(flag_mu_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  const bool done = flag_cv_.wait_until(
      lock, deadline, [&] { return host_done_[task] || abort_ || !error_.empty(); });
  if (!error_.empty()) throw RuntimeFault(error_);
  if (done) happens_after(&host_done_[task]);
  return done && !abort_;
}

bool StagedMpiTransport::host_busy() {
  const bool busy = !host_comm_->wait_idle(0);
  if (!busy) happens_after(this);  // everything the host thread ran is before what follows
  std::lock_guard<std::mutex> lock(flag_mu_);
  if (!error_.empty()) throw RuntimeFault(error_);
  return busy;
}

void StagedMpiTransport::abort() {
  {
    std::lock_guard<std::mutex> lock(flag_mu_);
    abort_ = true;
  }
  flag_cv_.notify_all();
}

void StagedMpiTransport::stop() {
  abort();
  host_comm_->wait_idle(5);
}

void StagedMpiTransport::run(const Task& t, const std::vector<int>& wait_for) {
  // A fault here must not end the process from this thread: it is handed to the thread that
  // launches and finishes iterations, which names the case and exits 3.
  try {
    run_unchecked(t, wait_for);
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(flag_mu_);
      if (error_.empty()) error_ = e.what();
      abort_ = true;
    }
    flag_cv_.notify_all();
  }
  happens_before(this);
}

void StagedMpiTransport::run_unchecked(const Task& t, const std::vector<int>& wait_for) {
  for (int dep : wait_for) {
    // Compute-stream events were recorded before this task was queued.
    check_.cuda(cudaEventSynchronize(at_.prepared().done[dep]),
                "waiting for a GEMM before a transfer");
    if (abort_) return;
  }
  host_start_[t.id] = now_seconds() - t0_host_;
  const int elem = at_.elem();
  const MPI_Datatype type = elem == 8 ? MPI_DOUBLE : elem == 4 ? MPI_FLOAT : MPI_UINT16_T;
  if (t.kind == TaskKind::collective) {
    collective(t, type);
  } else {
    // The halves the task has (sends() and receives()): a side without a peer is never posted.
    const bool sends = t.sends(), receives = t.receives();
    if (sends) to_host(t.a);
    link_->transfer(sends ? at_.host_at(t.a) : nullptr, sends ? at_.count(t.a) : 0,
                    sends ? t.send_peer : -1, receives ? at_.host_at(t.c) : nullptr,
                    receives ? at_.count(t.c) : 0, receives ? t.recv_peer : -1, t.tag, type, elem);
    if (receives) to_device(t.c);
  }
  host_end_[t.id] = now_seconds() - t0_host_;
  happens_before(&host_done_[t.id]);
  {
    std::lock_guard<std::mutex> lock(flag_mu_);
    host_done_[t.id] = 1;
  }
  flag_cv_.notify_all();
}

void StagedMpiTransport::collective(const Task& t, MPI_Datatype type) {
  const Plan& plan = at_.plan();
  const int64_t block = at_.count(t.c);
  if (t.op == CollectiveOp::all_gather) {
    to_host(t.a);
    auto at = [&](int j) { return at_.host_at(t.c, j * t.dst_stride_rows); };
    // The plan's rank and world: in loopback a larger world's, every peer this process.
    ring_all_gather(*link_, plan.rank, plan.world, block, at, type, at_.elem(), abort_);
    for (int j = 0; j < plan.world; ++j) {
      if (j != plan.rank) to_device(shifted(t.c, j * t.dst_stride_rows));
    }
    return;
  }
  if (t.op == CollectiveOp::all_to_all) {
    const PeerSpans blocks = all_to_all_blocks(plan, t);
    stage_spans(t.a.buffer, blocks.send, cudaMemcpyDeviceToHost);
    // The plan's rank and world, as for the all-gather. The own block is copied on the host
    // with the others' (no device-to-device copy), so one copy back places every block.
    pairwise_all_to_all(*link_, plan.rank, plan.world, blocks,
                        at_.host_at(View{t.a.buffer, 0, 0, 0, 0}),
                        at_.host_at(View{t.c.buffer, 0, 0, 0, 0}), plan.buffers[t.c.buffer].cols,
                        type, at_.elem(), abort_);
    stage_spans(t.c.buffer, blocks.recv, cudaMemcpyHostToDevice);
    return;
  }
  if (t.op != CollectiveOp::reduce_scatter) {
    check_.fail("task " + std::to_string(t.id) + " '" + t.label + "'",
                std::string("collective ") + to_string(t.op) + " is not supported");
  }
  stage_blocks(t.a, t.src_stride_rows, 1, 0, cudaMemcpyDeviceToHost);
  switch (plan.dtype) {
    case DType::fp32:
      reduce<float>(t, type, [](float x, float y) { return x + y; });
      break;
    case DType::fp64:
      reduce<double>(t, type, [](double x, double y) { return x + y; });
      break;
    case DType::bf16:
      reduce<__nv_bfloat16>(t, type, [](__nv_bfloat16 x, __nv_bfloat16 y) {
        return __float2bfloat16(__bfloat162float(x) + __bfloat162float(y));
      });
      break;
    case DType::fp16:
      reduce<__half>(t, type, [](__half x, __half y) {
        return __float2half(__half2float(x) + __half2float(y));
      });
      break;
  }
  to_device(t.c);
}

template <typename T, typename Add>
void StagedMpiTransport::reduce(const Task& t, MPI_Datatype type, Add add) {
  auto local = [&](int j) {
    return static_cast<const T*>(at_.host_at(t.a, j * t.src_stride_rows));
  };
  Prepared& p = at_.prepared();
  T* temp[2] = {static_cast<T*>(p.host_scratch[0]), static_cast<T*>(p.host_scratch[1])};
  ring_reduce_scatter<T>(*link_, at_.plan().rank, at_.plan().world, at_.count(t.c), local,
                         static_cast<T*>(at_.host_at(t.c)), temp, add, type, at_.elem(), abort_);
}

void StagedMpiTransport::to_host(const View& v) {
  check_.cuda(cudaMemcpyAsync(at_.host_at(v), at_.device_at(v), at_.count(v) * at_.elem(),
                              cudaMemcpyDeviceToHost, copy_),
              "staging to the host");
  check_.cuda(cudaStreamSynchronize(copy_), "staging to the host");
}
void StagedMpiTransport::to_device(const View& v) {
  check_.cuda(cudaMemcpyAsync(at_.device_at(v), at_.host_at(v), at_.count(v) * at_.elem(),
                              cudaMemcpyHostToDevice, copy_),
              "staging to the device");
  check_.cuda(cudaStreamSynchronize(copy_), "staging to the device");
}

// Queued together, waited for once: one round trip to the GPU rather than one per block. Each
// block is `batch` chunks of v.rows rows, `step` rows apart: one 2-D copy, as the host mirror
// has the device buffer's layout.
void StagedMpiTransport::stage_blocks(const View& v, int64_t stride, int batch, int64_t step,
                                      cudaMemcpyKind kind) {
  const bool to_host = kind == cudaMemcpyDeviceToHost;
  const size_t chunk = static_cast<size_t>(at_.count(v) * at_.elem());
  const size_t pitch =
      batch > 1 ? static_cast<size_t>(step * at_.plan().buffers[v.buffer].cols * at_.elem())
                : chunk;
  const char* what = to_host ? "staging blocks to the host" : "staging blocks to the device";
  for (int j = 0; j < at_.plan().world; ++j) {
    const View b = shifted(v, j * stride);
    void* host = at_.host_at(b);
    void* device = at_.device_at(b);
    copy_blocks(check_, mem_pitch_,
                {to_host ? host : device, pitch, to_host ? device : host, pitch, chunk,
                 static_cast<size_t>(batch)},
                kind, copy_, what);
  }
  check_.cuda(cudaStreamSynchronize(copy_), what);
}

void StagedMpiTransport::stage_spans(int buffer, const std::vector<std::vector<RowSpan>>& lists,
                                     cudaMemcpyKind kind) {
  const bool to_host = kind == cudaMemcpyDeviceToHost;
  const size_t row_bytes = static_cast<size_t>(at_.plan().buffers[buffer].cols * at_.elem());
  const char* what = to_host ? "staging blocks to the host" : "staging blocks to the device";
  auto copy = [&](const RowSpan& first, size_t pitch, size_t count) {
    const View v{buffer, first.row, first.rows, 0, 0};
    void* host = at_.host_at(v);
    void* device = at_.device_at(v);
    const size_t width = static_cast<size_t>(first.rows) * row_bytes;
    copy_blocks(check_, mem_pitch_,
                {to_host ? host : device, pitch, to_host ? device : host, pitch, width, count},
                kind, copy_, what);
  };
  for (const std::vector<RowSpan>& spans : lists) {
    if (spans.empty()) continue;
    int64_t step = 0;
    if (evenly_spaced(spans, &step)) {
      const size_t pitch = step > 0 ? static_cast<size_t>(step) * row_bytes
                                    : static_cast<size_t>(spans.front().rows) * row_bytes;
      copy(spans.front(), pitch, spans.size());
      continue;
    }
    for (const RowSpan& span : spans) copy(span, static_cast<size_t>(span.rows) * row_bytes, 1);
  }
  check_.cuda(cudaStreamSynchronize(copy_), what);
}

}  // namespace fob
