#!/usr/bin/env python3
"""Under `set -o pipefail` a pipe into a reader that quits early (grep -q, grep -m, head) fails
at random: the reader exits on its first match, the writer's next write gets SIGPIPE, and the
pipe's status is 141 however the match went. So `cmd | grep -q X || fail` fails a passing test
now and then, and `if cmd | grep -q X; then fail` lets a failing one pass. Such a pipe is kept
only inside a loop, where a false reading is retried; elsewhere the output is captured first.
Prints each offending line and exits 1; exits 0 when there are none."""
import re
import subprocess
import sys
from pathlib import Path

EARLY_READER = re.compile(r"(?<!\|)\|(?!\|)\s*(grep\s+(-\w*[qml]\w*\b)|head\b)")
# A quoted message that runs nothing: its words are not a pipe.
PLAIN_QUOTED = re.compile(r'"(?:[^"$\\]|\\.|\$(?!\())*"')
LOOP_OPEN = re.compile(r"(^|[;&|]\s*|\s)(for|while|until)\b.*\bdo\s*$|;\s*do\s*$")
LOOP_CLOSE = re.compile(r"^\s*done\b")


def scripts(root):
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", "*.sh",
                             ".ci/run"], cwd=root, capture_output=True, text=True, check=False)
    names = listed.stdout.split() if listed.returncode == 0 else [
        str(p.relative_to(root)) for p in root.rglob("*.sh") if "build" not in p.parts]
    return [root / n for n in names if (root / n).is_file()]


def under_pipefail(text):
    return "pipefail" in text or "common/common.sh" in text


def offences(path):
    text = path.read_text(errors="replace")
    if not under_pipefail(text):
        return []
    found, depth = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        code = PLAIN_QUOTED.sub('""', code)
        if LOOP_CLOSE.search(code):
            depth = max(0, depth - 1)
        if EARLY_READER.search(code) and depth == 0 and "|| true" not in code:
            found.append(f"{path}:{number}: {line.strip()}")
        if LOOP_OPEN.search(code):
            depth += 1
    return found


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
    bad = [o for s in scripts(root) for o in offences(s)]
    if bad:
        print("FAIL: a pipe into a reader that quits early, under pipefail and outside a retry"
              " loop (capture the output first):\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("ok: no pipe under pipefail ends in a reader that quits early outside a retry loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
