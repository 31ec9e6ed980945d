//! `ladder kube`: Kubernetes manifests for a sharded run. One `List` (JSON, which kubectl
//! reads as YAML too) of:
//! - a ConfigMap holding the scenario file;
//! - an Indexed Job of N shards (completion mode Indexed, parallelism = completions = N,
//!   backoffLimit 0, so one failed shard fails the Job and Kubernetes stops the others),
//!   each running `ladder run --shard auto` (JOB_COMPLETION_INDEX, LADDER_SHARDS) with the
//!   API key from a Secret and the results on a shared volume;
//! - a Job that waits for every shard's folder and merges them (`ladder merge --wait`).

use std::path::PathBuf;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::Refusal;
use super::{duration, env_vars_read, sharded_scenario};
use crate::client::is_secret_name;
use crate::results::write::timestamp_dir_name;
use crate::scenario::Loaded;

/// Flags of `ladder kube`.
#[derive(clap::Args, Debug, Clone)]
pub struct KubeArgs {
    /// The scenario file (put into a ConfigMap; a tokenizer or dataset it names must be in
    /// the image or on the volume, at the path it gives).
    pub scenario: PathBuf,
    /// Number of shards (pods of the Indexed Job).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Container image with `ladder` on its PATH.
    #[arg(long)]
    pub image: String,
    /// PersistentVolumeClaim (ReadWriteMany) every pod mounts at /results: shard folders and
    /// the merged folder go there.
    #[arg(long, value_name = "NAME", default_value = "ladder-results")]
    pub pvc: String,
    /// Secret holding the API key under the key `api-key` (only when the scenario names
    /// `endpoint.api_key_env`).
    #[arg(long, value_name = "NAME", default_value = "ladder-api-key")]
    pub secret: String,
    /// Namespace of every object (default: kubectl's current one).
    #[arg(long)]
    pub namespace: Option<String>,
    /// The instant every shard starts the first rung (RFC 3339 or @UNIX_SECONDS); default:
    /// --lead from now. Apply the manifests well before it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Time from now to the default --start-at, for pods to be scheduled, pull the image
    /// and preflight.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub lead: String,
    /// Passed to `ladder run --drain`.
    #[arg(long, value_name = "DURATION")]
    pub drain: Option<String>,
    /// How long the merge Job waits for the shards to finish.
    #[arg(long, value_name = "DURATION", default_value = "12h")]
    pub merge_wait: String,
    /// CPU request of each shard (e.g. 2); none by default.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Write the manifests here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Where the scenario ConfigMap is mounted in every pod.
const SCENARIO_DIR: &str = "/scenario";
/// Where the results volume is mounted.
const RESULTS_DIR: &str = "/results";
/// The Secret's key that holds the API key.
pub const SECRET_KEY: &str = "api-key";

/// A Kubernetes object name from the scenario name (DNS-1123: lowercase, digits, `-`).
fn object_name(scenario: &str, suffix: &str) -> String {
    let mut base: String = scenario
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    // Job names become a label value of their pods (at most 63 characters) with room for
    // the index suffix Kubernetes adds to pod names.
    base.truncate(40);
    let base = base.trim_matches('-');
    format!("ladder-{base}-{suffix}")
}

/// The manifests for `a`, as one JSON `List`, and notes for the user.
pub fn manifests(a: &KubeArgs) -> Result<(Value, Vec<String>), Refusal> {
    manifests_at(a, Utc::now())
}

/// The pods' environment for every variable the scenario reads ([`super::env_vars_read`]),
/// so they run what `ladder validate` checked here: a secret (a secret-looking name, or a
/// value that the scenario sends in its URL, headers or body) as a reference to the Secret
/// `secret` under the variable's own name (the API key under [`SECRET_KEY`]); any other
/// value set in this shell as itself; an unset one not at all (the pods take the file's
/// `default(...)`, as validate did here). Also returns the Secret's keys.
fn pod_env(loaded: &Loaded, secret: &str) -> (Vec<Value>, Vec<String>) {
    let key_var = loaded.scenario.endpoint.api_key_env.as_deref();
    let mut env = vec![];
    let mut keys = vec![];
    for var in env_vars_read(loaded) {
        let from_secret = |key: &str| json!({"name": var, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}});
        if Some(var.as_str()) == key_var {
            // The key's value stays in the Secret: the manifest names it, never holds it.
            env.push(from_secret(SECRET_KEY));
            keys.push(SECRET_KEY.to_string());
        } else if is_secret_name(&var) || loaded.env_secrets.iter().any(|e| e.var == var) {
            env.push(from_secret(&var));
            keys.push(var);
        } else if let Ok(v) = std::env::var(&var) {
            env.push(json!({"name": var, "value": v}));
        }
    }
    (env, keys)
}

