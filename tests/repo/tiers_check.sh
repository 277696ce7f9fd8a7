#!/usr/bin/env bash
# Every test is in the tier of the tests/ folder that declares it, and scripts/test.sh runs that
# tier: a test without a tier's label would run in no tier, so neither the README's test command
# nor CI would ever run it, and one labelled unlike its folder is not where a reader looks.
#   tiers_check.sh CTEST BUILD_DIR PYTHON TIER...   (TIER...: tests/CMakeLists.txt's FOB_TIERS)
# A test's folder is the first folder under BUILD_DIR/tests of its working directory, which CTest
# sets to the build folder of the CMakeLists.txt that declares it.
set -euo pipefail
ctest=$1 build=$2 python=$3
shift 3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
json=$(mktemp) runs=$(mktemp)
trap 'rm -f "$json" "$runs"' EXIT
"$ctest" --test-dir "$build" --show-only=json-v1 > "$json"
bash "$root/scripts/test.sh" --labels > "$runs"
"$python" - "$json" "$runs" "$(cd "$build" && pwd)/tests" "$@" <<'PY'
import json, os, re, sys

tests = json.load(open(sys.argv[1]))["tests"]
runs = [line.split() for line in open(sys.argv[2]) if line.strip()]  # test.sh: tier, regex
tests_dir, tiers = sys.argv[3], sys.argv[4:]
bad = []
for test in tests:
    props = {p["name"]: p["value"] for p in test.get("properties", [])}
    labels = props.get("LABELS", [])
    folder = os.path.relpath(props.get("WORKING_DIRECTORY", ""), tests_dir).split(os.sep)[0]
    where = f"{test['name']} (declared in tests/{folder}, labels {', '.join(labels) or 'none'})"
    if folder not in tiers:
        bad.append(f"{where}: declared outside a tier's folder ({', '.join(tiers)})")
    elif labels != [folder]:
        bad.append(f"{where}: must be labelled {folder} alone")
    else:
        run_by = [tier for tier, regex in runs if re.search(regex, folder)]
        if len(run_by) != 1:
            bad.append(f"{where}: scripts/test.sh runs it in {len(run_by)} tiers, not 1")
if bad:
    print("FAIL: tests out of their folder's tier:", *bad, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"ok: each of {len(tests)} tests in the tier of its folder, which scripts/test.sh runs")
PY
