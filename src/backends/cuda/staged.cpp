// The cuda backend's host-staged transport (--transport mpi): each transfer is copied to pinned
// host memory, sent over MPI on a host thread (the CPU backend's Link and ring collectives, with
// its link emulation) and copied back, so several ranks can share one GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <chrono>
#include <cstdio>

#include "../host/ring.h"
#include "cuda_backend.h"

namespace fob {

// --transport mpi: one transfer on the host thread, staged through pinned host memory.
void CudaBackend::run_staged(const Task& t, const std::vector<int>& wait_for) {
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

void CudaBackend::run_staged_unchecked(const Task& t, const std::vector<int>& wait_for) {
  for (int dep : wait_for) {
    // Compute-stream events were recorded before this task was queued.
    check_.cuda(cudaEventSynchronize(current_->done[dep]), "waiting for a GEMM before a transfer");
    if (abort_) return;
  }
  host_start_[t.id] = now_seconds() - t0_host_;
  const MPI_Datatype type = elem() == 8 ? MPI_DOUBLE : elem() == 4 ? MPI_FLOAT : MPI_UINT16_T;
  if (t.kind == TaskKind::collective) {
    staged_collective(t, type);
  } else {
    // The halves the task has (sends() and receives()): a side without a peer is never posted.
    const bool sends = t.sends(), receives = t.receives();
    if (sends) to_host(t.a);
    link_->transfer(sends ? host_at(t.a) : nullptr, sends ? count(t.a) : 0,
                    sends ? t.send_peer : -1, receives ? host_at(t.c) : nullptr,
                    receives ? count(t.c) : 0, receives ? t.recv_peer : -1, t.tag, type, elem());
    if (receives) to_device(t.c);
  }
  host_end_[t.id] = now_seconds() - t0_host_;
  {
    std::lock_guard<std::mutex> lock(flag_mu_);
    host_done_[t.id] = 1;
  }
  flag_cv_.notify_all();
}

void CudaBackend::staged_collective(const Task& t, MPI_Datatype type) {
  const int64_t block = count(t.c);
  if (t.op == CollectiveOp::all_gather) {
    to_host(t.a);
    auto at = [&](int j) { return host_at(t.c, j * t.dst_stride_rows); };
    // The plan's rank and world: in loopback a larger world's, every peer this process.
    ring_all_gather(*link_, plan_->rank, plan_->world, block, at, type, elem(), abort_);
    for (int j = 0; j < plan_->world; ++j) {
      if (j != plan_->rank) to_device(shifted(t.c, j * t.dst_stride_rows));
    }
    return;
  }
  for (int j = 0; j < plan_->world; ++j) to_host(shifted(t.a, j * t.src_stride_rows));
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
void CudaBackend::staged_reduce(const Task& t, MPI_Datatype type, Add add) {
  auto local = [&](int j) { return static_cast<const T*>(host_at(t.a, j * t.src_stride_rows)); };
  T* temp[2] = {static_cast<T*>(current_->host_scratch[0]),
                static_cast<T*>(current_->host_scratch[1])};
  ring_reduce_scatter<T>(*link_, plan_->rank, plan_->world, count(t.c), local,
                         static_cast<T*>(host_at(t.c)), temp, add, type, elem(), abort_);
}

void CudaBackend::to_host(const View& v) {
  check_.cuda(
      cudaMemcpyAsync(host_at(v), device_at(v), count(v) * elem(), cudaMemcpyDeviceToHost, copy_),
      "staging to the host");
  check_.cuda(cudaStreamSynchronize(copy_), "staging to the host");
}
void CudaBackend::to_device(const View& v) {
  check_.cuda(
      cudaMemcpyAsync(device_at(v), host_at(v), count(v) * elem(), cudaMemcpyHostToDevice, copy_),
      "staging to the device");
  check_.cuda(cudaStreamSynchronize(copy_), "staging to the device");
}

// --transport mpi: hold the launch of `task` until the host thread has finished transfer
// `dep`, within the iteration's time limit.
void CudaBackend::wait_for_staged(int dep, const Task& task) {
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

}  // namespace fob
