#!/usr/bin/env python3
"""Calibration of the gate against the simulator with run-to-run drift.

Measures how often the gate's checks fail on an unchanged configuration (false alarms) and
on known regressions (detections), with the gate's own statistics, against the simulator
with run-to-run drift (`sim.drift`, a fresh `sim.drift_seed` for every run).

For each number of repeats R (default 1 and 3):
  * `--baselines M` independent baselines (each one blessed run of R repeats, plus
    `--baseline-runs K` - 1 more runs added with `ladder bless --add`: K x R runs), so that
    the rates cover the baseline's own draw of drift, not one lucky or unlucky baseline;
  * for each case, `--trials` candidate runs of R repeats (`--unchanged-trials` for the
    unchanged case), trial t compared with baseline t mod M by `ladder compare` four times: with
    each single check alone (median TPOT +10 %, output throughput -5 %, error rate +0.01)
    and with the three together (a gate of three checks, family-wise level over them).
    Two tables: failures as `ladder gate` counts them (a regression verdict) and as
    `ladder gate --strict` does (a regression or an inconclusive verdict).

Cases (the simulator's change): unchanged; +10 % and +25 % median TPOT (`decode_scale`);
-10 % output throughput (`decode_scale` 1.12: the load is a closed-loop concurrency rung, so
a slower server completes fewer requests a second); +2 % errors (`fault_http_500: 0.02`).
A gate failure on a regression case is a detection, on the unchanged case a false alarm.
Rates come with 95 % Wilson intervals. The run-to-run spread the runs actually had (the
simulator's drift plus the machine's own noise) is printed beside the table: the coefficient
of variation of the unchanged candidates' median TPOT and output throughput.

  cargo build --release --locked
  python3 scripts/bench/calibrate.py --unchanged-trials 100 --trials 30 --json calib.json

Not a test: a measurement (docs/gate.md, BENCHMARKS.md). Standard library only; traffic only
to the in-process simulator on 127.0.0.1.
"""

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "scenarios" / "tokenizers" / "ladder-tiny.json"

# check name -> (metric, --threshold value)
CHECKS = {
    "tpot": ("median_tpot_ms", "median_tpot_ms=+10%"),
    "throughput": ("output_throughput", "output_throughput=-5%"),
    "errors": ("error_rate", "error_rate=+0.01"),
}
# case -> (simulator change, the check that should catch it)
CASES = {
    "unchanged": ({}, None),
    "+10% TPOT": ({"decode_scale": 1.10}, "tpot"),
    "+25% TPOT": ({"decode_scale": 1.25}, "tpot"),
    "-10% throughput": ({"decode_scale": 1.12}, "throughput"),
    "+2% errors": ({"fault_http_500": 0.02}, "errors"),
}


def scenario(path, a, drift_seed, change, repeats):
    """One closed-loop rung of `a.requests` requests at `a.concurrency` users."""
    sim = {"seed": 0, "speed": a.speed, "max_num_seqs": 16, "drift": a.drift,
           "drift_seed": drift_seed, **change}
    sim_text = ", ".join(f"{k}: {v}" for k, v in sim.items())
    path.write_text(
        f"""version: 1
name: calib
endpoint: {{ base_url: sim, api: completions, request_timeout: 30s }}
model: sim-model
tokenizer: {TOKENIZER}
workload: {{ dataset: random, input_tokens: 64, output_tokens: 32, ignore_eos: true, requests_per_rung: {a.requests}, seed: 0 }}
load: {{ concurrency: [{a.concurrency}], cooldown: 0s, repeats: {repeats} }}
sim: {{ {sim_text} }}
"""
    )


def ladder(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=1800)


def run(a, sc, out):
    r = ladder(a.ladder, "run", str(sc), "--out", str(out), "--quiet")
    if r.returncode != 0:
        sys.exit(f"run failed (exit {r.returncode}): {r.stderr}")
    return sorted((out / "calib").iterdir())[-1]


def compare(a, golden, cand, thresholds, junit):
    args = ["compare", str(golden), str(cand), "--only", "--junit", str(junit)]
    for t in thresholds:
        args += ["--threshold", t]
    r = ladder(a.ladder, *args)
    # Exit 2 is also NO VERDICT (every check inconclusive): an outcome, not a failure.
    if r.returncode not in (0, 1) and not (r.returncode == 2 and "NO VERDICT" in r.stdout):
        sys.exit(f"compare failed (exit {r.returncode}): {r.stderr}")
    values, strict = {}, False
    for case in ET.parse(junit).getroot().iter("testcase"):
        metric = case.get("name").split(" ")[0]
        failure, skipped = case.find("failure"), case.find("skipped")
        # A regression is a <failure>, an inconclusive check a <skipped> (both carry their
        # verdict in `message`), a pass only <system-out>.
        text = " ".join(x for x in [
            failure.get("message", "") if failure is not None else "",
            failure.text or "" if failure is not None else "",
            skipped.get("message", "") if skipped is not None else "",
            case.findtext("system-out") or "",
        ] if x)
        verdict = ("regression" if failure is not None else
                   "inconclusive" if skipped is not None else "pass")
        values[metric] = {"verdict": verdict, "detail": text.strip()}
        strict |= verdict != "pass"
    # `ladder gate --strict` fails on an inconclusive check too.
    return r.returncode == 1, strict, values


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def cell(k, n):
    lo, hi = wilson(k, n)
    return f"{k}/{n} ({lo:.0%}–{hi:.0%})"


