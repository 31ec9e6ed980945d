#!/usr/bin/env python3
"""The seed document's plotting snippet (section 4), run on a ladder result folder.

Only the folder, the output image and the rates are parameters; the loop, the keys read
(qps, median_ttft_ms, median_tpot_ms, error_rate) and the plot are the seed's, so this
script doubles as a compatibility check of ladder's result_rate_<rate>.json files.

Usage: python3 scripts/seed_plot.py RESULT_DIR [OUT.png] [RATE ...]
       OUT.png defaults to RESULT_DIR/seed_plot.png; the rates default to every rung of the
       folder (from its run.json, or for a folder of vLLM result files from the
       result_rate_<rate>.json names), so `seed_plot.py results/quickstart/<ts>` just works.
       A vLLM file names QPS `request_throughput` (ladder's files carry both): it is read
       as `qps`. Needs matplotlib (`python3 -m pip install matplotlib`).
"""
import glob
import os
import sys

import matplotlib
matplotlib.use("Agg")  # savefig instead of show: no display needed
import matplotlib.pyplot as plt
import json



def _is_rate(arg):
    try:
        float(arg)
        return True
    except ValueError:
        return False


def _rate(r):
    return int(r) if float(r).is_integer() else float(r)


def _with_qps(data):
    """A vLLM benchmark file has no `qps`: its `request_throughput` is the same number."""
    if "qps" not in data and "request_throughput" in data:
        data["qps"] = data["request_throughput"]
    return data


def _rates_of_files(folder):
    """The rates of the result_rate_<rate>.json files in a folder (vLLM folders have no run.json)."""
    rates = set()
    for p in glob.glob(os.path.join(glob.escape(folder), "result_rate_*.json")):
        r = os.path.basename(p)[len("result_rate_"):-len(".json")]
        if _is_rate(r):
            rates.add(_rate(r))
    return sorted(rates)


RESULT_DIR = sys.argv[1] if len(sys.argv) > 1 else "./benchmark_results/concurrency_test"
_args = sys.argv[2:]
# A number where OUT.png would be is the first rate, not a file name.
OUT = _args.pop(0) if _args and not _is_rate(_args[0]) else f"{RESULT_DIR}/seed_plot.png"
RATES = [_rate(r) for r in _args]
if not RATES:
    try:
        with open(f"{RESULT_DIR}/run.json") as f:
            RATES = sorted({_rate(r["rate"]) for r in json.load(f)["rungs"]})
    except (OSError, KeyError, ValueError):
        RATES = _rates_of_files(RESULT_DIR) or [5, 10, 20, 30, 40, 50]  # else the seed's own ladder

# --- from the seed, unchanged apart from RESULT_DIR / RATES and _with_qps (vLLM files) ---
rates, qps_values, ttft_values, tpot_values, error_rates = [], [], [], [], []
for rate in RATES:
    with open(f'{RESULT_DIR}/result_rate_{rate}.json') as f:
        data = _with_qps(json.load(f))
        rates.append(rate)
        qps_values.append(data['qps'])
        ttft_values.append(data['median_ttft_ms'])
        tpot_values.append(data['median_tpot_ms'])
        error_rates.append(data.get('error_rate', 0))

plt.figure(figsize=(10, 6))
plt.plot(rates, qps_values, label='QPS')
plt.plot(rates, ttft_values, label='TTFT (ms)')
plt.plot(rates, tpot_values, label='TPOT (ms)')
plt.xlabel('Request Rate (req/s)')
plt.ylabel('Metrics')
plt.title('Concurrency Test Results')
plt.legend()
plt.grid(True)
# --- end of the seed's snippet ---
plt.savefig(OUT)
print(OUT)