/// The ConfigMap's files: the scenario and the `extends:` bases in its folder (the pods read
/// them beside it); notes for bases elsewhere, which the pods cannot read from it.
fn config_files(
    a: &KubeArgs,
    loaded: &Loaded,
    file: &str,
) -> Result<(Value, Vec<String>), Refusal> {
    let read = |p: &std::path::Path| {
        crate::fileread::read_text_bounded(p, crate::scenario::MAX_SCENARIO_BYTES)
    };
    let mut data = serde_json::Map::new();
    data.insert(file.to_string(), json!(read(&a.scenario)?));
    let mut notes = vec![];
    let folder = a
        .scenario
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let same_folder = |p: &std::path::Path| {
        let canon = |q: &std::path::Path| std::fs::canonicalize(q).ok();
        let here = canon(if folder.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            &folder
        });
        p.parent().and_then(canon).is_some() && p.parent().and_then(canon) == here
    };
    for base in &loaded.bases {
        let name = base
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
        if same_folder(base) && key_ok && !data.contains_key(&name) {
            data.insert(name, json!(read(base)?));
        } else {
            notes.push(format!(
                "{} extends {}, which is not in the scenario's folder: the ConfigMap does not \
                 hold it, so the pods must find it at that path (in the image or on the volume); \
                 or move it beside the scenario",
                a.scenario.display(),
                base.display()
            ));
        }
    }
    Ok((Value::Object(data), notes))
}

/// [`manifests`] as written at `now`.
pub fn manifests_at(a: &KubeArgs, now: DateTime<Utc>) -> Result<(Value, Vec<String>), Refusal> {
    let loaded = sharded_scenario(&a.scenario, a.shards)?;
    let s = &loaded.scenario;
    let start_at = match &a.start_at {
        Some(t) => {
            let at = crate::runner::shard::parse_start_at(t)?;
            crate::runner::shard::start_wait(at, now)?;
            at
        }
        None => {
            let lead = super::lead(&a.lead)?;
            let t = now + chrono::Duration::from_std(lead)?;
            // Whole seconds: the shards' folder is named after it.
            DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)
        }
    };
    if let Some(d) = &a.drain {
        duration("--drain", d)?;
    }
    duration("--merge-wait", &a.merge_wait)?;
    let n = a.shards;
    let file = a
        .scenario
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario.yaml".into());
    let scenario_in_pod = format!("{SCENARIO_DIR}/{file}");
    let stamp = timestamp_dir_name(start_at);
    let start = start_at.to_rfc3339_opts(SecondsFormat::Millis, true);
    let labels =
        json!({"app.kubernetes.io/name": "ladder", "ladder/scenario": object_name(&s.name, "run")});
    let meta = |name: String| {
        let mut m = json!({"name": name, "labels": labels});
        if let Some(ns) = &a.namespace {
            m["namespace"] = json!(ns);
        }
        m
    };
    let config_map = object_name(&s.name, "scenario");
    let volumes = json!([
        {"name": "results", "persistentVolumeClaim": {"claimName": a.pvc}},
        {"name": "scenario", "configMap": {"name": config_map}}
    ]);
    let mounts = json!([
        {"name": "results", "mountPath": RESULTS_DIR},
        {"name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": true}
    ]);
    let mut env = vec![json!({"name": "LADDER_SHARDS", "value": n.to_string()})];
    let (more, secret_keys) = pod_env(&loaded, &a.secret);
    env.extend(more);
    let (data, mut notes) = config_files(a, &loaded, &file)?;
    if !secret_keys.is_empty() {
        let from: Vec<String> = secret_keys
            .iter()
            .map(|k| format!("--from-literal={k}=…"))
            .collect();
        notes.push(format!(
            "the pods read {} from the Secret {}: create it first (kubectl create secret generic {} {})",
            secret_keys.join(", "),
            a.secret,
            a.secret,
            from.join(" ")
        ));
    }
    let mut run = vec![
        "ladder".to_string(),
        "run".into(),
        scenario_in_pod,
        "--shard".into(),
        "auto".into(),
        "--start-at".into(),
        start.clone(),
        "--out".into(),
        RESULTS_DIR.into(),
        "--quiet".into(),
    ];
    if let Some(d) = &a.drain {
        run.extend(["--drain".to_string(), d.clone()]);
    }
    let mut shard = json!({
        "name": "shard",
        "image": a.image,
        "command": run,
        "env": env,
        "volumeMounts": mounts,
    });
    if let Some(cpu) = &a.cpu {
        shard["resources"] = json!({"requests": {"cpu": cpu}});
    }
    let pod_labels = labels.clone();
    let shards_job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(object_name(&s.name, "shards")),
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    // Shards on different nodes where there are enough: two on one node share
                    // its cores and network.
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname"
                        }
                    }]}},
                    "containers": [shard],
                    "volumes": volumes,
                }
            }
        }
    });
    let merge_job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(object_name(&s.name, "merge")),
        "spec": {
            "completions": 1,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "merge",
                        "image": a.image,
                        "command": [
                            "ladder", "merge", "--wait", a.merge_wait,
                            format!("{RESULTS_DIR}/{}.shards/{stamp}", s.name),
                            "--out", format!("{RESULTS_DIR}/{}/{stamp}", s.name),
                        ],
                        "volumeMounts": [{"name": "results", "mountPath": RESULTS_DIR}],
                    }],
                    "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": a.pvc}}],
                }
            }
        }
    });
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(config_map.clone()),
        "data": data,
    });
    Ok((
        json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": [cm, shards_job, merge_job],
        }),
        notes,
    ))
}
