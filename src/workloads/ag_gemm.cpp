// ag_gemm: Y_r = AllGather(X) * W1_r, the TPSP MLP's first half (Megatron's column-parallel
// linear after a sequence-parallel all-gather).
#include "fob/layer.h"

namespace fob {
extern constinit const WorkloadDef kAgGemm = {
    .name = "ag_gemm",
    .summary = "all-gather + GEMM: TPSP column-parallel linear",
    .geometry = layer_geometry,
    .build = build_all_gather_gemm,
    .patterns = kAllGatherGemm,
    .part_of = "mlp",
};

}  // namespace fob
