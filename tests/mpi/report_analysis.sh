#!/usr/bin/env bash
# The report's formats from one real run: CSV and JSON carry the same numbers, LaTeX and
# --group-by make one table per group, results/to_pandas.py reads the same numbers into pandas,
# and bad input (not a fobench file, a newer schema, an absent case, a bad option) is exit 2.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
out="$scratch/r.h5"
# Two shapes, so that tables split by shape and by strategy differ.
sed 's/^seq: .*/seq: [72, 144]/' "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" > "$scratch/sweep.yaml"
mpirun_np 2 run -c "$scratch/sweep.yaml" --strategies baseline,flash -n 3 -w 1 -o "$out" \
  > /dev/null 2> "$scratch/run.err" || { cat "$scratch/run.err" >&2; fail "fobench run exited"; }

"$FOBENCH" report "$out" --format csv > "$scratch/r.csv"
"$FOBENCH" report "$out" --format json > "$scratch/r.json"
"$FOBENCH" report "$out" --format latex > "$scratch/r.tex"
"$FOBENCH" report "$out" --format md --group-by strategy > "$scratch/by_strategy.md"

"$FOB_PYTHON" - "$scratch" "$out" "$FOB_SOURCE_DIR/results" <<'PY'
import csv, json, math, sys
scratch, h5path, results_dir = sys.argv[1:4]
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

# The pandas example reads the same numbers as the report.
sys.path.insert(0, results_dir)
from to_pandas import load_summary, load_tasks
summary = load_summary(h5path)
assert list(summary["case_id"]) == [r["case_id"] for r in rows]
for (_, s), r in zip(summary.iterrows(), rows):
    assert s["strategy"] == r["strategy"]
    assert math.isclose(s["t_median"] * 1e3, float(r["t_ms"]), rel_tol=1e-8)
tasks = load_tasks(h5path, rows[2]["case_id"])
assert set(tasks["rank"]) == {0, 1} and set(tasks["iteration"]) == {0, 1, 2}
assert (tasks["duration"] >= 0).all()
print(f"ok: {len(rows)} cases agree across csv, json, latex, markdown and pandas")
PY

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
