//! `ladder slurm` and `ladder kube`: the sharded run's batch script or manifests
//! (`deploy`), written to `--output` or the output stream.

use serde_json::Value;

use crate::deploy::kube::{self, KubeArgs};
use crate::deploy::slurm::{self, SlurmArgs};
use crate::deploy::{emit, DeployError};
use crate::notes::Notes;

/// `ladder slurm`: the Slurm batch script.
pub fn slurm(a: &SlurmArgs, notes: &Notes) -> Result<(), DeployError> {
    let text = slurm::script(a)?;
    emit(&text, a.output.as_deref(), notes)
}

/// `ladder kube`: the manifests, after their notes and the instant the shards start.
pub fn kube(a: &KubeArgs, notes: &Notes) -> Result<(), DeployError> {
    let (v, said) = kube::manifests(a)?;
    for n in said {
        notes.err(&format!("note: {n}"));
    }
    let start = v
        .pointer("/items/1/spec/template/spec/containers/0/command/6")
        .and_then(Value::as_str)
        .unwrap_or("");
    notes.err(&format!(
        "the shards start at {start}: apply before then (kubectl apply -f FILE), or write the manifests again"
    ));
    emit(
        &(serde_json::to_string_pretty(&v).expect("serialises") + "\n"),
        a.output.as_deref(),
        notes,
    )
}
