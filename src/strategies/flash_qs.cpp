// Query-split Flash-RS (arXiv 2604.24013, Algorithm 4): the attention block's queries are cut
// into the N reduce-scatter slices, and each slice runs scores, softmax, values and the output
// projection before its partial joins the free-running ring. The ring's transfer of one slice
// then hides behind the whole attention computation of the next, not only behind a GEMM.
// The all-gather half is Flash-AG.
#include "flash.h"

namespace fob {

extern constinit const Strategy kFlashQs =
    flash_entry("flash_qs", "Flash-Overlap with query-split attention (attn, ulysses)", true);

}  // namespace fob
