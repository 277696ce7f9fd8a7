#!/usr/bin/env python3
"""The simulator against published GPU measurements (bench/published/README.md).

Prices every row of rows.csv with `fobench sim` on the row's machine file and prints, per row,
the published and the predicted baseline (GEMM then collective, serial), the published
decomposition-based overlap against fobench's `decompose` (the mechanism that matches: the GEMM
cut along M, each piece beside a transfer) and whether the prediction picks the same winner.
Fused kernels have no fobench equivalent: their times are shown, never matched. Rows whose
figures set a machine-file parameter are `fit`, the others `check`, and rows whose hardware is
not stated `shown` (priced, in neither set); the summary gives the errors of each set apart.
A benchmark: it reports, it does not pass or fail.

    bench/published/published.py [--fobench build/fobench] [--format md|csv] [--fit]
"""
import argparse
import csv
import io
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STRATEGIES = ["baseline", "decompose"]


def machine_path(row):
    return os.path.join(ROOT, "bench_configs", "machines", row["machine"] + ".yaml")


def simulate(fobench, row, machine=None):
    machine = machine or machine_path(row)
    cmd = [fobench, "sim", "--machine", machine, "--world", row["world"],
           "--workload", row["workload"], "--dtype", row["dtype"],
           "--batch", row["batch"], "--seq", row["seq"], "--hidden", row["hidden"],
           "--ffn", row["ffn"], "--strategies", ",".join(STRATEGIES), "--format", "csv"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [line for line in out.splitlines() if line and not line.startswith("#")]
    times = {}
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        times[r["strategy"]] = float(r["t_ms"]) * 1000.0
    return times


def number(text):
    return float(text) if text else None


def err(predicted, published):
    return predicted / published - 1.0


def fmt_us(v):
    return "-" if v is None else f"{v:.0f}"


def fmt_pct(v):
    return "-" if v is None else f"{v * 100:+.1f}%"


def evaluate(fobench, rows):
    out = []
    for row in rows:
        t = simulate(fobench, row)
        e = {"row": row, "sim": t}
        e["gemm_err"] = err(t["compute_only"], number(row["gemm_us"])) if row["gemm_us"] else None
        e["comm_err"] = err(t["comm_only"], number(row["comm_us"])) if row["comm_us"] else None
        e["base_err"] = (err(t["baseline"], number(row["baseline_us"]))
                         if row["baseline_us"] else None)
        if row["decomposition_us"]:
            published_wins = number(row["decomposition_us"]) < number(row["baseline_us"])
            predicted_wins = t["decompose"] < t["baseline"]
            e["winner_ok"] = published_wins == predicted_wins
            e["published_winner"] = "decomposition" if published_wins else "baseline"
            e["predicted_winner"] = "decompose" if predicted_wins else "baseline"
        out.append(e)
    return out


def table(evals):
    head = ["row", "hardware", "machine", "shape", "dtype", "GEMM pub/pred (us)",
            "comm pub/pred (us)", "baseline pub (us)", "baseline pred (us)", "baseline err",
            "decomposition pub (us)", "decompose pred (us)", "winner pub / pred", "same",
            "fused pub (us)", "role"]
    rows = []
    for e in evals:
        r, t = e["row"], e["sim"]
        gemm = f"{fmt_us(number(r['gemm_us']))} / {t['compute_only']:.0f} ({fmt_pct(e['gemm_err'])})" \
            if r["gemm_us"] else f"- / {t['compute_only']:.0f}"
        comm = f"{fmt_us(number(r['comm_us']))} / {t['comm_only']:.0f} ({fmt_pct(e['comm_err'])})" \
            if r["comm_us"] else f"- / {t['comm_only']:.0f}"
        winner = f"{e['published_winner']} / {e['predicted_winner']}" if "winner_ok" in e else "-"
        same = ("yes" if e["winner_ok"] else "NO") if "winner_ok" in e else "-"
        rows.append([r["id"], r["hardware"], r["machine"], r["published_shape"], r["dtype"], gemm,
                     comm, r["baseline_us"] or "-", f"{t['baseline']:.0f}", fmt_pct(e["base_err"]),
                     r["decomposition_us"] or "-", f"{t['decompose']:.0f}", winner, same,
                     r["fused_us"] or "-", r["role"]])
    return head, rows


def summary(evals):
    lines = []
    for role in ("fit", "check"):
        part = [e for e in evals if e["row"]["role"] == role and e["base_err"] is not None]
        if not part:
            lines.append(f"- {role} rows: none")
            continue
        errs = [abs(e["base_err"]) for e in part]
        within = sum(1 for x in errs if x <= 0.12)
        decided = [e for e in part if "winner_ok" in e]
        right = sum(1 for e in decided if e["winner_ok"])
        dec = [abs(e["sim"]["decompose"] / number(e["row"]["decomposition_us"]) - 1)
               for e in decided]
        dec_text = (f", decompose |error| mean {sum(dec) / len(dec) * 100:.1f}% "
                    f"(largest {max(dec) * 100:.1f}%)" if dec else "")
        lines.append(
            f"- {role} rows ({len(part)}): baseline |error| mean {sum(errs) / len(errs) * 100:.1f}%, "
            f"largest {max(errs) * 100:.1f}%, within 12% in {within} of {len(part)}; "
            f"decomposition vs baseline: the same winner in {right} of {len(decided)}{dec_text}")
    shown = [e["row"]["id"] for e in evals if e["row"]["role"] == "shown"]
    if shown:
        lines.append(f"- shown, in neither set (hardware not stated): {', '.join(shown)}")
    return lines


FIT_KEY = "gemm_memory_efficiency"


def fit(fobench, rows):
    """The gemm_memory_efficiency of each machine file that best prices its `fit` rows'
    published decomposition (least squares of log errors over a grid of 0.01): the rate a thin
    GEMM slice streams its weights at is what decomposition's slices pay, and those rows
    measure it. Prints the value to write into the file; changes nothing."""
    by_machine = {}
    for row in rows:
        if row["role"] == "fit" and row["decomposition_us"]:
            by_machine.setdefault(row["machine"], []).append(row)
    for name, part in sorted(by_machine.items()):
        text = open(machine_path(part[0])).read()
        if FIT_KEY + ":" not in text:
            print(f"{name}: no {FIT_KEY} key to fit")
            continue
        best = None
        with tempfile.TemporaryDirectory() as tmp:
            trial = os.path.join(tmp, name + ".yaml")
            for step in range(20, 101):
                value = step / 100
                with open(trial, "w") as f:
                    f.write(re.sub(FIT_KEY + r": [0-9.]+", f"{FIT_KEY}: {value}", text))
                sq = sum(math.log(simulate(fobench, r, trial)["decompose"] /
                                  number(r["decomposition_us"])) ** 2 for r in part)
                if best is None or sq < best[1]:
                    best = (value, sq)
        rms = math.sqrt(best[1] / len(part)) * 100
        ids = ", ".join(r["id"] for r in part)
        print(f"{name}: {FIT_KEY} {best[0]} (rms log error {rms:.1f}% over {ids})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fobench", default=os.path.join(ROOT, "build", "fobench"))
    parser.add_argument("--format", choices=["md", "csv"], default="md")
    parser.add_argument("--rows", default=os.path.join(HERE, "rows.csv"))
    parser.add_argument("--fit", action="store_true",
                        help=f"print the {FIT_KEY} the rows marked fit give each machine file")
    args = parser.parse_args()
    with open(args.rows, newline="") as f:
        rows = list(csv.DictReader(f))
    if args.fit:
        fit(args.fobench, rows)
        return
    evals = evaluate(args.fobench, rows)
    head, body = table(evals)
    if args.format == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(head)
        w.writerows(body)
        return
    print("# fobench sim against published GPU measurements (bench/published/rows.csv)\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in body:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()
    for line in summary(evals):
        print(line)


if __name__ == "__main__":
    main()
