#!/usr/bin/env bash
# The README's commands, run as written: each one is looked up verbatim in README.md (so the
# two cannot drift apart) and then run, with `<ts>` / `<timestamp>` replaced by the folder the
# run before made. Runs in a scratch copy of scenarios/, golden/ and scripts/ with the release
# build on PATH, so it changes nothing in the checkout. .ci/run calls it after the tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$root/target/release:$PATH"
command -v ladder >/dev/null || { echo "error: build first: cargo build --release" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/scenarios" "$root/golden" "$root/scripts" "$work/"
cd "$work"
ran=0
readme() {
  local cmd="$1"
  grep -qF -- "$cmd" "$root/README.md" \
    || { echo "error: README.md no longer has the command: $cmd" >&2; exit 1; }
  local ts
  ts="$(ls results/quickstart 2>/dev/null | tail -n 1 || true)"
  cmd="${cmd//<timestamp>/$ts}"
  cmd="${cmd//<ts>/$ts}"
  echo "+ $cmd"
  eval "$cmd"
  ran=$((ran + 1))
}

# "A first scenario": the seed guide's COMMON_ARGS, word for word.
COMMON_ARGS="--backend openai --base-url https://taotoken.net/api --model MetaX-DeepSeek-R1-70B --tokenizer /models/DeepSeek-R1-Distill-Llama-70B --dataset-name random --random-input-len 512 --random-output-len 256 --num-prompts 200 --disable-tqdm --trust-remote-code --tokenizer-mode auto"
export COMMON_ARGS
mkdir -p loadtests
readme 'ladder init --from-vllm "$COMMON_ARGS" --rates 5,10,20,30,40,50 -o loadtests/my-vllm.yaml'
grep -q 'rates: \[5, 10, 20, 30, 40, 50\]' loadtests/my-vllm.yaml

# "The CI gate", outside GitHub Actions (GITHUB_STEP_SUMMARY unset).
unset GITHUB_STEP_SUMMARY
readme 'ladder run scenarios/quickstart.yaml'
if python3 -c 'import matplotlib' 2>/dev/null; then
  readme 'python3 scripts/seed_plot.py results/quickstart/<ts>'
  test -s "results/quickstart/$(ls results/quickstart | tail -n 1)/seed_plot.png"
else
  echo "note: matplotlib missing: the seed_plot.py command was not run"
fi
readme 'ladder bless results/quickstart/<timestamp>'
readme 'ladder gate scenarios/quickstart.yaml --summary "${GITHUB_STEP_SUMMARY:-gate.md}" --junit gate.xml'
test -s gate.md && test -s gate.xml
readme 'ladder completions bash' >/dev/null
echo "README commands: all $ran ran as written"
