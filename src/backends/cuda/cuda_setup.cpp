// The cuda backend's start-up: which device each rank takes, checked across ranks before
// anything is allocated, and the SMs the GEMMs leave to communication.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/gather.h"
#include "cuda_backend.h"
#include "fob/device_plan.h"
#include "fob/results.h"

namespace fob {

void CudaBackend::select_and_check_device(bool one_gpu_per_rank) {
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
    on_model_ = device_name_ == kCudaModelDevice;
    sm_count_ = prop.multiProcessorCount;
    mem_pitch_ = prop.memPitch;
    check_.cuda(cudaDeviceGetAttribute(&copy_engines_, cudaDevAttrAsyncEngineCount, device_),
                "cudaDeviceGetAttribute(cudaDevAttrAsyncEngineCount)");
  } catch (const std::exception& e) {
    error = "rank " + std::to_string(rank_) + ": " + e.what();
  }
  // Every rank learns whether any rank failed, and whether two NCCL ranks share a GPU,
  // before anything is allocated.
  std::vector<std::string> ids = allgather_strings(options_.comm, hostname() + "/" + bus_id_);
  std::vector<std::string> errors = gather_strings(options_.comm, error);
  // The GPUs of this host's other ranks, for NVML's NVLink report (run_facts).
  const std::string me = hostname() + "/";
  for (int r = 0; r < static_cast<int>(ids.size()); ++r) {
    if (r != rank_ && ids[r].rfind(me, 0) == 0 && ids[r] != me + bus_id_) {
      node_peers_.push_back(ids[r].substr(me.size()));
    }
  }
  // NCCL finds NVLink between GPUs it is shown (NVIDIA/nccl#1066: "NCCL needs to see all GPUs
  // on the same node for all NVLink detection to work properly"); ranks that each see fewer
  // GPUs than the node runs ranks may fall back to PCIe without a word.
  int local_size = 1;
  {
    MPI_Comm node;
    MPI_Comm_split_type(options_.comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
  }
  if (one_gpu_per_rank && local_size > count && count > 0) {
    setup_notes_.push_back("gpu_visibility=" + std::to_string(local_size) +
                           " NCCL ranks on this node, " + std::to_string(count) +
                           " GPU(s) visible to each");
    if (local_rank == 0) {
      std::fprintf(stderr,
                   "[fobench] warning: %s runs %d NCCL ranks but each sees %d GPU(s) "
                   "(CUDA_VISIBLE_DEVICES or the job's GPU binding): NCCL may not detect "
                   "NVLink between them and fall back to PCIe (NVIDIA/nccl#1066); give every "
                   "rank all of the node's GPUs (srun --gpus-per-node=N --gpu-bind=none)\n",
                   hostname().c_str(), local_size, count);
    }
  }
  std::string verdict;
  if (rank_ == 0) {
    for (const std::string& e : errors) {
      if (!e.empty() && verdict.empty()) verdict = e;
    }
    auto [a, b] = ranks_sharing_a_device(ids);
    if (verdict.empty() && a >= 0 && one_gpu_per_rank) {
      verdict = "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share one GPU (" +
                ids[a] + "); transport " + options_.transport +
                " needs a GPU per rank: run one rank "
                "per GPU, or pass --transport mpi to share GPUs for functional runs";
    }
  }
  int len = static_cast<int>(verdict.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, options_.comm);
  verdict.resize(len);
  MPI_Bcast(verdict.data(), len, MPI_CHAR, 0, options_.comm);
  if (!verdict.empty()) throw InputError(verdict);
}

// --comm-sms auto: with NCCL, NCCL_MAX_CTAS when set, else kDefaultCommSms, and the
// communicator is made with that many CTAs at most; the host-staged transport copies with the
// copy engines and needs no SMs.
void CudaBackend::resolve_comm_sms(bool uses_sms) {
  constexpr int kDefaultCommSms = 16;
  comm_sms_ = options_.comm_sms;
  if (comm_sms_ < 0) {
    comm_sms_ = 0;
    if (uses_sms) {
      const char* env = std::getenv("NCCL_MAX_CTAS");
      comm_sms_ = env && std::atoi(env) > 0 ? std::atoi(env) : kDefaultCommSms;
    }
  }
  comm_sms_ = std::min(comm_sms_, std::max(0, sm_count_ - 1));
}

}  // namespace fob
