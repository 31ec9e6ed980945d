#!/usr/bin/env python3
"""Calibration of the gate against a real llama.cpp server (issue #31, item 6).

Where scripts/bench/calibrate.py measures the gate's statistics on the simulator with drift,
this measures the whole gate a user runs, on llama.cpp's llama-server (SmolLM2-135M, the model
CI uses; docs/real-server.md): a quickstart-like scenario (completions, 64 tokens in, 32 out,
`ignore_eos`, Poisson rates 0.4 / 0.8 / 1.2 / 2 req/s, 24 requests a rung; `--requests 200`
for the large variant) whose `gate:` list is the quickstart's four rules, so every gate is the
FULL rule set: 4 rungs x 4 rules = 16 checks, compared as `ladder gate` compares (`ladder
compare GOLDEN CANDIDATE`, the baseline's own `gate:` list, no --only, no --strict).

Two steps, so that runs (slow: about 2.2 minutes each at 24 requests a rung, 17 at 200) and
verdicts (fast) are separate, and the same runs can be judged again by another ladder build:

  collect  start servers with scripts/real-server/start.sh and run the scenario in this order:
           the base server (the scenario's configuration, `-t 1 -np 4`, on --port) gets one
           priming run (its first: a cold server) and --baseline-runs runs (the baseline,
           made on a warm server); then --cycles times, one run of each --cases entry:
             warm     another run on the base server (unchanged, warm);
             hog      the same under a CPU hog (--hog-procs busy loops at nice --hog-nice);
             restart  a freshly started base configuration on --port + 1, its first run
                      (unchanged across a server restart: a cold server);
             CHANGE   (np1, np2, t1, or --change NAME=ARGS) a fresh server with ARGS
                      appended, its first run ("CHANGE fresh") then a second ("CHANGE warm").
           Each run records the load average before and after, the server's prompt-cache
           counters (/metrics) over the run, and its folder, in DIR/manifest.json.
  gate     judge the collected runs: for each baseline kind
             1v1        one blessed run against one (the default path; candidate t against
                        baseline run t mod --baseline-runs),
             1v1-cold   the priming run (a cold server) blessed alone,
             3run       the first three baseline runs (`bless`, `bless --add` twice),
             1v1-all    (opt-in) every unchanged run against every later one,
             3run-all   (opt-in) every three consecutive unchanged runs against every
                        unchanged run made after them,
           every candidate of every case is compared; each gate's exit code, counts of
           regression / inconclusive / pass / improvement checks and the failed checks go
           to the JSON, and a table of false alarms (unchanged cases), detections (changes)
           and the share of gates where most checks were decided, with 95 % Wilson intervals.
  all      collect, then gate.

  scripts/real-server/build-llama.sh; scripts/real-server/model.sh
  python3 scripts/bench/calibrate_real.py all --out /tmp/calib --cycles 2 --json calib-real.json
  python3 scripts/bench/calibrate_real.py gate --out /tmp/calib --json regate.json   # another build

`--server sim` runs the same plan against `ladder sim` started as a separate server (its
`--max-num-seqs` for llama's slots), for a quick check of the harness itself.

Not a test: a measurement (docs/gate.md, "Calibration on the real server"; BENCHMARKS.md).
Standard library only; every server listens on 127.0.0.1 only, lives at most
--server-lifetime seconds (start.sh's watchdog) and is stopped when this script ends.
"""

import argparse
import collections
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import cell, wilson  # noqa: E402  (shared with the simulator calibration)

