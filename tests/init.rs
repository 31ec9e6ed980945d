//! `ladder init`: scenarios from flags and from the seed guide's exact vLLM command line,
//! checked by the real loader and `ladder validate`; `ladder completions`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ladder::scenario::{load, Api, Arrival, Dataset};

const BIN: &str = env!("CARGO_BIN_EXE_ladder");

fn tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json")
}

fn ladder(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("ladder runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The seed guide's `COMMON_ARGS`, word for word.
const SEED_COMMON_ARGS: &str = "--backend openai --base-url https://taotoken.net/api \
    --model MetaX-DeepSeek-R1-70B --tokenizer /models/DeepSeek-R1-Distill-Llama-70B \
    --dataset-name random --random-input-len 512 --random-output-len 256 --num-prompts 200 \
    --disable-tqdm --trust-remote-code --tokenizer-mode auto";

/// The loop body of the seed's script: `python benchmark_serving.py $COMMON_ARGS ...`.
const SEED_LOOP_TAIL: &str = " --request-rate $rate \\\n  --result-dir $(dirname $RESULT_FILE) \\\n  --result-filename $(basename $RESULT_FILE)";

#[test]
fn the_seed_command_line_converts_to_an_equivalent_scenario() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("seed.yaml");
    let args = format!("python benchmark_serving.py {SEED_COMMON_ARGS}{SEED_LOOP_TAIL}");
    let o = ladder(&[
        "init",
        "--from-vllm",
        &args,
        "--rates",
        "5,10,20,30,40,50",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    // Every seed flag has a meaning in ladder or none at all: nothing is left unconverted.
    assert!(!err.contains("not converted"), "{err}");
    assert!(err.contains("--request-rate $rate"), "{err}");

    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("# Converted by `ladder init --from-vllm`"),
        "{text}"
    );
    // The tokenizer is the user's model directory, kept as written (`tokenizer:` reads the
    // directory's tokenizer.json); point it at the fixture to load it for real and validate.
    assert!(
        text.contains("tokenizer: /models/DeepSeek-R1-Distill-Llama-70B   #"),
        "{text}"
    );
    let text = text.replace(
        "/models/DeepSeek-R1-Distill-Llama-70B",
        tokenizer().to_str().unwrap(),
    );
    std::fs::write(&out, text).unwrap();
    let v = ladder(&["validate", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));

    let s = load(&out).unwrap().scenario;
    assert_eq!(s.endpoint.base_url, "https://taotoken.net/api");
    assert_eq!(s.endpoint.api, Api::Completions);
    assert_eq!(s.endpoint.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(s.model, "MetaX-DeepSeek-R1-70B");
    assert_eq!(s.workload.dataset, Dataset::Random);
    assert_eq!(
        (s.workload.input_tokens, s.workload.output_tokens),
        (512, 256)
    );
    assert_eq!(s.workload.requests_per_rung, 200);
    assert_eq!(s.load.arrival, Arrival::Poisson);
    assert_eq!(s.load.rates, vec![5.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
    assert_eq!(s.load.baseline_rate, Some(1.0));
    assert_eq!(s.load.cooldown.0, std::time::Duration::from_secs(10));
}

#[test]
fn flags_without_an_equivalent_are_named_and_the_key_is_never_written() {
    let o = ladder(&[
        "init",
        "--from-vllm",
        "vllm bench serve --model m --served-model-name served --request-rate 2 \
         --request-rate 4 --profile --lora-modules a=/x b=/y --api-key sk-never-written-7731 \
         --burstiness 0.5 --max-concurrency 8 --header X-Api-Key=hdr-secret-5521",
        "--tokenizer",
        tokenizer().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("warning: not converted: --profile"), "{err}");
    assert!(
        err.contains("warning: not converted: --lora-modules a=/x"),
        "{err}"
    );
    let yaml = String::from_utf8_lossy(&o.stdout).into_owned();
    for secret in ["sk-never-written-7731", "hdr-secret-5521"] {
        assert!(!yaml.contains(secret) && !err.contains(secret), "{secret}");
    }
    assert!(
        yaml.contains("X-Api-Key: \"{{ env.LADDER_HEADER_X_API_KEY }}\""),
        "{yaml}"
    );
    assert!(yaml.contains("model: served"), "{yaml}");
    assert!(yaml.contains("rates: [2, 4]"), "{yaml}");
    assert!(yaml.contains("arrival: gamma"), "{yaml}");
    assert!(yaml.contains("burstiness: 0.5"), "{yaml}");
    assert!(yaml.contains("max_concurrency: 8"), "{yaml}");
}

#[test]
fn init_from_flags_writes_a_valid_scenario_and_refuses_bad_settings() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("mine.yaml");
    let tok = tokenizer();
    let base = [
        "init",
        "--base-url",
        "sim",
        "--model",
        "Qwen/Qwen2.5-7B-Instruct",
        "--tokenizer",
        tok.to_str().unwrap(),
        "--rates",
        "2,4",
        "--requests-per-rung",
        "20",
    ];
    let mut args = base.to_vec();
    args.extend(["-o", out.to_str().unwrap()]);
    let o = ladder(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = load(&out).unwrap().scenario;
    assert_eq!(s.name, "qwen2.5-7b-instruct");
    assert_eq!(s.load.rates, vec![2.0, 4.0]);
    assert_eq!(s.workload.requests_per_rung, 20);

    // Rates starting at or under 1 req/s: the default baseline is half the first rate (the
    // help's promise), not 1, which validate refuses at or above the first rate.
    let low = t.path().join("low.yaml");
    let mut args_low = base.to_vec();
    let at = args_low.iter().position(|a| *a == "2,4").unwrap();
    args_low[at] = "1,2";
    args_low.extend(["-o", low.to_str().unwrap()]);
    let o = ladder(&args_low);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = load(&low).unwrap().scenario;
    assert_eq!(s.load.baseline_rate, Some(0.5));
    assert_eq!(s.load.rates, vec![1.0, 2.0]);

    // An existing file is kept unless --force.
    let o = ladder(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));

    // Settings that make no valid scenario: refused, nothing written.
    let bad = t.path().join("bad.yaml");
    let mut args = base.to_vec();
    args.extend(["--rates", "10,5", "-o", bad.to_str().unwrap()]);
    let o = ladder(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error: load.rates"), "{}", stderr(&o));
    assert!(!bad.exists());

    // README's first command in a fresh repository: `-o loadtests/x.yaml` makes the folder
    // and says so; a parent that cannot be a folder is an error about the scenario, never
    // about "results".
    let nested = t.path().join("loadtests").join("deeper").join("mine.yaml");
    let mut args = base.to_vec();
    args.extend(["-o", nested.to_str().unwrap()]);
    let o = ladder(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(load(&nested).is_ok());
    assert!(stderr(&o).contains("made the folder"), "{}", stderr(&o));
    let under_file = out.join("x.yaml");
    let mut args = base.to_vec();
    args.extend(["-o", under_file.to_str().unwrap()]);
    let o = ladder(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error: cannot"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("results"), "{}", stderr(&o));
}

#[test]
fn completions_are_generated_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = ladder(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        for word in ["ladder", "init", "gate", "--from-vllm"] {
            assert!(script.contains(word), "{shell}: no `{word}`");
        }
    }
}

/// `ladder --version` names the commit the binary was built from (build.rs), so a CI log or a
/// bug report says which build ran: a commit of this checkout (HEAD when it was built).
#[test]
fn version_names_the_commit_it_was_built_from() {
    let o = ladder(&["--version"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        v.starts_with(&format!("ladder {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    // The commit build.rs read when this binary (and this test) was built.
    let built = env!("LADDER_GIT_COMMIT");
    assert!(v.contains(&format!("(commit {built})")), "{v}");
    // In a git checkout it is a real commit of this repository (HEAD when built; a commit
    // made since then is not a reason to fail).
    let in_git = std::process::Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .is_ok_and(|o| o.status.success());
    if in_git {
        assert!(
            built.len() == 12 && built.chars().all(|c| c.is_ascii_hexdigit()),
            "{built}"
        );
        let exists = std::process::Command::new("git")
            .args(["cat-file", "-e", &format!("{built}^{{commit}}")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .is_ok_and(|s| s.success());
        assert!(exists, "{built} is not a commit of this repository");
    } else {
        assert_eq!(built, "unknown");
    }
}

/// `--from-vllm '… $COMMON_ARGS …'` (single quotes: the shell left the variable in) says
/// so, and says which values are placeholders; the baseline rung ladder adds is priced
/// (seconds, share of the run) with the way to drop it, and `--no-baseline` drops it.
#[test]
fn unexpanded_variables_placeholders_and_the_baseline_cost_are_said() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("q.yaml");
    let o = ladder(&[
        "init",
        "--from-vllm",
        "--backend vllm $COMMON_ARGS --request-rate $rate",
        "--rates",
        "5,10,20",
        "--name",
        "q",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: --from-vllm holds $COMMON_ARGS unexpanded")
            && err.contains("Use double quotes: --from-vllm \"$COMMON_ARGS\""),
        "{err}"
    );
    assert!(!err.contains("$rate unexpanded"), "{err}");
    assert!(
        err.contains("warning: model: my-model is a placeholder"),
        "{err}"
    );
    assert!(
        err.contains("warning: tokenizer: tokenizer.json is a placeholder"),
        "{err}"
    );
    // 200 requests at 1 req/s = 200 s; the rates take 200/5 + 200/10 + 200/20 = 70 s:
    // 200 / 270 = 74 %.
    assert!(
        err.contains("200 requests at 1 req/s, about 200 s, 74 % of the run's sending time")
            && err.contains("(the 3 rates take about 70 s;")
            && err.contains("--no-baseline"),
        "{err}"
    );

    // The seed's own command line (double-quoted $COMMON_ARGS: expanded) has no such warning.
    let args = format!("python benchmark_serving.py {SEED_COMMON_ARGS}{SEED_LOOP_TAIL}");
    let seed = t.path().join("seed.yaml");
    let o = ladder(&[
        "init",
        "--from-vllm",
        &args,
        "--rates",
        "5,10",
        "--no-baseline",
        "-o",
        seed.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("unexpanded"), "{err}");
    assert!(!err.contains("placeholder"), "{err}");
    assert!(!err.contains("baseline_rate"), "{err}");
    assert_eq!(load(&seed).unwrap().scenario.load.baseline_rate, None);
}
