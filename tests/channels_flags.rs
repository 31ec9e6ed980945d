mod support;
use support::*;

// Command-line flags that reach a written file (issue 32, "a property test per channel"):
// seeded hostile values (line breaks, `#SBATCH` lines, `$(…)`, backticks, quotes, pipes,
// `<script>`, Markdown images, control sequences, YAML line separators) through `ladder slurm`
// (`--partition`, `--time`, `--out`, `--ladder`, the scenario's path), `ladder init` (a pasted
// vLLM command line, `--model`, `--name`, `--base-url`) and output folders (`ladder report
// --out`). Each is refused (exit 2, `error:`, nothing on stdout) or written so that it parses
// back to exactly what was given: the batch script passes `bash -n` and, run with `srun`
// and `ladder` stubbed, hands every value over as one argument and runs nothing else; the
// scenario loads with the same keys and values and validates. The key and the secrets of the
// environment are in no output; stderr holds no control character.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The API key of a pasted vLLM command line (`--api-key`): never written.
const PASTED_KEY: &str = "sk_pasted_HOSTILE_4417_not_real";
/// A header value of a pasted command line: never written.
const PASTED_HEADER: &str = "hdr_pasted_HOSTILE_9931_not_real";
/// A header value the scenario takes from `{{ env.FLAGS_TENANT }}`: never written.
const TENANT: &str = "tenant_env_HOSTILE_2284_not_real";

/// Pieces of hostile values; each injection creates a file named `pwned-*` if it runs.
const PIECES: [&str; 22] = [
    "$(touch pwned-dollar)",
    "`touch pwned-tick`",
    "; touch pwned-semi",
    "\ntouch pwned-newline",
    "\n#SBATCH --nodelist=victim",
    "\r#SBATCH --exclusive",
    "' ; touch pwned-squote ; '",
    "\" ; touch pwned-dquote ; \"",
    "| touch pwned-pipe",
    "&& touch pwned-and",
    "<script>alert(1)</script>",
    "![x](http://evil.example/i.png)",
    "\u{1b}[2J\u{1b}]0;owned\u{7}",
    "\u{2028}k: v",
    "\u{85}name: evil",
    "\ttab",
    "${HOME}",
    "*",
    " ",
    "é中",
    "# comment",
    "sk_flag_HOSTILE_1200_not_real",
];

/// Values a flag takes in normal use.
const SAFE: [&str; 4] = ["gpu", "01:00:00", "a100-80g", "results"];

fn value(rng: &mut ChaCha8Rng) -> String {
    if rng.gen_bool(0.3) {
        return SAFE[rng.gen_range(0..SAFE.len())].to_string();
    }
    let mut v = String::new();
    if rng.gen_bool(0.5) {
        v.push_str("gpu");
    }
    for _ in 0..rng.gen_range(1..=3) {
        v.push_str(PIECES[rng.gen_range(0..PIECES.len())]);
    }
    v
}

/// A value fit for a file name (no `/`, no NUL), and never the name of a real command.
fn no_slash(v: &str) -> String {
    format!("zz-{}", v.replace('/', "_"))
}

