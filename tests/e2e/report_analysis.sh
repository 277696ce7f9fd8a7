#!/usr/bin/env bash
# The report's formats from one real run: CSV and JSON carry the same numbers, LaTeX and
# --group-by make one table per group, python/fobench_pandas.py reads the same columns and
# numbers into pandas and refuses hostile files made from the run's (links, FIFOs, devices,
# sparse files, gzip bombs, missing fields: check_pandas.py), and bad input (not a fobench file,
# a newer schema, an absent case, a bad option) is exit 2.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
out="$scratch/r.h5"
# Two shapes, so that tables split by shape and by strategy differ; two rounds, so that the
# pandas steps have rounds to tell apart.
sed 's/^seq: .*/seq: [72, 144]/' "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" > "$scratch/sweep.yaml"
mpirun_np 2 run -c "$scratch/sweep.yaml" --strategies baseline,flash -n 4 --rounds 2 -w 1 -o "$out" \
  > /dev/null 2> "$scratch/run.err" || { cat "$scratch/run.err" >&2; fail "fobench run exited"; }

"$FOBENCH" report "$out" --format csv > "$scratch/r.csv"
"$FOBENCH" report "$out" --format json > "$scratch/r.json"
"$FOBENCH" report "$out" --format latex > "$scratch/r.tex"
"$FOBENCH" report "$out" --format md --group-by strategy > "$scratch/by_strategy.md"

"$FOB_PYTHON" - "$scratch" <<'PY'
import csv, json, sys
scratch = sys.argv[1]
rows = list(csv.DictReader(l for l in open(f"{scratch}/r.csv") if not l.startswith("#")))
doc = json.load(open(f"{scratch}/r.json"))
cases = doc["tables"][0]["rows"]
assert len(rows) == len(cases) == 8, (len(rows), len(cases))
for r, c in zip(rows, cases):
    assert list(r.keys()) == list(c.keys()), "CSV and JSON columns differ"
    for key, text in r.items():
        value = c[key]
        if value is None:
            assert text == "", (key, text)
        elif isinstance(value, bool):
            assert text == str(int(value)), (key, text, value)
        elif isinstance(value, (int, float)):
            assert float(text) == float(value), (key, text, value)
        else:
            assert text == value, (key, text, value)

tex = open(f"{scratch}/r.tex").read()
shapes = {(r["workload"], r["seq"]) for r in rows}
assert tex.count("\\begin{tabular}") == len(shapes), tex
assert "backend cpu" in tex and "transport mpi" in tex, tex
for r in rows:
    assert r["strategy"].replace("_", "\\_") in tex

md = open(f"{scratch}/by_strategy.md").read()
strategies = {r["strategy"] for r in rows}
assert md.count("\n## strategy=") == len(strategies), md
print(f"ok: {len(rows)} cases agree across csv, json, latex and markdown")
PY
"$FOB_PYTHON" "$(dirname "$0")/check_pandas.py" "$out" "$scratch/r.csv" "$scratch/r.json" \
  "$FOB_SOURCE_DIR/python" "$scratch"

# bad input: exit 2, a message naming the problem, nothing written
"$FOB_PYTHON" -c "import h5py, sys; h5py.File(sys.argv[1], 'w').create_dataset('x', data=[1])" \
  "$scratch/foreign.h5"
expect_input_error not_fobench "not a fobench" report "$scratch/foreign.h5"
cp "$out" "$scratch/newer.h5"
"$FOB_PYTHON" -c "import h5py, sys; h5py.File(sys.argv[1], 'r+').attrs['version'] = 99" \
  "$scratch/newer.h5"
expect_input_error newer_schema "99" report "$scratch/newer.h5"
expect_input_error missing_file "missing.h5" report "$scratch/missing.h5"
expect_input_error bad_format "latex" report "$out" --format pdf
expect_input_error bad_group_by "valid choices" report "$out" --group-by colour
expect_input_error missing_case "9999" report "$out" --timeline "$scratch/t.svg" --case 9999
[ -e "$scratch/t.svg" ] && fail "missing_case: a timeline was written"
echo "ok: report formats and bad input"
