// gemm_rs: Z_r = rows r of sum_j H_j * W2_j, the TPSP MLP's second half (Megatron's
// row-parallel linear before a sequence-parallel reduce-scatter).
#include "fob/layer.h"

namespace fob {
extern constinit const WorkloadDef kGemmRs =
    one_half_workload("gemm_rs", "GEMM + reduce-scatter: TPSP row-parallel linear", layer_geometry,
                      kGemmReduceScatter, "mlp");

}  // namespace fob
