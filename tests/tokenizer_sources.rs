//! `tokenizer:` as users have it: a tokenizer.json file, a model directory holding one, or a
//! Hugging Face hub id read from the local cache layout (`models--Org--Name/refs/<rev>` →
//! `snapshots/<commit>/tokenizer.json`) under `$HF_HUB_CACHE`, else `$HF_HOME/hub`. Each
//! missing or offline case says what to do; run.json records the source. No test goes to the
//! network: downloads are only exercised as far as the messages that refuse them.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ladder::results::ResultDir;
use ladder::tokens::SourceKind;

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const COMMIT_V1: &str = "fedcba9876543210fedcba9876543210fedcba98";

/// A hub cache with `ladder-org/tiny`: `main` and tag `v1` (each its own snapshot), and
/// `ladder-org/no-tok`, whose snapshot has no tokenizer.json.
fn fake_cache(root: &Path) -> PathBuf {
    let hub = root.join("hub");
    let repo = hub.join("models--ladder-org--tiny");
    for (rev, commit) in [("main", COMMIT), ("v1", COMMIT_V1)] {
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs").join(rev), commit).unwrap();
        let snap = repo.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::copy(TOKENIZER, snap.join("tokenizer.json")).unwrap();
    }
    let bare = hub.join("models--ladder-org--no-tok");
    std::fs::create_dir_all(bare.join("refs")).unwrap();
    std::fs::write(bare.join("refs/main"), COMMIT).unwrap();
    std::fs::create_dir_all(bare.join("snapshots").join(COMMIT)).unwrap();
    hub
}

fn scenario(dir: &Path, tokenizer: &str, extra: &str) -> PathBuf {
    let p = dir.join("tok.yaml");
    std::fs::write(
        &p,
        format!(
            "version: 1\nname: rel\nendpoint: {{ base_url: sim }}\nmodel: m\n\
             tokenizer: '{tokenizer}'\n{extra}\
             workload: {{ input_tokens: 12, output_tokens: 3, requests_per_rung: 3 }}\n\
             load: {{ rates: [20], cooldown: 0s }}\nsim: {{ speed: 20 }}\n"
        ),
    )
    .unwrap();
    p
}

/// `ladder ARGS` with a clean Hugging Face environment plus `envs`.
fn ladder(args: &[&str], envs: &[(&str, &str)]) -> Ran {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("NO_COLOR", "1");
    for k in [
        "HF_HUB_CACHE",
        "HF_HOME",
        "HF_HUB_OFFLINE",
        "HF_TOKEN",
        "HF_ENDPOINT",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    spawn(cmd).finish(Duration::from_secs(120))
}

fn run(sc: &Path, out: &Path, envs: &[(&str, &str)]) -> Ran {
    ladder(
        &["run", sc.to_str().unwrap(), "--out", out.to_str().unwrap()],
        envs,
    )
}

fn validate(sc: &Path, envs: &[(&str, &str)]) -> Ran {
    ladder(&["validate", sc.to_str().unwrap()], envs)
}

/// Both `validate` and `run` refuse it with exit 2, before anything is written; the message.
fn refused(sc: &Path, envs: &[(&str, &str)]) -> String {
    let v = validate(sc, envs);
    no_panic(&v);
    assert_eq!(v.status.code(), Some(2), "{}", v.all());
    let out = sc.parent().unwrap().join("out");
    let r = run(sc, &out, envs);
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(!out.exists(), "nothing written: {}", r.all());
    assert!(r.stderr.contains("tokenizer"), "{}", r.stderr);
    v.stderr
}

fn sha256(p: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(p).unwrap()))
}

