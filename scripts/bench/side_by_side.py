#!/usr/bin/env python3
"""ladder vs GuideLLM (Python) or oha (Rust) side by side: same simulator, same workload, same
rate, same core.

Both clients run pinned to core 0 (taskset -c 0), one after the other, against one
`ladder sim` pinned to core 1. CPU (user + system) and peak RSS come from wait4().

GuideLLM is installed from PyPI into a venv (default target/bench-venv; `pip install guidellm`,
which pulls torch: several GB). It gets the shipped word-level tokenizer as a local folder
(scenarios/tokenizers/ladder-tiny.json copied as tokenizer.json beside a tokenizer_config.json
that names PreTrainedTokenizerFast), so nothing is fetched from a hub.

  python3 scripts/bench/side_by_side.py load --rate 100 --requests 1000
  python3 scripts/bench/side_by_side.py fidelity          # low rate, modelled (not zero-cost) sim
  python3 scripts/bench/side_by_side.py oha --rate 5000 --requests 20000 --output-tokens 16
  python3 scripts/bench/side_by_side.py endpoints --rate 2000 --requests 10000 --output-tokens 16
  python3 scripts/bench/side_by_side.py vllm-pooled --rate 20 --requests 200 --input-tokens 64 \
      --batch-size 4 --runs 3     # needs `vllm` (--vllm, default /tmp/vllm-venv/bin/vllm)

`vllm-pooled` runs ladder (`api: embeddings`, then `api: rerank`) and vLLM's `vllm bench serve`
(`--backend openai-embeddings --dataset-name random`, `--backend vllm-rerank --dataset-name
random-rerank`) alternately, each against a fresh zero-cost simulator, same Poisson rate,
request count, batch size, input length (rerank: vLLM's split, a query of len // 2 - 1 and
documents of len - query - 1) and tokenizer (--vllm-tokenizer, SmolLM2's by default), vLLM
offline (HF_HUB_OFFLINE). Both read input tokens from the server's `usage.prompt_tokens`.

`endpoints` runs ladder alone, twice per pair, against a fresh zero-cost simulator each time:
`api: completions` (streamed, `--output-tokens`) and `api: embeddings` (one input of
`--input-tokens` per request), same rate, requests and prompts, and sets the client's CPU per
request of each side by side: an embeddings request's overhead against the chat-path bound.

The Rust peer is oha (crates.io: `cargo install --locked --root target/bench-peers oha`), the
HTTP load generator of the Rust ecosystem: it holds a rate (`-q`, with `--latency-correction`
its latencies count from each request's scheduled time, as ladder's dispatch lag and
from-scheduled latencies do) and reads each streamed answer to its end, but parses no SSE
event and times no token, so its CPU per request is what the HTTP exchange alone costs a
well-built Rust client: a floor for ladder's, not a like-for-like LLM client. It runs with one
worker thread on the same core as ladder.

Traffic only to 127.0.0.1.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import (ROOT, TOKENIZER, proc_cpu_s, run_measured, scenario, start_sim,  # noqa: E402
                 stop)


def guidellm_run(venv, url, rate, n, input_tokens, output_tokens, seed, workdir, core="0"):
    tok_dir = Path(workdir) / "tok"
    tok_dir.mkdir(exist_ok=True)
    shutil.copy(TOKENIZER, tok_dir / "tokenizer.json")
    (tok_dir / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    out = Path(workdir) / "guidellm.json"
    cmd = ["taskset", "-c", core, str(Path(venv) / "bin" / "guidellm"), "run",
           "--backend", f"kind=openai_http,target={url},model=sim-model",
           "--profile", f"kind=constant,rate={rate}",
           "--constraint", f"kind=max_requests,count={n}",
           "--data", f"kind=synthetic_text,prompt_tokens={input_tokens},"
                     f"output_tokens={output_tokens}",
           "--tokenizer", f"kind=hf_auto,model={tok_dir}",
           "--seed", f"kind=static,value={seed}",
           "--output", f"kind=json,path={out}",
           "--disable-console-interactive"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    log = Path(workdir) / "guidellm.log"
    t0 = time.monotonic()
    with open(log, "w") as lf:
        pid = os.posix_spawnp("taskset", cmd, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, lf.fileno(), 1), (os.POSIX_SPAWN_DUP2, lf.fileno(), 2)])
        _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0 or not out.exists():
        raise SystemExit(f"guidellm failed; log:\n{log.read_text()[-3000:]}\ncmd: {cmd}")
    return json.loads(out.read_text()), {
        "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
        "peak_rss_mb": ru.ru_maxrss / 1024, "cmd": " ".join(cmd)}


def dig(d, *path, default=None):
    for p in path:
        if isinstance(d, dict) and p in d:
            d = d[p]
        else:
            return default
    return d


def guidellm_figures(report):
    """Per-request figures from GuideLLM's JSON: send lag, TTFT, ITL, TPOT, output tokens."""
    b = report["benchmarks"][0]
    reqs = dig(b, "requests", "successful", default=[]) or []
    n_err = len(dig(b, "requests", "errored", default=[]) or [])
    ttft, itl, tpot, lag, sends, toks = [], [], [], [], [], 0
    for r in reqs:
        info = r.get("info") or r.get("request_info") or {}
        timings = info.get("timings") or {}
        sched = timings.get("targeted_start")
        sent = timings.get("request_start")
        if sched is not None and sent is not None:
            lag.append((sent - sched) * 1000)
        if sent is not None:
            sends.append(sent)
        if r.get("time_to_first_token_ms") is not None:
            ttft.append(r["time_to_first_token_ms"])
        if r.get("inter_token_latency_ms") is not None:
            itl.append(r["inter_token_latency_ms"])
        if r.get("time_per_output_token_ms") is not None:
            tpot.append(r["time_per_output_token_ms"])
        toks += r.get("output_tokens") or 0
    sends.sort()
    dur = (sends[-1] - sends[0]) if len(sends) > 1 else 0
    return {
        "completed": len(reqs), "failed": n_err,
        "achieved_rate": (len(sends) - 1) / dur if dur > 0 else 0,
        "output_tokens": toks,
        "median_ttft_ms": statistics.median(ttft) if ttft else None,
        "mean_ttft_ms": statistics.fmean(ttft) if ttft else None,
        "median_itl_ms": statistics.median(itl) if itl else None,
        "median_tpot_ms": statistics.median(tpot) if tpot else None,
        "median_lag_ms": statistics.median(lag) if lag else None,
        "p99_lag_ms": sorted(lag)[int(0.99 * (len(lag) - 1))] if lag else None,
        "keys": sorted(reqs[0].keys()) if reqs else [],
    }


