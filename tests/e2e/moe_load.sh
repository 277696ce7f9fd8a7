#!/usr/bin/env bash
# An MoE case's load under skewed routing (docs/moe-load.md): a 2-rank run records per rank the
# tokens its experts took, the dropped choices, the token matrix and the bytes its dispatch and
# combine brought it, and they are the router's: each rank's tokens are the rows its expert
# GEMMs computed (their flops in the task table), and each rank receives its token matrix
# column's copies from the other rank. `report --tokens` draws the matrix, a cell a rank pair;
# a case without experts is refused. The hot-rank doubt is checked on a simulated run (its
# expert times follow the tokens exactly), never on measured times.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
cat > "$scratch/moe.yaml" <<'YAML'
workload: moe
batch: 1
seq: 64
hidden: 16
ffn: 16
experts: 4
top_k: 1
expert_ffn: 24
moe_skew: 2
capacity_factor: 0
dtype: fp32
strategies: [baseline, flash]
iters: 2
warmup: 1
backend: cpu
verify: true
timeout: 60
YAML
out="$scratch/moe.h5"
mpirun_np 2 run -c "$scratch/moe.yaml" -o "$out" > "$scratch/run.out" 2> "$scratch/run.err" ||
  { cat "$scratch/run.err" >&2; fail "run exited $?"; }

"$FOB_PYTHON" - "$out" <<'PY' || fail "the file's MoE load is not the router's"
import sys
import h5py
import numpy as np

with h5py.File(sys.argv[1], "r") as f:
    cases = {case.attrs["strategy"].decode() if isinstance(case.attrs["strategy"], bytes)
             else str(case.attrs["strategy"]): case for case in f["cases"].values()}
    assert {"baseline", "flash"} <= set(cases), sorted(cases)
    for strategy, case in cases.items():
        a = case.attrs
        world, experts, d, ff = int(a["world"]), int(a["experts"]), int(a["hidden"]), int(a["expert_ffn"])
        load = case["moe_load"]
        matrix = load["token_matrix"][()]
        rank_tokens, dropped = load["rank_tokens"][()], load["dropped"][()]
        expert_tokens = load["expert_tokens"][()]
        assert matrix.shape == (world, world) and expert_tokens.shape == (experts,), matrix.shape
        # Every choice kept (no capacity): each rank's tokens (64 / 2) make one choice each.
        assert (dropped == 0).all() and (matrix.sum(axis=1) == 32).all(), (matrix, dropped)
        assert (matrix.sum(axis=0) == rank_tokens).all(), (matrix, rank_tokens)
        for r in range(world):
            assert rank_tokens[r] == expert_tokens[r::world].sum(), (r, expert_tokens)
        # The rows each rank's expert GEMMs took: up-projections of 2 * rows * d * 2F flops.
        tasks = case["tasks"][()].ravel()
        kinds = dict(h5py.check_enum_dtype(tasks.dtype["kind"]).items())
        for r in range(world):
            if strategy != "comm_only":
                rows = sum(t["flops"] / (2 * d * 2 * ff) for t in tasks
                           if t["rank"] == r and t["task"] >= 0 and t["kind"] == kinds["gemm"]
                           and t["label"].decode().endswith(" up"))
                assert rows == rank_tokens[r], (strategy, r, rows, rank_tokens)
            # The dispatch brings the copies of the other rank's tokens; the combine takes back
            # this rank's copies that the other's experts computed, hidden fp32 values each
            # (compute_only moves nothing).
            other, row = 1 - r, 0 if strategy == "compute_only" else d * 4
            assert load["dispatch_bytes"][r] == matrix[other, r] * row, load["dispatch_bytes"][()]
            assert load["combine_bytes"][r] == matrix[r, other] * row, load["combine_bytes"][()]
        # Skew 2, top-1: the hot expert's rank takes most of the tokens.
        assert rank_tokens.max() >= 0.6 * rank_tokens.sum(), rank_tokens
PY

"$FOBENCH" report "$out" --tokens "$scratch/tokens.svg" --case 0000 > /dev/null ||
  fail "report --tokens exited $?"
"$FOB_PYTHON" - "$out" "$scratch/tokens.svg" <<'PY' || fail "the token picture is not the file's"
import sys
import xml.etree.ElementTree as ET
import h5py

matrix = h5py.File(sys.argv[1], "r")["cases/0000/moe_load/token_matrix"][()]
root = ET.parse(sys.argv[2]).getroot()
cells = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "cell"]
assert len(cells) == matrix.size, len(cells)
for g in cells:
    i, j, n = int(g.get("data-source")), int(g.get("data-dest")), int(g.get("data-tokens"))
    assert matrix[i, j] == n, (i, j, n)
    texts = [t.text for t in g.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == [str(n)], texts
PY

# A case without experts is refused, exit 2, and leaves no picture.
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline -n 1 -w 0 \
  -o "$scratch/plain.h5" > /dev/null 2>&1 || fail "the plain run exited $?"
expect_input_error no_experts "has no experts" report "$scratch/plain.h5" --tokens \
  "$scratch/plain.svg" --case 0000
[ ! -e "$scratch/plain.svg" ] || fail "a refused --tokens left a picture behind"
# An existing picture is replaced only with --force.
expect_input_error exists "tokens.svg" report "$out" --tokens "$scratch/tokens.svg"
"$FOBENCH" report "$out" --tokens "$scratch/tokens.svg" --force > /dev/null || fail "--force"

# Simulated on a machine where GEMMs take all the time: the experts' times follow their tokens,
# and the report names the rank that took most of them.
cat > "$scratch/flat.yaml" <<'YAML'
name: flat
source: "test: GEMMs at a flat 1 GFLOP/s, a link that costs nothing"
compute:
  fp32: {peak_tflops: 0.001, memory_gbytes_per_s: 100000}
links:
  - {name: l, latency_us: 0, gbytes_per_s: 100000}
topology: {ranks_per_node: 8, intra_node: l, inter_node: l}
launch_us: {compute: 0, comm: 0}
YAML
"$FOBENCH" sim -c "$scratch/moe.yaml" --machine "$scratch/flat.yaml" --world 2 \
  -o "$scratch/sim.h5" > /dev/null 2> "$scratch/sim.err" ||
  { cat "$scratch/sim.err" >&2; fail "sim exited"; }
hot=$("$FOB_PYTHON" -c 'import sys, h5py
print(h5py.File(sys.argv[1], "r")["cases/0000/moe_load/rank_tokens"][()].argmax())' "$scratch/sim.h5")
"$FOBENCH" report "$scratch/sim.h5" > "$scratch/sim.md" || fail "report of the simulation exited"
grep -q "rank $hot's experts took [0-9.]*x the ranks' mean expert time ([0-9]*% of the routed tokens)" \
  "$scratch/sim.md" || { cat "$scratch/sim.md" >&2; fail "the report does not name rank $hot"; }
echo "ok: moe load recorded, drawn and its hot rank $hot named"