def summary_value(run_dir, metric):
    """The pooled value of `metric` in the run's only rung."""
    f = next(run_dir.glob("result_*.json"))
    return json.loads(f.read_text())[metric]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--trials", type=int, default=10, help="candidate runs per regression case")
    ap.add_argument("--unchanged-trials", type=int, help="candidate runs of the unchanged case "
                    "(default: --trials)")
    ap.add_argument("--requests", type=int, default=200, help="requests per rung (per repeat)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--speed", type=float, default=4.0, help="the simulator's speed")
    ap.add_argument("--drift", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--baseline-runs", type=int, default=1,
                    help="blessed runs in each baseline (the first blessed, the rest added)")
    ap.add_argument("--baselines", type=int, default=1,
                    help="independent baselines; the trials take them in turn")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--json", help="write every comparison's outcome here")
    a = ap.parse_args()
    unchanged_trials = a.unchanged_trials or a.trials
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    raw, table, spread = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for reps in a.repeats:
            out = tmp / f"out-{reps}"
            sc = tmp / f"scenario-{reps}.yaml"
            bases = []
            for m in range(a.baselines):
                golden = tmp / f"golden-{reps}-{m}"
                for k in range(a.baseline_runs):
                    scenario(sc, a, 1000 + 100 * m + k, {}, reps)
                    run_dir = run(a, sc, out)
                    verb = ["bless"] if k == 0 else ["bless", "--add"]
                    r = ladder(a.ladder, *verb, str(run_dir), "--golden", str(golden))
                    if r.returncode != 0:
                        sys.exit(f"{' '.join(verb)} failed: {r.stderr}")
                bases.append(golden / "calib")
            for ci, label in enumerate(a.cases):
                change, target = CASES[label]
                n = unchanged_trials if label == "unchanged" else a.trials
                fails = {name: 0 for name in [*CHECKS, "gate"]}
                strict = {name: 0 for name in [*CHECKS, "gate"]}
                tpots, thrs = [], []
                for t in range(n):
                    scenario(sc, a, (ci + 1) * 100_000 + t + 1, change, reps)
                    cand = run(a, sc, out)
                    tpots.append(summary_value(cand, "median_tpot_ms"))
                    thrs.append(summary_value(cand, "output_throughput"))
                    base_dir = bases[t % len(bases)]
                    outcome = {"repeats": reps, "case": label, "trial": t,
                               "baseline": t % len(bases)}
                    for name, (_, thr) in CHECKS.items():
                        failed, failed_strict, values = compare(a, base_dir, cand, [thr],
                                                                tmp / "j.xml")
                        fails[name] += failed
                        strict[name] += failed_strict
                        outcome[name] = next(iter(values.values()))["verdict"]
                    failed, failed_strict, values = compare(
                        a, base_dir, cand, [c[1] for c in CHECKS.values()], tmp / "j.xml")
                    fails["gate"] += failed
                    strict["gate"] += failed_strict
                    outcome["gate"] = failed
                    outcome["gate_strict"] = failed_strict
                    outcome["gate_checks"] = values
                    raw.append(outcome)
                    # Candidate folders are not kept: a trial's outcome is in `raw`.
                    subprocess.run(["rm", "-rf", str(cand)], check=True)
                base_tpot = statistics.mean(summary_value(b, "median_tpot_ms") for b in bases)
                base_thr = statistics.mean(summary_value(b, "output_throughput") for b in bases)
                table.append((reps, label, target, n, fails, strict,
                              statistics.median(tpots) / base_tpot,
                              statistics.median(thrs) / base_thr))
                if label == "unchanged" and n >= 2:
                    spread.append((reps, statistics.stdev(tpots) / statistics.mean(tpots),
                                   statistics.stdev(thrs) / statistics.mean(thrs)))
                print(f"repeats {reps}, {label}: {fails}", file=sys.stderr, flush=True)
    ended = time.strftime("%H:%M UTC", time.gmtime())
    print(f"# {started} – {ended}: one rung of {a.requests} requests a repeat at concurrency "
          f"{a.concurrency}, simulator speed {a.speed}, drift {a.drift:.0%}; {a.baselines} "
          f"independent baseline(s) of {a.baseline_runs} blessed run(s) of the same repeats, "
          f"taken in turn")
    for title, which in [("failed (a regression verdict)", 5),
                         ("failed under --strict (a regression or an inconclusive verdict)", 6)]:
        print(f"\nGates and checks {title}:\n")
        print("| repeats per side | case | candidate/baseline median TPOT, throughput | "
              "TPOT +10% check | throughput −5% check | error +0.01 check | gate of all three |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for row in table:
            reps, label, target, n, tr, hr = *row[:4], row[6], row[7]
            counts = row[which - 1]
            cells = []
            for name in [*CHECKS, "gate"]:
                c = cell(counts[name], n)
                cells.append(f"**{c}**" if name == target else c)
            side = f"{reps} vs {reps * a.baseline_runs}" if a.baseline_runs > 1 else f"{reps}"
            print(f"| {side} | {label} | ×{tr:.3f}, ×{hr:.3f} | " + " | ".join(cells) + " |")
    for reps, cv_tpot, cv_thr in spread:
        print(f"# measured run-to-run spread of unchanged runs of {reps} repeat(s): "
              f"median TPOT CV {cv_tpot:.1%}, output throughput CV {cv_thr:.1%}")
    if a.json:
        Path(a.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
