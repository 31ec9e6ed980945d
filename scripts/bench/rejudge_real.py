#!/usr/bin/env python3
"""Judge the gates of a stored `calibrate_real.py gate` judging again with another build, on
the very baselines that judging blessed (its gates-*/ga-* and g3a-* folders), without
blessing again: the same baseline, the same candidate, another `ladder compare`.

  python3 scripts/bench/rejudge_real.py LADDER PREVIOUS.json GATES_DIR OUT.json KINDS

PREVIOUS.json is the earlier judging's --json, GATES_DIR its gates-<time> folder under --out,
KINDS a comma-separated list of baseline kinds (3run-all, 1v1-all). OUT.json gets every
gate's outcome (as calibrate_real.py writes them, plus the earlier exit code as
`before_exit`); OUT.json.xml is the JUnit scratch file. Nothing under GATES_DIR is written.
"""
import collections
import importlib.util
import json
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("calibrate_real", HERE / "calibrate_real.py")
cr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cr)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    ladder, prev, gates_dir, out, kinds = sys.argv[1:]
    gates_dir, kinds = Path(gates_dir), kinds.split(",")
    a = types.SimpleNamespace(ladder=ladder, compare_args="")
    r = json.loads(Path(prev).read_text())
    runs = {x["id"]: x for x in r["manifest"]["runs"]}
    prefix = {"3run-all": "g3a-", "1v1-all": "ga-"}
    res = []
    for g in r["gates"]:
        if g["baseline"] not in kinds:
            continue
        golden = gates_dir / f"{prefix[g['baseline']]}{g['baseline_runs'][0]}" / cr.SCENARIO
        o = cr.compare(a, golden, runs[g["candidate"]]["dir"], Path(out + ".xml"))
        o.update({k: g[k] for k in ("baseline", "baseline_runs", "case", "candidate")})
        o["before_exit"] = g["exit"]
        res.append(o)
        print(g["baseline"], g["baseline_runs"], g["case"], g["candidate"],
              "exit", g["exit"], "->", o["exit"], o["counts"], flush=True)
    Path(out).write_text(json.dumps({"ladder": cr.ladder_id(a), "gates": res}, indent=1))
    tally = collections.Counter((o["baseline"], o["case"], o["exit"]) for o in res)
    for k in sorted(tally):
        print(*k, tally[k])


if __name__ == "__main__":
    main()