ROOT = Path(__file__).resolve().parents[2]
START = ROOT / "scripts" / "real-server" / "start.sh"
SCENARIO = "calib-real"
# The quickstart's four rules (scenarios/quickstart.yaml): the gate's full rule set.
GATE_RULES = """gate:
  - { metric: request_throughput, max_decrease: 15% }
  - { metric: median_tpot_ms, max_increase: 10% }
  - { metric: median_ttft_ms, max_increase: 25%, min_change: 10ms }
  - { metric: error_rate, max: 0.15 }
"""
# Changes: extra server arguments appended to the base configuration's.
CHANGES = {
    "llama": {"np1": ["-np", "1"], "np2": ["-np", "2"], "t1": ["-t", "1"]},
    "sim": {"np1": ["--max-num-seqs", "1"], "np2": ["--max-num-seqs", "2"],
            "t1": ["--decode-scale", "2"]},
}
BASELINE_KINDS = ["1v1", "1v1-cold", "3run", "1v1-all", "3run-all"]


def say(*args):
    print("calibrate_real:", *args, file=sys.stderr, flush=True)


def loadavg():
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def write_scenario(path, a, port):
    rates = ", ".join(f"{r:g}" for r in a.rates)
    path.write_text(
        f"""version: 1
name: {SCENARIO}
description: the gate's calibration on a real server (scripts/bench/calibrate_real.py)
endpoint: {{ base_url: "http://127.0.0.1:{port}", api: completions, request_timeout: 120s }}
model: {a.model_name}
tokenizer: {a.tokenizer}
workload: {{ dataset: random, input_tokens: 64, output_tokens: 32, range_ratio: 0.0, ignore_eos: true, requests_per_rung: {a.requests}, seed: 0 }}
load: {{ arrival: poisson, rates: [{rates}], cooldown: 1s }}
slo: {{ ttft_ms: 1000, tpot_ms: 50, max_error_rate: 0.05 }}
{GATE_RULES}"""
    )


def ladder(a, *args, timeout=600):
    return subprocess.run([a.ladder, *args], capture_output=True, text=True, timeout=timeout)


