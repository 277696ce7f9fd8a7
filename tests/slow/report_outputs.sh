#!/usr/bin/env bash
# report's pictures and traces and calibrate's machine file are files of their own: an output
# naming the results file read, a symbolic link planted at an output or at the name a fixed
# temporary would have, two outputs naming one file and an existing output without --force are
# each exit 2 naming the flag; the results file and whatever a link points at keep their bytes.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"
in="$scratch/in.h5"
# Two ranks: calibrate fits a link to the transfers between them.
mpirun_np 2 run -c "$smoke" --strategies baseline -o "$in" > /dev/null 2> "$scratch/run.err" ||
  { cat "$scratch/run.err" >&2; fail "run failed"; }
in_sum=$(sha256sum < "$in")
victim="$scratch/victim"
printf 'precious\n' > "$victim"
victim_sum=$(sha256sum < "$victim")

# unchanged NAME: the results file and the planted links' target keep their bytes.
unchanged() {
  [ "$(sha256sum < "$in")" = "$in_sum" ] || fail "$1: the results file changed"
  [ "$(sha256sum < "$victim")" = "$victim_sum" ] || fail "$1: the planted link's target changed"
}

# report: an output is never the file it reads, --force or not, however either is named.
expect_input_error timeline_is_input "--timeline '$in' is one of this command's inputs" \
  report "$in" --timeline "$in" --force
unchanged timeline_is_input
ln -s "$in" "$scratch/alias.h5"
expect_input_error trace_is_input "--trace '$scratch/./in.h5' is one of this command's inputs" \
  report "$scratch/alias.h5" --trace "$scratch/./in.h5" --force
unchanged trace_is_input
# A planted link is never written through or replaced, --force or not.
ln -s "$victim" "$scratch/link.svg"
expect_input_error breakdown_link "--breakdown '$scratch/link.svg' is a symbolic link" \
  report "$in" --breakdown "$scratch/link.svg" --force
unchanged breakdown_link
[ -L "$scratch/link.svg" ] || fail "breakdown_link: the planted link was replaced"
expect_input_error same_output "name the same file" report "$in" --timeline "$scratch/a.svg" \
  --speedup "$scratch/./a.svg"
[ ! -e "$scratch/a.svg" ] || fail "same_output: a picture was written"
expect_input_error reserved_name "names ending in .partial are fobench's own" report "$in" \
  --trace "$scratch/t.json.partial"
# An existing output needs --force, as `run -o` and `calibrate -o` do.
"$FOBENCH" report "$in" --trace "$scratch/t.json" > /dev/null 2>&1 || fail "report --trace exited"
expect_input_error output_exists "--trace '$scratch/t.json' already exists; pass --force" \
  report "$in" --trace "$scratch/t.json"
"$FOBENCH" report "$in" --trace "$scratch/t.json" --force > /dev/null 2>&1 ||
  fail "report --trace --force exited $?"

# calibrate: its -o by the same rules.
ln -s "$victim" "$scratch/link.yaml"
expect_input_error calibrate_link "-o '$scratch/link.yaml' is a symbolic link" \
  calibrate "$in" -o "$scratch/link.yaml" --force
unchanged calibrate_link
# A link at NAME.yaml.tmp, where calibrate once wrote its temporary, is never written through.
ln -s "$victim" "$scratch/m.yaml.tmp"
"$FOBENCH" calibrate "$in" -o "$scratch/m.yaml" > /dev/null 2> "$scratch/cal.err" ||
  { cat "$scratch/cal.err" >&2; fail "calibrate beside a planted link failed"; }
unchanged calibrate_tmp_link
grep -q '^name: "m"$' "$scratch/m.yaml" || fail "calibrate_tmp_link: no machine file written"
# A results file named like that temporary is an input, and stays one.
cp "$in" "$scratch/n.yaml.tmp"
"$FOBENCH" calibrate "$scratch/n.yaml.tmp" -o "$scratch/n.yaml" > /dev/null 2> "$scratch/cal.err" ||
  { cat "$scratch/cal.err" >&2; fail "calibrate of n.yaml.tmp failed"; }
[ "$(sha256sum < "$scratch/n.yaml.tmp")" = "$in_sum" ] || fail "calibrate destroyed its input"
expect_input_error calibrate_reserved "names ending in .tmp are fobench's own" \
  calibrate "$in" -o "$scratch/o.yaml.tmp"

# No temporary is left behind by any of it.
left=$(find "$scratch" -name '.*.tmp')
[ -z "$left" ] || fail "a temporary was left behind: $left"
echo "ok: report and calibrate write only files of their own"

# Every table command takes every table format, through the same writers: Markdown with a table
# row, CSV with a header of column keys, JSON in the one shape, LaTeX with a tabular.
machine="$FOB_SOURCE_DIR/bench_configs/machines/cpu_shm.yaml"
for format in md csv json latex; do
  for cmd in report compare sim_tune; do
    out="$scratch/$cmd.$format"
    case $cmd in
      report) "$FOBENCH" report "$in" --format "$format" > "$out" ;;
      # A file against itself never regresses; on a noisy machine it may be inconclusive (5).
      compare)
        rc=0
        "$FOBENCH" compare "$in" "$in" --format "$format" > "$out" 2> /dev/null || rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 5 ]
        ;;
      sim_tune) "$FOBENCH" sim --tune --machine "$machine" -c "$smoke" --format "$format" \
        > "$out" 2> /dev/null ;;
    esac || fail "$cmd --format $format exited $?"
    case $format in
      md) grep -q '^| .* |$' "$out" || fail "$cmd --format md has no table row" ;;
      csv) [[ $(grep -m1 -v '^#' "$out") =~ ^([a-z0-9_]+,)*workload(,[a-z0-9_]+)+$ ]] ||
        fail "$cmd --format csv has no header of column keys" ;;
      json) "$FOB_PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"title", "meta", "tables"}, list(d)
t = d["tables"][0]
keys = [c["name"] for c in t["columns"]]
assert t["rows"] and all(list(r) == keys for r in t["rows"]), t
' "$out" || fail "$cmd --format json is not the one table shape" ;;
      latex) grep -q '^\\begin{tabular}' "$out" || fail "$cmd --format latex has no tabular" ;;
    esac
  done
done
# A format nobody writes is exit 2, naming the key, the value and every choice.
for cmd in "report $in" "compare $in $in" "sim --tune --machine $machine -c $smoke"; do
  # shellcheck disable=SC2086 # the words of each command
  expect_input_error "bad_format_${cmd%% *}" "--format: unknown value 'pdf' (valid choices: md, csv, json, latex" \
    $cmd --format pdf
done
# compare writes JUnit XML for CI as well, and names it among the choices.
grep -qF "latex, junit)" "$scratch/bad_format_compare.err" ||
  fail "compare --format pdf does not name junit: $(cat "$scratch/bad_format_compare.err")"
echo "ok: report, compare and sim --tune take every table format"
