#!/usr/bin/env python3
"""A/B of two ladder binaries on one e2e.py experiment, runs interleaved (A, B, A, B, ...).

Interleaving puts both builds under the same machine conditions, so the ratio B / A is
meaningful even on a shared machine where absolute figures drift. Prints, per rung or
concurrency, the median of each build, every run's value, and the ratio of medians.

  cp target/release/ladder /tmp/ladder-before      # build A, then rebuild B
  python3 scripts/bench/ab.py rate --a /tmp/ladder-before --b target/release/ladder --runs 5
  python3 scripts/bench/ab.py throughput --a ... --b ... --concurrency 256 --runs 3

Standard library only; traffic only to 127.0.0.1 (through e2e.py's simulator).
"""

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e  # noqa: E402

# (row key, figures to compare) per experiment.
FIGURES = {
    "rate": ("rate", ["achieved", "ratio", "lag_p50_ms", "lag_p99_ms", "lag_max_ms",
                      "ttft_p99_ms", "client_core", "sim_core"]),
    "throughput": ("concurrency", ["tokens_per_s", "cpu_s_per_mtok", "hot_cpu_s_per_mtok",
                                   "peak_rss_mb"]),
}


def one_run(experiment, args, binary, sim, seed_offset):
    """One run of an e2e.py experiment with `binary`; its stdout table is swallowed."""
    run_args = argparse.Namespace(**vars(args))
    run_args.ladder, run_args.runs = binary, 1
    run_args.sim = sim
    fn = {"rate": e2e.exp_rate, "throughput": e2e.exp_throughput}[experiment]
    with contextlib.redirect_stdout(io.StringIO()):
        rows = fn(run_args)
    key = FIGURES[experiment][0]
    return {row[key]: row["runs"][0] for row in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=sorted(FIGURES))
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chunk-tokens", type=int, default=1)
    ap.add_argument("--output-tokens", type=int, default=1024)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--min-requests", type=int, default=2000)
    ap.add_argument("--rates", type=float, nargs="+", default=[1000, 2000, 3000, 4000])
    ap.add_argument("--rate-requests", type=int, default=5000)
    ap.add_argument("--short-tokens", type=int, default=8)
    ap.add_argument("--arrival", choices=["constant", "poisson"], default="constant")
    ap.add_argument("--sim", help="one simulator binary for both builds (default: each build "
                    "serves its own simulator)")
    ap.add_argument("--sim-a", help="simulator binary of build A (default: --sim or --a)")
    ap.add_argument("--sim-b", help="simulator binary of build B (default: --sim or --b)")
    ap.add_argument("--json", help="write raw figures here")
    args = ap.parse_args()
    for b in (args.a, args.b):
        if not Path(b).exists():
            raise SystemExit(f"{b} not found")

    runs = {"a": [], "b": []}
    for i in range(args.runs):
        for which in ("a", "b"):
            print(f"run {i} build {which.upper()}", file=sys.stderr)
            sim = getattr(args, f"sim_{which}") or args.sim or getattr(args, which)
            runs[which].append(one_run(args.experiment, args, getattr(args, which), sim, i))

    key, figures = FIGURES[args.experiment]
    print(f"\n### A/B {args.experiment}: A = {args.a}, B = {args.b}, "
          f"{args.runs} interleaved runs each, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"| {key} | figure | A median | B median | B / A | A runs | B runs |")
    print("| ---: | --- | ---: | ---: | ---: | --- | --- |")
    for row in sorted(runs["a"][0]):
        for fig in figures:
            a = [r[row][fig] for r in runs["a"]]
            b = [r[row][fig] for r in runs["b"]]
            ma, mb = statistics.median(a), statistics.median(b)
            ratio = f"{mb / ma:.3f}" if ma else "n/a"
            print(f"| {row:g} | {fig} | {ma:,.4g} | {mb:,.4g} | {ratio} | "
                  f"{', '.join(f'{x:.4g}' for x in a)} | {', '.join(f'{x:.4g}' for x in b)} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1,
                                              default=str))


if __name__ == "__main__":
    main()