def server_ttft(url):
    """Mean server-side TTFT (ms) and count from the simulator's vLLM-style histogram."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        page = r.read().decode()
    vals = {}
    for line in page.splitlines():
        for k in ("_sum", "_count"):
            if line.startswith(f"vllm:time_to_first_token_seconds{k}{{"):
                vals[k] = float(line.rsplit(" ", 1)[1])
    n = vals.get("_count", 0)
    return (vals["_sum"] / n * 1000 if n else None), n


def run_pair(args, zero_cost, rate, n, out_tokens, sim_extra=()):
    sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=zero_cost, extra=sim_extra)
    try:
        text = scenario(url, "side-by-side", input_tokens=args.input_tokens,
                        output_tokens=out_tokens, n=n, rates=[rate], arrival="constant")
        rungs, lres = run_measured(args.ladder, text)
        l_server = server_ttft(url)
    finally:
        stop(sim)
    r = rungs[0]
    lad = {"completed": r["completed"], "failed": r["failed"],
           "achieved_rate": r["achieved_rate"], "output_tokens": r["total_output_tokens"],
           "tokens_per_s": r["output_throughput"], "duration_s": r["duration"],
           "median_ttft_ms": r["median_ttft_ms"], "median_itl_ms": r["median_itl_ms"],
           "mean_ttft_ms": r["mean_ttft_ms"], "server_mean_ttft_ms": l_server[0],
           "median_tpot_ms": r["median_tpot_ms"], "median_lag_ms": r["median_dispatch_lag_ms"],
           "p99_lag_ms": r["p99_dispatch_lag_ms"], "cpu_s": lres["cpu_s"],
           "peak_rss_mb": lres["peak_rss_bytes"] / 2**20}
    # A fresh simulator for the peer, so both see the same request numbering and seed.
    sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=zero_cost, extra=sim_extra)
    try:
        with tempfile.TemporaryDirectory() as d:
            report, gres = guidellm_run(args.venv, url, rate, n, args.input_tokens, out_tokens,
                                        0, d)
            if args.keep:
                shutil.copy(Path(d) / "guidellm.json", args.keep)
        g_server = server_ttft(url)
    finally:
        stop(sim)
    g = guidellm_figures(report)
    b = report["benchmarks"][0]
    g["duration_s"] = dig(b, "duration", default=None) or dig(b, "run_stats", "duration")
    g["cpu_s"], g["peak_rss_mb"], g["cmd"] = gres["cpu_s"], gres["peak_rss_mb"], gres["cmd"]
    g["tokens_per_s"] = g["output_tokens"] / g["duration_s"] if g["duration_s"] else None
    g["server_mean_ttft_ms"] = g_server[0]
    for x in (lad, g):
        if x.get("mean_ttft_ms") is not None and x["server_mean_ttft_ms"] is not None:
            x["ttft_over_server_ms"] = x["mean_ttft_ms"] - x["server_mean_ttft_ms"]
    return lad, g


def oha_run(oha, url, rate, n, input_tokens, output_tokens, connections, core="0"):
    """oha against the simulator's completions endpoint: the body ladder's scenario sends
    (a prompt of about `input_tokens` words, `max_tokens`, streamed, EOS ignored)."""
    body = json.dumps({"model": "sim-model", "prompt": " ".join(["hello"] * input_tokens),
                       "max_tokens": output_tokens, "stream": True, "ignore_eos": True})
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "oha.json"
        cmd = ["taskset", "-c", core, oha, "-n", str(n), "-q", str(rate), "-c", str(connections),
               "--latency-correction", "--no-tui", "--worker-threads", "1", "-m", "POST",
               "-T", "application/json", "-d", body, "--output-format", "json", "-o", str(out),
               f"{url}/v1/completions"]
        log = Path(d) / "oha.log"
        t0 = time.monotonic()
        with open(log, "w") as lf:
            pid = os.posix_spawnp("taskset", cmd, os.environ, file_actions=[
                (os.POSIX_SPAWN_DUP2, lf.fileno(), 1), (os.POSIX_SPAWN_DUP2, lf.fileno(), 2)])
            _, status, ru = os.wait4(pid, 0)
        wall = time.monotonic() - t0
        if os.waitstatus_to_exitcode(status) != 0 or not out.exists():
            raise SystemExit(f"oha failed; log:\n{log.read_text()[-3000:]}\ncmd: {cmd}")
        report = json.loads(out.read_text())
    summary = report.get("summary", {})
    codes = report.get("statusCodeDistribution", {}) or {}
    ok = sum(v for k, v in codes.items() if str(k).startswith("2"))
    errors = sum((report.get("errorDistribution") or {}).values())
    pct = report.get("latencyPercentiles", {}) or {}
    ms = lambda v: v * 1000 if isinstance(v, (int, float)) else None  # noqa: E731
    return {
        "completed": ok, "failed": n - ok if errors or ok < n else 0,
        "achieved_rate": summary.get("requestsPerSec"),
        "duration_s": summary.get("total"),
        "median_e2el_from_scheduled_ms": ms(pct.get("p50")),
        "p99_e2el_from_scheduled_ms": ms(pct.get("p99")),
        "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
        "cpu_us_per_request": (ru.ru_utime + ru.ru_stime) / n * 1e6,
        "cmd": " ".join("'<body>'" if c == body else c for c in cmd),
    }


def run_oha_pair(args):
    """ladder then oha, each against its own fresh zero-cost simulator on core 1."""
    sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=True)
    try:
        text = scenario(url, "side-by-side", input_tokens=args.input_tokens,
                        output_tokens=args.output_tokens, n=args.requests, rates=[args.rate],
                        arrival="constant")
        rungs, lres = run_measured(args.ladder, text)
    finally:
        stop(sim)
    r = rungs[0]
    lad = {"completed": r["completed"], "failed": r["failed"],
           "achieved_rate": r["achieved_rate"], "duration_s": r["duration"],
           "median_e2el_from_scheduled_ms": r.get("median_e2el_sched_ms"),
           "p99_e2el_from_scheduled_ms": r.get("p99_e2el_sched_ms"),
           "p99_lag_ms": r["p99_dispatch_lag_ms"],
           "cpu_s": lres["cpu_s"], "peak_rss_mb": lres["peak_rss_bytes"] / 2**20,
           "cpu_us_per_request": lres["cpu_s"] / args.requests * 1e6}
    sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=True)
    try:
        o = oha_run(args.oha, url, args.rate, args.requests, args.input_tokens,
                    args.output_tokens, args.connections)
    finally:
        stop(sim)
    return lad, o


def run_endpoints_pair(args):
    """ladder with `api: completions`, then with `api: embeddings`, each against its own
    fresh zero-cost simulator on core 1, same rate, requests and prompt length."""
    out = {}
    for api in ("completions", "embeddings"):
        sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=True)
        try:
            text = scenario(url, "side-by-side", input_tokens=args.input_tokens,
                            output_tokens=args.output_tokens, n=args.requests,
                            rates=[args.rate], arrival="constant")
            if api == "embeddings":
                # No token is generated: no TTFT/TPOT bound, only the request's latency.
                text = text.replace("  api: completions", "  api: embeddings")
                text = text.replace("  ttft_ms: 100000\n  tpot_ms: 100000\n", "  e2e_ms: 100000\n")
            rungs, res = run_measured(args.ladder, text)
        finally:
            stop(sim)
        r = rungs[0]
        out[api] = {"completed": r["completed"], "failed": r["failed"],
                    "achieved_rate": r["achieved_rate"], "duration_s": r["duration"],
                    "median_e2el_ms": r.get("median_e2el_ms"),
                    "p99_lag_ms": r["p99_dispatch_lag_ms"], "cpu_s": res["cpu_s"],
                    "hot_cpu_s": res["hot_cpu_s"],
                    "peak_rss_mb": res["peak_rss_bytes"] / 2**20,
                    "cpu_us_per_request": res["cpu_s"] / args.requests * 1e6}
    return out["embeddings"], out["completions"]


def vllm_pooled_run(vllm, url, api, rate, n_requests, input_tokens, batch, tok_dir, workdir,
                    core="0"):
    """vLLM's `vllm bench serve` against the simulator's /v1/embeddings (`openai-embeddings`,
    `random` dataset) or /v1/rerank (`vllm-rerank`, `random-rerank`): `n_requests` requests of
    `batch` inputs (documents) each, Poisson at `rate`. vLLM counts `--num-prompts` in inputs,
    so it gets `n_requests * batch`. Offline (HF_HUB_OFFLINE), wait4() CPU of the process."""
    res_dir = Path(workdir) / "vllm-res"
    backend, endpoint, dataset = {
        "embeddings": ("openai-embeddings", "/v1/embeddings", "random"),
        "rerank": ("vllm-rerank", "/v1/rerank", "random-rerank")}[api]
    cmd = ["taskset", "-c", core, vllm, "bench", "serve", "--backend", backend,
           "--endpoint", endpoint, "--base-url", url, "--dataset-name", dataset,
           "--random-input-len", str(input_tokens), "--random-batch-size", str(batch),
           "--num-prompts", str(n_requests * batch), "--request-rate", str(rate),
           "--model", "sim-model", "--tokenizer", str(tok_dir), "--seed", "0",
           "--percentile-metrics", "e2el", "--metric-percentiles", "50,99",
           "--save-result", "--result-dir", str(res_dir), "--result-filename", "out.json",
           "--disable-tqdm"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    log = Path(workdir) / "vllm.log"
    t0 = time.monotonic()
    with open(log, "w") as lf:
        pid = os.posix_spawnp("taskset", cmd, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, lf.fileno(), 1), (os.POSIX_SPAWN_DUP2, lf.fileno(), 2)])
        window = main_run_cpu(pid, log, time.monotonic() + 600)
        _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    out = res_dir / "out.json"
    if os.waitstatus_to_exitcode(status) != 0 or not out.exists():
        raise SystemExit(f"vllm bench serve failed; log:\n{log.read_text()[-3000:]}\ncmd: {cmd}")
    return json.loads(out.read_text()), {
        "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
        "main_run_cpu_s": window, "cmd": " ".join(cmd[3:])}


def main_run_cpu(pid, log, deadline):
    """CPU seconds process `pid` spends between vLLM's "Starting main benchmark run..." and
    its result banner (both in `log`, written unbuffered), polled every 5 ms from /proc: the
    client's cost of the measured requests without Python's and torch's start-up. None if
    either line never shows (the caller then sees the failure from the exit status)."""
    start = None
    while time.monotonic() < deadline:
        try:
            cpu = proc_cpu_s(pid)
        except (FileNotFoundError, ProcessLookupError, ValueError):
            return None
        text = log.read_text(errors="replace")
        if start is None and "Starting main benchmark run" in text:
            start = cpu
        if start is not None and "Serving Benchmark Result" in text:
            return cpu - start
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return None
        time.sleep(0.005)
    return None


def pooled_shape(args, api):
    """ladder's workload lines of the shape vLLM's dataset builds: embeddings, `batch` inputs
    of `--input-tokens`; rerank, vLLM's split of `--random-input-len` into a query of
    input_len // 2 - 1 tokens and documents of input_len - query - 1 (one separator each)."""
    if api == "embeddings":
        return f"  input_tokens: {args.input_tokens}\n  batch_size: {args.batch_size}\n"
    query = args.input_tokens // 2 - 1
    doc = args.input_tokens - query - 1
    return (f"  query_tokens: {query}\n  input_tokens: {doc}\n"
            f"  batch_size: {args.batch_size}\n")


