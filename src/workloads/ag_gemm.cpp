// ag_gemm: Y_r = AllGather(X) * W1_r, the TPSP MLP's first half (Megatron's column-parallel
// linear after a sequence-parallel all-gather).
#include "fob/layer.h"

namespace fob {
extern constinit const WorkloadDef kAgGemm =
    one_half_workload("ag_gemm", "all-gather + GEMM: TPSP column-parallel linear", layer_geometry,
                      kAllGatherGemm, "mlp");

}  // namespace fob
