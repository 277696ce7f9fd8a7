// gemm_rs: Z_r = rows r of sum_j H_j * W2_j, the TPSP MLP's second half (Megatron's
// row-parallel linear before a sequence-parallel reduce-scatter).
#include "fob/layer.h"

namespace fob {
extern constinit const WorkloadDef kGemmRs = {
    .name = "gemm_rs",
    .summary = "GEMM + reduce-scatter: TPSP row-parallel linear",
    .geometry = layer_geometry,
    .build = build_gemm_reduce_scatter,
    .patterns = kGemmReduceScatter,
    .part_of = "mlp",
};

}  // namespace fob