#[test]
fn a_hub_id_is_read_from_the_cache_and_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = fake_cache(tmp.path());
    let hub_s = hub.to_str().unwrap();
    let home = tmp.path().to_str().unwrap();
    // $HF_HUB_CACHE, and $HF_HOME/hub when it is not set.
    for envs in [vec![("HF_HUB_CACHE", hub_s)], vec![("HF_HOME", home)]] {
        let sc = scenario(tmp.path(), "ladder-org/tiny", "");
        let v = validate(&sc, &envs);
        assert!(v.status.success(), "{}", v.all());
        let out = tmp.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        let r = run(&sc, &out, &envs);
        assert!(r.status.success(), "{}", r.all());
        let rd = ResultDir::open(&run_dir(&out).unwrap()).unwrap();
        let src = rd.info.tokenizer_source.clone().expect("recorded");
        let file = hub.join(format!(
            "models--ladder-org--tiny/snapshots/{COMMIT}/tokenizer.json"
        ));
        assert_eq!(src.kind, SourceKind::Hub);
        assert_eq!(src.hub_id.as_deref(), Some("ladder-org/tiny"));
        assert_eq!(src.revision.as_deref(), Some("main"));
        assert_eq!(src.commit.as_deref(), Some(COMMIT));
        assert_eq!(src.path, file);
        assert!(!src.downloaded);
        assert_eq!(rd.info.tokenizer_sha256, sha256(&file));
    }
    // A pinned tag and a pinned commit read their own snapshots.
    for (pin, commit) in [("v1", COMMIT_V1), (COMMIT, COMMIT)] {
        let sc = scenario(tmp.path(), &format!("ladder-org/tiny@{pin}"), "");
        let out = tmp.path().join(format!("out-{pin}"));
        let r = run(&sc, &out, &[("HF_HUB_CACHE", hub_s)]);
        assert!(r.status.success(), "{}", r.all());
        let rd = ResultDir::open(&run_dir(&out).unwrap()).unwrap();
        let src = rd.info.tokenizer_source.unwrap();
        assert_eq!(src.revision.as_deref(), Some(pin));
        assert_eq!(src.commit.as_deref(), Some(commit));
        assert!(src
            .path
            .starts_with(hub.join("models--ladder-org--tiny/snapshots").join(commit)));
    }
}

#[test]
fn a_model_directory_and_a_file_are_recorded_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("my-model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::copy(TOKENIZER, model.join("tokenizer.json")).unwrap();
    let in_dir = model.join("tokenizer.json");
    for (written, kind, file) in [
        ("my-model", SourceKind::Dir, in_dir.as_path()),
        (TOKENIZER, SourceKind::File, Path::new(TOKENIZER)),
    ] {
        let sc = scenario(tmp.path(), written, "");
        let v = validate(&sc, &[]);
        assert!(v.status.success(), "{}", v.all());
        let out = tmp.path().join(format!("out-{kind:?}"));
        let r = run(&sc, &out, &[]);
        assert!(r.status.success(), "{}", r.all());
        let rd = ResultDir::open(&run_dir(&out).unwrap()).unwrap();
        let src = rd.info.tokenizer_source.unwrap();
        assert_eq!(src.kind, kind);
        assert_eq!(src.path, file);
        assert_eq!(src.hub_id, None);
        assert_eq!(rd.info.tokenizer_sha256, sha256(Path::new(TOKENIZER)));
    }
    // A directory without one says what to point at.
    std::fs::create_dir_all(tmp.path().join("empty-model")).unwrap();
    let err = refused(&scenario(tmp.path(), "empty-model", ""), &[]);
    assert!(err.contains("directory without a tokenizer.json"), "{err}");
}

#[test]
fn missing_and_offline_hub_ids_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = fake_cache(tmp.path());
    let hub_s = hub.to_str().unwrap();

    // Not cached, downloads not allowed: how to allow one, or fetch it yourself.
    let err = refused(
        &scenario(tmp.path(), "ladder-org/absent", ""),
        &[("HF_HUB_CACHE", hub_s)],
    );
    assert!(
        err.contains("ladder-org/absent is not in the Hugging Face cache"),
        "{err}"
    );
    assert!(err.contains(hub_s), "names the cache: {err}");
    assert!(err.contains("tokenizer_download: true"), "{err}");
    assert!(
        err.contains("huggingface-cli download ladder-org/absent tokenizer.json"),
        "{err}"
    );

    // A revision not in the cache, with the revision in the command.
    let err = refused(
        &scenario(tmp.path(), "ladder-org/tiny@v2", ""),
        &[("HF_HUB_CACHE", hub_s)],
    );
    assert!(err.contains("refs/v2"), "{err}");
    assert!(err.contains("--revision v2"), "{err}");

    // Allowed, but HF_HUB_OFFLINE is set: never downloaded, and the message says why.
    for offline in ["1", "true"] {
        let err = refused(
            &scenario(
                tmp.path(),
                "ladder-org/absent",
                "tokenizer_download: true\n",
            ),
            &[("HF_HUB_CACHE", hub_s), ("HF_HUB_OFFLINE", offline)],
        );
        assert!(err.contains("HF_HUB_OFFLINE is set"), "{err}");
        assert!(err.contains("copy the cache"), "{err}");
    }

    // Cached, but the snapshot has no tokenizer.json.
    let err = refused(
        &scenario(tmp.path(), "ladder-org/no-tok", ""),
        &[("HF_HUB_CACHE", hub_s)],
    );
    assert!(err.contains("has no tokenizer.json"), "{err}");

    // Neither a path nor a hub id: a file that does not exist.
    let err = refused(&scenario(tmp.path(), "models/absent.json", ""), &[]);
    assert!(err.contains("does not exist"), "{err}");

    // The cache was only read.
    assert!(!hub.join("models--ladder-org--absent").exists());
}
