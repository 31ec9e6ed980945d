//! `ladder slurm`: a batch script that runs a scenario as N shards under `srun`, all
//! starting at one instant computed once when the job starts, then merges them.

use std::path::PathBuf;

use super::{duration, emit, sh_quote, sharded_scenario};

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
pub fn script(a: &SlurmArgs) -> Result<String, String> {
    let s = sharded_scenario(&a.scenario, a.shards)?;
    let lead = super::lead(&a.lead)?.as_secs().max(1);
    if let Some(d) = &a.drain {
        duration("--drain", d)?;
    }
    let n = a.shards;
    let name = &s.name;
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

/// `ladder slurm`.
pub fn main(a: &SlurmArgs) -> i32 {
    match script(a) {
        Ok(text) => emit(&text, a.output.as_deref()),
        Err(m) => {
            eprintln!("error: {m}");
            crate::exit::BAD_INPUT
        }
    }
}