class Servers:
    """The servers this run started, by name: (re)started on a fixed port, stopped at the end."""

    def __init__(self, a, state):
        self.a, self.state, self.sims = a, state, {}
        state.mkdir(parents=True, exist_ok=True)

    def start(self, name, port, extra):
        self.stop(name)
        a = self.a
        if a.server == "sim":
            # `--flag value` pairs; the change's replace the base's (clap takes each once).
            opts = {"--seed": "0", "--speed": str(a.sim_speed), "--max-num-seqs": "4",
                    "--served-model-names": a.model_name, **dict(zip(extra[::2], extra[1::2]))}
            cmd = [a.ladder, "sim", "--port", str(port), "--prefix-caching",
                   *[x for kv in opts.items() for x in kv]]
            log = self.state / f"{name}.log"
            with open(log, "w") as err:
                p = subprocess.Popen(["timeout", str(a.server_lifetime), *cmd], text=True,
                                     stdout=subprocess.PIPE, stderr=err, start_new_session=True)
            line = p.stdout.readline().strip()
            if not line.startswith("listening on "):
                p.kill()
                sys.exit(f"ladder sim did not start ({' '.join(cmd)}): {log.read_text()[-800:]}")
            self.sims[name] = p
            return line.removeprefix("listening on ")
        env = {**os.environ, "LADDER_REAL_SERVER_STATE": str(self.state),
               "LADDER_REAL_SERVER_LIFETIME": str(a.server_lifetime)}
        env.pop("LADDER_REAL_SERVER_PORT", None)
        r = subprocess.run(["bash", str(START), "start", "--port", str(port), name,
                            a.llama_server, a.model, "", "--", *extra],
                           capture_output=True, text=True, env=env, timeout=400)
        if r.returncode != 0:
            sys.exit(f"start.sh exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout.strip()

    def stop(self, name):
        if self.a.server == "sim":
            p = self.sims.pop(name, None)
            if p is not None:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            return
        env = {**os.environ, "LADDER_REAL_SERVER_STATE": str(self.state)}
        subprocess.run(["bash", str(START), "stop", name], env=env, timeout=60)

    def stop_all(self):
        for name in ["calib-base", "calib-other"]:
            self.stop(name)


def cache_counters(url):
    """The server's prompt-token counters from /metrics (llama.cpp's, or the simulator's)."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            text = r.read().decode()
    except Exception:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.rsplit(" ", 1)
        if "prompt_tokens" in key or "prefix_cache" in key or "cache_hit" in key:
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


class Hog:
    """CPU busy loops at a given niceness, killed by their own process ids."""

    def __init__(self, procs, nice, lifetime):
        self.procs = [subprocess.Popen(
            ["timeout", str(lifetime), "nice", "-n", str(nice), sys.executable, "-c",
             "while True: pass"], start_new_session=True) for _ in range(procs)]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=30)


def run_once(a, out, manifest, kind, instance, nth, server_args, url, hog=False):
    sc = out / f"scenario-{url.rsplit(':', 1)[1]}.yaml"
    write_scenario(sc, a, url.rsplit(":", 1)[1])
    results = out / "results"
    before_dirs = set((results / SCENARIO).glob("*")) if (results / SCENARIO).exists() else set()
    hog_ = Hog(a.hog_procs, a.hog_nice, a.run_timeout) if hog else None
    entry = {"id": len(manifest["runs"]), "kind": kind, "instance": instance, "nth": nth,
             "server_args": server_args, "hog": hog, "url": url,
             "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "loadavg_before": loadavg(), "cache_before": cache_counters(url)}
    try:
        r = subprocess.run([a.ladder, "run", str(sc), "--out", str(results), "--quiet"],
                           capture_output=True, text=True, timeout=a.run_timeout)
    finally:
        if hog_:
            hog_.stop()
    entry.update({"ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "loadavg_after": loadavg(), "cache_after": cache_counters(url),
                  "exit": r.returncode})
    new = sorted(set((results / SCENARIO).glob("*")) - before_dirs)
    entry["dir"] = str(new[-1]) if new else None
    if r.returncode != 0:
        entry["stderr"] = r.stderr[-2000:]
        say(f"run {entry['id']} ({kind}) exit {r.returncode}: {r.stderr.strip()[-500:]}")
    manifest["runs"].append(entry)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    cb, ca = entry["cache_before"], entry["cache_after"]
    share = cache_share(cb, ca)
    say(f"run {entry['id']}: {kind} (instance {instance}, run {nth} on it{', hog' if hog else ''})"
        f" exit {r.returncode}, load {entry['loadavg_before']} -> {entry['loadavg_after']}"
        + (f", prompt cache share {share:.0%}" if share is not None else ""))
    return entry


def cache_share(before, after):
    """Cached / total prompt tokens over a run, from llama.cpp's counters, when it has them."""
    def delta(word):
        keys = [k for k in after if word(k)]
        return sum(after[k] - before.get(k, 0.0) for k in keys) if keys else None
    total = delta(lambda k: k.startswith("llamacpp:prompt_tokens_total"))
    cached = delta(lambda k: "prompt_tokens_cached" in k)
    if total is None or cached is None or total <= 0:
        return None
    return cached / (total + cached) if cached > total else cached / total


def collect(a):
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    mpath = out / "manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.exists() else {"runs": []}
    manifest.setdefault("collections", []).append({
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "ladder": ladder_id(a), "server": a.server,
        "requests": a.requests, "rates": a.rates, "base_args": a.base_args,
        "cycles": a.cycles, "cases": a.cases, "hog": [a.hog_procs, a.hog_nice],
        "machine": machine()})
    changes = {**CHANGES[a.server], **dict(c.split("=", 1) for c in a.change)}
    changes = {k: (shlex.split(v) if isinstance(v, str) else v) for k, v in changes.items()}
    servers = Servers(a, out / "servers")
    instance = max([r["instance"] for r in manifest["runs"]], default=-1) + 1
    base = shlex.split(a.base_args)
    try:
        if a.baseline_runs:
            url = servers.start("calib-base", a.port, base)
            base_instance = instance
            instance += 1
            for k in range(a.baseline_runs + 1):
                kind = "baseline" if k else "prime"
                if run_once(a, out, manifest, kind, base_instance, k + 1, base, url)["exit"]:
                    sys.exit(f"the {kind} run failed: no baseline to gate against")
            nth = a.baseline_runs + 1
        else:
            sys.exit("collect needs --baseline-runs >= 1 (the base server and the baseline)")
        for _ in range(a.cycles):
            for case in a.cases:
                if a.until and time.strftime("%H:%M", time.gmtime()) >= a.until:
                    say(f"--until {a.until} UTC reached: no more runs")
                    return manifest
                if case in ("warm", "hog"):
                    nth += 1
                    run_once(a, out, manifest, case, base_instance, nth, base, url, hog=case == "hog")
                elif case == "restart":
                    u = servers.start("calib-other", a.port + 1, base)
                    run_once(a, out, manifest, "restart", instance, 1, base, u)
                    instance += 1
                else:
                    args = base + changes[case]
                    u = servers.start("calib-other", a.port + 1, args)
                    run_once(a, out, manifest, f"{case} fresh", instance, 1, args, u)
                    run_once(a, out, manifest, f"{case} warm", instance, 2, args, u)
                    instance += 1
                servers.stop("calib-other")
    finally:
        servers.stop_all()
    return manifest


def ladder_id(a):
    """`ladder --version`, and the commit of this checkout when --ladder is its own build."""
    v = ladder(a, "--version").stdout.strip()
    if Path(a.ladder).resolve().is_relative_to(ROOT):
        c = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=9", "HEAD"],
                           capture_output=True, text=True).stdout.strip()
        v += f" (built here, checkout at {c})" if c else ""
    return v


