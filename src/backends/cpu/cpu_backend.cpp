// The CPU backend: BLAS GEMMs (OpenBLAS in a normal build) on a compute thread, MPI transfers on a
// comm thread, and completion flags with timestamps in place of CUDA events.
#include <cblas.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "backends/host/cpu_stream.h"
#include "backends/host/link.h"
#include "backends/host/ring.h"
#include "blas_runtime.h"
#include "core_slots.h"
#include "cpu_kernels.h"
#include "fob/backend.h"
#include "fob/inputs.h"
#include "fob/transfer_messages.h"
#include "host_memory.h"

namespace fob {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

// 64-byte aligned storage, freed on scope exit.
struct AlignedBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  explicit AlignedBuffer(size_t n) : bytes(n) {
    data = std::aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    if (!data) throw RuntimeFault("out of host memory allocating " + std::to_string(n) + " bytes");
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

// A plan's buffers, kept while the plan is prepared.
struct Prepared {
  int elem = 4;
  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  std::unique_ptr<AlignedBuffer> scratch[2];
  // Over the iterations begun as timed (the warm-up's too): what the emulated link delivered, and
  // the CPUs each stream's tasks started on (bit c: CPU c; CPUs past 63 are not told apart).
  Link::Account link;
  uint64_t cpus[kNumStreams] = {0, 0};
};

// "0,1" for the CPUs in `mask`.
std::string cpu_list(uint64_t mask) {
  std::string out;
  for (int c = 0; c < 64; ++c) {
    if (!(mask & (uint64_t{1} << c))) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out.empty() ? "-" : out;
}

// Scratch for ring reduce-scatter, in elements: two blocks in flight, each the largest block.
int64_t scratch_elements(const Plan& plan) {
  int64_t scratch = 0;
  for (const Task& t : plan.tasks) {
    if (t.kind == TaskKind::collective) {
      scratch = std::max(scratch, t.c.rows * plan.buffers[t.c.buffer].cols);
    }
  }
  return scratch;
}

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options)
      : options_(options),
        link_(options.comm, options.link, abort_, options.loopback),
        slots_(options.comm, options.blas_threads) {
    MPI_Comm_rank(options_.comm, &rank_);
    MPI_Comm_size(options_.comm, &world_);
    const int threads = options_.blas_threads;
    // Each stream thread sets OpenBLAS's thread count for itself: the setting is per caller
    // in some OpenBLAS builds and global in others, so set it where the GEMMs run.
    auto init = [threads] { blas_set_threads(threads); };
    compute_ = std::make_unique<CpuStream>(init);
    comm_ = std::make_unique<CpuStream>();
    link_.share_cores_with(computing_);
  }

  // Where this rank's tasks ran, and the rate its emulated link achieved against its target:
  // a rank on a busy core, or a host too slow to keep the emulated rate, is named in the file.
  std::vector<std::string> case_facts(const Plan& plan) override {
    const Prepared& p = prepared(plan);
    std::vector<std::string> facts{"compute_cpus=" + cpu_list(p.cpus[0]),
                                   "comm_cpus=" + cpu_list(p.cpus[1])};
    if (p.link.transfers > 0 && p.link.actual_s > 0) {
      char text[96];
      std::snprintf(text, sizeof text, "link_achieved=%.3f", p.link.target_s / p.link.actual_s);
      facts.push_back(text);
    }
    return facts;
  }

  std::string name() const override { return "cpu"; }
  std::string transport() const override { return "mpi"; }
  std::string timer() const override { return "host steady_clock"; }
  // The host-local rank as MPI groups ranks by host (what core slots, and on GPUs the device
  // choice, go by), so that a file shows how the launcher placed the ranks.
  std::string device() const override {
    return "cpu: " + cpu_model() + " (local rank " + std::to_string(slots_.local_rank()) + " of " +
           std::to_string(slots_.local_ranks()) + ")";
  }
  std::string blas() const override {
    return blas_description() + " (" + std::to_string(options_.blas_threads) +
           " thread(s) per rank requested)";
  }

