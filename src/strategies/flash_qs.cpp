// Query-split Flash-RS (arXiv 2604.24013, Algorithm 4): the attention block's queries are cut
// into the N reduce-scatter slices, and each slice runs scores, softmax, values and the output
// projection before its partial joins the free-running ring. The ring's transfer of one slice
// then hides behind the whole attention computation of the next, not only behind a GEMM.
// The all-gather half is Flash-AG.
#include "flash.h"

namespace fob {

extern const Strategy kFlashQs = {
    .name = "flash_qs",
    .summary = "Flash-Overlap with query-split attention (attn only)",
    .param_name = "m",
    .default_param = 1,
    .role = StrategyRole::overlapping,
    .tune_params = {1, 2, 4, 8},
    .all_gather_gemm = flash_all_gather_gemm,
    .gemm_reduce_scatter = flash_gemm_reduce_scatter,
    .all_gather_blocks = all_gather_blocks_direct,
    .query_split = true,
};

}  // namespace fob
