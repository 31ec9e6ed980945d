#!/usr/bin/env python3
"""Capacity search (`load.search`, docs/capacity.md) against the simulator: error of the
found capacity against the truth, coverage of its interval over seeds, and time to the
answer against a fixed ladder of the same precision.

The truth is found by brute force, with the search's own definitions: a fixed ladder of
rates spaced `--truth-step` apart around the simulator's saturated throughput, each rung run
`--truth-runs` times with different seeds (probes of the same size as the search's: latency
past saturation depends on how long a probe lets the queue grow), every run's requests
pooled per rate. At each rate the SLO metric is computed as the search computes it (a failed
request counts as infinitely slow; numpy-linear percentile); the truth is where it crosses
the bound, interpolated on log rate between the two rates around the crossing.

Then `--seeds` searches (workload and simulator seeds varied) report: the found capacity's
error against the truth, whether `[lo, hi]` holds the truth (coverage, with a 95 % Wilson
interval), the search's time (`spent_s` in capacity.json), and the time a fixed ladder
from `start` to `max` with rungs `precision` apart would take at one probe size per rung
(sum of requests / rate: the least any open-loop ladder of that precision needs).

  cargo build --release --locked
  python3 scripts/bench/capacity.py --seeds 20 --json capacity-bench.json

Not a test: a measurement (docs/capacity.md). Standard library only; traffic only to the
in-process simulator on 127.0.0.1.
"""

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import wilson  # noqa: E402  (shared with the gate's calibrations)

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "scenarios" / "tokenizers" / "ladder-tiny.json"
BIN = ROOT / "target" / "release" / "ladder"
ARGS_BIN = [BIN]