  int64_t bytes_needed(const Plan& plan) const override {
    return plan.buffer_bytes() + 2 * scratch_elements(plan) * dtype_bytes(plan.dtype);
  }
  // Ranks on one host share its memory: each may count on its share of what is available.
  int64_t bytes_free() const override {
    const int64_t available = host_available_bytes();
    return available < 0 ? -1 : available / slots_.local_ranks();
  }
  std::string memory_name() const override {
    return "host memory (its share of what the host has available, shared by " +
           std::to_string(slots_.local_ranks()) + " rank(s))";
  }

  void setup(const Plan& plan) override {
    if (plan.dtype != DType::fp32 && plan.dtype != DType::fp64) {
      throw InputError(std::string("dtype: '") + to_string(plan.dtype) +
                       "' is not supported by the cpu backend; valid: fp32, fp64");
    }
    Prepared& p = prepared_[&plan];
    p.elem = dtype_bytes(plan.dtype);
    p.buffers.clear();
    for (const BufferSpec& b : plan.buffers) {
      p.buffers.push_back(std::make_unique<AlignedBuffer>(b.rows * b.cols * p.elem));
    }
    const int64_t scratch = scratch_elements(plan);
    for (auto& buffer : p.scratch) buffer = std::make_unique<AlignedBuffer>(scratch * p.elem);
    fill_inputs(plan, p);
  }

  void release(const Plan& plan) override {
    auto it = prepared_.find(&plan);
    if (it == prepared_.end()) return;
    shared_inputs_.forget(&it->second);
    if (current_ == &it->second) current_ = nullptr;
    prepared_.erase(it);
  }

  void poison(const Plan& plan) override {
    Prepared& p = prepared(plan);
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      const int64_t count = plan.buffers[i].rows * plan.buffers[i].cols;
      if (p.elem == 4) {
        std::fill_n(static_cast<float*>(p.buffers[i]->data), count, std::nanf(""));
      } else {
        std::fill_n(static_cast<double*>(p.buffers[i]->data), count, std::nan(""));
      }
    }
    fill_inputs(plan, p);
  }

  std::vector<double> read(const Plan& plan, int buffer) override {
    Prepared& p = prepared(plan);
    const int64_t count = plan.buffers[buffer].rows * plan.buffers[buffer].cols;
    std::vector<double> out(count);
    for (int64_t i = 0; i < count; ++i) {
      out[i] = p.elem == 4 ? static_cast<const float*>(p.buffers[buffer]->data)[i]
                           : static_cast<const double*>(p.buffers[buffer]->data)[i];
    }
    return out;
  }

  void fill_timing_data(const Plan& plan) override {
    Prepared& p = prepared(plan);
    shared_inputs_.forget(&p);
    for (const InputRegion& region : plan.inputs) {
      const InputFill fill = input_fill(plan, region, options_.seed);
      char* dst =
          static_cast<char*>(p.buffers[region.buffer]->data) + region.row * fill.cols * p.elem;
      if (p.elem == 4) {
        fill_timing(fill, reinterpret_cast<float*>(dst));
      } else {
        fill_timing(fill, reinterpret_cast<double*>(dst));
      }
    }
  }

  // The CPU's streams start each task as it is pushed: pushing is the launch, and costs the
  // host far less than a task, so nothing is held back for timed iterations.
  void begin(const Plan& plan, bool timed) override {
    plan_ = &plan;
    current_ = &prepared(plan);
    timed_ = timed;
    link_before_ = link_.account();
    shared_inputs_.iterations_begin(current_);
    const size_t n = plan.tasks.size();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    start_.assign(n, nan);
    end_.assign(n, nan);
    done_ = std::vector<char>(n, 0);
    running_[0] = running_[1] = -1;
    waiting_for_[0] = waiting_for_[1] = -1;
    abort_ = false;
    t0_ = now_seconds();
  }

  void launch(const Task& task, const std::vector<int>& wait_for) override {
    CpuStream& stream = task.stream == StreamId::compute ? *compute_ : *comm_;
    stream.push([this, &task, &wait_for] { run_task(task, wait_for); });
  }

