# shellcheck shell=bash
# Shared by the bundle tests: skipping (never under CI=true), failing, the bundle's location,
# and the check that every case of a results file was verified.
# Expects FOB_SOURCE_DIR (and, for the tests that use a built bundle, FOB_BUNDLE_DIR) from
# CTest's environment.
set -euo pipefail

: "${FOB_SOURCE_DIR:?FOB_SOURCE_DIR must name the source tree}"
FOB_PYTHON=${FOB_PYTHON:-python3}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# skip WHY: exit 77 (CTest: skipped), except under CI=true, where a test that cannot run is a
# failure: CI must prove what the test proves.
skip() {
  if [[ "${CI:-}" == true ]]; then
    echo "FAIL: cannot run, and CI=true forbids skipping: $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

ok() {
  echo "ok: $*"
}

# require_bundle: FOB_BUNDLE_DIR must hold a bundle (the bundle_build test makes it).
require_bundle() {
  : "${FOB_BUNDLE_DIR:?FOB_BUNDLE_DIR must name the bundle (made by the bundle_build test)}"
  [[ -x "$FOB_BUNDLE_DIR/bin/fobench" && -f "$FOB_BUNDLE_DIR/MANIFEST" ]] ||
    fail "no bundle in $FOB_BUNDLE_DIR (the bundle_build test makes it)"
}

# check_verified_csv CSV: `fobench report --format csv` output in which every case must say
# it was checked and passed (exit 0 alone would also hold if nothing had been verified).
check_verified_csv() {
  "$FOB_PYTHON" - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')))
assert rows, "no cases in the report"
bad = [r['strategy'] for r in rows if r['verified'] != '1']
assert not bad, f"not verified: {bad}"
print(f"{len(rows)} cases verified")
PY
}

# top_entries DIR...: the names directly in each DIR (what a run could leave behind in /tmp or
# /dev/shm), one "DIR/NAME" a line, sorted.
top_entries() {
  local dir
  for dir in "$@"; do
    [[ -d "$dir" ]] || continue
    find "$dir" -mindepth 1 -maxdepth 1 -printf "$dir/%P\n" 2>/dev/null || true
  done | LC_ALL=C sort
}

# new_entries BEFORE DIR...: the entries of DIR... (top_entries) not in BEFORE (an earlier
# top_entries) that still exist a second later: what a finished run left behind, not the
# passing temporary files of an unrelated process. A compiler's temporaries (GCC's
# /tmp/ccXXXXXX.s, .o, .res, ...) can outlive that second while a build runs beside the test; the
# bundle compiles nothing, so they are never its own.
new_entries() {
  local before=$1 entry
  shift
  local -a fresh=()
  while IFS= read -r entry; do
    [[ -n "$entry" ]] && fresh+=("$entry")
  done < <(comm -13 <(printf '%s\n' "$before") <(top_entries "$@") |
    grep -Ev '/cc[A-Za-z0-9]{6}\.[a-z0-9_.]+$' || true)
  [[ ${#fresh[@]} -gt 0 ]] || return 0
  sleep 1
  for entry in "${fresh[@]}"; do
    if [[ -e "$entry" ]]; then printf '%s\n' "$entry"; fi
  done
}

# bundle_workloads: the workloads whose gpu tests run_checks.sh runs, as it takes them from the
# table of the fobench under test: all but those part of another, one a line.
bundle_workloads() {
  "$FOBENCH" --list workloads | awk '/^[^ ]/ { if (w != "") print w; w = $1 }
      /^  part of: / { w = "" } END { if (w != "") print w }' | tr -d :
}

# checks_steps: the steps of the bundle's run_checks.sh, one a line.
checks_steps() {
  local w
  printf '%s\n' nvidia_smi libraries version gemm_slices_cuda reports hardware check_results \
    fairness smoke_nccl_np1_fp32 smoke_nccl_np1_bf16 smoke_mpi_np2_fp32 smoke_mpi_np2_bf16 mlp_nccl_np1 \
    mlp_nccl_np1_graphs smoke_ce_np2_fp32 gpu_ce_np2_gemm_rs
  for w in $(bundle_workloads); do
    printf '%s\n' "gpu_nccl_np1_$w" "gpu_mpi_np2_$w"
  done
}

# check_recorded SUMMARY STATUSES [LOGDIR]: every step of run_checks.sh is in its SUMMARY with
# one of STATUSES (an extended regular expression: ok|skipped) and, with LOGDIR (the unpacked
# checks.tgz), has its log there. Sets NSTEPS.
check_recorded() {
  local s
  NSTEPS=0
  while IFS= read -r s; do
    NSTEPS=$((NSTEPS + 1))
    grep -qE "^  $s +($2) +exit" "$1" ||
      fail "step $s is not in the summary as $2:"$'\n'"$(cat "$1")"
    [[ -z "${3:-}" || -f "$3/$s.log" ]] || fail "no $s.log in checks.tgz"
  done < <(checks_steps)
}