def run_vllm_pooled_pair(args, tok_dir):
    """Per API: ladder, then vLLM's client, each against its own fresh zero-cost simulator on
    core 1, same API, shape, tokenizer, Poisson rate and request count. CPU per request is
    the CPU of the measured requests alone over their count: ladder's tokio worker threads
    (hot_cpu; its start-up, mostly loading the tokenizer, and prompt building left out;
    `cpu_us_per_request_whole` keeps them), vLLM's process between its "Starting main
    benchmark run" and result lines (Python's and torch's ~11 s start-up, prompt building
    and its initial test request left out)."""
    out = {}
    for api in ("embeddings", "rerank"):
        sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=True)
        try:
            text = scenario(url, "side-by-side", input_tokens=args.input_tokens,
                            output_tokens=1, n=args.requests, rates=[args.rate])
            text = text.replace("  api: completions", f"  api: {api}")
            text = text.replace("  ttft_ms: 100000\n  tpot_ms: 100000\n", "  e2e_ms: 100000\n")
            text = text.replace(f"  input_tokens: {args.input_tokens}\n  output_tokens: 1\n",
                                pooled_shape(args, api))
            text = text.replace("  ignore_eos: true\n", "")
            # The tokenizer vLLM's client builds its prompts with: the simulator counts words,
            # so the same tokenizer makes the same words a prompt on both sides.
            text = text.replace(f"tokenizer: {TOKENIZER}", f"tokenizer: {tok_dir / 'tokenizer.json'}")
            rungs, res = run_measured(args.ladder, text)
        finally:
            stop(sim)
        r = rungs[0]
        lad = {"completed": r["completed"], "failed": r["failed"],
               "request_throughput": r.get("request_throughput"),
               "total_input_tokens": r.get("total_input_tokens"),
               "input_tokens_per_s": r.get("input_throughput"),
               "median_e2el_ms": r.get("median_e2el_ms"), "p99_e2el_ms": r.get("p99_e2el_ms"),
               "duration_s": r.get("duration"),
               "cpu_s": res["cpu_s"], "main_run_cpu_s": res["hot_cpu_s"],
               "peak_rss_mb": res["peak_rss_bytes"] / 2**20,
               "cpu_us_per_request": res["hot_cpu_s"] / args.requests * 1e6,
               "cpu_us_per_request_whole": res["cpu_s"] / args.requests * 1e6}
        sim, url = start_sim(args.ladder, 1, seed=0, zero_cost=True)
        try:
            with tempfile.TemporaryDirectory() as d:
                v, vres = vllm_pooled_run(args.vllm, url, api, args.rate, args.requests,
                                          args.input_tokens, args.batch_size, tok_dir, d)
        finally:
            stop(sim)
        done = v.get("completed") or 0
        vl = {"completed": done, "failed": v.get("failed", 0),
              "request_throughput": v.get("request_throughput"),
              "total_input_tokens": v.get("total_input_tokens"),
              "input_tokens_per_s": v.get("total_token_throughput"),
              "median_e2el_ms": v.get("median_e2el_ms"), "p99_e2el_ms": v.get("p99_e2el_ms"),
              "duration_s": v.get("duration"),
              "cpu_s": vres["cpu_s"], "main_run_cpu_s": vres["main_run_cpu_s"],
              "peak_rss_mb": vres["peak_rss_mb"],
              "cpu_us_per_request": (vres["main_run_cpu_s"] / done * 1e6
                                     if vres["main_run_cpu_s"] is not None and done else None),
              "cmd": vres["cmd"]}
        out[api] = (lad, vl)
    return out


