#!/usr/bin/env python3
"""Ladder's hot paths for two builds, run interleaved (A, B, A, B, ...), medians and ratios.

The paths (each can be left out with --skip):
  compare  `ladder compare` of two 5-rung synthetic runs of --compare-requests a rung
           (examples/bigrun, each build's own, from a template run of its own): elapsed,
           CPU and peak RSS of the process.
  rung     one open-loop rung of --rung-requests at --rung-rate req/s against the built-in
           simulator (`base_url: sim`, in process): the process's CPU and peak RSS, and the
           rung's dispatch lag (reported, not guarded: it is the noisiest figure).
  setup    one rung of --setup-requests with --tokenizer (a byte-level BPE such as
           SmolLM2's makes prompt synthesis the cost): wall time outside the rung, i.e.
           the process's elapsed time minus the rung's measured `duration`.

Exits 1 when a guarded figure's median for B is more than --max-ratio times A's (default
1.25), after printing every figure; 2 on a usage or run error. Used by scripts/bench/ab.sh,
which builds the two binaries; usable alone on any two:

  python3 scripts/bench/hotpaths.py --a /tmp/ladder-before --b target/release/ladder \
      --bigrun-a /tmp/bigrun-before --bigrun-b target/release/examples/bigrun

Standard library only; traffic only to 127.0.0.1 (the in-process simulator).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SMOLLM2 = Path.home() / ".cache/ladder/smollm2-0.1.2/tokenizer.json"
TINY = REPO / "scenarios/tokenizers/ladder-tiny.json"

# The quickstart's gate rules, so `compare` makes its 20 checks; rungs short, so the template
# run takes seconds. The synthetic folders replace every request anyway.
TEMPLATE = """version: 1
name: hot
endpoint: {{ base_url: sim, api: completions, request_timeout: 30s }}
model: ladder-sim
tokenizer: {tok}
workload: {{ dataset: random, input_tokens: 32, output_tokens: 8, range_ratio: 0.0,
            ignore_eos: true, requests_per_rung: 20, seed: 0 }}
load: {{ arrival: poisson, baseline_rate: 50, rates: [100, 150, 200, 250], cooldown: 0s }}
slo: {{ ttft_ms: 1000, tpot_ms: 50, max_error_rate: 0.05 }}
gate:
  - {{ metric: request_throughput, max_decrease: 15% }}
  - {{ metric: median_tpot_ms, max_increase: 10% }}
  - {{ metric: median_ttft_ms, max_increase: 25%, min_change: 10ms }}
  - {{ metric: error_rate, max: 0.15 }}
sim: {{ seed: 0, zero_cost: true }}
"""

ONE_RUNG = """version: 1
name: {name}
endpoint: {{ base_url: sim, api: completions, request_timeout: 30s }}
model: ladder-sim
tokenizer: {tok}
workload: {{ dataset: random, input_tokens: {inp}, output_tokens: {out}, range_ratio: 0.0,
            ignore_eos: true, requests_per_rung: {n}, seed: 0 }}
load: {{ arrival: poisson, rates: [{rate}], cooldown: 0s }}
slo: {{ ttft_ms: 1000, tpot_ms: 50, max_error_rate: 0.05 }}
sim: {{ seed: 0, zero_cost: true }}
"""


def timed(cmd, cwd=None):
    """Runs cmd; returns (exit code, elapsed s, CPU s (user + sys), peak RSS MB, stdout)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, ru = os.wait4(proc.pid, 0)
        elapsed = time.monotonic() - start
        out.seek(0)
        text = out.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    return code, elapsed, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, text


def must(cmd, what):
    code, _, _, _, text = timed(cmd)
    if code != 0:
        sys.exit(f"{what} failed ({code}): {' '.join(map(str, cmd))}\n{text[-2000:]}")


def run_folder(out):
    """The one run folder `ladder run --out OUT` wrote."""
    folders = [p for p in out.glob("*/*") if (p / "run.json").is_file()]
    if len(folders) != 1:
        sys.exit(f"expected one run folder under {out}, found {folders}")
    return folders[0]


def prepare_compare(side, binary, bigrun, work, n, tok):
    """Template run and the two synthetic folders (1.0 and 1.1 slower) for one build."""
    d = work / f"compare-{side}"
    d.mkdir()
    scen = d / "hot.yaml"
    scen.write_text(TEMPLATE.format(tok=tok))
    must([binary, "run", scen, "--out", d / "tpl"], f"template run ({side})")
    tpl = run_folder(d / "tpl")
    for s in ("1.0", "1.1"):
        must([bigrun, tpl, d / f"n-{s}", str(n), s, "1", "16"], f"bigrun {s} ({side})")
    return [binary, "compare", d / "n-1.0", d / "n-1.1"]


def compare_once(cmd):
    code, elapsed, cpu, rss, text = timed(cmd)
    # compare exits 1 on a failed check (the 10 % slower candidate fails some): not an error.
    if code not in (0, 1):
        sys.exit(f"compare failed ({code}):\n{text[-2000:]}")
    return {"elapsed_s": elapsed, "cpu_s": cpu, "rss_mb": rss, "exit": code}