fn iters(default: usize) -> usize {
    std::env::var("LADDER_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// stdout, stderr: no secret anywhere; stderr shows control characters, never sends them.
fn clean_terminal(what: &str, r: &Ran) {
    no_panic(r);
    for s in [KEY, PASTED_KEY, PASTED_HEADER, TENANT] {
        assert!(
            !r.all().contains(s),
            "{what}: {s} was printed:\n{}",
            r.all()
        );
    }
    assert!(
        !r.stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{what}: a control character on stderr:\n{:?}",
        r.stderr
    );
}

fn refused(what: &str, r: &Ran) {
    assert_eq!(r.status.code(), Some(2), "{what}:\n{}", r.all());
    assert!(r.stderr.contains("error"), "{what}:\n{}", r.stderr);
    assert!(r.stdout.is_empty(), "{what}: {}", r.stdout);
}

/// A shardable scenario named `flags` that sends the key and a header from the environment.
fn slurm_scenario(dir: &Path) -> PathBuf {
    let p = dir.join("flags.yaml");
    std::fs::write(
        &p,
        format!(
            "version: 1\nname: flags\nendpoint:\n  base_url: sim\n  api_key_env: {KEY_VAR}\n  \
             headers:\n    X-Tenant: \"{{{{ env.FLAGS_TENANT }}}}\"\nmodel: m\ntokenizer: {TOKENIZER}\n\
             workload:\n  input_tokens: 8\n  output_tokens: 4\n  requests_per_rung: 4\nload:\n  \
             rates: [4]\n"
        ),
    )
    .unwrap();
    p
}

fn directive_safe(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:,+=@/".contains(c))
}

/// `bytes` split at NULs (what the stubs below record).
fn args_of(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Runs `script` under bash in `dir` with `srun` and `ladder` stubbed (and any other command
/// name recorded instead of looked up): the arguments each got, NUL-separated.
fn run_script(dir: &Path, script: &str) -> (Vec<String>, Vec<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let stubs = "srun() { printf '%s\\0' \"$@\" > srun.args; }\n\
                 ladder() { printf '%s\\0' ladder \"$@\" > merge.args; }\n\
                 command_not_found_handle() { printf '%s\\0' \"$@\" > merge.args; return 0; }\n";
    std::fs::write(dir.join("job.sh"), format!("{stubs}{script}")).unwrap();
    let o = Command::new("bash")
        .arg("job.sh")
        .current_dir(dir)
        .env_remove("BASH_ENV")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the script failed: {}\n{script}",
        String::from_utf8_lossy(&o.stderr)
    );
    let read = |n: &str| args_of(&std::fs::read(dir.join(n)).unwrap_or_default());
    (read("srun.args"), read("merge.args"))
}

/// `ladder slurm` with seeded hostile values: refused exactly when `--partition` or `--time`
/// holds a character an `#SBATCH` line cannot, else a script whose `#SBATCH` lines are
/// ladder's own and whose commands, run, get each value as one argument and nothing else runs.
#[test]
fn hostile_slurm_flags_are_refused_or_reach_the_job_as_one_argument_each() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let sc = slurm_scenario(root);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_f1a9);
    let (mut accepted, mut refusals) = (0, 0);
    for case in 0..iters(40) {
        let dir = root.join(format!("case{case}"));
        std::fs::create_dir_all(&dir).unwrap();
        let partition = rng.gen_bool(0.4).then(|| value(&mut rng));
        let time = rng.gen_bool(0.4).then(|| value(&mut rng));
        let out = value(&mut rng);
        let bin = if rng.gen_bool(0.5) {
            no_slash(&value(&mut rng))
        } else {
            "ladder".to_string()
        };
        let scenario = if rng.gen_bool(0.5) {
            let p = dir.join(format!("{}.yaml", no_slash(&value(&mut rng))));
            std::fs::copy(&sc, &p).unwrap();
            p
        } else {
            sc.clone()
        };
        let mut args = vec![
            "slurm".to_string(),
            scenario.to_str().unwrap().to_string(),
            "--shards".into(),
            "2".into(),
            format!("--out={out}"),
            format!("--ladder={bin}"),
        ];
        if let Some(p) = &partition {
            args.push(format!("--partition={p}"));
        }
        if let Some(x) = &time {
            args.push(format!("--time={x}"));
        }
        let what = format!("case {case}: {args:?}");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = ladder_cmd(&args);
        cmd.env("FLAGS_TENANT", TENANT);
        let r = spawn(cmd).finish(Duration::from_secs(30));
        clean_terminal(&what, &r);
        let bad = [&partition, &time]
            .iter()
            .any(|v| v.as_deref().is_some_and(|v| !directive_safe(v)));
        if bad {
            refused(&what, &r);
            refusals += 1;
            continue;
        }
        assert_eq!(r.status.code(), Some(0), "{what}:\n{}", r.all());
        accepted += 1;
        let script = &r.stdout;
        let n = Command::new("bash")
            .args(["-n", "-c", script])
            .output()
            .unwrap();
        assert!(n.status.success(), "{what}: bash -n\n{script}");
        // The #SBATCH lines Slurm reads (those before the first command) are ladder's own,
        // each value on its own line as given.
        let mut want = vec![
            "#SBATCH --job-name=ladder-flags".to_string(),
            "#SBATCH --ntasks=2".into(),
            "#SBATCH --spread-job".into(),
        ];
        if let Some(p) = &partition {
            want.push(format!("#SBATCH --partition={p}"));
        }
        if let Some(x) = &time {
            want.push(format!("#SBATCH --time={x}"));
        }
        let got: Vec<&str> = script
            .lines()
            .take_while(|l| l.trim().is_empty() || l.starts_with('#'))
            .filter(|l| l.starts_with("#SBATCH"))
            .collect();
        assert_eq!(got, want, "{what}:\n{script}");
        // Run: every value is one argument, and no injected command ran.
        let sandbox = dir.join("sandbox");
        let (srun, merge) = run_script(&sandbox, script);
        let start = srun.get(8).cloned().unwrap_or_default();
        assert!(start.starts_with('@'), "{what}: {srun:?}");
        let expect: Vec<String> = [
            "--ntasks=2",
            "--kill-on-bad-exit=1",
            bin.as_str(),
            "run",
            scenario.to_str().unwrap(),
            "--shard",
            "auto",
            "--start-at",
            start.as_str(),
            "--out",
            out.as_str(),
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(srun, expect, "{what}:\n{script}");
        assert_eq!(merge.len(), 5, "{what}: {merge:?}\n{script}");
        assert_eq!((&merge[0], &merge[1]), (&bin, &"merge".to_string()));
        assert!(
            merge[2].starts_with(&format!("{out}/flags.shards/")) && merge[3] == "--out",
            "{what}: {merge:?}"
        );
        let pwned: Vec<_> = std::fs::read_dir(&sandbox)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pwned"))
            .collect();
        assert!(pwned.is_empty(), "{what}: injected commands ran: {pwned:?}");
    }
    eprintln!("slurm: {accepted} accepted, {refusals} refused");
    assert!(accepted > 0 && refusals > 0, "{accepted} / {refusals}");
}

/// The top-level keys of a YAML document, in order.
fn top_keys(text: &str) -> Vec<String> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text).expect("the YAML parses");
    assert_eq!(docs.len(), 1, "{text}");
    docs[0]
        .as_hash()
        .expect("a mapping")
        .keys()
        .map(|k| k.as_str().expect("string keys").to_string())
        .collect()
}