def vllm_pooled_tokenizer(args, workdir):
    """The tokenizer folder vLLM's client reads (local: nothing is fetched from a hub)."""
    tok_dir = Path(workdir) / "tok"
    tok_dir.mkdir(exist_ok=True)
    shutil.copy(args.vllm_tokenizer, tok_dir / "tokenizer.json")
    (tok_dir / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    return tok_dir

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["load", "fidelity", "oha", "endpoints", "vllm-pooled"])
    ap.add_argument("--vllm", default=str(Path("/tmp/vllm-venv") / "bin" / "vllm"),
                    help="vLLM's CLI (vllm-pooled: `vllm bench serve`)")
    ap.add_argument("--vllm-tokenizer", default=str(Path.home() / ".cache" / "ladder"
                                                    / "smollm2-0.1.2" / "tokenizer.json"),
                    help="vllm-pooled: tokenizer.json vLLM's client builds its prompts with")
    ap.add_argument("--batch-size", type=int, default=4,
                    help="vllm-pooled: inputs (embeddings) or documents (rerank) per request")
    ap.add_argument("--oha", default=shutil.which("oha") or str(ROOT / "target" / "bench-peers"
                                                                / "bin" / "oha"))
    ap.add_argument("--connections", type=int, default=200,
                    help="oha's -c: connections it may hold at once (ladder opens what it needs)")
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--venv", default=str(ROOT / "target" / "bench-venv"))
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--input-tokens", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=256)
    ap.add_argument("--keep", help="copy GuideLLM's JSON report here")
    ap.add_argument("--out", help="write both clients' figures here as JSON")
    ap.add_argument("--runs", type=int, default=1,
                    help="repeat the pair; medians are printed with every run's value")
    args = ap.parse_args()
    if args.mode == "vllm-pooled":
        return vllm_pooled_main(args)
    pairs = []
    for i in range(args.runs):
        print(f"pair {i + 1}/{args.runs}", file=sys.stderr)
        if args.mode == "oha":
            pairs.append(run_oha_pair(args))
        elif args.mode == "endpoints":
            pairs.append(run_endpoints_pair(args))
        elif args.mode == "load":
            pairs.append(run_pair(args, True, args.rate, args.requests, args.output_tokens))
        else:
            # Modelled engine at speed 1: ~10-40 ms steps, far below capacity at 2 req/s.
            pairs.append(run_pair(args, False, 2, 40, 64))
    peer = {"oha": "oha", "endpoints": "completions"}.get(args.mode, "GuideLLM")
    me = "embeddings" if args.mode == "endpoints" else "ladder"
    doc = {"mode": args.mode, "rate": args.rate, "requests": args.requests,
           "output_tokens": args.output_tokens,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "pairs": [{me: lad, peer.lower(): g} for lad, g in pairs]}
    print(json.dumps(doc, indent=1, default=str))
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1, default=str))
    rows = ["achieved_rate", "output_tokens", "tokens_per_s", "completed", "failed",
            "median_lag_ms", "p99_lag_ms", "cpu_s", "peak_rss_mb", "median_ttft_ms",
            "mean_ttft_ms", "server_mean_ttft_ms", "ttft_over_server_ms", "median_tpot_ms",
            "median_itl_ms"]
    if args.mode == "endpoints":
        rows = ["achieved_rate", "completed", "failed", "duration_s", "cpu_s", "hot_cpu_s",
                "cpu_us_per_request", "peak_rss_mb", "median_e2el_ms", "p99_lag_ms"]
    if args.mode == "oha":
        rows = ["achieved_rate", "completed", "failed", "duration_s", "cpu_s",
                "cpu_us_per_request", "peak_rss_mb", "median_e2el_from_scheduled_ms",
                "p99_e2el_from_scheduled_ms", "p99_lag_ms"]

    print_table(me, peer, pairs, rows)