  IterationTimes finish(double timeout_s) override {
    const double launched = now_seconds() - t0_;
    const double deadline = now_seconds() + timeout_s;
    bool ok =
        compute_->wait_idle(timeout_s) && comm_->wait_idle(std::max(0.0, deadline - now_seconds()));
    if (!ok) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", timeout_s);
      std::string message = "rank " + std::to_string(rank_) + ": iteration did not finish within " +
                            limit + " s (--timeout):";
      for (int s = 0; s < kNumStreams; ++s) {
        message += describe_stream(s);
      }
      abort_ = true;
      throw RuntimeFault(message);
    }
    if (timed_) {
      const Link::Account& now = link_.account();
      current_->link.target_s += now.target_s - link_before_.target_s;
      current_->link.actual_s += now.actual_s - link_before_.actual_s;
      current_->link.transfers += now.transfers - link_before_.transfers;
    }
    IterationTimes times;
    times.start = start_;
    times.end = end_;
    times.launch = launched;
    for (double e : end_) {
      if (!std::isnan(e)) times.step = std::max(times.step, e);
    }
    return times;
  }

 private:
  std::string describe_stream(int s) const {
    const char* name = s == 0 ? " compute stream" : " comm stream";
    int task = running_[s].load();
    int waiting = waiting_for_[s].load();
    if (task < 0) return std::string(name) + " idle;";
    std::string text = std::string(name) + " in task " + std::to_string(task) + " '" +
                       plan_->tasks[task].label + "'";
    if (waiting >= 0) {
      text +=
          " waiting for task " + std::to_string(waiting) + " '" + plan_->tasks[waiting].label + "'";
    } else if (s == 1) {
      text += " (" + link_.state() + ")";
    }
    return text + ";";
  }

  void run_task(const Task& task, const std::vector<int>& wait_for) {
    const int s = static_cast<int>(task.stream);
    running_[s] = task.id;
    for (int dep : wait_for) {
      waiting_for_[s] = dep;
      std::unique_lock<std::mutex> lock(done_mu_);
      // Wake now and then so an abort is noticed even if the dependency never completes.
      while (!done_[dep] && !abort_) done_cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    waiting_for_[s] = -1;
    if (abort_) return;
    // Compute tasks take a core slot when the host has more ranks than cores; the wait shows
    // as a gap before the task, as a GPU kernel waiting for SMs would.
    const bool compute = task.stream == StreamId::compute;
    if (compute && !slots_.acquire(abort_)) return;
    if (compute) computing_ = true;
    start_[task.id] = now_seconds() - t0_;
    if (timed_) {
      const int cpu = sched_getcpu();
      if (cpu >= 0 && cpu < 64) current_->cpus[s] |= uint64_t{1} << cpu;
    }
    if (current_->elem == 4) {
      execute<float>(task);
    } else {
      execute<double>(task);
    }
    end_[task.id] = now_seconds() - t0_;
    if (compute) {
      computing_ = false;
      slots_.release();
    }
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_[task.id] = 1;
    }
    done_cv_.notify_all();
    running_[s] = -1;
  }

  int64_t cols(int buffer) const { return plan_->buffers[buffer].cols; }

  template <typename T>
  T* at(const View& v, int64_t extra_rows = 0) const {
    return static_cast<T*>(current_->buffers[v.buffer]->data) + view_offset(*plan_, v) +
           extra_rows * cols(v.buffer);
  }

  // Batch entry i of a GEMM operand.
  template <typename T>
  T* at(const View& v, const Step& step, int i) const {
    return static_cast<T*>(current_->buffers[v.buffer]->data) + view_offset(*plan_, v, step, i);
  }

  template <typename T>
  void execute(const Task& t) {
    switch (t.kind) {
      case TaskKind::gemm:
        for (int i = 0; i < t.batch; ++i) {
          gemm<T>(t, at<T>(t.a, t.a_step, i), at<T>(t.b, t.b_step, i), at<T>(t.c, t.c_step, i));
        }
        break;
      case TaskKind::softmax:
        for (int64_t i = 0; i < t.m; ++i) cpu::softmax_row<T>(at<T>(t.c, i), t.n, t.scale);
        break;
      case TaskKind::online_softmax:
        online_softmax<T>(t);
        break;
      case TaskKind::softmax_finish:
        softmax_finish<T>(t);
        break;
      case TaskKind::add:
        cpu::add<T>(at<T>(t.c), at<T>(t.a), t.m * t.n);
        break;
      case TaskKind::copy:
        std::memcpy(at<T>(t.c), at<T>(t.a), t.m * t.n * sizeof(T));
        break;
      case TaskKind::gather: {
        const RowMap& map = plan_->row_maps[static_cast<size_t>(t.row_map)];
        cpu::gather_rows<T>(at<T>(t.c), at<T>(t.a), map.src, map.weight, t.n, t.accumulate);
        break;
      }
      case TaskKind::glu:
        cpu::glu_rows<T>(at<T>(t.c), at<T>(t.a), t.m, t.n);
        break;
      case TaskKind::send:
      case TaskKind::recv:
      case TaskKind::exchange:
        transfer<T>(t);
        break;
      case TaskKind::collective:
        collective<T>(t);
        break;
    }
  }

  // A side with no peer (a one-sided exchange) is not posted at all.
  template <typename T>
  void transfer(const Task& t) {
    const bool sends = t.sends(), receives = t.receives();
    link_.transfer(sends ? at<T>(t.a) : nullptr, sends ? t.a.rows * cols(t.a.buffer) : 0,
                   sends ? t.send_peer : -1, receives ? at<T>(t.c) : nullptr,
                   receives ? t.c.rows * cols(t.c.buffer) : 0, receives ? t.recv_peer : -1, t.tag,
                   mpi_type(), current_->elem);
  }

  template <typename T>
  void collective(const Task& t) {
    if (t.op == CollectiveOp::all_gather) {
      ring_all_gather<T>(t);
    } else if (t.op == CollectiveOp::reduce_scatter) {
      ring_reduce_scatter<T>(t);
    } else if (t.op == CollectiveOp::all_to_all) {
      all_to_all(t);
    } else {
      throw RuntimeFault("rank " + std::to_string(rank_) + ": task " + std::to_string(t.id) +
                         ": collective " + to_string(t.op) + " is not implemented on cpu");
    }
  }

  // Row-major with each operand's leading dimension its buffer's width, so column views work.
  template <typename T>
  void gemm(const Task& t, const T* a, const T* b, T* c) const {
    const T beta = t.accumulate ? T(1) : T(0);
    const CBLAS_TRANSPOSE op_a = t.transpose_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE op_b = t.transpose_b ? CblasTrans : CblasNoTrans;
    const int64_t lda = cols(t.a.buffer), ldb = cols(t.b.buffer), ldc = cols(t.c.buffer);
    if constexpr (sizeof(T) == 4) {
      cblas_sgemm(CblasRowMajor, op_a, op_b, t.m, t.n, t.k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    } else {
      cblas_dgemm(CblasRowMajor, op_a, op_b, t.m, t.n, t.k, 1.0, a, lda, b, ldb, beta, c, ldc);
    }
  }

  // One block of keys of the streamed attention (plan.h, TaskKind::online_softmax).
  template <typename T>
  void online_softmax(const Task& t) {
    const int64_t q = t.m / t.batch, ld_state = cols(t.a.buffer), ld_out = cols(t.b.buffer);
    for (int64_t r = 0; r < t.m; ++r) {
      const int64_t head = r / q, i = r % q;
      T* state = at<T>(t.a) + i * ld_state;
      cpu::online_softmax_row<T>(at<T>(t.c, r), t.n, static_cast<T>(t.scale), state[head],
                                 state[t.batch + head], at<T>(t.b) + i * ld_out + head * t.k, t.k,
                                 t.accumulate);
    }
  }

  template <typename T>
  void softmax_finish(const Task& t) {
    const int64_t ld_state = cols(t.a.buffer), ld_out = cols(t.c.buffer);
    for (int64_t i = 0; i < t.m; ++i) {
      cpu::softmax_finish_row<T>(at<T>(t.a) + i * ld_state, at<T>(t.c) + i * ld_out, t.batch, t.k);
    }
  }

  MPI_Datatype mpi_type() const { return current_->elem == 4 ? MPI_FLOAT : MPI_DOUBLE; }

  template <typename T>
  void ring_all_gather(const Task& t) {
    const int64_t count = t.c.rows * cols(t.c.buffer);
    auto block = [&](int j) { return at<T>(t.c, j * t.dst_stride_rows); };
    // The plan's rank and world: in loopback they are a larger world's, every peer this process.
    fob::ring_all_gather(link_, plan_->rank, plan_->world, count, block, mpi_type(), current_->elem,
                         abort_);
  }

  template <typename T>
  void ring_reduce_scatter(const Task& t) {
    const int64_t count = t.c.rows * cols(t.c.buffer);
    auto local = [&](int j) { return static_cast<const T*>(at<T>(t.a, j * t.src_stride_rows)); };
    T* temp[2] = {static_cast<T*>(current_->scratch[0]->data),
                  static_cast<T*>(current_->scratch[1]->data)};
    fob::ring_reduce_scatter<T>(
        link_, plan_->rank, plan_->world, count, local, at<T>(t.c), temp,
        [](T x, T y) { return x + y; }, mpi_type(), current_->elem, abort_);
  }

  void all_to_all(const Task& t) {
    // The spans are whole rows of the buffers, counted from their first row.
    fob::pairwise_all_to_all(link_, plan_->rank, plan_->world, all_to_all_blocks(*plan_, t),
                             current_->buffers[t.a.buffer]->data,
                             current_->buffers[t.c.buffer]->data, cols(t.c.buffer), mpi_type(),
                             current_->elem, abort_);
  }

  // Generated in the buffer's dtype, or copied from another prepared case of the shape whose
  // region still holds the same values (SharedInputs: no memory beyond the cases' buffers).
  void fill_inputs(const Plan& plan, Prepared& p) {
    shared_inputs_.forget(&p);
    const std::vector<bool> written = written_buffers(plan);
    for (const InputRegion& region : plan.inputs) {
      const InputFill fill = input_fill(plan, region, options_.seed);
      char* dst =
          static_cast<char*>(p.buffers[region.buffer]->data) + region.row * fill.cols * p.elem;
      if (const void* src = shared_inputs_.find(fill, p.elem)) {
        std::memmove(dst, src, fill.rows * fill.cols * p.elem);
      } else if (p.elem == 4) {
        fill_input(fill, reinterpret_cast<float*>(dst));
      } else {
        fill_input(fill, reinterpret_cast<double*>(dst));
      }
      shared_inputs_.add(&p, fill, p.elem, dst, written[region.buffer]);
    }
  }

  Prepared& prepared(const Plan& plan) {
    auto it = prepared_.find(&plan);
    if (it == prepared_.end()) throw std::logic_error("plan used before setup()");
    return it->second;
  }

  BackendOptions options_;
  int rank_ = 0, world_ = 1;
  std::atomic<bool> abort_{false};
  std::atomic<bool> computing_{false};  // a compute task runs (the link's waits back off)
  Link link_;
  CoreSlots slots_;
  std::unique_ptr<CpuStream> compute_, comm_;
  const Plan* plan_ = nullptr;
  std::map<const Plan*, Prepared> prepared_;
  Prepared* current_ = nullptr;
  SharedInputs shared_inputs_;

  double t0_ = 0;
  bool timed_ = false;
  Link::Account link_before_;
  std::vector<double> start_, end_;
  std::vector<char> done_;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<int> running_[2] = {-1, -1};
  std::atomic<int> waiting_for_[2] = {-1, -1};
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace fob