fn yaml_str(text: &str, key: &str) -> Option<String> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text).unwrap();
    docs[0][key].as_str().map(str::to_string)
}

/// `ladder init` with a pasted vLLM command line holding hostile words (quoted, or raw where
/// they may break the line) and a hostile `--model`, `--name` or `--base-url`: refused, or a
/// scenario with exactly the keys of a plain conversion, the model and name as given, every
/// other line a comment, that `ladder validate` accepts. The pasted key and header never
/// appear.
#[test]
fn hostile_init_flags_give_a_scenario_with_the_values_given_or_a_refusal() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let init = |cmd_line: &str, extra: &[String]| {
        let mut args = vec![
            "init".to_string(),
            format!("--from-vllm={cmd_line}"),
            "--tokenizer".into(),
            TOKENIZER.into(),
        ];
        args.extend_from_slice(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn(ladder_cmd(&args)).finish(Duration::from_secs(30))
    };
    let line = |model: &str, insert: Option<(usize, String)>| {
        let mut words: Vec<String> = [
            "vllm",
            "bench",
            "serve",
            "--model",
            shell_words::quote(model).as_ref(),
            "--request-rate",
            "2",
            "--api-key",
            PASTED_KEY,
            "--header",
            format!("X-Api-Key={PASTED_HEADER}").as_str(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some((at, w)) = insert {
            words.insert(at.min(words.len()), w);
        }
        words.join(" ")
    };
    let plain = init(&line("org/plain-model", None), &[]);
    assert_eq!(plain.status.code(), Some(0), "{}", plain.all());
    let keys = top_keys(&plain.stdout);

    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_1417);
    let (mut accepted, mut refusals) = (0, 0);
    for case in 0..iters(40) {
        let model = value(&mut rng);
        let insert = rng.gen_bool(0.6).then(|| {
            let v = value(&mut rng);
            // Quoted (one word), or raw (it may split, or break the line).
            let w = if rng.gen_bool(0.5) {
                shell_words::quote(&v).into_owned()
            } else {
                v
            };
            (rng.gen_range(3..12), w)
        });
        let mut extra = Vec::new();
        let name = rng.gen_bool(0.25).then(|| value(&mut rng));
        if let Some(n) = &name {
            extra.push(format!("--name={n}"));
        }
        if rng.gen_bool(0.2) {
            extra.push(format!("--base-url={}", value(&mut rng)));
        }
        let cmd_line = line(&model, insert);
        let what = format!("case {case}: {cmd_line:?} {extra:?}");
        let r = init(&cmd_line, &extra);
        clean_terminal(&what, &r);
        if r.status.code() == Some(2) {
            refused(&what, &r);
            refusals += 1;
            continue;
        }
        assert_eq!(r.status.code(), Some(0), "{what}:\n{}", r.all());
        accepted += 1;
        let yaml = &r.stdout;
        assert_eq!(top_keys(yaml), keys, "{what}:\n{yaml}");
        // Every line is a comment, indented, or one of those keys: nothing added a line.
        for l in yaml.lines() {
            assert!(
                l.is_empty()
                    || l.starts_with('#')
                    || l.starts_with(' ')
                    || keys.iter().any(|k| l.starts_with(&format!("{k}:"))),
                "{what}: a line of its own: {l:?}\n{yaml}"
            );
        }
        // The model is the one given (an inserted word may have taken --model's place).
        let got = yaml_str(yaml, "model").unwrap();
        let shifted = insert_took_model(&cmd_line);
        assert!(got == model || shifted, "{what}: model {got:?}\n{yaml}");
        if let Some(n) = &name {
            assert_eq!(
                yaml_str(yaml, "name").as_deref(),
                Some(n.as_str()),
                "{what}"
            );
        }
        let file = root.join(format!("case{case}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        // The header the conversion reads from the environment, set where it runs.
        let mut validate = ladder_cmd(&["validate", file.to_str().unwrap()]);
        validate.env("LADDER_HEADER_X_API_KEY", "hdr-set-where-it-runs");
        let v = spawn(validate).finish(Duration::from_secs(30));
        clean_terminal(&what, &v);
        assert_eq!(v.status.code(), Some(0), "{what}:\n{}\n{yaml}", v.all());
    }
    eprintln!("init: {accepted} accepted, {refusals} refused");
    assert!(accepted > 0 && refusals > 0, "{accepted} / {refusals}");
}

/// Whether the word after `--model` in `cmd_line` is no longer the model given (a word was
/// inserted between them).
fn insert_took_model(cmd_line: &str) -> bool {
    let words = shell_words::split(cmd_line).unwrap_or_default();
    let at = words.iter().position(|w| w == "--model");
    at.is_none_or(|i| words.get(i + 2).map(String::as_str) != Some("--request-rate"))
}

/// Output folders with hostile names (`ladder report --out`, `ladder run --out`): the files
/// go inside the folder given, and the paths printed show its control characters as escapes.
#[test]
fn hostile_output_folder_names_get_the_files_and_are_shown_escaped() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let mut sc = Sc::new("sim");
    sc.key = true;
    let scenario = sc.write(root);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_00a7);
    let out = root.join(no_slash(&value(&mut rng)) + "\u{1b}[2J\n#x");
    let r = spawn_run(&scenario, &out).finish(Duration::from_secs(120));
    clean_terminal("run --out", &r);
    assert_eq!(r.status.code(), Some(0), "{}", r.all());
    let run = run_dir(&out).expect("the folder under the hostile --out");
    check_folder(&run);
    assert!(r.stderr.contains("\\u{1b}[2J"), "{}", r.stderr);
    for case in 0..iters(8) {
        let dest = root.join(no_slash(&value(&mut rng)));
        let r = spawn(ladder_cmd(&[
            "report",
            run.to_str().unwrap(),
            "--out",
            dest.to_str().unwrap(),
        ]))
        .finish(Duration::from_secs(60));
        let what = format!("case {case}: {dest:?}");
        clean_terminal(&what, &r);
        assert!(
            !r.stdout.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: {:?}",
            r.stdout
        );
        assert_eq!(r.status.code(), Some(0), "{what}:\n{}", r.all());
        for f in ["report.html", "summary.md", "summary.csv"] {
            assert!(dest.join(f).is_file(), "{what}: no {f}");
        }
    }
}
