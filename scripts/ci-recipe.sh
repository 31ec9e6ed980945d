#!/usr/bin/env bash
# docs/ci.md's recipe for a user's repository, run as written: each command is looked up
# verbatim in docs/ci.md (so the page and this check cannot drift apart), then run in a
# scratch git repository that is not ladder's checkout, against a `ladder sim` on loopback
# (the page's base URL, model and tokenizer are replaced by the simulator's and the test
# tokenizer; the ladder is shortened). No network: the page installs with
# `cargo install --git "$LADDER_GIT" ...`; here `cargo install --locked --path <this checkout>`
# stands in for it (same build, same binary, from a path instead of a URL), into a scratch
# root, reusing this checkout's target/ (LADDER_RECIPE_BIN=path/to/ladder skips the install).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
doc="$root/docs/ci.md"
work="$(mktemp -d)"
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${LADDER_RECIPE_BIN:-}" ]; then
  mkdir -p "$work/bin" && ln -s "$LADDER_RECIPE_BIN" "$work/bin/ladder"
  export PATH="$work/bin:$PATH"
  echo "+ (install skipped: LADDER_RECIPE_BIN=$LADDER_RECIPE_BIN)"
else
  grep -qF -- 'cargo install --locked --git "$LADDER_GIT" --rev "$LADDER_REV" ladder' "$doc" \
    || { echo "error: docs/ci.md no longer has its install command" >&2; exit 1; }
  echo "+ cargo install --locked --path $root --root $work/cargo   # stand-in for --git"
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" \
    cargo install --locked --quiet --path "$root" --root "$work/cargo"
  export PATH="$work/cargo/bin:$PATH"
fi
command -v ladder >/dev/null
ladder --version

repo="$work/my-service"
mkdir -p "$repo" && cd "$repo"
git init -q
git config user.email ci@example.invalid
git config user.name "ladder recipe"
printf 'results/\n' > .gitignore

tiny="$root/scenarios/tokenizers/ladder-tiny.json"
ladder sim --port 0 --speed 10 --served-model-names Qwen2.5-7B-Instruct >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
for _ in $(seq 100); do [ -s "$work/sim.out" ] && break; sleep 0.1; done
port="$(head -n 1 "$work/sim.out" | grep -o '[0-9]*$')"
[ -n "$port" ] || { echo "error: ladder sim printed no port" >&2; cat "$work/sim.err" >&2; exit 1; }

ran=0
# step CMD [EXTRA [CODES]]: CMD must be in docs/ci.md as written; EXTRA is appended; CODES
# are the accepted exit codes (default 0).
step() {
  local cmd="$1" extra="${2:-}" codes="${3:-0}" rc ts
  grep -qF -- "$cmd" "$doc" \
    || { echo "error: docs/ci.md no longer has the command: $cmd" >&2; exit 1; }
  if [[ $cmd == *"<timestamp>"* ]]; then
    ts="$(ls results/my-vllm | tail -n 1)"
    cmd="${cmd//<timestamp>/$ts}"
  fi
  cmd="${cmd//http:\/\/127.0.0.1:8000/http://127.0.0.1:$port}"
  cmd="${cmd//\/models\/Qwen2.5-7B-Instruct\/tokenizer.json/$tiny}"
  echo "+ $cmd $extra"
  rc=0
  eval "$cmd $extra" || rc=$?
  [[ " $codes " == *" $rc "* ]] || { echo "error: exit $rc (want $codes): $cmd $extra" >&2; exit 1; }
  ran=$((ran + 1))
}

unset OPENAI_API_KEY
step 'ladder init --name my-vllm --base-url http://127.0.0.1:8000 --model Qwen2.5-7B-Instruct --tokenizer /models/Qwen2.5-7B-Instruct/tokenizer.json --api-key-env OPENAI_API_KEY -o loadtests/my-vllm.yaml' \
  '--requests-per-rung 40 --rates 10,20 --no-baseline --cooldown 0s'
step 'ladder validate loadtests/my-vllm.yaml'
step 'ladder run loadtests/my-vllm.yaml' '--quiet'
step 'ladder bless results/my-vllm/<timestamp>'
step 'git add loadtests golden && git commit -m "golden: my-vllm baseline"' '-q'
git ls-files | grep -q '^golden/my-vllm/run.json$' || { echo "error: the baseline was not committed" >&2; exit 1; }
# An unchanged server: pass, or NO VERDICT (exit 2) when 40 requests a rung decide nothing.
step 'ladder gate loadtests/my-vllm.yaml --summary gate.md --junit gate.xml' '' '0 2'
test -s gate.md && test -s gate.xml
# A second bless replaces the baseline; the old one goes to golden/.replaced/, which git
# ignores: `git add golden` stages the new baseline only.
step 'ladder bless results/my-vllm/<timestamp>'
test -d golden/.replaced/my-vllm
git add golden
if git status --porcelain | grep -q '\.replaced'; then
  echo "error: git would commit golden/.replaced/:" >&2; git status --porcelain >&2; exit 1
fi
if [ -n "$(git status --porcelain --ignored=no -- results)" ]; then
  echo "error: results/ is not ignored" >&2; exit 1
fi
echo "ci-recipe: $ran docs/ci.md commands ran in a scratch git repository ($repo)"
