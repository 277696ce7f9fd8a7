// What slicing one workload GEMM costs in efficiency, on a GPU (cuBLAS).
//
// The mlp's AG GEMM, Y[M, F/N] = X[M, D] * W[D, F/N] (row-major), run as S GEMMs of M/S rows
// each for S = 1, 2, 4, 8, 16, with cublasGemmEx in fp32, bf16 and fp16 (inputs and outputs of
// that type, fp32 accumulation). Row-major is done the usual way: in column-major terms
// Y^T = W^T X^T, so W is passed as the first operand and X as the second.
//
// GPU time is measured with CUDA events around the S GEMMs of each iteration (UseManualTime).
// Each benchmark reports the achieved rate ("flops" in FLOP/s, "gflops"); the efficiency of S
// slices is its rate over the S = 1 rate of the same shape and type, read off the JSON output.
// One untimed pass runs first, and afterwards the first and last row of every slice are checked
// against the exact integer result (bit for bit in fp32, within the output type's rounding in
// bf16 and fp16).
//
// Benchmark arguments: M, D, F/N, S. The default is the paper's shape with TP = 4
// (b·s = 16384 tokens, d = 4096, F/N = 16384/4); another one is set with FOB_GEMM_SHAPE=M,D,FN
// in the environment (M must divide by 16). Without a CUDA device every benchmark is skipped
// with "no CUDA device" and the program exits 0.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gemm_shape.h"

