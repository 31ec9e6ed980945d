#!/usr/bin/env python3
"""Calibration of the whole gate (every rung x every rule) on the simulator with drift.

Where calibrate.py measures three checks on one closed-loop rung, this measures what a user
of the quickstart gets: the quickstart's ladder (a baseline rung and four rates, two of them
past the simulator's capacity) and its four `gate:` rules, 20 checks in all, against the
simulator with run-to-run drift (`sim.drift`, a fresh `drift_seed` for every run).

It makes a pool of runs once (`--runs` unchanged runs, `--changed-runs` runs of each change)
and then pairs them, so that every comparison is between runs that never share a drift
draw:
  * the default path: a baseline of one run against one candidate run (`ladder compare`,
    the baseline's rules, i.e. the quickstart's);
  * a baseline of three runs (`ladder bless` then `bless --add` twice) against one run;
  * the same two with `--drift` set (the assumed run-to-run spread for one run per side).
For each it counts gates that fail (exit 1: a false alarm on unchanged runs, a detection on
changed ones), gates with no verdict (exit 2), and how many checks were decided (pass /
regression / improvement) rather than inconclusive; `past saturation` checks are counted
apart. Rates come with 95 % Wilson intervals.

  cargo build --release --locked
  python3 scripts/bench/calibrate_gate.py --runs 24 --changed-runs 8 --json /tmp/cg.json

Not a test: a measurement (docs/gate.md, BENCHMARKS.md). Standard library only; traffic only
to the in-process simulator on 127.0.0.1.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import cell  # noqa: E402  (shared with the other calibrations)

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "scenarios" / "tokenizers" / "ladder-tiny.json"

CHANGES = {
    "+25% TPOT": {"decode_scale": 1.25},
    "x2 prefill": {"prefill_per_token_us": 40.0},
}


def scenario(path, a, drift_seed, change):
    sim = {"seed": 0, "max_num_seqs": 16, "drift": a.drift, "drift_seed": drift_seed, **change}
    sim_text = ", ".join(f"{k}: {v}" for k, v in sim.items())
    path.write_text(
        f"""version: 1
name: calgate
endpoint: {{ base_url: sim, api: completions, request_timeout: 30s }}
model: ladder-sim
tokenizer: {TOKENIZER}
workload: {{ dataset: random, input_tokens: 128, output_tokens: 64, range_ratio: 0.0, ignore_eos: true, requests_per_rung: {a.requests}, seed: 0 }}
load: {{ arrival: poisson, baseline_rate: 4, rates: [8, 12, 16, 24], cooldown: 1s }}
slo: {{ ttft_ms: 1000, tpot_ms: 50, max_error_rate: 0.05 }}
gate:
  - {{ metric: request_throughput, max_decrease: 15% }}
  - {{ metric: median_tpot_ms, max_increase: 10% }}
  - {{ metric: median_ttft_ms, max_increase: 25%, min_change: 10ms }}
  - {{ metric: error_rate, max: 0.15 }}
