#!/usr/bin/env python3
"""Opens SVG pictures in headless Chromium and checks their rendered layout; checks Chrome
trace files against the trace-event format.

    check_pictures.py --chromium /usr/bin/chromium --scratch DIR FILE.svg... FILE.json...

Every SVG is inlined into one page with layout_check.js, which Chromium runs after layout
(--dump-dom prints the page once its scripts ran); the script's findings come back in the
dumped DOM. A trace (.json) is checked in Python: the JSON object form of the Chrome trace
event format that Perfetto and chrome://tracing parse. Prints every problem and exits 1 when
there is one.
"""
import argparse
import html
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Phases of the trace-event format (docs: "Trace Event Format", Google).
PHASES = set("BEXiICbnesftPONDMRc()") | {"v", "V"}
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name",
            "thread_sort_index"}


def page(svgs):
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"]
    for path in svgs:
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"^<\?xml[^>]*\?>", "", f.read().lstrip())
        parts.append(f"<div data-picture='{html.escape(path, quote=True)}'>{text}</div>")
    with open(os.path.join(HERE, "layout_check.js"), encoding="utf-8") as f:
        script = f.read()
    parts.append(f"<pre id='result'></pre><script>{script}</script></body></html>")
    return "".join(parts)


def run_chromium(chromium, html_path):
    # --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start.
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--virtual-time-budget=20000", "--dump-dom",
           "file://" + html_path]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    found = re.search(r"<pre id=\"result\">(.*?)</pre>", done.stdout, re.S)
    if not found or not found.group(1).strip():
        sys.exit(f"chromium printed no result (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(html.unescape(found.group(1)))


def phase_problems(ev, ph, where):
    """What the Trace Event Format asks of an event of phase `ph` in particular."""
    problems = []
    if ph != "M" and not isinstance(ev.get("ts"), (int, float)):
        problems.append(f"{where}: a {ph} event without a numeric ts")
    if ph == "X" and not (isinstance(ev.get("dur"), (int, float)) and ev["dur"] >= 0):
        problems.append(f"{where}: a complete event (X) without dur >= 0")
    if ph == "M" and (ev.get("name") not in METADATA or not isinstance(ev.get("args"), dict)):
        problems.append(f"{where}: metadata event {ev.get('name')!r} is not one of {METADATA}")
    if ph in ("s", "t", "f") and "id" not in ev:
        problems.append(f"{where}: a flow event ({ph}) without id")
    if ph in ("i", "I") and ev.get("s", "t") not in ("g", "p", "t"):
        problems.append(f"{where}: an instant event's scope {ev.get('s')!r} is not g, p or t")
    return problems


def check_event(ev, where):
    if not isinstance(ev, dict):
        return [f"{where}: an event is not an object"]
    problems = []
    ph = ev.get("ph")
    if ph not in PHASES:
        return [f"{where}: unknown phase {ph!r}"]
    if ph != "E" and not isinstance(ev.get("name"), str):
        problems.append(f"{where}: a {ph} event without a string name")
    for key in ("pid", "tid"):
        if key in ev and not isinstance(ev[key], (int, str)):
            problems.append(f"{where}: {key} is neither an integer nor a string")
    if "pid" not in ev:
        problems.append(f"{where}: a {ph} event without pid")
    problems += phase_problems(ev, ph, where)
    for key in ("args", "cat"):
        if key in ev and not isinstance(ev[key], dict if key == "args" else str):
            problems.append(f"{where}: {key} has the wrong type")
    return problems


def check_trace(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc if isinstance(doc, list) else doc.get("traceEvents")
    if not isinstance(events, list):
        return [f"{path}: neither an array nor an object with a traceEvents array"]
    problems = []
    if isinstance(doc, dict) and doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        problems.append(f"{path}: displayTimeUnit must be ms or ns")
    if not any(isinstance(e, dict) and e.get("ph") == "X" for e in events):
        problems.append(f"{path}: no complete (X) event: the trace shows no task")
    flows = {}
    for i, ev in enumerate(events):
        problems += check_event(ev, f"{path} event {i}")
        if isinstance(ev, dict) and ev.get("ph") in ("s", "f"):
            flows.setdefault((ev.get("cat"), ev.get("id")), set()).add(ev["ph"])
    for key, ends in flows.items():
        if ends != {"s", "f"}:
            problems.append(f"{path}: flow {key} has only {sorted(ends)}")
    return problems[:20]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--chromium", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    svgs = [f for f in args.files if f.endswith(".svg")]
    traces = [f for f in args.files if f.endswith(".json")]
    problems = []
    for t in traces:
        problems += check_trace(t)
    if svgs:
        html_path = os.path.join(os.path.abspath(args.scratch), "pictures.html")
        with open(html_path, "w", encoding="utf-8") as f:
            f.write(page(svgs))
        result = run_chromium(args.chromium, html_path)
        for path in svgs:
            found = result.get(path)
            if found is None:
                problems.append(f"{path}: the page did not check it")
                continue
            if found["texts"] == 0:
                problems.append(f"{path}: no text rendered")
            problems += [f"{os.path.basename(path)}: {p}" for p in found["problems"]]
    for p in problems:
        print("FAIL:", p)
    print(f"checked {len(svgs)} pictures in Chromium and {len(traces)} traces: "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
