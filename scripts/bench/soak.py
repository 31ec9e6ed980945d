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

It then reads the rung's requests file back and attributes the growth: the summary folds each
latency distribution into a count per distinct whole-microsecond value (a hash map), so the
table beside RSS gives, at the same instants, the distinct values seen so far over every
distribution and the bytes of hash tables that many values take (hashbrown's layout:
buckets a power of two at most 7/8 full, 16 bytes and one control byte a bucket).
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
        # RSS split: anonymous (heap, stacks) and file-backed (the binary's pages as they
        # are first run), in bytes, at the same instants.
        self.anon, self.file = [], []

    def run(self):
        t0 = time.monotonic()
        while not self.done:
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    fields = {}
                    for line in f:
                        k, _, v = line.partition(":")
                        if k in ("VmRSS", "RssAnon", "RssFile"):
                            fields[k] = int(v.split()[0]) * 1024
                    if "VmRSS" in fields:
                        self.samples.append((time.monotonic() - t0, fields["VmRSS"]))
                        self.anon.append(fields.get("RssAnon", 0))
                        self.file.append(fields.get("RssFile", 0))
                        self.fds.append(len(os.listdir(f"/proc/{self.pid}/fd")))
            except (FileNotFoundError, ProcessLookupError):
                pass
            time.sleep(self.every)


# The distributions the fold counts (metrics::Latency::ALL), from a request line.
def _us(ms):
    return int(ms * 1000.0 + 0.5)


def line_values(r):
    """(distribution, whole-µs values) of one request line, as the fold counts them."""
    ok = r.get("ok")
    out = [("e2el_all", [_us(r["e2e_ms"])]),
           ("dispatch_lag", [_us(max(0.0, r["sent_ms"] - r["scheduled_ms"]))])]
    if ok:
        out.append(("e2el", [_us(r["e2e_ms"])]))
        out.append(("e2el_sched", [_us(max(0.0, r["end_ms"] - r["scheduled_ms"]))]))
        if r.get("ttft_ms") is not None:
            out.append(("ttft", [_us(r["ttft_ms"])]))
        if r.get("first_token_ms") is not None:
            out.append(("ttft_sched", [_us(max(0.0, r["first_token_ms"] - r["scheduled_ms"]))]))
        if r.get("tpot_ms") is not None:
            out.append(("tpot", [_us(r["tpot_ms"])]))
        out.append(("itl", [_us(g) for g in r.get("itl_ms") or []]))
    return out


def table_bytes(n):
    """Bytes of a hashbrown HashMap<u64, u64> holding n entries."""
    if n == 0:
        return 0
    buckets = 4 if n < 4 else 8 if n < 8 else 1 << (-(-n * 8 // 7) - 1).bit_length()
    return buckets * 17 + 16


def distinct_over_time(requests_file, marks):
    """At each mark (seconds since the first send), the distinct values seen so far per
    distribution, and the bytes of their tables. Requests are taken in the order the file
    holds them (completion order), each at its end time."""
    seen = {}
    rows, t0, mi = [], None, 0
    with open(requests_file) as f:
        for line in f:
            r = json.loads(line)
            if r.get("warmup"):
                continue
            t0 = r["sent_ms"] if t0 is None else min(t0, r["sent_ms"])
            while mi < len(marks) and (r["end_ms"] - t0) / 1000.0 > marks[mi]:
                rows.append(snapshot(seen))
                mi += 1
            for k, vs in line_values(r):
                seen.setdefault(k, set()).update(vs)
    while mi < len(marks):
        rows.append(snapshot(seen))
        mi += 1
    return rows


def snapshot(seen):
    return {k: (len(v), table_bytes(len(v))) for k, v in seen.items()}


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
    ap.add_argument("--keep", help="keep the result folder here (default: a temporary folder)")
    ap.add_argument("--no-attribution", action="store_true",
                    help="skip reading the requests file back (minutes for millions of lines)")
    args = ap.parse_args()

    sim, url = start_sim(args.ladder, chunk_tokens=1)
    attribution = None
    try:
        with tempfile.TemporaryDirectory() as d:
            if args.keep:
                d = args.keep
                Path(d).mkdir(parents=True, exist_ok=True)
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
            stop(sim)
            sim = None
            marks = [30.0 * k for k in range(int(wall // 30) + 1)]
            if not args.no_attribution:
                attribution = distinct_over_time(
                    next((Path(d) / "results").rglob("requests_rate_*.jsonl")), marks)
    finally:
        if sim is not None:
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
    print("| elapsed s | requests done (≈ rate × s) | RSS MiB | of it anonymous | of it file | "
          "open fds | distinct latency values | their tables MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    mark, k = 0.0, 0
    while mark <= samples[-1][0]:
        i = min(range(len(samples)), key=lambda j: abs(samples[j][0] - mark))
        t, r = samples[i]
        a = attribution[k] if attribution and k < len(attribution) else {}
        print(f"| {t:.0f} | {int(min(t, args.minutes * 60) * args.rate):,} | {mib(r):.1f} | "
              f"{mib(sampler.anon[i]):.1f} | {mib(sampler.file[i]):.1f} | "
              f"{sampler.fds[i] if i < len(sampler.fds) else ''} | "
              f"{sum(n for n, _ in a.values()):,} | {mib(sum(b for _, b in a.values())):.1f} |")
        mark += 30.0
        k += 1
    if attribution:
        print("\ndistinct values at the end, per distribution: " + ", ".join(
            f"{key} {n:,}" for key, (n, _) in sorted(attribution[-1].items())))
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
            "rss_anon": sampler.anon, "rss_file": sampler.file,
            "env_malloc": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
            "live": live, "attribution": attribution,
        }, indent=1))


if __name__ == "__main__":
    main()