def fig(x):
    return f"{x:,.3f}" if isinstance(x, float) else str(x)


def print_table(me, peer, pairs, rows):
    """A markdown table of medians over the pairs, with their ratio and every run's value."""
    print(f"\n| metric | {me} (median of {len(pairs)}) | {peer} (median of {len(pairs)}) "
          f"| {me} / {peer} | {me} runs | {peer} runs |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    for k in rows:
        la = [lad.get(k) for lad, _ in pairs]
        gb = [g.get(k) for _, g in pairs]
        ma = statistics.median(la) if all(isinstance(v, (int, float)) for v in la) else None
        mb = statistics.median(gb) if all(isinstance(v, (int, float)) for v in gb) else None
        ratio = f"{ma / mb:.3f}" if ma is not None and mb else "n/a"
        print(f"| {k} | {fig(ma)} | {fig(mb)} | {ratio} | {', '.join(fig(v) for v in la)} | "
              f"{', '.join(fig(v) for v in gb)} |")



def vllm_pooled_main(args):
    """`vllm-pooled`: ladder against vLLM's client on embeddings and rerank, alternating."""
    with tempfile.TemporaryDirectory() as d:
        tok_dir = vllm_pooled_tokenizer(args, d)
        runs = []
        for i in range(args.runs):
            print(f"pair {i + 1}/{args.runs}", file=sys.stderr)
            runs.append(run_vllm_pooled_pair(args, tok_dir))
    doc = {"mode": args.mode, "rate": args.rate, "requests": args.requests,
           "input_tokens": args.input_tokens, "batch_size": args.batch_size,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "pairs": [{api: {"ladder": lad, "vllm": vl} for api, (lad, vl) in r.items()}
                     for r in runs]}
    print(json.dumps(doc, indent=1, default=str))
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1, default=str))
    rows = ["completed", "failed", "request_throughput", "total_input_tokens",
            "input_tokens_per_s", "duration_s", "median_e2el_ms", "p99_e2el_ms", "cpu_s",
            "main_run_cpu_s", "cpu_us_per_request", "cpu_us_per_request_whole", "peak_rss_mb"]
    for api in ("embeddings", "rerank"):
        print(f"\n{api}:")
        print_table("ladder", "vLLM", [r[api] for r in runs], rows)


if __name__ == "__main__":
    main()
