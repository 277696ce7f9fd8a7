# shellcheck shell=bash
# Sourced by lizard_check.sh and duplicates_check.sh: sets LIZARD to the command that runs
# lizard (PyPI `lizard`, which scripts/deps.sh installs): the one on PATH, else a Python 3 that
# can import it. Without one it exits 77 (CTest: skipped), or 1 where CI is set, since CI must
# check the rules it states.
LIZARD=()
if command -v lizard > /dev/null 2>&1; then
  LIZARD=(lizard)
else
  for py in "${FOB_PYTHON:-python3}" python3 /usr/bin/python3; do
    if command -v "$py" > /dev/null 2>&1 && "$py" -c 'import lizard' > /dev/null 2>&1; then
      LIZARD=("$py" -m lizard)
      break
    fi
  done
fi
if ((${#LIZARD[@]} == 0)); then
  echo "lizard not found (on PATH or importable by python3): pip install lizard, or" \
    "scripts/deps.sh as root"
  if [[ -n "${CI:-}" && "${CI:-}" != false ]]; then
    echo "FAIL: CI is set, and CI checks the code's stated rules with lizard" >&2
    exit 1
  fi
  exit 77
fi
