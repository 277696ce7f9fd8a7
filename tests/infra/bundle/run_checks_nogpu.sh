#!/usr/bin/env bash
# The bundle's run_checks.sh on a machine without a GPU: it must record every step (the GPU
# ones as skipped, not run), say once in summary.txt why no GPU can be used (the cause fobench
# gives), end with "result: no usable GPU here: ...", exit 77, leave exactly checks.tgz and
# summary.txt in OUTDIR, write nothing outside it, and do it within a minute. With a GPU
# (nvidia-smi working) this test is skipped: run the bundle's run_checks.sh itself there.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
require_bundle
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  # Not a failure under CI=true: this test is about machines without a GPU.
  echo "SKIP: a GPU is present; run $FOB_BUNDLE_DIR/run_checks.sh OUTDIR instead"
  exit 77
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out="$scratch/out"
before=$(top_entries /tmp /dev/shm | grep -vxF "$scratch" || true)
start=$SECONDS
rc=0
timeout -k 10 120 "$FOB_BUNDLE_DIR/run_checks.sh" "$out" >"$scratch/log" 2>&1 || rc=$?
elapsed=$((SECONDS - start))
[[ $rc == 77 ]] || { cat "$scratch/log" >&2; fail "run_checks.sh exit $rc, expected 77"; }
((elapsed <= 60)) || fail "run_checks.sh took ${elapsed}s without a GPU"
listing=$(cd "$out" && find . -mindepth 1 -printf '%y %P\n' | LC_ALL=C sort)
[[ $listing == $'f checks.tgz\nf summary.txt' ]] || fail "OUTDIR holds:"$'\n'"$listing"
summary="$out/summary.txt"
tar -xzf "$out/checks.tgz" -C "$scratch" || fail "checks.tgz does not unpack"
cmp -s "$summary" "$scratch/checks/summary.txt" || fail "checks.tgz holds another summary"

# Every step is in the summary, with a status, its log in the archive, and the last line
# counts them.
check_recorded "$summary" 'ok|skipped' "$scratch/checks"
n=$NSTEPS
last=$(tail -n1 "$summary")
[[ $last =~ ^result:\ no\ usable\ GPU\ here:\ [0-9]+\ of\ $n\ steps\ skipped,\ none\ failed$ ]] ||
  fail "last line: '$last' ($n steps)"
# The cause, once: fobench's reason, on its own line, and nowhere else in the summary.
cause=$(sed -n 's/^no usable GPU: //p' "$summary")
[[ -n "$cause" && $(grep -cF "$cause" "$summary") == 1 ]] ||
  fail "the summary does not name the cause exactly once:"$'\n'"$(cat "$summary")"
grep -qE '^  nvidia_smi +skipped .*nvidia-smi not found' "$summary" ||
  fail "the summary does not say nvidia-smi is missing"
ok "$last, the cause once ($cause), every step recorded, in ${elapsed}s"
# Nothing outside OUTDIR: its tmp and home hold what was written, /tmp and /dev/shm nothing new.
new=$(new_entries "$before" /tmp /dev/shm | grep -vxF "$scratch" || true)
[[ -z "$new" ]] || fail "new in /tmp or /dev/shm: $new"
ok "nothing written outside OUTDIR"