def one_rung_once(binary, scen, out):
    shutil.rmtree(out, ignore_errors=True)
    code, elapsed, cpu, rss, text = timed([binary, "run", scen, "--out", out])
    if code != 0:
        sys.exit(f"run failed ({code}): {scen}\n{text[-2000:]}")
    folder = run_folder(out)
    results = list(folder.glob("result_*.json"))
    if len(results) != 1:
        sys.exit(f"expected one rung result in {folder}")
    r = json.loads(results[0].read_text())
    row = {
        "elapsed_s": elapsed,
        "cpu_s": cpu,
        "rss_mb": rss,
        "outside_rung_s": elapsed - float(r["duration"]),
        "achieved_rate": float(r["achieved_rate"]),
        "lag_p99_ms": float(r.get("p99_dispatch_lag_ms", r.get("max_dispatch_lag_ms", 0.0))),
    }
    shutil.rmtree(out, ignore_errors=True)
    return row


# (path, figure, guarded): a guarded figure fails the run when B / A > --max-ratio.
FIGURES = [
    ("compare", "elapsed_s", True), ("compare", "cpu_s", True), ("compare", "rss_mb", True),
    ("rung", "cpu_s", True), ("rung", "rss_mb", True), ("rung", "achieved_rate", False),
    ("rung", "lag_p99_ms", False),
    ("setup", "outside_rung_s", True), ("setup", "cpu_s", False), ("setup", "rss_mb", False),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="baseline ladder binary")
    ap.add_argument("--b", required=True, help="candidate ladder binary")
    ap.add_argument("--bigrun-a", help="A's examples/bigrun (needed for compare)")
    ap.add_argument("--bigrun-b", help="B's examples/bigrun (needed for compare)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each path per build (3)")
    ap.add_argument("--max-ratio", type=float, default=1.25)
    ap.add_argument("--skip", nargs="*", default=[], choices=["compare", "rung", "setup"])
    ap.add_argument("--compare-requests", type=int, default=200_000)
    ap.add_argument("--rung-requests", type=int, default=20_000)
    ap.add_argument("--rung-rate", type=float, default=5_000)
    ap.add_argument("--setup-requests", type=int, default=50_000)
    ap.add_argument("--setup-rate", type=float, default=50_000)
    ap.add_argument("--tokenizer", type=Path,
                    help=f"setup's tokenizer (default {SMOLLM2} if present, else ladder-tiny)")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    args = ap.parse_args()
    paths = [p for p in ("compare", "rung", "setup") if p not in args.skip]
    if "compare" in paths and not (args.bigrun_a and args.bigrun_b):
        ap.error("compare needs --bigrun-a and --bigrun-b (or --skip compare)")
    setup_tok = args.tokenizer or (SMOLLM2 if SMOLLM2.is_file() else TINY)
    work = Path(tempfile.mkdtemp(prefix="ladder-hot-", dir=args.work))
    sides = {"A": Path(args.a).resolve(), "B": Path(args.b).resolve()}
    print(f"A = {sides['A']}\nB = {sides['B']}\nwork: {work}; runs {args.runs} each, "
          f"interleaved; max ratio {args.max_ratio}; setup tokenizer {setup_tok}", flush=True)
    jobs = {}  # (path, side) -> callable giving one row
    try:
        for side, binary in sides.items():
            if "compare" in paths:
                bigrun = Path(args.bigrun_a if side == "A" else args.bigrun_b).resolve()
                cmd = prepare_compare(side, binary, bigrun, work, args.compare_requests, TINY)
                jobs[("compare", side)] = lambda cmd=cmd: compare_once(cmd)
            for path, n, rate, tok, inp, out in (
                ("rung", args.rung_requests, args.rung_rate, TINY, 32, 16),
                ("setup", args.setup_requests, args.setup_rate, setup_tok, 256, 4),
            ):
                if path not in paths:
                    continue
                scen = work / f"{path}-{side}.yaml"
                scen.write_text(ONE_RUNG.format(name=path, tok=tok, n=n, rate=rate,
                                                inp=inp, out=out))
                dest = work / f"{path}-{side}-out"
                jobs[(path, side)] = lambda b=binary, s=scen, d=dest: one_rung_once(b, s, d)
        rows = {key: [] for key in jobs}
        for i in range(args.runs):
            for path in paths:
                # Alternate which build goes first, so neither always runs on a warm cache.
                for side in ("AB" if i % 2 == 0 else "BA"):
                    rows[(path, side)].append(jobs[(path, side)]())
                print(f"run {i + 1}/{args.runs}: {path} done", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(rows, paths, args.max_ratio)


def report(rows, paths, max_ratio):
    print(f"\n{'path':8} {'figure':15} {'A median':>10} {'B median':>10} {'B/A':>6}  "
          f"A runs | B runs")
    slower = []
    for path, fig, guarded in FIGURES:
        if path not in paths:
            continue
        a = [r[fig] for r in rows[(path, "A")]]
        b = [r[fig] for r in rows[(path, "B")]]
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = mb / ma if ma > 0 else float("inf") if mb > 0 else 1.0
        flag = ""
        if guarded and ratio > max_ratio:
            flag = "  SLOWER"
            slower.append(f"{path} {fig}")
        runs = " ".join(f"{x:.2f}" for x in a) + " | " + " ".join(f"{x:.2f}" for x in b)
        print(f"{path:8} {fig:15} {ma:10.2f} {mb:10.2f} {ratio:6.2f}  {runs}{flag}")
    if "compare" in paths:
        ea = {r["exit"] for r in rows[("compare", "A")]}
        eb = {r["exit"] for r in rows[("compare", "B")]}
        print(f"compare exit codes: A {sorted(ea)}, B {sorted(eb)}"
              + ("" if ea == eb else "  (verdicts differ)"))
    if slower:
        print(f"FAIL: B slower than {max_ratio}x A on: {', '.join(slower)}")
        return 1
    print(f"ok: no guarded figure of B above {max_ratio}x A")
    return 0


if __name__ == "__main__":
    sys.exit(main())
