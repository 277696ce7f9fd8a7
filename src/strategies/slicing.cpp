// Data slicing (Megatron, MindSpeed/Ascend MC2, CoC): the collective is cut into C chunks along
// the tokens; chunk c+1 communicates while chunk c computes. Each chunk takes the c-th piece of
// every rank's block, so a chunk's GEMM is one batch of N pieces and ownership stays as in the
// unsliced collective.
#include <string>
#include <vector>

#include "a2a_pieces.h"
#include "fob/strategy.h"
#include "moe_pieces.h"
#include "pattern_set.h"

namespace fob {
namespace {

// Chunk-major rows: chunk c's pieces of every rank's block back to back, rank j's at
// world * begin_c + j * piece_c, so that each chunk's all-gather writes one contiguous range in
// place, as NCCL's all-gather (the baseline's collective) does.
std::vector<RowRun> chunk_major(int world, int64_t block, int chunks) {
  std::vector<RowRun> runs;
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = piece_begin(block, chunks, c);
    const int64_t piece = piece_rows(block, chunks, c);
    for (int j = 0; j < world; ++j) {
      runs.push_back(
          {.row = world * begin + j * piece, .logical_row = j * block + begin, .rows = piece});
    }
  }
  return runs;
}

// Where `x` may take chunk-major rows, each chunk is gathered in place by NCCL's all-gather;
// where it keeps the tensor's order, a chunk's pieces lie a block apart.
void all_gather_gemm(PlanBuilder& b, const AgProblem& p, int chunks) {
  const bool major = p.x_layout_free && b.world() > 1;
  if (major) b.relayout(p.x, chunk_major(b.world(), p.block, chunks));
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = piece_begin(p.block, chunks, c);
    const int64_t piece = piece_rows(p.block, chunks, c);
    const int64_t at = major ? b.world() * begin : begin;
    const int64_t stride = major ? piece : p.block;
    const std::string n = std::to_string(c);
    if (b.world() > 1) b.all_gather(p.x, at, piece, stride, "all-gather chunk " + n);
    b.gemm({p.x, at, piece}, {p.w, 0, p.hidden}, {p.y, begin, piece}, false, "Y chunk " + n,
           b.world(), stride, p.block);
  }
}

void gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int chunks) {
  // Chunk c's partials lie together, owner by owner, so each reduce-scatter reads one range.
  int partial = b.buffer("p", p.tokens, p.hidden);
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = piece_begin(p.block, chunks, c);
    const int64_t piece = piece_rows(p.block, chunks, c);
    const std::string n = std::to_string(c);
    const int64_t base = begin * b.world();
    if (b.world() == 1) {
      b.gemm({p.h, begin, piece}, {p.w, 0, p.ffn_local}, {p.z, p.z_row + begin, piece}, false,
             "Z chunk " + n);
      continue;
    }
    b.gemm({p.h, begin, piece}, {p.w, 0, p.ffn_local}, {partial, base, piece}, false,
           "P chunk " + n, b.world(), p.block, piece);
    b.reduce_scatter(partial, base, piece, {p.z, p.z_row + begin, piece},
                     "reduce-scatter chunk " + n);
  }
}

// Chunk by chunk, as the reduce-scatter produced them.
void all_gather_blocks(PlanBuilder& b, const AgProblem& p, int chunks) {
  if (b.world() == 1) return;
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = piece_begin(p.block, chunks, c);
    const int64_t piece = piece_rows(p.block, chunks, c);
    b.all_gather(p.x, begin, piece, p.block, "all-gather Z chunk " + std::to_string(c));
  }
}

// Ulysses: chunk c of every rank's tokens is projected for all heads, then exchanged while
// chunk c+1 is projected; the last chunk's all-to-all shows. The second half mirrors it: the
// first chunk's all-to-all shows, the rest hide behind the previous chunk's projection.
void gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int chunks) {
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = piece_begin(p.local_rows(), chunks, c);
    const int64_t rows = piece_rows(p.local_rows(), chunks, c);
    const std::string n = std::to_string(c);
    project_qkv_all(b, p, begin, rows, "QKV chunk " + n);
    all_to_all_qkv(b, p, begin, rows, "all-to-all QKV chunk " + n);
  }
}

void all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int chunks) {
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = piece_begin(p.local_rows(), chunks, c);
    const int64_t rows = piece_rows(p.local_rows(), chunks, c);
    const std::string n = std::to_string(c);
    all_to_all_o(b, p, begin, rows, "all-to-all O chunk " + n);
    for (int j = 0; j < b.world(); ++j) {
      project_out(b, p, j, begin, rows, j > 0, "Z chunk " + n + " += heads " + std::to_string(j));
    }
  }
}

// The mixture-of-experts layer in C token chunks: chunk c's dispatch and combine hide behind
// its neighbours' experts.
void moe_layer(PlanBuilder& b, const MoeProblem& p, int chunks) {
  moe_in_chunks(b, p, chunks);
}

}  // namespace

extern constinit const Strategy kSlicing = with_patterns(
    {
        .name = "slicing",
        .summary = "collective cut into C chunks along the tokens",
        .param_name = "C",
        .default_param = 4,
        .role = StrategyRole::overlapping,
        .tune_params = {1, 2, 4, 8, 16},
    },
    {all_gather_gemm, gemm_reduce_scatter, gemm_all_to_all, all_to_all_gemm, all_gather_blocks,
     moe_layer});

}  // namespace fob