namespace {

constexpr int64_t kDefaultM = 16384;
constexpr int64_t kDefaultD = 4096;
constexpr int64_t kDefaultFn = 4096;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

enum class Dtype { fp32, bf16, fp16 };

size_t dtype_bytes(Dtype t) {
  return t == Dtype::fp32 ? 4 : 2;
}

cudaDataType_t cuda_type(Dtype t) {
  switch (t) {
    case Dtype::fp32:
      return CUDA_R_32F;
    case Dtype::bf16:
      return CUDA_R_16BF;
    case Dtype::fp16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

// Small integers in {-2..2}: every sum is exact in fp32 accumulation whatever the order.
inline int x_value(int64_t i, int64_t k) {
  return static_cast<int>((i * 131 + k * 17 + 7) % 5) - 2;
}
inline int w_value(int64_t k, int64_t j) {
  return static_cast<int>((k * 29 + j * 13 + 3) % 5) - 2;
}

// The bits of a small integer (|v| <= 2) in fp16: exact, no rounding involved.
uint16_t small_int_to_fp16(int v) {
  switch (v) {
    case -2:
      return 0xC000;
    case -1:
      return 0xBC00;
    case 1:
      return 0x3C00;
    case 2:
      return 0x4000;
    default:
      return 0x0000;
  }
}

float fp16_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign != 0 ? -v : v;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Writes the small integer v as element `index` of a buffer of type t.
void encode(Dtype t, int v, unsigned char* base, size_t index) {
  if (t == Dtype::fp32) {
    const float f = static_cast<float>(v);
    std::memcpy(base + index * 4, &f, 4);
    return;
  }
  uint16_t bits;
  if (t == Dtype::bf16) {
    const float f = static_cast<float>(v);
    uint32_t fb;
    std::memcpy(&fb, &f, 4);
    bits = static_cast<uint16_t>(fb >> 16);  // exact: small integers have no low mantissa bits
  } else {
    bits = small_int_to_fp16(v);
  }
  std::memcpy(base + index * 2, &bits, 2);
}

float decode(Dtype t, const unsigned char* base, size_t index) {
  if (t == Dtype::fp32) {
    float f;
    std::memcpy(&f, base + index * 4, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, base + index * 2, 2);
  return t == Dtype::bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
}

std::string cuda_error(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
}

std::string cublas_error(const char* what, cublasStatus_t st) {
  return std::string(what) + ": " + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) +
         ")";
}

#define FOB_CUDA_TRY(call)                 \
  do {                                     \
    const cudaError_t fob_err_ = (call);   \
    if (fob_err_ != cudaSuccess) {         \
      error = cuda_error(#call, fob_err_); \
      return false;                        \
    }                                      \
  } while (0)

#define FOB_CUBLAS_TRY(call)                \
  do {                                      \
    const cublasStatus_t fob_st_ = (call);  \
    if (fob_st_ != CUBLAS_STATUS_SUCCESS) { \
      error = cublas_error(#call, fob_st_); \
      return false;                         \
    }                                       \
  } while (0)

// The device, handle, stream, events and workspace, made once for the whole program; and the
// operands of the shape and type last asked for, kept while consecutive benchmarks (S = 1..16)
// use them, since Google Benchmark calls each benchmark function several times.
class Gpu {
 public:
  static Gpu& get() {
    static Gpu gpu;
    return gpu;
  }

  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  bool ready() const { return ready_; }
  bool no_device() const { return no_device_; }
  const std::string& error() const { return error_; }
  const std::string& device_name() const { return device_name_; }

  // Operands X [M, D], W [D, FN] and Y [M, FN] of type t, filled with small integers.
  bool operands(Dtype t, int64_t m, int64_t d, int64_t fn, std::string& error) {
    if (have_operands_ && t == dtype_ && m == m_ && d == d_ && fn == fn_) return true;
    if (!free_operands(error)) return false;
    checked_.clear();
    const size_t eb = dtype_bytes(t);
    const size_t xn = static_cast<size_t>(m * d), wn = static_cast<size_t>(d * fn),
                 yn = static_cast<size_t>(m * fn);
    FOB_CUDA_TRY(cudaMalloc(&x_, xn * eb));
    FOB_CUDA_TRY(cudaMalloc(&w_, wn * eb));
    FOB_CUDA_TRY(cudaMalloc(&y_, yn * eb));
    std::vector<unsigned char> host(std::max(xn, wn) * eb);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < d; ++k)
        encode(t, x_value(i, k), host.data(), static_cast<size_t>(i * d + k));
    FOB_CUDA_TRY(cudaMemcpy(x_, host.data(), xn * eb, cudaMemcpyHostToDevice));
    for (int64_t k = 0; k < d; ++k)
      for (int64_t j = 0; j < fn; ++j)
        encode(t, w_value(k, j), host.data(), static_cast<size_t>(k * fn + j));
    FOB_CUDA_TRY(cudaMemcpy(w_, host.data(), wn * eb, cudaMemcpyHostToDevice));
    FOB_CUDA_TRY(cudaMemset(y_, 0, yn * eb));
    // The copies and the memset ran on the legacy default stream, which the GEMMs' non-blocking
    // stream does not wait for.
    FOB_CUDA_TRY(cudaDeviceSynchronize());
    dtype_ = t;
    m_ = m;
    d_ = d;
    fn_ = fn;
    have_operands_ = true;
    return true;
  }

  // The S GEMMs of one iteration, enqueued on the stream.
  bool run_slices(int64_t slices, std::string& error) {
    const int64_t rows = m_ / slices;
    const size_t eb = dtype_bytes(dtype_);
    const cudaDataType_t ct = cuda_type(dtype_);
    const float alpha = 1.0f, beta = 0.0f;
    for (int64_t s = 0; s < slices; ++s) {
      const auto* x =
          static_cast<const unsigned char*>(x_) + static_cast<size_t>(s * rows * d_) * eb;
      auto* y = static_cast<unsigned char*>(y_) + static_cast<size_t>(s * rows * fn_) * eb;
      // Column-major: Y^T [FN, rows] = W^T [FN, D] * X^T [D, rows].
      FOB_CUBLAS_TRY(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(fn_),
                                  static_cast<int>(rows), static_cast<int>(d_), &alpha, w_, ct,
                                  static_cast<int>(fn_), x, ct, static_cast<int>(d_), &beta, y, ct,
                                  static_cast<int>(fn_), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return true;
  }

  // Seconds the S GEMMs of one iteration took on the GPU.
  bool time_slices(int64_t slices, double& seconds, std::string& error) {
    FOB_CUDA_TRY(cudaEventRecord(start_, stream_));
    if (!run_slices(slices, error)) return false;
    FOB_CUDA_TRY(cudaEventRecord(stop_, stream_));
    FOB_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    FOB_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    seconds = static_cast<double>(ms) * 1e-3;
    return true;
  }

  bool synchronize(std::string& error) {
    FOB_CUDA_TRY(cudaStreamSynchronize(stream_));
    return true;
  }

  // The first and last row of every slice against the exact integer result; `bad` names the
  // first mismatch. Each slice count is checked once per operands, as the benchmark function
  // runs several times per benchmark.
  bool check(int64_t slices, bool& ok, std::string& bad, std::string& error) {
    ok = true;
    if (std::find(checked_.begin(), checked_.end(), slices) != checked_.end()) return true;
    const int64_t rows = m_ / slices;
    const size_t eb = dtype_bytes(dtype_);
    // fp32 accumulation of small integers is exact; only the output's rounding remains (one unit
    // in the last place allowed, half of it is the bound for one rounding).
    const double rel = dtype_ == Dtype::fp32 ? 0.0 : dtype_ == Dtype::bf16 ? 1.0 / 128 : 1.0 / 1024;
    std::vector<unsigned char> row(static_cast<size_t>(fn_) * eb);
    std::vector<int64_t> want(static_cast<size_t>(fn_));
    for (int64_t s = 0; s < slices && ok; ++s) {
      for (int64_t i : {s * rows, s * rows + rows - 1}) {
        FOB_CUDA_TRY(cudaMemcpy(
            row.data(), static_cast<const unsigned char*>(y_) + static_cast<size_t>(i * fn_) * eb,
            row.size(), cudaMemcpyDeviceToHost));
        std::fill(want.begin(), want.end(), 0);
        for (int64_t k = 0; k < d_; ++k) {
          const int64_t xv = x_value(i, k);
          if (xv == 0) continue;
          for (int64_t j = 0; j < fn_; ++j) want[static_cast<size_t>(j)] += xv * w_value(k, j);
        }
        for (int64_t j = 0; j < fn_; ++j) {
          const double ref = static_cast<double>(want[static_cast<size_t>(j)]);
          const double got = decode(dtype_, row.data(), static_cast<size_t>(j));
          if (!(std::fabs(got - ref) <= rel * std::fabs(ref))) {
            ok = false;
            char msg[160];
            std::snprintf(msg, sizeof msg, "wrong GEMM result: Y[%lld, %lld] = %g, expected %g",
                          static_cast<long long>(i), static_cast<long long>(j), got, ref);
            bad = msg;
            break;
          }
        }
        if (!ok) break;
      }
    }
    if (ok) checked_.push_back(slices);
    return true;
  }

 private:
  Gpu() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      no_device_ = true;
      error_ = err != cudaSuccess ? "no CUDA device (" + cuda_error("cudaGetDeviceCount", err) + ")"
                                  : std::string("no CUDA device");
      return;
    }
    ready_ = init(error_);
  }

  ~Gpu() {
    // At exit: failures here change nothing, so return codes are deliberately not checked.
    std::string ignored;
    (void)free_operands(ignored);
    if (handle_ != nullptr) (void)cublasDestroy(handle_);
    if (workspace_ != nullptr) (void)cudaFree(workspace_);
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  bool init(std::string& error) {
    FOB_CUDA_TRY(cudaSetDevice(0));
    cudaDeviceProp prop{};
    FOB_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    device_name_ = prop.name;
    FOB_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FOB_CUDA_TRY(cudaEventCreate(&start_));
    FOB_CUDA_TRY(cudaEventCreate(&stop_));
    FOB_CUDA_TRY(cudaMalloc(&workspace_, kWorkspaceBytes));
    FOB_CUBLAS_TRY(cublasCreate(&handle_));
    // The stream first: cublasSetStream resets the workspace to cuBLAS's default pool.
    FOB_CUBLAS_TRY(cublasSetStream(handle_, stream_));
    FOB_CUBLAS_TRY(cublasSetWorkspace(handle_, workspace_, kWorkspaceBytes));
    FOB_CUBLAS_TRY(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    return true;
  }

  bool free_operands(std::string& error) {
    have_operands_ = false;
    void* bufs[] = {x_, w_, y_};
    x_ = w_ = y_ = nullptr;
    for (void* p : bufs) {
      if (p != nullptr) FOB_CUDA_TRY(cudaFree(p));
    }
    return true;
  }

  bool ready_ = false;
  bool no_device_ = false;
  std::string error_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  void* workspace_ = nullptr;
  cublasHandle_t handle_ = nullptr;

  bool have_operands_ = false;
  Dtype dtype_ = Dtype::fp32;
  int64_t m_ = 0, d_ = 0, fn_ = 0;
  void* x_ = nullptr;
  void* w_ = nullptr;
  void* y_ = nullptr;
  std::vector<int64_t> checked_;
};

void BM_GemmSlices(benchmark::State& state, Dtype dtype) {
  Gpu& gpu = Gpu::get();
  if (!gpu.ready()) {
    state.SkipWithError(gpu.error().c_str());
    return;
  }
  const int64_t m = state.range(0);
  const int64_t d = state.range(1);
  const int64_t fn = state.range(2);
  const int64_t slices = state.range(3);
  if (m <= 0 || d <= 0 || fn <= 0 || slices <= 0 || m % slices != 0 || m / slices > INT32_MAX ||
      d > INT32_MAX || fn > INT32_MAX) {
    state.SkipWithError("M must be positive and divisible by the number of slices");
    return;
  }
  std::string error;
  // Operands, then one untimed pass (cuBLAS picks and loads its kernels).
  if (!gpu.operands(dtype, m, d, fn, error) || !gpu.run_slices(slices, error) ||
      !gpu.synchronize(error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  state.SetLabel(gpu.device_name());

  for (auto _ : state) {
    double seconds = 0.0;
    if (!gpu.time_slices(slices, seconds, error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    state.SetIterationTime(seconds);
  }
  if (state.error_occurred()) return;

  bool ok = true;
  std::string bad;
  if (!gpu.check(slices, ok, bad, error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  if (!ok) {
    state.SkipWithError(bad.c_str());
    return;
  }

  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(d) *
                       static_cast<double>(fn) * static_cast<double>(state.iterations());
  state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsRate);
  state.counters["gflops"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["rows_per_slice"] = static_cast<double>(m / slices);
}

void apply_args(benchmark::internal::Benchmark* b) {
  // Read once for all the benchmark families, so a bad value is reported once.
  static const fob::bench::GemmShape shape =
      fob::bench::gemm_shape({kDefaultM, kDefaultD, kDefaultFn});
  fob::bench::add_slice_args(b, shape);
  b->UseManualTime();
}

BENCHMARK_CAPTURE(BM_GemmSlices, fp32, Dtype::fp32)->Name("gemm_slices/fp32")->Apply(apply_args);
BENCHMARK_CAPTURE(BM_GemmSlices, bf16, Dtype::bf16)->Name("gemm_slices/bf16")->Apply(apply_args);
BENCHMARK_CAPTURE(BM_GemmSlices, fp16, Dtype::fp16)->Name("gemm_slices/fp16")->Apply(apply_args);

}  // namespace
