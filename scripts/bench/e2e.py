#!/usr/bin/env python3
"""End-to-end client benchmarks of `ladder run` against `ladder sim --zero-cost`.

The simulator runs pinned to one core (taskset -c 1), the client to the other (taskset -c 0),
so the client's single core is the limit. Each experiment is repeated --runs times and the
median is printed, with every run's figures. Standard library only; traffic only to
127.0.0.1. Output: a Markdown table per experiment on stdout, raw figures as JSON in --json.

  python3 scripts/bench/e2e.py throughput      # tokens/s at concurrency 64, 256, 1024
  python3 scripts/bench/e2e.py rate            # highest constant rate held within 1 %, lag p99 < 1 ms
  python3 scripts/bench/e2e.py memory          # peak RSS vs requests per rung -> bytes/request
  python3 scripts/bench/e2e.py soak --runs 1   # one real 10-minute rung: RSS over time
  python3 scripts/bench/e2e.py all --runs 3

CPU seconds come from wait4() on the client process (user + system, whole process: startup,
prompt synthesis, the rung and writing results); "hot CPU" is the tokio worker threads only
(dispatch, HTTP, SSE and chunk parsing), sampled from /proc every 50 ms.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "scenarios" / "tokenizers" / "ladder-tiny.json"
CLK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    """User + system CPU seconds of process `pid` so far (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def start_sim(ladder, chunk_tokens, core="1", seed=0, zero_cost=True, extra=()):
    """Starts `ladder sim` pinned to `core`; returns (process, base_url). `taskset` execs the
    simulator, so the process's pid is the simulator's (see proc_cpu_s)."""
    cmd = ["taskset", "-c", core, ladder, "sim", "--port", "0", "--seed", str(seed),
           "--chunk-tokens", str(chunk_tokens), *extra]
    if zero_cost:
        cmd.append("--zero-cost")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("listening on "):
        p.kill()
        raise SystemExit(f"simulator did not start: {line!r}")
    return p, line.split("listening on ", 1)[1]


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def scenario(url, name, *, input_tokens, output_tokens, n, rates, arrival="poisson",
             max_concurrency=None, cooldown="1s", seed=0, warmup=0):
    mc = "null" if max_concurrency is None else str(max_concurrency)
    return f"""version: 1
name: {name}
endpoint:
  base_url: {url}
  api: completions
  request_timeout: 120s
model: sim-model
tokenizer: {TOKENIZER}
workload:
  dataset: random
  input_tokens: {input_tokens}
  output_tokens: {output_tokens}
  range_ratio: 0.0
  ignore_eos: true
  requests_per_rung: {n}
  seed: {seed}
load:
  arrival: {arrival}
  rates: [{", ".join(str(r) for r in rates)}]
  cooldown: {cooldown}
  max_concurrency: {mc}
  warmup_requests: {warmup}
slo:
  ttft_ms: 100000
  tpot_ms: 100000
  max_error_rate: 1.0
"""


class Sampler(threading.Thread):
    """Polls /proc/PID: per-thread CPU (last value seen per thread) and RSS over time; with
    `watch`, also when the first rung's request lines start being written there (the rung has
    ended and been summarised), to place the rung in the RSS time series."""

    def __init__(self, pid, watch=None):
        super().__init__(daemon=True)
        self.pid, self.threads, self.rss, self.done = pid, {}, [], False
        self.cpu = []  # (elapsed s, whole-process CPU s so far)
        self.watch, self.write_started = watch, None

    def run(self):
        t0 = time.monotonic()
        while not self.done:
            if self.watch is not None and self.write_started is None:
                if any(self.watch.rglob("*requests_rate_*")):
                    self.write_started = time.monotonic() - t0
            try:
                for tid in os.listdir(f"/proc/{self.pid}/task"):
                    with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                        s = f.read()
                    name = s[s.index("(") + 1:s.rindex(")")]
                    fields = s[s.rindex(")") + 2:].split()
                    self.threads[tid] = (name, (int(fields[11]) + int(fields[12])) / CLK)
                self.cpu.append((time.monotonic() - t0, proc_cpu_s(self.pid)))
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.rss.append((time.monotonic() - t0, int(line.split()[1]) * 1024))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
            time.sleep(0.05)

    def cpu_between(self, t0, t1):
        """Whole-process CPU seconds spent between elapsed times t0 and t1 (nearest samples):
        with a one-thread runtime (one core) the work is on the main thread, not on
        "tokio-rt-worker" threads."""
        if not self.cpu:
            return float("nan")
        at = lambda t: min(self.cpu, key=lambda s: abs(s[0] - t))[1]
        return at(t1) - at(t0)

    def hot_cpu(self):
        return sum(c for n, c in self.threads.values() if n.startswith("tokio-rt-worker"))


def run_measured(ladder, scen_text, core="0"):
    """Like run_ladder, but with wait4() rusage (CPU and peak RSS of the whole process)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.yaml"
        path.write_text(scen_text)
        out_path = Path(d) / "out.json"
        t0 = time.monotonic()
        with open(out_path, "w") as out_f:
            pid = os.posix_spawnp("taskset", ["taskset", "-c", core, ladder, "run", str(path),
                                              "--json", "--out", str(Path(d) / "results")],
                                  os.environ, file_actions=[
                                      (os.POSIX_SPAWN_DUP2, out_f.fileno(), 1),
                                      (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
            sampler = Sampler(pid, watch=Path(d) / "results")
            sampler.start()
            _, status, ru = os.wait4(pid, 0)
        wall = time.monotonic() - t0
        sampler.done = True
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"ladder run failed: exit {os.waitstatus_to_exitcode(status)}")
        res = json.loads(out_path.read_text())
    return res["rungs"], {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "peak_rss_bytes": ru.ru_maxrss * 1024,
        "hot_cpu_s": sampler.hot_cpu(),
        "rss_samples": sampler.rss,
        "write_started_s": sampler.write_started,
        "sampler": sampler,
    }


def fit_line(points):
    """Least-squares (slope, intercept) of (x, y) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return slope, my - slope * mx


def rss_in_rung(samples, write_started, rung_s, completed, trim=0.1):
    """Splits a single-rung run's RSS time series into its phases. The rung is taken as the
    `rung_s` seconds before its request lines start being written (summarising in between
    takes milliseconds); its first and last `trim` fraction are left out of the fit (ramp-up
    to full concurrency, draining). Completions arrive at a steady rate in a saturated rung, so
    RSS growth per second over completions per second is the memory each stored request
    adds; if it matches the records' own size, memory is flat apart from the records."""
    if write_started is None or not samples or rung_s <= 0 or completed <= 0:
        return None
    start, end = write_started - rung_s, write_started
    lo, hi = start + trim * rung_s, end - trim * rung_s
    inside = [(t, b) for t, b in samples if lo <= t <= hi]
    if len(inside) < 5:
        return None
    slope, icpt = fit_line(inside)
    resid = [b - (icpt + slope * t) for t, b in inside]
    before_end = [b for t, b in samples if t <= end]
    return {
        "rung_start_s": start,
        "rss_fit_samples": len(inside),
        "rss_slope_mb_per_s": slope / 2**20,
        "rss_bytes_per_stored_request": slope * rung_s / completed,
        "rss_at_rung_start_mb": (icpt + slope * start) / 2**20,
        "rss_at_rung_end_mb": (before_end[-1] if before_end else 0) / 2**20,
        "rss_fit_max_residual_mb": max(abs(r) for r in resid) / 2**20,
        "rss_peak_after_rung_mb": max((b for t, b in samples if t >= end), default=0) / 2**20,
    }


def lat(rung, key, stat):
    """A latency statistic in ms from a rung summary (vLLM-style flat keys)."""
    return rung[f"{stat}_{key}_ms"]


def med(xs):
    return statistics.median(xs)


def exp_throughput(args):
    rows = []
    for conc in args.concurrency:
        n = max(args.min_requests, 4 * conc)
        runs = []
        for i in range(args.runs):
            sim, url = start_sim(args.ladder, args.chunk_tokens)
            try:
                text = scenario(url, f"bench-tput-c{conc}", input_tokens=32,
                                output_tokens=args.output_tokens, n=n, rates=[1000000],
                                max_concurrency=conc, seed=i)
                rungs, res = run_measured(args.ladder, text)
            finally:
                stop(sim)
            r = rungs[0]
            tokens = r["total_output_tokens"]
            runs.append({
                "tokens_per_s": r["output_throughput"],
                "requests": r["completed"],
                "failed": r["failed"],
                "tokens": tokens,
                "rung_s": r["duration"],
                "max_concurrent": r["max_concurrent_requests"],
                "cpu_s": res["cpu_s"],
                "hot_cpu_s": res["hot_cpu_s"],
                "cpu_s_per_mtok": res["cpu_s"] / tokens * 1e6,
                "hot_cpu_s_per_mtok": res["hot_cpu_s"] / tokens * 1e6,
                "peak_rss_mb": res["peak_rss_bytes"] / 2**20,
                "wall_s": res["wall_s"],
            })
            print(f"  c={conc} run {i}: {runs[-1]['tokens_per_s']:,.0f} tok/s "
                  f"({r['failed']} failed), cpu {res['cpu_s']:.2f} s "
                  f"(hot {res['hot_cpu_s']:.2f} s), rss {runs[-1]['peak_rss_mb']:.1f} MiB",
                  file=sys.stderr)
        rows.append({"concurrency": conc, "requests": n, "runs": runs,
                     "median": {k: med([x[k] for x in runs]) for k in runs[0]}})
    print(f"\n### Streamed tokens/s (chunk_tokens {args.chunk_tokens}, output "
          f"{args.output_tokens} tokens, median of {args.runs})\n")
    print("| concurrency | requests | tokens/s | rung s | client CPU s / M tokens | hot-path "
          "CPU s / M tokens | peak RSS MiB | failed |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        m = row["median"]
        print(f"| {row['concurrency']} | {row['requests']} | {m['tokens_per_s']:,.0f} | "
              f"{m['rung_s']:.2f} | {m['cpu_s_per_mtok']:.2f} | {m['hot_cpu_s_per_mtok']:.2f} | "
              f"{m['peak_rss_mb']:.1f} | {m['failed']:.0f} |")
    return rows


def rung_cpu(res, duration):
    """The client's CPU seconds over its one rung: the whole process, between the rung's
    start and its end (when its request lines start being written); the tokio workers' CPU
    when the rung could not be placed."""
    end = res["write_started_s"]
    if end is None:
        return res["hot_cpu_s"]
    return res["sampler"].cpu_between(end - duration, end)


def exp_rate(args):
    """Highest rate held. Each rate is its own `ladder run` (one rung), so the CPU of each
    process over that run belongs to that rate: the client's tokio workers ("hot") and the
    whole simulator process, each as a share of the rung's duration (1.0 = a full core)."""
    rows = {}
    for i in range(args.runs):
        for rate in args.rates:
            sim, url = start_sim(args.sim or args.ladder, 1)
            try:
                sim_cpu0 = proc_cpu_s(sim.pid)
                text = scenario(url, "bench-rate", input_tokens=32,
                                output_tokens=args.short_tokens, n=args.rate_requests,
                                rates=[rate], arrival=args.arrival, cooldown="500ms", seed=i)
                rungs, res = run_measured(args.ladder, text)
                sim_cpu = proc_cpu_s(sim.pid) - sim_cpu0
            finally:
                stop(sim)
            r = rungs[0]
            rows.setdefault(r["rate"], []).append({
                "achieved": r["achieved_rate"],
                "ratio": r["achieved_rate"] / r["rate"],
                "lag_p50_ms": lat(r, "dispatch_lag", "median"),
                "lag_p99_ms": lat(r, "dispatch_lag", "p99"),
                "lag_max_ms": lat(r, "dispatch_lag", "max"),
                "ttft_p99_ms": lat(r, "ttft", "p99"),
                "failed": r["failed"],
                "client_core": rung_cpu(res, r["duration"]) / r["duration"],
                "sim_core": sim_cpu / r["duration"],
            })
            x = rows[r["rate"]][-1]
            print(f"  run {i} rate {r['rate']}: achieved {x['achieved']:.1f} lag p99 "
                  f"{x['lag_p99_ms']:.3f} ms; client {x['client_core']:.2f} core, "
                  f"sim {x['sim_core']:.2f} core", file=sys.stderr)
    print(f"\n### Request rate ({args.arrival} arrival, {args.short_tokens} output tokens, "
          f"{args.rate_requests} requests per rung, median of {args.runs})\n")
    print("| target req/s | achieved req/s | achieved / target | lag p50 ms | lag p99 ms | "
          "lag max ms | client, cores | sim, cores | held (±1 %, p99 < 1 ms) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    out = []
    for rate, runs in sorted(rows.items()):
        m = {k: med([x[k] for x in runs]) for k in runs[0]}
        held = abs(m["ratio"] - 1) <= 0.01 and m["lag_p99_ms"] < 1.0 and m["failed"] == 0
        print(f"| {rate:g} | {m['achieved']:.1f} | {m['ratio']:.4f} | {m['lag_p50_ms']:.3f} | "
              f"{m['lag_p99_ms']:.3f} | {m['lag_max_ms']:.3f} | {m['client_core']:.2f} | "
              f"{m['sim_core']:.2f} | {'yes' if held else 'no'} |")
        out.append({"rate": rate, "runs": runs, "median": m, "held": held})
    return out


def exp_memory(args):
    rows = []
    for n in args.memory_requests:
        runs = []
        for i in range(args.runs):
            sim, url = start_sim(args.ladder, args.chunk_tokens)
            try:
                text = scenario(url, "bench-mem", input_tokens=32, output_tokens=256, n=n,
                                rates=[1000000], max_concurrency=256, seed=i)
                rungs, res = run_measured(args.ladder, text)
            finally:
                stop(sim)
            runs.append({"peak_rss_mb": res["peak_rss_bytes"] / 2**20,
                         "tokens": rungs[0]["total_output_tokens"],
                         "cpu_s": res["cpu_s"],
                         "rung_s": rungs[0]["duration"]})
            series = rss_in_rung(res["rss_samples"], res["write_started_s"],
                                 rungs[0]["duration"], rungs[0]["completed"])
            if series:
                runs[-1].update(series)
            print(f"  n={n} run {i}: rss {runs[-1]['peak_rss_mb']:.1f} MiB"
                  + (f", in rung {series['rss_bytes_per_stored_request']:,.0f} B per stored "
                     f"request" if series else ", rung not located in the RSS series"),
                  file=sys.stderr)
        keys = set.intersection(*(set(x) for x in runs))
        rows.append({"requests": n, "runs": runs,
                     "median": {k: med([x[k] for x in runs]) for k in keys}})
    print(f"\n### Peak RSS vs requests per rung (256 output tokens, concurrency 256, median of "
          f"{args.runs})\n")
    print("| requests | tokens | peak RSS MiB | rung s | RSS at rung start MiB | RSS growth in "
          "rung, B per stored request | RSS at rung end MiB | peak after rung MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    na = float("nan")
    for row in rows:
        m = row["median"]
        print(f"| {row['requests']} | {m['tokens']:.0f} | {m['peak_rss_mb']:.1f} | "
              f"{m['rung_s']:.1f} | {m.get('rss_at_rung_start_mb', na):.1f} | "
              f"{m.get('rss_bytes_per_stored_request', na):,.0f} | "
              f"{m.get('rss_at_rung_end_mb', na):.1f} | {m.get('rss_peak_after_rung_mb', na):.1f} |")
    a, b = rows[0], rows[-1]
    slope = ((b["median"]["peak_rss_mb"] - a["median"]["peak_rss_mb"]) * 2**20
             / (b["requests"] - a["requests"]))
    print(f"\nslope: {slope:,.0f} bytes of peak RSS per stored request "
          f"({slope / 256:.1f} bytes per output token)")
    return {"rows": rows, "bytes_per_request": slope}


def exp_soak(args):
    """One long constant-rate rung (default 100 req/s for 600 s, 256 output tokens): RSS over
    wall time. Flat means the only growth is the stored records, i.e. the fitted growth per
    completed request matches what `memory` measures, and the fit's residuals stay small."""
    runs = []
    n = int(args.soak_rate * args.soak_seconds)
    for i in range(args.runs):
        sim, url = start_sim(args.ladder, args.chunk_tokens)
        try:
            text = scenario(url, "bench-soak", input_tokens=32, output_tokens=256, n=n,
                            rates=[args.soak_rate], arrival="constant", seed=i)
            rungs, res = run_measured(args.ladder, text)
        finally:
            stop(sim)
        r = rungs[0]
        series = rss_in_rung(res["rss_samples"], res["write_started_s"], r["duration"],
                             r["completed"]) or {}
        start = series.get("rung_start_s")
        tenths = []
        if start is not None:
            # RSS at each tenth of the rung, with the requests completed by then (constant
            # arrivals: rate x elapsed, less the requests in flight, which are few here).
            for k in range(11):
                t = start + r["duration"] * k / 10
                near = min(res["rss_samples"], key=lambda s: abs(s[0] - t))
                tenths.append({"elapsed_s": t - start, "rss_mb": near[1] / 2**20,
                                "completed_approx": min(r["completed"],
                                                        int(args.soak_rate * (t - start)))})
        runs.append({"requests": n, "completed": r["completed"], "failed": r["failed"],
                     "rung_s": r["duration"], "tokens": r["total_output_tokens"],
                     "achieved_rate": r["achieved_rate"], "cpu_s": res["cpu_s"],
                     "peak_rss_mb": res["peak_rss_bytes"] / 2**20, "series": tenths,
                     **series})
        x = runs[-1]
        print(f"\n### Soak: {args.soak_rate:g} req/s x {args.soak_seconds:g} s, 256 output "
              f"tokens, run {i}\n")
        print(f"{x['completed']} completed, {x['failed']} failed in {x['rung_s']:.1f} s; "
              f"client CPU {x['cpu_s']:.1f} s; peak RSS {x['peak_rss_mb']:.1f} MiB")
        if tenths:
            print(f"fit over the middle 80 %: {x['rss_bytes_per_stored_request']:,.0f} B per "
                  f"completed request, largest residual {x['rss_fit_max_residual_mb']:.2f} MiB\n")
            print("| elapsed s | completed (approx.) | RSS MiB |")
            print("| ---: | ---: | ---: |")
            for m in tenths:
                print(f"| {m['elapsed_s']:.0f} | {m['completed_approx']} | {m['rss_mb']:.1f} |")
        else:
            print("the rung was not located in the RSS series")
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=["throughput", "rate", "memory", "soak", "all"])
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chunk-tokens", type=int, default=1)
    ap.add_argument("--output-tokens", type=int, default=1024)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--min-requests", type=int, default=2000)
    ap.add_argument("--rates", type=float, nargs="+", default=[500, 1000, 2000, 3000, 4000])
    ap.add_argument("--rate-requests", type=int, default=10000)
    ap.add_argument("--short-tokens", type=int, default=8)
    ap.add_argument("--arrival", choices=["constant", "poisson"], default="constant",
                    help="arrivals of the rate experiment")
    ap.add_argument("--sim", help="binary serving `ladder sim` (default: --ladder)")
    ap.add_argument("--memory-requests", type=int, nargs="+", default=[5000, 20000, 40000])
    ap.add_argument("--soak-rate", type=float, default=100)
    ap.add_argument("--soak-seconds", type=float, default=600)
    ap.add_argument("--json", help="write raw figures here")
    args = ap.parse_args()
    if not Path(args.ladder).exists():
        raise SystemExit(f"{args.ladder} not found: run `cargo build --release` first")
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "nproc": os.cpu_count(), "args": vars(args)}
    if args.experiment in ("throughput", "all"):
        results["throughput"] = exp_throughput(args)
    if args.experiment in ("rate", "all"):
        results["rate"] = exp_rate(args)
    if args.experiment in ("memory", "all"):
        results["memory"] = exp_memory(args)
    if args.experiment == "soak":
        results["soak"] = exp_soak(args)
    if args.json:
        for row in results.get("throughput", []):
            for r in row["runs"]:
                r.pop("rss_samples", None)
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