def machine():
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in
                   Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"host": platform.node(), "cpus": os.cpu_count(), "cpu": cpu,
            "kernel": platform.release()}


def verdict_of(case):
    failure, skipped = case.find("failure"), case.find("skipped")
    if failure is not None:
        return failure.get("type") or failure.get("message", "").rsplit(" ", 1)[-1]
    if skipped is not None:
        return skipped.get("message", "inconclusive").split(":", 1)[0].strip() or "inconclusive"
    return (case.findtext("system-out") or "pass").split(":", 1)[0].strip() or "pass"


def compare(a, golden, cand, junit):
    r = ladder(a, "compare", str(golden), str(cand), "--junit", str(junit),
               *shlex.split(a.compare_args))
    outcome = {"exit": r.returncode, "counts": {}, "failed_checks": [], "checks": 0}
    if r.returncode not in (0, 1):
        outcome["error"] = r.stderr.strip()[-1000:]
        return outcome
    counts = collections.Counter()
    outcome["other_checks"] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        v = verdict_of(case)
        counts[v] += 1
        if v == "pass":
            continue
        failure, skipped = case.find("failure"), case.find("skipped")
        detail = (failure.text if failure is not None else
                  skipped.get("message") if skipped is not None else case.findtext("system-out"))
        check = {"rung": case.get("classname"), "check": case.get("name"), "verdict": v,
                 "detail": (detail or "").strip()[:400]}
        outcome["failed_checks" if v == "regression" else "other_checks"].append(check)
    outcome["counts"] = dict(counts)
    outcome["checks"] = sum(counts.values())
    for line in r.stdout.splitlines() + r.stderr.splitlines():
        if line.startswith(("PASS", "FAIL")) or "WARNING" in line or "warning:" in line:
            outcome.setdefault("lines", []).append(line.strip()[:300])
    return outcome


def rung_values(run_dir, metric):
    vals = {}
    for f in Path(run_dir).glob("result_rate_*.json"):
        vals[f.stem.removeprefix("result_rate_")] = json.loads(f.read_text()).get(metric)
    return vals


