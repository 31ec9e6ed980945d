#!/usr/bin/env python3
"""A time-compressed soak: one rung run for a duration (`load.duration`) against
`ladder sim --zero-cost`, with the client's RSS sampled every second.

The simulator runs pinned to one core (taskset -c 1), the client to the other (taskset -c 0),
as in e2e.py. The rung is open loop (Poisson) at --rate req/s with --output-tokens tokens a
request, one token per chunk, for --minutes; the client folds its records as they arrive
(docs/soak.md), so its RSS should be flat after the first minute whatever the number of
requests done. Standard library only; traffic only to 127.0.0.1.

  cargo build --release
  python3 scripts/bench/soak.py --rate 1000 --minutes 5 --json /tmp/soak.json

Prints a Markdown table (RSS every 30 s), peak RSS, growth after the first minute, the rung's
own figures (completed, achieved rate, dispatch lag p99, client CPU), and an ASCII plot.
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import ROOT, TOKENIZER, start_sim, stop  # noqa: E402


def scenario(url, rate, minutes, output_tokens, interval):
    return f"""version: 1
name: bench-soak
endpoint:
  base_url: {url}
  api: completions
  request_timeout: 120s
model: sim-model
tokenizer: {TOKENIZER}
workload:
  dataset: random
  input_tokens: 32
  output_tokens: {output_tokens}
  range_ratio: 0.0
  ignore_eos: true
  prompt_pool: 1000
  seed: 0
load:
  arrival: poisson
  rates: [{rate}]
  duration: {minutes}m
  interval: {interval}
  cooldown: 0s
slo:
  ttft_ms: 100000
  max_error_rate: 1.0
"""


class RssSampler(threading.Thread):
    """VmRSS of `pid` every `every` seconds, as (seconds since start, bytes), and its open
    file descriptors (about one per connection in flight or idle in the pool) at the same
    instants."""

    def __init__(self, pid, every=1.0):
        super().__init__(daemon=True)
        self.pid, self.every, self.samples, self.fds, self.done = pid, every, [], [], False

    def run(self):
        t0 = time.monotonic()
        while not self.done:
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.samples.append((time.monotonic() - t0,
                                                 int(line.split()[1]) * 1024))
                            self.fds.append(len(os.listdir(f"/proc/{self.pid}/fd")))
            except (FileNotFoundError, ProcessLookupError):
                pass
            time.sleep(self.every)


def ascii_plot(samples, width=60, height=12):
    width = max(10, min(width, len(samples)))
    """RSS (MiB) over time (s) as rows of text."""
    if not samples:
        return ""
    t_max = samples[-1][0] or 1.0
    hi = max(r for _, r in samples) / 2**20
    lo = 0.0
    cols = [[] for _ in range(width)]
    for t, r in samples:
        cols[min(width - 1, int(t / t_max * (width - 1)))].append(r / 2**20)
    rows = []
    for h in range(height, 0, -1):
        level = lo + (hi - lo) * h / height
        line = "".join("#" if c and max(c) >= level else " " for c in cols)
        rows.append(f"{level:7.1f} MiB |{line}")
    rows.append(" " * 12 + "+" + "-" * width)
    rows.append(" " * 12 + f"0 s{' ' * (width - 10)}{t_max:.0f} s")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--interval", default="10s")
    ap.add_argument("--json", help="write the raw figures and samples here")
    args = ap.parse_args()

    sim, url = start_sim(args.ladder, chunk_tokens=1)
    try:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "soak.yaml"
            path.write_text(scenario(url, args.rate, args.minutes, args.output_tokens,
                                     args.interval))
            out_path = Path(d) / "out.json"
            err_path = Path(d) / "err.txt"
            t0 = time.monotonic()
            with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
                pid = os.posix_spawnp("taskset", ["taskset", "-c", "0", args.ladder, "run",
                                                  str(path), "--out",
                                                  str(Path(d) / "results")],
                                      os.environ, file_actions=[
                                          (os.POSIX_SPAWN_DUP2, out_f.fileno(), 1),
                                          (os.POSIX_SPAWN_DUP2, err_f.fileno(), 2)])
                sampler = RssSampler(pid)
                sampler.start()
                _, status, ru = os.wait4(pid, 0)
            wall = time.monotonic() - t0
            sampler.done = True
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"ladder run failed: {err_path.read_text()[-2000:]}")
            rung = json.loads(next((Path(d) / "results").rglob("result_rate_*.json"))
                              .read_text())
            live = [l for l in err_path.read_text().splitlines() if " / " in l and "req/s," in l]
    finally:
        stop(sim)

    samples = sampler.samples
    mib = lambda b: b / 2**20  # noqa: E731
    peak = max(r for _, r in samples)
    after = [(t, r) for t, r in samples if t >= 60.0]
    at_1min = after[0][1] if after else float("nan")
    end = samples[-1][1]
    growth = max(r for _, r in after) - at_1min if after else float("nan")
    print(f"\n### Soak: {args.rate:g} req/s x {args.minutes:g} min, {args.output_tokens} output "
          f"tokens, one token a chunk ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")
    print(f"{rung['completed']:,} completed, {rung['failed']} failed in {rung['duration']:.1f} s "
          f"(achieved {rung['achieved_rate']:.1f} req/s, dispatch lag p99 "
          f"{rung['p99_dispatch_lag_ms']:.2f} ms, p50 TTFT {rung['median_ttft_ms']:.2f} ms); "
          f"wall {wall:.0f} s; client CPU {ru.ru_utime + ru.ru_stime:.1f} s")
    print(f"peak RSS {mib(peak):.1f} MiB (wait4 max RSS {ru.ru_maxrss / 1024:.1f} MiB); "
          f"RSS at 60 s {mib(at_1min):.1f} MiB, at the end {mib(end):.1f} MiB; largest rise "
          f"after the first minute {mib(growth):+.1f} MiB\n")
    print(f"max_concurrent_requests {rung['max_concurrent_requests']}, "
          f"max dispatch lag {rung['max_dispatch_lag_ms']:.0f} ms\n")
    print("| elapsed s | requests done (≈ rate × s) | RSS MiB | open fds |")
    print("| ---: | ---: | ---: | ---: |")
    mark = 0.0
    while mark <= samples[-1][0]:
        i = min(range(len(samples)), key=lambda k: abs(samples[k][0] - mark))
        t, r = samples[i]
        print(f"| {t:.0f} | {int(min(t, args.minutes * 60) * args.rate):,} | {mib(r):.1f} | "
              f"{sampler.fds[i] if i < len(sampler.fds) else ''} |")
        mark += 30.0
    print("\n```")
    print(ascii_plot(samples))
    print("```\n")
    if live:
        print("live lines (first, last):")
        print(live[0])
        print(live[-1])
    if args.json:
        Path(args.json).write_text(json.dumps({
            "rate": args.rate, "minutes": args.minutes, "output_tokens": args.output_tokens,
            "rung": rung, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "maxrss_kib": ru.ru_maxrss, "rss_samples": samples, "fds": sampler.fds,
            "live": live,
        }, indent=1))


if __name__ == "__main__":
    main()
