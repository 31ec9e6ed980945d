#!/usr/bin/env bash
# The README's commands, run as written: each one is looked up verbatim in README.md (so the
# two cannot drift apart) and then run, with `results/<name>/<ts>` / `<timestamp>` replaced by
# the newest folder of that scenario and the README's example tokenizer path by the test
# tokenizer. Runs in a scratch copy of scenarios/, golden/, scripts/ and the vLLM fixture
# with the release build on PATH, so it changes nothing in the checkout and needs no network
# (the only server is a `ladder sim` on loopback). .ci/run calls it after the tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$root/target/release:$PATH"
command -v ladder >/dev/null || { echo "error: build first: cargo build --release" >&2; exit 2; }
work="$(mktemp -d)"
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$root/scenarios" "$root/golden" "$root/scripts" "$work/"
cd "$work"
tiny="$work/scenarios/tokenizers/ladder-tiny.json"
ran=0
# readme CMD [EXTRA [CODES]]: CMD must be in README.md as written; EXTRA is appended (e.g. a
# shorter ladder); CODES are the accepted exit codes (default 0).
readme() {
  local cmd="$1" extra="${2:-}" codes="${3:-0}" name ts rc
  grep -qF -- "$cmd" "$root/README.md" \
    || { echo "error: README.md no longer has the command: $cmd" >&2; exit 1; }
  while [[ $cmd =~ results/([A-Za-z0-9._-]+)/\<(ts|timestamp)\> ]]; do
    name="${BASH_REMATCH[1]}"
    ts="$(ls "results/$name" 2>/dev/null | tail -n 1 || true)"
    cmd="${cmd//results\/$name\/<${BASH_REMATCH[2]}>/results/$name/$ts}"
  done
  cmd="${cmd//\/models\/Qwen2.5-7B-Instruct\/tokenizer.json/$tiny}"
  echo "+ $cmd $extra"
  rc=0
  eval "$cmd $extra" || rc=$?
  [[ " $codes " == *" $rc "* ]] \
    || { echo "error: exit $rc (want $codes): $cmd $extra" >&2; exit 1; }
  ran=$((ran + 1))
}
mkdir -p loadtests

# "A first scenario" from flags: written, then valid as it is.
readme 'ladder init --name my-vllm --base-url http://127.0.0.1:8000 --model Qwen2.5-7B-Instruct --tokenizer /models/Qwen2.5-7B-Instruct/tokenizer.json --api-key-env OPENAI_API_KEY -o loadtests/my-vllm.yaml'
grep -q 'api_key_env: OPENAI_API_KEY' loadtests/my-vllm.yaml
readme 'ladder validate loadtests/my-vllm.yaml'
rm loadtests/my-vllm.yaml

# ... converted from the seed guide's COMMON_ARGS, word for word.
COMMON_ARGS="--backend openai --base-url https://taotoken.net/api --model MetaX-DeepSeek-R1-70B --tokenizer /models/DeepSeek-R1-Distill-Llama-70B --dataset-name random --random-input-len 512 --random-output-len 256 --num-prompts 200 --disable-tqdm --trust-remote-code --tokenizer-mode auto"
export COMMON_ARGS
readme 'ladder init --from-vllm "$COMMON_ARGS" --rates 5,10,20,30,40,50 --name my-vllm -o loadtests/my-vllm.yaml'
grep -q 'rates: \[5, 10, 20, 30, 40, 50\]' loadtests/my-vllm.yaml
grep -q 'api_key_env: OPENAI_API_KEY' loadtests/my-vllm.yaml
rm loadtests/my-vllm.yaml

# ... and the same arguments pointed at a simulator and the test tokenizer (5 prompts, the
# lengths of the vLLM fixture below), converted, validated and run with the README's lines
# (the cooldown shortened to keep this fast).
ladder sim --port 0 --speed 10 --served-model-names MetaX-DeepSeek-R1-70B >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
for _ in $(seq 100); do [ -s "$work/sim.out" ] && break; sleep 0.1; done
port="$(head -n 1 "$work/sim.out" | grep -o '[0-9]*$')"
[ -n "$port" ] || { echo "error: ladder sim printed no port" >&2; cat "$work/sim.err" >&2; exit 1; }
COMMON_ARGS="--backend openai --base-url http://127.0.0.1:$port --model MetaX-DeepSeek-R1-70B --tokenizer $tiny --dataset-name random --random-input-len 512 --random-output-len 32 --num-prompts 5 --disable-tqdm --trust-remote-code --tokenizer-mode auto"
readme 'ladder init --from-vllm "$COMMON_ARGS" --rates 5,10,20,30,40,50 --name my-vllm -o loadtests/my-vllm.yaml'
sed -i 's/^\(  cooldown:\).*/\1 0s/' loadtests/my-vllm.yaml
readme 'ladder validate loadtests/my-vllm.yaml'
unset OPENAI_API_KEY
readme 'ladder run loadtests/my-vllm.yaml' '--rates 5,10 --quiet'
test -s "results/my-vllm/$(ls results/my-vllm | tail -n 1)/result_rate_10.json"
kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""

# "vLLM result files as input": the seed's folder layout (vLLM 0.8 --save-detailed files).
mkdir -p benchmark_results
cp -r "$root/tests/fixtures/vllm-benchmark-serving-0.8" benchmark_results/concurrency_test
rm benchmark_results/concurrency_test/make_fixture.py
cp -r benchmark_results/concurrency_test benchmark_results/after_upgrade
readme 'ladder report benchmark_results/concurrency_test --out vllm-report'
test -s vllm-report/report.html
# One run per side under the assumed 5 % drift: the copy's latency checks stay inconclusive,
# and its throughput passes below saturation decide nothing, so NO VERDICT (2) is a correct
# answer as well as PASS (docs/gate.md).
readme 'ladder compare benchmark_results/concurrency_test benchmark_results/after_upgrade' '' '0 2'
# A different server (the simulator): a regression, or no verdict, is a correct answer too.
readme 'ladder compare benchmark_results/concurrency_test results/my-vllm/<timestamp>' '' '0 1 2'

# "The CI gate", outside GitHub Actions (GITHUB_STEP_SUMMARY unset).
unset GITHUB_STEP_SUMMARY
readme 'ladder run scenarios/quickstart.yaml'
if python3 -c 'import matplotlib' 2>/dev/null; then
  readme 'python3 scripts/seed_plot.py results/quickstart/<ts>'
  test -s "results/quickstart/$(ls results/quickstart | tail -n 1)/seed_plot.png"
  readme 'python3 scripts/seed_plot.py results/quickstart/<ts> out.png 8 16'
  test -s out.png
else
  echo "note: matplotlib missing: the seed_plot.py commands were not run"
fi
readme 'ladder bless results/quickstart/<timestamp>'
readme 'ladder gate scenarios/quickstart.yaml --summary "${GITHUB_STEP_SUMMARY:-gate.md}" --junit gate.xml'
test -s gate.md && test -s gate.xml
readme 'ladder completions bash' >/dev/null

# "Commands": the capacity search against the simulator (under a minute); it answers with
# capacity.json beside its probes' rungs.
readme 'ladder run scenarios/capacity.yaml'
grep -q '"status"' "results/capacity/$(ls results/capacity | tail -n 1)/capacity.json"
echo "README commands: all $ran ran as written"
