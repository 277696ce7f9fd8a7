// The cuda backend's tasks: cuBLAS GEMMs in the run's math mode with an SM target per GEMM,
// the element-wise kernels, device copies, and the transfers handed to the transport.
#include <algorithm>

#include "cuda_backend.h"
#include "kernels.h"

namespace fob {

// exact: split-K reductions in fp32 even for bf16/fp16 outputs, since the stated verification
// bound counts one rounding per store, and fp32 GEMMs in fp32. fast: what PyTorch
// (allow_bf16_reduced_precision_reduction) and Transformer Engine run: cuBLAS may reduce split-K
// partial results in the output's precision, and fp32 GEMMs take TF32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32); verified within fast_math_tolerance() (tolerance.h).
void CudaBackend::configure_math() {
  const bool fast = options_.math == "fast";
  const int mode =
      CUBLAS_DEFAULT_MATH | (fast ? 0 : CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  check_.blas(cublasSetMathMode(blas_, static_cast<cublasMath_t>(mode)), "cublasSetMathMode");
}

// cublasSetSmCountTarget is a handle setting read when a GEMM is enqueued (captured GEMMs keep
// theirs): set only when it changes.
void CudaBackend::set_sm_target(int target) {
  if (target == sm_target_) return;
  check_.blas(cublasSetSmCountTarget(blas_, target), "cublasSetSmCountTarget");
  sm_target_ = target;
}

namespace {

// A gather task's kernel arguments, its map where upload_row_maps() put it.
cuda::Gather gather_args(const PlanBuffers& at, const Task& t) {
  const Prepared& p = at.prepared();
  const auto map = static_cast<size_t>(t.row_map);
  const char* maps = static_cast<const char*>(p.row_maps);
  cuda::Gather args;
  args.dst = at.device_at(t.c);
  args.src = at.device_at(t.a);
  args.src_row = reinterpret_cast<const int64_t*>(maps + p.row_map_src.at(map));
  const int64_t weight = p.row_map_weight.at(map);
  args.weight = weight < 0 ? nullptr : reinterpret_cast<const double*>(maps + weight);
  args.rows = t.m;
  args.width = t.n;
  args.accumulate = t.accumulate;
  return args;
}

}  // namespace

void CudaBackend::enqueue(const Task& t, cudaStream_t stream) {
  const PlanBuffers at = buffers();
  switch (t.kind) {
    case TaskKind::gemm:
      // A GEMM that may run beside a transfer leaves the comm SMs free; one with no transfer in
      // flight takes every SM (0).
      set_sm_target(current_->beside_transfer[t.id] && comm_sms_ > 0
                        ? std::max(1, sm_count_ - comm_sms_)
                        : 0);
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
    case TaskKind::gather:
      check_.cuda(cuda::gather(plan_->dtype, gather_args(at, t), stream),
                  "launching the gather kernel");
      break;
    case TaskKind::glu:
      check_.cuda(cuda::glu(plan_->dtype, at.device_at(t.c), at.device_at(t.a), t.m, t.n, stream),
                  "launching the glu kernel");
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
  const bool tf32 = plan_->dtype == DType::fp32 && options_.math == "fast";
  const cublasComputeType_t compute = fp64   ? CUBLAS_COMPUTE_64F
                                      : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                             : CUBLAS_COMPUTE_32F;
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

}  // namespace fob