def bless(a, golden, run_dirs):
    """Bless the runs into `golden` (the first, then `--add`): (error or None, refusals).

    A refused `bless --add` (e.g. a run bless calls an outlier) is retried with `--force`
    when --force-bless is given; the refusal is kept either way, for the table."""
    golden.mkdir(parents=True, exist_ok=True)
    refusals = []
    for k, d in enumerate(run_dirs):
        verb = ["bless"] if k == 0 else ["bless", "--add"]
        r = ladder(a, *verb, d, "--golden", str(golden))
        if r.returncode != 0 and a.force_bless:
            refusals.append(f"{' '.join(verb)}: exit {r.returncode}: {r.stderr.strip()[-600:]}")
            r = ladder(a, *verb, "--force", d, "--golden", str(golden))
        if r.returncode != 0:
            return f"{' '.join(verb)} {d}: exit {r.returncode}: {r.stderr.strip()[-600:]}", refusals
    return None, refusals


def judge(a):
    out = Path(a.out)
    manifest = json.loads((out / "manifest.json").read_text())
    runs = [r for r in manifest["runs"] if r["exit"] == 0 and r["dir"]]
    baseline = [r for r in runs if r["kind"] == "baseline"]
    prime = [r for r in runs if r["kind"] == "prime"]
    cases = collections.OrderedDict()
    for r in runs:
        if r["kind"] not in ("baseline", "prime"):
            cases.setdefault(r["kind"], []).append(r)
    work = out / f"gates-{int(time.time())}"
    goldens = {}
    for i, b in enumerate(baseline):
        goldens.setdefault("1v1", []).append((work / f"g1-{i}", [b]))
    if prime:
        goldens["1v1-cold"] = [(work / "gcold", [prime[-1]])]
    if len(baseline) >= 3:
        goldens["3run"] = [(work / "g3", baseline[:3])]
    # 1v1-all: every unchanged run (the baseline runs, warm, hog, restart) is a one-run
    # baseline; an unchanged candidate meets every such run made before it, a change meets
    # them all: many more one-against-one gates from the same runs (they share runs, so they
    # are not independent; the table says how many runs they came from).
    unchanged_runs = [r for r in runs if r["kind"] == "baseline" or is_unchanged(r["kind"])]
    goldens["1v1-all"] = [(work / f"ga-{r['id']}", [r]) for r in unchanged_runs]
    # 3run-all: every three consecutive unchanged runs are a three-run baseline (`bless`,
    # `bless --add` twice), judged as 1v1-all judges (unchanged candidates made after all
    # three, every change): more three-run gates from the same runs, again not independent.
    goldens["3run-all"] = [(work / f"g3a-{w[0]['id']}", w)
                           for w in (unchanged_runs[i:i + 3]
                                     for i in range(len(unchanged_runs) - 2))]
    version = ladder_id(a)
    gates, refused = [], []
    for kind in a.baselines:
        for g, members in goldens.get(kind, []):
            err, forced = bless(a, g, [m["dir"] for m in members])
            if err:
                refused.append({"baseline": kind, "error": err})
                say(f"baseline {kind} refused: {err}")
            for f in forced:
                refused.append({"baseline": kind, "error": f, "forced": True})
                say(f"baseline {kind}: refused, then blessed with --force: {f}")
        usable = [(g, m) for g, m in goldens.get(kind, []) if (g / SCENARIO).exists()]
        if not usable:
            continue
        for case, cands in cases.items():
            for t, c in enumerate(cands):
                pairs = [usable[t % len(usable)]]
                if kind in ("1v1-all", "3run-all"):
                    pairs = [(g, m) for g, m in usable
                             if max(x["id"] for x in m) < c["id"] or not is_unchanged(case)]
                for g, members in pairs:
                    o = compare(a, g / SCENARIO, c["dir"], work / "j.xml")
                    base_ttft = rung_values(members[0]["dir"], "median_ttft_ms")
                    cand_ttft = rung_values(c["dir"], "median_ttft_ms")
                    o.update({"baseline": kind, "baseline_runs": [m["id"] for m in members],
                              "case": case, "candidate": c["id"],
                              "median_ttft_ratio": {k: cand_ttft[k] / v
                                                    for k, v in base_ttft.items()
                                                    if v and cand_ttft.get(k)}})
                    gates.append(o)
                    say(f"{kind} {case} run {c['id']}: exit {o['exit']} {o['counts']}")
    return {"ladder": version, "judged": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "manifest": manifest, "gates": gates, "refused": refused}


