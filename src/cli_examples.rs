//! The EXAMPLES section at the end of `--help` of the main commands. Each line is a command
//! that works as shown from a checkout of ladder (the `scenarios/` files) or from a project
//! with `loadtests/` and `golden/` (tests/help_examples.rs checks they parse).

pub(crate) const RUN: &str = "\
EXAMPLES:
  ladder run scenarios/quickstart.yaml                 # built-in simulator, ~30 s
  ladder run loadtests/my-vllm.yaml --rates 5,10,20    # other rates (the baseline rung still first)
  ladder run loadtests/my-vllm.yaml --repeats 3        # every rung 3 times: measures run-to-run noise
  ladder run loadtests/my-vllm.yaml --json | jq .dir   # summary as JSON on stdout
  ladder run loadtests/my-vllm.yaml --out /tmp/results --quiet";

pub(crate) const GATE: &str = "\
EXAMPLES:
  ladder gate loadtests/my-vllm.yaml                   # run, compare with golden/my-vllm/
  ladder gate loadtests/my-vllm.yaml --summary \"$GITHUB_STEP_SUMMARY\" --junit gate.xml
  ladder gate loadtests/my-vllm.yaml --threshold median_ttft_ms=+15% --strict
  ladder gate loadtests/my-vllm.yaml --json > gate.json   # verdict for scripts (docs/json.md)

Exit codes: 0 pass, 1 regression, 2 unusable input or nothing judged (NO VERDICT).";

pub(crate) const BLESS: &str = "\
EXAMPLES:
  ladder bless results/my-vllm/2026-01-01T12-00-00Z    # -> golden/my-vllm/, old one kept aside
  ladder bless --add results/my-vllm/2026-01-02T09-30-00Z   # one more run of the same baseline
  ladder bless results/my-vllm/2026-01-01T12-00-00Z --golden ci/golden
  git add golden/my-vllm && git commit -m \"golden: my-vllm baseline\"";

pub(crate) const COMPARE: &str = "\
EXAMPLES:
  ladder compare golden/my-vllm results/my-vllm/2026-01-02T09-30-00Z
  ladder compare A B --threshold p99_ttft_ms=+20% --threshold error_rate<=0.01
  ladder compare A B --drift 0 --judge-saturated       # assume no drift, judge past the knee
  ladder compare vllm-results/ results/my-vllm/2026-01-02T09-30-00Z   # a vLLM folder as baseline
  ladder compare A B --json | jq '.rows[] | select(.verdict == \"regression\")'";

pub(crate) const REPORT: &str = "\
EXAMPLES:
  ladder report results/my-vllm/2026-01-02T09-30-00Z   # report.html, summary.md, summary.csv there
  ladder report golden/my-vllm results/my-vllm/2026-01-02T09-30-00Z   # overlay, in CANDIDATE/compare
  ladder report A B --out /tmp/overlay";

pub(crate) const HISTORY: &str = "\
EXAMPLES:
  ladder history results/my-vllm/ golden/my-vllm
  ladder history results/my-vllm/ --metric p99_ttft_ms --rate 10
  ladder history results/my-vllm/ --summary history.md --html history.html
  ladder history results/my-vllm/ --json | jq .verdict

Exit codes: 0 no regression step at the newest folder, 1 one, 2 unusable input.";

pub(crate) const INIT: &str = "\
EXAMPLES:
  ladder init --name my-vllm --base-url http://127.0.0.1:8000 --model Qwen2.5-7B-Instruct \\
      --tokenizer /models/Qwen2.5-7B-Instruct/tokenizer.json --api-key-env OPENAI_API_KEY \\
      -o loadtests/my-vllm.yaml
  ladder init --from-vllm \"$COMMON_ARGS\" --rates 5,10,20 --name mine -o loadtests/mine.yaml
  ladder init --from-vllm \"--model Qwen/Qwen2.5-7B-Instruct --dataset-name random \\
      --random-input-len 512 --random-output-len 256 --num-prompts 200\" --name q -o loadtests/q.yaml";

pub(crate) const COMPLETIONS: &str = "\
INSTALL (one line per shell; open a new shell afterwards):
  bash:        ladder completions bash > ~/.local/share/bash-completion/completions/ladder
  zsh:         ladder completions zsh > ~/.zfunc/_ladder   # with fpath+=(~/.zfunc) before compinit
  fish:        ladder completions fish > ~/.config/fish/completions/ladder.fish
  elvish:      eval (ladder completions elvish | slurp)   # a line in ~/.config/elvish/rc.elv
  powershell:  ladder completions powershell | Out-String | Invoke-Expression   # a line in $PROFILE";
