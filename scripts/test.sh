#!/usr/bin/env bash
# README's test command: `cargo test --locked` (extra arguments are passed on), then the tests
# that skipped because this machine lacks what they need (a real llama.cpp server, a Slurm
# cluster, matplotlib, the right to mount a tmpfs), listed and counted. libtest has no
# "skipped" status: such a test returns early and cargo counts it as passed, so this list is
# what tells a green run that tested nothing real from one that did (tests/support/skip.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
log="${CARGO_TARGET_DIR:-target}/tmp/ladder-skips.log"
mkdir -p "$(dirname "$log")"
: >"$log"
status=0
cargo test --locked "$@" || status=$?
n="$(grep -c . "$log" || true)"
if [ "$n" -gt 0 ]; then
  echo "skipped: $n test(s) did not run here (counted as passed by cargo):"
  sed 's/^/  /' "$log"
else
  echo "skipped: none (every test that needs a real server, Slurm or matplotlib ran)"
fi
exit "$status"