def is_unchanged(case):
    return case in ("warm", "hog", "restart")


def table(result):
    gates = result["gates"]
    lines = []
    runs = result["manifest"]["runs"]
    loads = [x for r in runs for x in (r.get("loadavg_before") or [None])[:1] +
             (r.get("loadavg_after") or [None])[:1] if x is not None]
    col = result["manifest"]["collections"]
    lines.append(f"# runs {runs[0]['started']} – {runs[-1]['ended']} ({len(runs)} runs; collected "
                 f"with {', '.join(sorted({c['ladder'] for c in col}))}); judged "
                 f"{result['judged']} with {result['ladder']}")
    if loads:
        lines.append(f"# 1-minute load average at run starts and ends: {min(loads):.1f}–"
                     f"{max(loads):.1f} (median {statistics.median(loads):.1f}); machine "
                     "{host}: {cpus} CPUs ({cpu}), Linux {kernel}".format(**col[0]['machine']))
    shares = collections.defaultdict(list)
    for r in runs:
        s = cache_share(r.get("cache_before") or {}, r.get("cache_after") or {})
        if s is not None:
            shares[r["kind"]].append(s)
    if shares:
        lines.append("# server prompt-cache share (cached / prompt tokens over the run), by run "
                     "kind: " + "; ".join(f"{k} {', '.join(f'{x:.0%}' for x in v)}"
                                          for k, v in shares.items()))
    lines.append("")
    lines.append("| baseline | case | gates | failed (exit 1): " "false alarms / detections | "
                 "most checks decided | checks per gate: regression / inconclusive / pass / "
                 "other (mean) | candidate/baseline median TTFT, lowest and top rung (median) | "
                 "checks that failed |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    order = {k: i for i, k in enumerate(BASELINE_KINDS)}
    keyed = collections.OrderedDict()
    for g in sorted(gates, key=lambda g: order.get(g["baseline"], 9)):
        keyed.setdefault((g["baseline"], g["case"]), []).append(g)
    for (kind, case), gs in keyed.items():
        ok = [g for g in gs if g["exit"] in (0, 1)]
        n = len(ok)
        failed = sum(g["exit"] == 1 for g in ok)
        decided = sum(g["checks"] and g["counts"].get("inconclusive", 0) < g["checks"] / 2
                      for g in ok)
        mean = lambda v: statistics.mean(g["counts"].get(v, 0) for g in ok) if ok else 0  # noqa: E731
        other = statistics.mean(g["checks"] - sum(g["counts"].get(v, 0) for v in
                                                  ("regression", "inconclusive", "pass"))
                                for g in ok) if ok else 0
        fails = collections.Counter(f"{c['rung']} {c['check']}" for g in ok
                                    for c in g.get("failed_checks", []))
        ratios = []
        for g in ok:
            rs = g["median_ttft_ratio"]
            if rs:
                keys = sorted(rs, key=float)
                ratios.append((rs[keys[0]], rs[keys[-1]]))
        ratio = (f"×{statistics.median(x for x, _ in ratios):.2f}, "
                 f"×{statistics.median(y for _, y in ratios):.2f}") if ratios else "—"
        what = "false alarms" if is_unchanged(case) else "detected"
        errors = len(gs) - n
        lines.append(
            f"| {kind} | {case} | {n}{f' (+{errors} exit 2)' if errors else ''} | "
            f"{what} {cell(failed, n)} | {cell(decided, n)} | {mean('regression'):.1f} / "
            f"{mean('inconclusive'):.1f} / {mean('pass'):.1f} / {other:.1f} | {ratio} | "
            + (", ".join(f"{k} ×{v}" for k, v in fails.most_common(4)) or "—") + " |")
    for r in result["refused"]:
        how = "was refused, then blessed with --force" if r.get("forced") else "could not be blessed"
        lines.append(f"\nbaseline {r['baseline']} {how}: {r['error']}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["collect", "gate", "all"])
    ap.add_argument("--out", required=True, help="folder for the runs, manifest.json and goldens")
    ap.add_argument("--ladder", default=str(ROOT / "target" / "release" / "ladder"))
    ap.add_argument("--server", choices=["llama", "sim"], default="llama")
    ap.add_argument("--llama-server", help="llama-server binary (default: build-llama.sh's)")
    ap.add_argument("--model", help="the GGUF (default: model.sh's)")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: model.sh's)")
    ap.add_argument("--model-name", default="smollm2-135m")
    ap.add_argument("--port", type=int, default=18480,
                    help="the base server's port; fresh servers use the next one")
    ap.add_argument("--base-args", default="",
                    help="server arguments of the base configuration (after start.sh's "
                         "-t 1 -np 4)")
    ap.add_argument("--requests", type=int, default=24, help="requests per rung")
    ap.add_argument("--rates", type=float, nargs="+", default=[0.4, 0.8, 1.2, 2.0])
    ap.add_argument("--baseline-runs", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=1)
    ap.add_argument("--cases", nargs="+", default=["warm", "hog", "restart", "np1", "np2"])
    ap.add_argument("--change", action="append", default=[], metavar="NAME=ARGS",
                    help="a change case: NAME=server arguments appended to the base's")
    ap.add_argument("--until", metavar="HH:MM",
                    help="start no case after this UTC time (the runs so far are kept)")
    ap.add_argument("--hog-procs", type=int, default=1)
    ap.add_argument("--hog-nice", type=int, default=19)
    ap.add_argument("--server-lifetime", type=int, default=7200)
    ap.add_argument("--sim-speed", type=float, default=20.0)
    ap.add_argument("--baselines", nargs="+", default=BASELINE_KINDS[:3], choices=BASELINE_KINDS,
                    help="baseline kinds to judge (1v1-all: every unchanged run against "
                    "every later one; 3run-all: every three consecutive unchanged runs "
                    "against every later one; opt-in, many gates)")
    ap.add_argument("--force-bless", action="store_true",
                    help="when bless refuses a baseline run, record it and bless with --force")
    ap.add_argument("--json", help="write the runs and every gate's outcome here")
    ap.add_argument("--compare-args", default="",
                    help="more arguments for every `ladder compare`, e.g. '--drift 0'")
    a = ap.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the servers and hogs this script started are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("calibrate_real: stopped by SIGTERM"))
    a.run_timeout = int(3 * a.requests * sum(1 / r for r in a.rates) + 600)
    if a.step in ("collect", "all"):
        if a.server == "llama":
            if not a.llama_server:
                a.llama_server = subprocess.run(
                    ["bash", str(ROOT / "scripts/real-server/build-llama.sh")],
                    capture_output=True, text=True, check=True).stdout.strip()
            if not (a.model and a.tokenizer):
                kv = dict(line.split("=", 1) for line in subprocess.run(
                    ["bash", str(ROOT / "scripts/real-server/model.sh")], capture_output=True,
                    text=True, check=True).stdout.split())
                a.model, a.tokenizer = a.model or kv["MODEL"], a.tokenizer or kv["TOKENIZER"]
        else:
            a.tokenizer = a.tokenizer or str(ROOT / "scenarios" / "tokenizers" / "ladder-tiny.json")
        unknown = [c for c in a.cases if c not in ("warm", "hog", "restart")
                   and c not in CHANGES[a.server] and not any(x.startswith(c + "=") for x in a.change)]
        if unknown:
            sys.exit(f"unknown case(s) {unknown}: warm, hog, restart, {', '.join(CHANGES[a.server])}"
                     " or one given with --change NAME=ARGS")
        collect(a)
    if a.step in ("gate", "all"):
        result = judge(a)
        print(table(result))
        if a.json:
            Path(a.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
