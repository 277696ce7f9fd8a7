# shellcheck shell=bash
# The steps run_checks.sh runs in itself, each under a step's timeout (run_checks.sh --step
# FUNCTION ARGS), and the summary's readings of their outputs. Sourced by run_checks.sh, whose
# variables they read (ROOT, FOBENCH, CHECKS, the bounds T_*); the bundle carries it beside it.
# shellcheck disable=SC2154 # run_checks.sh sets the variables before any step runs

# gemm_slices: the cuBLAS slicing micro-benchmark, checked.
gemm_slices() {
  local json="$CHECKS/gemm_slices_cuda.json" bench="$ROOT/bin/fob_gemm_slices_cuda" min_time=0.05
  [[ -x "$bench" ]] || { echo "no $bench in this bundle"; return 1; }
  # Google Benchmark 1.8 wants a unit ("0.05s"); 1.7 (Debian 12) a plain number of seconds.
  local help
  help=$("$bench" --help 2>&1 || true)
  if [[ $help == *'<float>s'* ]]; then min_time=0.05s; fi
  CUDA_VISIBLE_DEVICES=0 "$bench" "--benchmark_min_time=$min_time" "--benchmark_out=$json" \
    --benchmark_out_format=json || return
  # Google Benchmark exits 0 even when a benchmark reported an error: look in the JSON.
  grep -q '"name"' "$json" || { echo "no benchmarks in $json"; return 1; }
  if grep -q '"error_occurred": true' "$json"; then
    echo "some benchmarks reported errors:"
    grep '"error_message"' "$json" | sort | uniq -c
    return 1
  fi
}

# reports_md: fobench report of every results file, as Markdown beside it.
reports_md() {
  local h5 rc=0
  for h5 in "$CHECKS"/*.h5; do
    [[ -f "$h5" ]] || continue
    echo "+ fobench report $h5 > ${h5%.h5}.md"
    timeout -k 2 "$T_REPORT" "$FOBENCH" report "$h5" >"${h5%.h5}.md" || rc=1
  done
  return "$rc"
}

# check_results FILE...: every results file a passed step wrote: backend cuda, cases, finite
# times, every case verified in the verified (smoke_*) runs. With awk on `fobench report
# --format csv`: a bare GPU machine may have no python3.
check_results() {
  local f rc=0 csv
  [[ $# -gt 0 ]] || echo "(no results files: no run passed)"
  for f in "$@"; do
    csv="$CHECKS/${f%.h5}.csv"
    if [[ ! -f "$CHECKS/$f" ]]; then
      echo "$f: FAILED (missing: its step passed but did not write it)"
      rc=1
    elif ! timeout -k 2 "$T_REPORT" "$FOBENCH" report "$CHECKS/$f" --format csv >"$csv" \
      2>"$csv.err"; then
      echo "$f: FAILED (fobench report --format csv: $(tail -n1 "$csv.err"))"
      rc=1
    else
      awk -v name="$f" -v on_model="$MODEL" -v model="$MODEL_DEVICE" -f - "$csv" <<'AWK' || rc=1
BEGIN { FS = ","; must_verify = name ~ /^smoke_/ }
/^# backend: / { backend = $0; sub(/^# backend: /, "", backend); next }
/^# transport: / { transport = $0; sub(/^# transport: /, "", transport); next }
/^# world_size: / { world = $0; sub(/^# world_size: /, "", world); next }
/^# devices: / { devices = $0; sub(/^# devices: /, "", devices); next }
/^#/ { next }
!header { for (i = 1; i <= NF; i++) col[$i] = i; header = 1; next }
{
  cases++
  label = $col["strategy"]
  v = $col["verified"]
  if (v == "0" || (must_verify && v != "1")) problem(label ": verified=" (v == "" ? "none" : v))
  split("t_ms t_min_ms t_p90_ms", keys, " ")
  for (k = 1; k <= 3; k++) {
    t = $col[keys[k]]
    if (t !~ /^[0-9.eE+-]+$/ || t + 0 < 0) problem(label ": " keys[k] "=" t)  # nan, inf too
  }
}
function problem(text) { problems = problems (n++ < 6 ? (n > 1 ? "; " : "") text : "") }
END {
  if (backend != "cuda") problem("backend '" backend "', not 'cuda'")
  if (!cases) problem("no cases")
  # On the cuda model every device is the model's; on a GPU none may be.
  if (on_model && index(devices, model) != 1) problem("device '" devices "', not the model's")
  if (!on_model && index(devices, model)) problem("device '" devices "': the cuda model, not a GPU")
  what = "backend " backend ", transport " transport ", world " world ", " cases + 0 " cases"
  if (devices != "") what = what ", devices " devices
  if (n) {
    print name ": FAILED (" what ": " problems (n > 6 ? " (+" n - 6 " more)" : "") ")"
    exit 1
  }
  print name ": ok (" what ", " (must_verify ? "all verified, " : "") "times finite)"
}
AWK
    fi
  done
  return "$rc"
}

# hardware_facts: what the hardware said of each NCCL run (fobench report --hardware), rank 0's
# account of its first case and of the run, for the summary.
hardware_facts() {
  local h5 keys='nccl_log|nvml|cpu_binding|gpu_visibility|nccl_communicator|nccl_cta_limit'
  keys+='|nccl_coll_channels|nccl_p2p_channels|nccl_ring_path|nccl_registered|launch_gate'
  keys+='|task_timing|execution|math|gpu_sm_clock_mhz|gpu_power_max_w|gpu_throttled'
  for h5 in "$CHECKS"/smoke_nccl_*.h5 "$CHECKS"/mlp_nccl_*.h5; do
    [[ -f "$h5" ]] || continue
    echo "$(basename "$h5"):"
    timeout -k 2 "$T_REPORT" "$FOBENCH" report "$h5" --hardware --format csv |
      awk -F, -v keys="^($keys)\$" '!/^#/ && $3 == 0 && $4 ~ keys && !seen[$4]++ {
        v = $5; for (i = 6; i <= NF; i++) v = v "," $i; print "  " $4 " = " v }' || return
  done
}

# fairness_lines: each Fairness check's verdict, from its step's log.
fairness_lines() {
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\] Fairness\.' "$CHECKS/fairness.log" 2>/dev/null |
    sed -E 's/ \([0-9]+ ms\)$//; s/^/  /' || true
}
