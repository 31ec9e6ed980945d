#!/usr/bin/env python3
"""Calibration of the gate against the simulator with run-to-run drift.

Runs `ladder gate` many times on an unchanged configuration (false alarms) and on a known
regression (+25 % median TPOT via `sim.decode_scale: 1.25`), with 1 and with 3 repeats per
side, each candidate run with fresh drift (its own `sim.drift_seed`), and reports the
false-alarm and detection rates with 95 % Wilson intervals. The baseline of each mode is one
blessed run (drift_seed 1000) of the same number of repeats, plus `--baseline-runs K` − 1 more
runs added with `ladder bless --add` (drift seeds 1001, …): a baseline of K × repeats runs.

  cargo build --release --locked
  python3 scripts/bench/calibrate.py --trials 10 --requests 100 --json calib.json

Not a test: a measurement (docs/gate.md, BENCHMARKS.md). Standard library only; traffic only
to the in-process simulator on 127.0.0.1.
"""

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "scenarios" / "tokenizers" / "ladder-tiny.json"


def scenario(path, requests, rate, drift, drift_seed, decode_scale, repeats):
    """One rung of `requests` at `rate` req/s; the gate checks median TPOT only."""
    path.write_text(
        f"""version: 1
name: calib
endpoint: {{ base_url: sim, api: completions, request_timeout: 30s }}
model: sim-model
tokenizer: {TOKENIZER}
workload: {{ dataset: random, input_tokens: 64, output_tokens: 32, ignore_eos: true, requests_per_rung: {requests}, seed: 0 }}
load: {{ arrival: poisson, rates: [{rate}], cooldown: 0s, repeats: {repeats} }}
gate:
  - {{ metric: median_tpot_ms, max_increase: 10% }}
sim: {{ seed: 0, speed: 4, max_num_seqs: 16, drift: {drift}, drift_seed: {drift_seed}, decode_scale: {decode_scale} }}
"""
    )


def ladder(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=900)


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--trials", type=int, default=10, help="gates per cell")
    ap.add_argument("--requests", type=int, default=100, help="requests per rung")
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--drift", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--baseline-runs", type=int, default=1,
                    help="blessed runs in each baseline (the first blessed, the rest added)")
    ap.add_argument("--json", help="write every gate's outcome here")
    a = ap.parse_args()
    rows, raw = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for reps in a.repeats:
            golden, out = tmp / f"golden-{reps}", tmp / f"out-{reps}"
            sc = tmp / f"base-{reps}.yaml"
            scenario(sc, a.requests, a.rate, a.drift, 1000, 1.0, reps)
            r = ladder(a.ladder, "run", str(sc), "--out", str(out), "--quiet")
            if r.returncode != 0:
                sys.exit(f"baseline run failed: {r.stderr}")
            run_dir = sorted((out / "calib").iterdir())[-1]
            r = ladder(a.ladder, "bless", str(run_dir), "--golden", str(golden))
            if r.returncode != 0:
                sys.exit(f"bless failed: {r.stderr}")
            for extra in range(1, a.baseline_runs):
                scenario(sc, a.requests, a.rate, a.drift, 1000 + extra, 1.0, reps)
                r = ladder(a.ladder, "run", str(sc), "--out", str(out), "--quiet")
                if r.returncode != 0:
                    sys.exit(f"baseline run failed: {r.stderr}")
                run_dir = sorted((out / "calib").iterdir())[-1]
                r = ladder(a.ladder, "bless", "--add", str(run_dir), "--golden", str(golden))
                if r.returncode != 0:
                    sys.exit(f"bless --add failed: {r.stderr}")
            for label, scale in [("unchanged", 1.0), ("+25% TPOT", 1.25)]:
                alarms, exits = 0, []
                for t in range(a.trials):
                    cand = tmp / f"cand-{reps}.yaml"
                    scenario(cand, a.requests, a.rate, a.drift, t + 1, scale, reps)
                    r = ladder(a.ladder, "gate", str(cand), "--golden", str(golden), "--out", str(out))
                    if r.returncode not in (0, 1):
                        sys.exit(f"gate failed (exit {r.returncode}): {r.stderr}")
                    alarms += r.returncode == 1
                    exits.append(r.returncode)
                    raw.append({"repeats": reps, "case": label, "trial": t, "exit": r.returncode})
                lo, hi = wilson(alarms, a.trials)
                rows.append((reps, label, alarms, a.trials, lo, hi))
                print(f"repeats {reps}, {label}: {alarms}/{a.trials} gates failed", file=sys.stderr)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {a.requests} requests per rung at "
          f"{a.rate} req/s, drift {a.drift:.0%}, {a.trials} gates per cell, baselines of "
          f"{a.baseline_runs} blessed run(s) of the same repeats")
    print("| repeats per side | case | gates failed | rate | 95 % Wilson interval |")
    print("| --- | --- | --- | --- | --- |")
    for reps, label, k, n, lo, hi in rows:
        what = "false alarms" if label == "unchanged" else "detected"
        print(f"| {reps} | {label} ({what}) | {k} / {n} | {k / n:.0%} | {lo:.0%}–{hi:.0%} |")
    if a.json:
        Path(a.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
