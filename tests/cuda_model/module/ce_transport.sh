#!/usr/bin/env bash
# Transport ce (the copy engines) on the cuda model, beside the workload runs that verify every
# strategy on it:
#  1. what it refuses, exit 2 and no file: CUDA graphs, an emulated link, SMs left to NCCL, two
#     ranks on one GPU;
#  2. what the file records: /system transport ce, the copy engines the device reports
#     (FOB_MODEL_COPY_ENGINES), 0 SMs for an all-gather's copies and the add kernel's blocks for a
#     reduce-scatter's partial sums, per-task events as the timer;
#  3. what ran: in the op log, nothing but copies and flag operations for the all-gather's
#     transfers (no kernel), and the reduce-scatter's additions as the only kernels among them.
# shellcheck source=../../common/common.sh disable=SC2154 # common.sh sets scratch
source "$FOB_SOURCE_DIR/tests/common/common.sh"
: "${FOB_CUDA_MODULE:?FOB_CUDA_MODULE must name the cuda module of the model}"
export FOB_CUDA_MODULE FOB_MODEL_FATAL=1
shape=(--batch 2 --seq 32 --hidden 64 --ffn 128 --rounds 1 -n 3 -w 1 --backend cuda
  --transport ce)

run() { # run NAME ARGS...: fobench run under mpirun at 2 ranks; sets rc
  local name=$1
  shift
  rc=0
  timeout 300 "$MPIEXEC" -np 2 --oversubscribe --bind-to none -x FOB_CUDA_MODULE \
    -x FOB_MODEL_FATAL -x FOB_MODEL_OP_LOG -x FOB_MODEL_DEVICES -x FOB_MODEL_COPY_ENGINES \
    "$FOBENCH" run "${shape[@]}" "$@" -o "$scratch/$name.h5" >"$scratch/$name.out" \
    2>"$scratch/$name.err" || rc=$?
}

refused() { # refused NAME PATTERN ARGS...: exit 2, PATTERN said, no file
  local name=$1 pattern=$2
  shift 2
  run "$name" --workload ag_gemm "$@"
  [[ $rc == 2 ]] || fail "$name: exit $rc, not 2: $(cat "$scratch/$name.err")"
  grep -qE "$pattern" "$scratch/$name.err" || fail "$name: no '$pattern' in: $(cat "$scratch/$name.err")"
  [[ ! -e $scratch/$name.h5 && ! -e $scratch/$name.h5.partial ]] || fail "$name: wrote a file"
  echo "ok: $name refused: $(grep -oE "$pattern.{0,100}" "$scratch/$name.err" | sed -n 1p)"
}

# --- 1. refusals ------------------------------------------------------------------------------
refused graphs "graphs: .*transport ce numbers its flags" --graphs
refused link "link_gbps/link_latency_us: .*transport ce's transfers" --link-gbps 10
refused comm_sms "comm_sms: 16 leaves SMs to NCCL's kernels; transport ce's copies take none" \
  --comm-sms 16
FOB_MODEL_DEVICES=1 refused shared_gpu "share one GPU .*transport ce needs a GPU per rank"

# --- 2. the file ------------------------------------------------------------------------------
mkdir "$scratch/ops"
FOB_MODEL_COPY_ENGINES=5 FOB_MODEL_OP_LOG="$scratch/ops/ops.%p.log" \
  run ag --workload ag_gemm --strategies baseline,flash
[[ $rc == 0 ]] || fail "ag_gemm on transport ce: exit $rc: $(cat "$scratch/ag.err")"
FOB_MODEL_COPY_ENGINES=5 run rs --workload gemm_rs --strategies baseline,flash
[[ $rc == 0 ]] || fail "gemm_rs on transport ce: exit $rc: $(cat "$scratch/rs.err")"
for name in ag rs; do
  "$FOBENCH" report "$scratch/$name.h5" --hardware --format csv >"$scratch/$name.csv" ||
    fail "report --hardware $name failed"
  "$FOBENCH" report "$scratch/$name.h5" --format csv >"$scratch/$name.report.csv" ||
    fail "report $name failed"
done
"$FOB_PYTHON" - "$scratch" <<'PY'
import csv, glob, re, sys
scratch = sys.argv[1]

def facts(name):
    by = {}
    with open(f"{scratch}/{name}.csv") as f:
        for row in csv.reader(l for l in f if not l.startswith("#")):
            if row and row[0] != "case":
                by.setdefault((row[1], row[2]), {})[row[3]] = ",".join(row[4:])
    return by

def header(name, key):
    for line in open(f"{scratch}/{name}.report.csv"):
        if line.startswith(f"# {key}: "):
            return line.split(": ", 1)[1].strip()
    sys.exit(f"FAIL: {name}'s report has no '# {key}:' line")

for name in ("ag", "rs"):
    assert header(name, "transport").startswith("ce"), header(name, "transport")
    assert header(name, "timer").startswith("cuda events"), header(name, "timer")
ag, rs = facts("ag"), facts("rs")
for rank in ("0", "1"):
    run = ag[("(run)", rank)]
    assert run.get("ce_copy_engines", "").startswith("5 "), run.get("ce_copy_engines")
    for strategy in ("baseline", "flash"):
        case = ag[(strategy, rank)]
        assert case.get("ce_sms") == "0", (strategy, case.get("ce_sms"))
        assert case.get("ce_reduction") == "none", case.get("ce_reduction")
        assert int(case["ce_copies"].split()[0]) > 0, case["ce_copies"]
    # baseline reduce-scatters (its partial sums are added by the transport); flash sends
    # point-to-point and adds in a plan task of its own.
    base, flash = rs[("baseline", rank)], rs[("flash", rank)]
    assert int(base.get("ce_sms", "0")) > 0, base.get("ce_sms")
    assert "cuda::add" in base.get("ce_reduction", ""), base.get("ce_reduction")
    assert flash.get("ce_sms") == "0", flash.get("ce_sms")
print(f"ok: the files say ce, 5 copy engines, 0 SMs for ag_gemm and gemm_rs's flash, "
      f"{rs[('baseline', '0')]['ce_sms']} for gemm_rs baseline's additions")

# The op log: the comm stream's ops during ag_gemm's flash case are copies and flag operations.
kinds = {}
for path in glob.glob(f"{scratch}/ops/ops.*.log"):
    for line in open(path):
        task = re.search(r' task="([^"]*)"', line)
        name = re.search(r' name="([^"]*)"', line)
        if task and name and re.search(r"all-gather|allgather|\bag\b|gather", task.group(1)):
            kinds.setdefault(name.group(1), 0)
            kinds[name.group(1)] += 1
assert kinds, "the op log names no all-gather task"
kernels = [k for k in kinds if not re.match(r"cudaMemcpy|cuStream(Write|Wait)Value|cudaEvent|cudaStreamWaitEvent", k)]
assert not kernels, f"the all-gather tasks ran {kernels} besides copies and flags: {kinds}"
print(f"ok: the all-gather tasks ran only {sorted(kinds)}")
PY