sim: {{ {sim_text} }}
"""
    )


def ladder(a, *args):
    return subprocess.run([a.ladder, *args], capture_output=True, text=True, timeout=1800)


def make_runs(a, tmp, label, change, n, seed0):
    runs = []
    for k in range(n):
        sc = tmp / "scenario.yaml"
        scenario(sc, a, seed0 + k, change)
        out = tmp / f"out-{label}-{k}"
        done = out / "calgate"
        if done.is_dir() and any((d / "run.json").exists() for d in done.iterdir()):
            # --pool: a run made before (same scenario and drift seed) is judged again.
            runs.append(next(d for d in done.iterdir() if (d / "run.json").exists()))
            continue
        if out.exists():
            shutil.rmtree(out)
        r = ladder(a, "run", str(sc), "--out", str(out), "--quiet")
        if r.returncode != 0:
            sys.exit(f"run failed (exit {r.returncode}): {r.stderr[-2000:]}")
        runs.append(next((out / "calgate").iterdir()))
        print(f"  {label}: run {k + 1}/{n}", file=sys.stderr, flush=True)
    return runs


def golden_of(a, tmp, runs, name):
    g = tmp / f"golden-{name}"
    if g.exists():
        shutil.rmtree(g)
    for k, r in enumerate(runs):
        verb = ["bless"] if k == 0 else ["bless", "--add"]
        if k > 0 and a.force_add:
            verb.append("--force")
        p = ladder(a, *verb, str(r), "--golden", str(g))
        if p.returncode != 0:
            return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "bless failed"
    return g / "calgate", None


def gate(a, base, cand, junit, extra):
    r = ladder(a, "compare", str(base), str(cand), "--junit", str(junit), *extra)
    counts = {"regression": 0, "inconclusive": 0, "pass": 0, "improvement": 0,
              "past saturation": 0}
    if r.returncode in (0, 1) and junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            failure, skipped = case.find("failure"), case.find("skipped")
            if failure is not None:
                counts["regression"] += 1
            elif skipped is not None:
                msg = skipped.get("message", "")
                counts["past saturation" if msg.startswith("past saturation")
                       else "inconclusive"] += 1
            else:
                out = case.findtext("system-out") or ""
                counts["improvement" if out.startswith("improvement") else "pass"] += 1
    return r.returncode, counts, (r.stdout + r.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--runs", type=int, default=24, help="unchanged runs in the pool")
    ap.add_argument("--changed-runs", type=int, default=8, help="runs of each change")
    ap.add_argument("--changes", nargs="*", default=list(CHANGES), choices=list(CHANGES))
    ap.add_argument("--requests", type=int, default=60, help="requests per rung")
    ap.add_argument("--drift", type=float, default=0.05)
    ap.add_argument("--assume", default="5%", help="the --drift value of the assumed rows")
    ap.add_argument("--pairs", type=int, default=100, help="1-v-1 gates drawn from the pool")
    ap.add_argument("--triples", type=int, default=30, help="3-v-1 gates drawn from the pool")
    ap.add_argument("--force-add", action="store_true",
                    help="bless --add --force (when bless refuses an outlier run)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write every comparison's outcome here")
    ap.add_argument("--pool", help="keep the runs in this folder and reuse the ones already "
                    "there (judge the same runs again, e.g. with another build or --designs)")
    ap.add_argument("--designs", nargs="+", default=None,
                    help="designs to judge: '1v1', '3v1', each optionally with compare "
                    "arguments after a colon, e.g. '1v1:--drift=5%%' (default: 1v1, "
                    "1v1:--drift=ASSUME, 3v1)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    raw = []
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(a.pool) if a.pool else Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        pool = make_runs(a, tmp, "unchanged", {}, a.runs, 10_000)
        changed = {c: make_runs(a, tmp, c, CHANGES[c], a.changed_runs, 20_000 + 1000 * i)
                   for i, c in enumerate(a.changes)}
        if a.designs:
            designs = []
            for d in a.designs:
                name, _, args = d.partition(":")
                designs.append(({"1v1": "1 v 1", "3v1": "3 v 1"}[name],
                                 [x for x in args.split(",") if x]))
        else:
            designs = [("1 v 1", []), ("1 v 1", [f"--drift={a.assume}"]), ("3 v 1", [])]
        for design, extra in designs:
            for case in ["unchanged", *a.changes]:
                fails = nov = 0
                decided = judged = sat = 0
                n = 0
                cands = pool if case == "unchanged" else changed[case]
                trials = (a.pairs if design == "1 v 1" else a.triples)
                if case != "unchanged":
                    trials = min(trials, len(cands) * 3)
                for t in range(trials):
                    if design == "1 v 1":
                        if case == "unchanged":
                            b, c = rng.sample(range(len(pool)), 2)
                            base, cand = pool[b], pool[c]
                        else:
                            base, cand = rng.choice(pool), cands[t % len(cands)]
                        base_dir, err = base, None
                    else:
                        if case == "unchanged":
                            idx = rng.sample(range(len(pool)), 4)
                            base_runs, cand = [pool[i] for i in idx[:3]], pool[idx[3]]
                        else:
                            base_runs = rng.sample(pool, 3)
                            cand = cands[t % len(cands)]
                        base_dir, err = golden_of(a, tmp, base_runs, "g")
                        if base_dir is None:
                            raw.append({"design": design, "case": case, "bless": err})
                            continue
                    code, counts, text = gate(a, base_dir, cand, tmp / "j.xml", extra)
                    n += 1
                    fails += code == 1
                    nov += code == 2
                    d = counts["pass"] + counts["regression"] + counts["improvement"]
                    j = d + counts["inconclusive"]
                    decided += d
                    judged += j
                    sat += counts["past saturation"]
                    raw.append({"design": design, "extra": extra, "case": case, "exit": code,
                                **counts})
                label = design + (" " + " ".join(extra) if extra else "")
                rows.append((label, case, n, fails, nov, decided, judged, sat))
                print(f"{label:22} {case:14} gates {n:3}  fail {cell(fails, n):18} "
                      f"no-verdict {nov:3}  decided {decided}/{judged} checks, "
                      f"{sat} past saturation", flush=True)
    load = os.getloadavg()
    print(f"\nstarted {started}; load average at the end {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}; drift {a.drift}; {a.requests} requests per rung")
    print("| design | case | gates | fail (exit 1) | no verdict (exit 2) | checks decided "
          "| past saturation |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, case, n, fails, nov, decided, judged, sat in rows:
        share = f"{decided}/{judged} ({decided / judged:.0%})" if judged else "0/0"
        print(f"| {label} | {case} | {n} | {cell(fails, n)} | {nov} | {share} | {sat} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"started": started, "rows": rows, "raw": raw},
                                           indent=1))


if __name__ == "__main__":
    main()