def sim_capacity(speed, max_num_seqs=16, inp=128, out=64, decode_scale=1.0):
    """docs/sim.md's formula (defaults: step_base 10 ms, per seq 0.5 ms, prefill 20 us)."""
    b = min(max_num_seqs, 32768 // (inp + out))
    per_ms = out * decode_scale * (10.0 / b + 0.5) + inp * 20.0 / 1000.0
    return speed * 1000.0 / per_ms


def scenario(args, seed, load_yaml):
    # Run-to-run drift: every ladder run (a truth run, a search) draws its own speed factor
    # (docs/sim.md: run 0 of `drift_seed`), so the seed is the run's own.
    drift = f", drift: {args.drift}, drift_seed: {seed}" if args.drift else ""
    return f"""version: 1
name: bench
endpoint: {{ base_url: sim, request_timeout: 60s }}
model: ladder-sim
tokenizer: {TOKENIZER}
workload: {{ input_tokens: 128, output_tokens: 64, requests_per_rung: {args.requests}, seed: {seed} }}
load:
  cooldown: {args.cooldown}s
{load_yaml}
sim: {{ seed: {seed}, max_num_seqs: 16, speed: {args.speed}{drift} }}
"""


def run(text, out):
    path = out / "s.yaml"
    path.write_text(text)
    p = subprocess.run(
        [str(ARGS_BIN[0]), "run", str(path), "--out", str(out / "res"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if p.returncode != 0:
        sys.exit(f"ladder run failed ({p.returncode}):\n{p.stderr}")
    dirs = sorted((out / "res" / "bench").iterdir())
    return dirs[-1]


def metric_of(values, q):
    v = sorted(values)
    if not v:
        return math.nan
    pos = q * (len(v) - 1)
    k = int(math.floor(pos))
    frac = pos - k
    if frac == 0 or k + 1 >= len(v):
        return v[k]
    if math.isinf(v[k + 1]):
        return math.inf
    return v[k] + frac * (v[k + 1] - v[k])


def requests(folder, rate):
    label = f"{rate:.6f}".rstrip("0").rstrip(".")
    with open(folder / f"requests_rate_{label}.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r.get("warmup") or r.get("error_class") == "interrupted":
                continue
            yield r


def crossing(args, per_rate):
    """The rate where the SLO's worst margin, computed on `per_rate` ({rate: [(ok, ttft)]}),
    first crosses zero (log-linear between the rates around it), and the margins."""
    margins = []
    for r in sorted(per_rate):
        reqs = per_rate[r]
        ttfts = [t if ok and t is not None else math.inf for ok, t in reqs]
        errors = sum(1 for ok, _ in reqs if not ok) / max(1, len(reqs))
        m = max(
            math.log(max(min(metric_of(ttfts, args.q), 1e12), 1e-9) / args.ttft_ms),
            math.log(max(errors, 1e-9) / args.error_rate),
        )
        margins.append((r, max(min(m, 7.0), -7.0)))
    for (a, ma), (b, mb) in zip(margins, margins[1:]):
        if ma <= 0 < mb:
            t = -ma / (mb - ma)
            return math.exp(math.log(a) + t * (math.log(b) - math.log(a))), margins
    return math.nan, margins


def truth_runs(args, work):
    """Each truth run's requests per rate: [{rate: [(ok, ttft)]}], cached in --truth-cache
    (the simulator and the runner, not the search, decide them)."""
    caches = [Path(c) for c in (args.truth_cache or "").split(",") if c]
    if caches and all(c.exists() for c in caches):
        runs = []
        for c in caches:
            raw = json.loads(c.read_text())
            runs += [{float(r): [tuple(x) for x in v] for r, v in run.items()} for run in raw]
        # Rates every run has (a shorter ladder is a prefix of a longer one).
        common = set.intersection(*(set(run) for run in runs))
        return [{r: run[r] for r in common} for run in runs]
    runs = [one_truth_run(args, work, k) for k in range(args.truth_runs)]
    if caches:
        write_truth_cache(caches[0], runs)
    return runs


def write_truth_cache(path, runs):
    Path(path).write_text(json.dumps([{str(r): v for r, v in run.items()} for run in runs]))


def one_truth_run(args, work, k):
    """Truth run k: the fixed ladder around the saturated throughput, its requests per rate."""
    cap = sim_capacity(args.speed)
    rates = []
    r = cap * args.truth_from
    while r <= cap * args.truth_to:
        rates.append(float(f"{r:.3g}"))
        r *= 1.0 + args.truth_step
    rates = sorted(set(rates))
    out = work / f"truth-{k}"
    out.mkdir()
    load = "  rates: [" + ", ".join(str(r) for r in rates) + "]"
    folder = run(scenario(args, args.truth_seed_base + k, load), out)
    per = {r: [] for r in rates}
    for r in rates:
        for req in requests(folder, r):
            per[r].append((req.get("ok", False), req.get("ttft_ms")))
    print(f"truth run {k}: crossing {crossing(args, per)[0]:.2f} req/s", flush=True)
    return per


def truth(args, work, runs=None):
    """Brute force: the rate where the pooled p<q> TTFT crosses the bound (or errors do),
    with the spread of single runs' crossings and a bootstrap over runs of the pooled one
    (the truth's own precision). `runs`: truth runs already made (--interleave)."""
    runs = runs if runs is not None else truth_runs(args, work)
    pooled = {r: [x for run in runs for x in run[r]] for r in runs[0]}
    true_cap, margins = crossing(args, pooled)
    if math.isnan(true_cap):
        sys.exit(f"the truth ladder never crossed the SLO: {margins}")
    singles = [crossing(args, run)[0] for run in runs]
    # The typical run's capacity: the median of the single runs' crossings (a run that never
    # crossed on the grid counts at the grid's end it lies beyond), the level at which one
    # probe-sized run holds the SLO with probability 1/2: what bisection on single runs'
    # verdicts tracks, below or above the pooled (long-run) truth.
    ends = []
    for run, c in zip(runs, singles):
        if math.isnan(c):
            first = crossing(args, run)[1][0][1]
            c = -math.inf if first > 0 else math.inf
        ends.append(c)
    ends.sort()
    typical = ends[len(ends) // 2] if len(ends) % 2 else 0.5 * (ends[len(ends) // 2 - 1] + ends[len(ends) // 2])
    rng = random.Random(7)
    boots = []
    for _ in range(200):
        pick = [runs[rng.randrange(len(runs))] for _ in runs]
        c = crossing(args, {r: [x for run in pick for x in run[r]] for r in runs[0]})[0]
        if not math.isnan(c):
            boots.append(c)
    boots.sort()
    spread = {
        "single_runs": singles,
        "bootstrap_90": [boots[len(boots) // 20], boots[len(boots) * 19 // 20]] if boots else None,
        "typical_run": typical,
    }
    return true_cap, margins, spread


def search(args, seed, work):
    out = work / f"search-{seed}"
    out.mkdir()
    load = f"""  search:
    slo: [ {{ metric: p{args.q * 100:g}_ttft_ms, max: {args.ttft_ms} }}, {{ metric: error_rate, max: {args.error_rate} }} ]
    start: {args.start}
    max: {args.max}
    precision: {args.precision}%
    confidence: {args.confidence}
    confirm: {args.confirm}"""
    if args.max_extensions is not None:
        load += f"\n    max_extensions: {args.max_extensions}"
    t0 = time.monotonic()
    folder = run(scenario(args, seed, load), out)
    wall = time.monotonic() - t0
    if args.keep:
        # The search's folder (its probes' requests), for analyses after the fact.
        shutil.copytree(folder, Path(args.keep) / f"search-{seed}")
    cap = json.loads((folder / "capacity.json").read_text())
    return cap, wall


def fixed_ladder_seconds(args, cooldowns=False, served=False):
    """A ladder from start to max with rungs `precision` apart, one probe size per rung:
    the sum of requests / rate (the least any open-loop ladder of that precision needs);
    with `served`, a rung past the simulator's saturated throughput takes at least
    requests / that throughput (its requests are answered no faster, and a rung ends when
    they are: the search's spent time pays the same for its probes past saturation);
    with `cooldowns`, the same cooldown between rungs as the search has between probes."""
    total, r, rungs = 0.0, args.start, 0
    mu = sim_capacity(args.speed)
    while r <= args.max:
        total += args.requests / (min(r, mu) if served else r)
        rungs += 1
        r *= 1.0 + args.precision / 100.0
    return total + (args.cooldown * (rungs - 1) if cooldowns else 0.0)


def fixed_ladder_text(args):
    return (
        f"{fixed_ladder_seconds(args):.0f} s for the fixed ladder's bare load, "
        f"{fixed_ladder_seconds(args, served=True):.0f} s with its rungs past saturation "
        f"served at the saturated throughput, "
        f"{fixed_ladder_seconds(args, True, True):.0f} s with that and its cooldowns"
    )




def rescore(args):
    """Coverage, error and time of earlier runs' searches against the truth of the cached
    truth runs (several caches pooled): searches and truth runs measured side by side."""
    with tempfile.TemporaryDirectory() as tmp:
        true_cap, _, spread = truth(args, Path(tmp))
    b = spread["bootstrap_90"]
    print(
        f"truth: {true_cap:.2f} req/s from {len(spread['single_runs'])} runs "
        f"(single runs {min(spread['single_runs']):.1f}..{max(spread['single_runs']):.1f}; "
        f"bootstrap 90 % [{b[0]:.2f}, {b[1]:.2f}])"
    )
    for path in args.rescore:
        rows = json.loads(Path(path).read_text())["runs"]
        k = sum(1 for r in rows if r["lo"] is not None and r["hi"] is not None
                and r["lo"] <= true_cap <= r["hi"])
        typ = spread["typical_run"]
        k_typ = sum(1 for r in rows if r["lo"] is not None and r["hi"] is not None
                    and r["lo"] <= typ <= r["hi"])
        n = len(rows)
        lo, hi = wilson(k, n)
        errs = sorted(abs(r["capacity"] / true_cap - 1.0) for r in rows if r["capacity"])
        spent = sorted(r["spent_s"] for r in rows)
        loads = [r.get("load_average") for r in rows if r.get("load_average") is not None]
        within5 = sum(1 for e in errs if e <= 0.05)
        print(
            f"{path}: coverage {k}/{n} [{100 * lo:.0f}, {100 * hi:.0f}] % (of the typical "
            f"run's {typ:.2f}: {k_typ}/{n}); |error| median "
            f"{100 * errs[len(errs) // 2]:.1f} %, max {100 * errs[-1]:.1f} %, within 5 %: "
            f"{within5}/{len(errs)}; search {spent[len(spent) // 2]:.0f} s median "
            f"({spent[0]:.0f}..{spent[-1]:.0f}) against {fixed_ladder_text(args)}"
            + (f"; load average {min(loads):.1f}..{max(loads):.1f}" if loads else "")
        )
        for r in rows:
            print(
                f"  seed {r['seed']}: {r['capacity']} [{r['lo']}, {r['hi']}] {r['status']}, "
                f"{r['probes']} probes, {r['spent_s']:.0f} s"
            )


def runs_table(args):
    """Per rate of the cached truth runs: how many runs had any request over the bound (or
    failed), the share of runs a probe of that size passes (its own p<q> and error rate
    under their bounds), the pooled share over the bound, and the largest counts: the
    long-run (pooled) metric near the knee is set by a few runs whose queue ran away."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = truth_runs(args, Path(tmp))
    print(f"{len(runs)} runs; bad = failed or TTFT over {args.ttft_ms:g} ms")
    print("| rate | runs with any bad | runs passing alone | pooled share bad | largest bad counts |")
    print("| --- | --- | --- | --- | --- |")
    for r in sorted(runs[0]):
        bad = sorted(
            (sum(1 for ok, t in run[r] if not ok or t is None or t > args.ttft_ms) for run in runs),
            reverse=True,
        )
        n = sum(len(run[r]) for run in runs)
        passing = sum(1 for run in runs if crossing(args, {r: run[r]})[1][0][1] <= 0)
        print(
            f"| {r:g} | {sum(1 for b in bad if b)}/{len(runs)} | {passing}/{len(runs)} | "
            f"{sum(bad) / n:.4f} | {', '.join(str(b) for b in bad[:5])} |"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--speed", type=float, default=8.0)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--q", type=float, default=0.99)
    ap.add_argument("--ttft-ms", type=float, default=200.0)
    ap.add_argument("--error-rate", type=float, default=0.01)
    ap.add_argument("--start", type=float, default=40.0)
    ap.add_argument("--max", type=float, default=1000.0)
    ap.add_argument("--precision", type=float, default=5.0)
    ap.add_argument("--confidence", type=float, default=0.9)
    ap.add_argument(
        "--confirm", type=int, default=1, help="load.search.confirm: repeats of each bound"
    )
    ap.add_argument(
        "--drift",
        type=float,
        default=0.0,
        help="sim.drift: CV of a speed factor drawn per ladder run (truth runs and searches)",
    )
    ap.add_argument(
        "--max-extensions",
        type=int,
        help="load.search.max_extensions (default: the search's, 2; a 400-request probe "
        "then needs two looks to show a p99 inside: docs/capacity.md, 'Looks')",
    )
    ap.add_argument("--keep", help="copy each search's result folder into this folder")
    ap.add_argument(
        "--interleave",
        action="store_true",
        help="a truth run before each search (--seeds of each), the truth pooled over them",
    )
    ap.add_argument("--truth-runs", type=int, default=8)
    ap.add_argument("--truth-step", type=float, default=0.03)
    ap.add_argument("--truth-from", type=float, default=0.85)
    ap.add_argument("--truth-to", type=float, default=1.4)
    # Between rungs and probes: a rung past saturation leaves a queue that must drain before
    # the next one starts, or the next one measures it.
    ap.add_argument("--cooldown", type=float, default=2.0)
    ap.add_argument("--json")
    ap.add_argument("--truth-cache", help="read (or write) the truth runs' requests here")
    ap.add_argument("--truth-only", action="store_true", help="compute the truth and stop")
    ap.add_argument(
        "--no-truth", action="store_true", help="searches only (score them with --rescore)"
    )
    ap.add_argument("--truth-seed-base", type=int, default=1000)
    ap.add_argument("--seed-base", type=int, default=0)
    ap.add_argument("--bin", type=Path, default=BIN, help="the ladder binary")
    ap.add_argument(
        "--rescore",
        nargs="+",
        metavar="JSON",
        help="score the searches of earlier --json files against the truth of --truth-cache",
    )
    ap.add_argument(
        "--runs-table",
        action="store_true",
        help="print the truth runs' per-rate table of bad requests (with --truth-cache) and stop",
    )
    args = ap.parse_args()
    if args.runs_table:
        runs_table(args)
        return
    if args.rescore:
        rescore(args)
        return
    ARGS_BIN[0] = args.bin
    if not args.bin.exists():
        sys.exit("build first: cargo build --release --locked")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        searched = {}
        if args.interleave:
            # A truth run, then a search, in turn: the simulator's capacity moves with the
            # machine's load (its steps are timers), so the truth must be measured over the
            # same minutes as the searches it scores.
            runs = []
            for k in range(args.seeds):
                runs.append(one_truth_run(args, work, k))
                searched[args.seed_base + k] = search(args, args.seed_base + k, work)
                cap, _ = searched[args.seed_base + k]
                print(f"seed {args.seed_base + k}: {cap['text']} ({cap['spent_s']:.0f} s)", flush=True)
            if args.truth_cache:
                write_truth_cache(args.truth_cache.split(",")[0], runs)
            true_cap, margins, spread = truth(args, work, runs)
        elif args.no_truth:
            # Scored later with --rescore against truth runs measured side by side.
            true_cap, margins, spread = math.nan, [], {"single_runs": [], "bootstrap_90": None}
        else:
            true_cap, margins, spread = truth(args, work)
        b = spread["bootstrap_90"]
        print(
            f"truth: {true_cap:.2f} req/s (saturated throughput {sim_capacity(args.speed):.1f}); "
            f"single runs cross at {', '.join(f'{c:.1f}' for c in spread['single_runs'])}; "
            f"bootstrap over runs 90 %: [{b[0]:.2f}, {b[1]:.2f}]; the typical run's "
        f"{spread['typical_run']:.2f}" if b else "",
            flush=True,
        )
        if args.truth_only:
            return
        rows = []
        for seed in range(args.seed_base, args.seed_base + args.seeds):
            cap, wall = searched.get(seed) or search(args, seed, work)
            a = cap["answer"]
            lo, hi, c = a.get("lo"), a.get("hi"), a.get("capacity")
            covered = lo is not None and hi is not None and lo <= true_cap <= hi
            typ = spread.get("typical_run", math.nan)
            covered_typical = lo is not None and hi is not None and lo <= typ <= hi
            err = (c / true_cap - 1.0) if c else math.nan
            rows.append(
                {
                    "seed": seed,
                    "status": a["status"],
                    "capacity": c,
                    "lo": lo,
                    "hi": hi,
                    "covered": covered,
                    "covered_typical": covered_typical,
                    "error": err,
                    "spent_s": cap["spent_s"],
                    "wall_s": wall,
                    "probes": len(cap["probes"]),
                    "requests": cap["requests"],
                    "load_average": os.getloadavg()[0],
                    "probes_detail": [
                        {
                            "level": p["level"],
                            "verdict": p["verdict"],
                            "measurements": p["measurements"],
                            "repeats": [r["verdict"] for r in p.get("repeats", [])],
                            "terms": [(t["value"], t["lo"], t["hi"]) for t in p["terms"]],
                        }
                        for p in cap["probes"]
                    ],
                }
            )
            print(
                f"seed {seed}: {cap['text']} ({a['status']}, {len(cap['probes'])} probes, "
                f"{cap['spent_s']:.0f} s): error {err * 100:+.1f} %, "
                f"{'covers' if covered else 'MISSES'} the truth",
                flush=True,
            )
    n = len(rows)
    k = sum(r["covered"] for r in rows)
    lo, hi = wilson(k, n)
    k_typ = sum(r["covered_typical"] for r in rows)
    errs = sorted(abs(r["error"]) for r in rows if not math.isnan(r["error"]))
    fixed = fixed_ladder_seconds(args)
    spent = sorted(r["spent_s"] for r in rows)
    summary = {
        "truth": true_cap,
        "truth_margins": margins,
        "truth_spread": spread,
        "coverage": k / n if n else math.nan,
        "coverage_wilson95": [lo, hi],
        "coverage_typical_run": k_typ / n if n else math.nan,
        "median_abs_error": errs[len(errs) // 2] if errs else math.nan,
        "max_abs_error": errs[-1] if errs else math.nan,
        "median_search_s": spent[len(spent) // 2] if spent else math.nan,
        "fixed_ladder_s": fixed,
        "fixed_ladder_served_s": fixed_ladder_seconds(args, served=True),
        "fixed_ladder_served_cooldowns_s": fixed_ladder_seconds(args, True, True),
        "args": vars(args),
        "runs": rows,
    }
    print(
        f"coverage {k}/{n} = {100 * k / max(1, n):.0f} % [{100 * lo:.0f}, {100 * hi:.0f}] "
        f"(nominal at least {100 * args.confidence:.0f} % per bounding verdict; of the typical "
        f"run's capacity {k_typ}/{n}); "
        f"|error| median {100 * summary['median_abs_error']:.1f} %, "
        f"max {100 * summary['max_abs_error']:.1f} %; "
        f"search {summary['median_search_s']:.0f} s median against {fixed_ladder_text(args)} "
        f"({args.start:g}..{args.max:g} at {args.precision:g} % steps)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
