//! A 4-shard ladder under a real Slurm (docs/scale-out.md): `ladder slurm` writes the batch
//! script, `sbatch --wait` runs it on a cluster (in CI a single-node one on localhost from
//! Debian's slurm-wlm and munge, started by scripts/slurm/local-cluster.sh), the four
//! shards send to one `ladder sim` on loopback under `srun`, and the script merges them.
//!
//! Runs when $SLURM_CONF names a cluster whose node answers `sinfo`; otherwise it says why
//! it is skipped and passes (`.ci/run` starts the cluster where the packages can be had).

mod support;

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

/// Why there is no cluster to run on, if there is none.
fn no_cluster() -> Option<String> {
    let Ok(conf) = std::env::var("SLURM_CONF") else {
        return Some("$SLURM_CONF is not set (scripts/slurm/local-cluster.sh start, then export SLURM_CONF=<its dir>/slurm.conf)".into());
    };
    match Command::new("sinfo")
        .args(["-h", "-N", "-o", "%T"])
        .output()
    {
        Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).contains("idle") => None,
        Ok(o) => Some(format!(
            "sinfo with SLURM_CONF={conf} shows no idle node: {}{}",
            String::from_utf8_lossy(&o.stdout).trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("no sinfo ({e}): slurm-wlm is not installed")),
    }
}

/// The simulator process, killed on drop.
struct Sim(std::process::Child);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn four_shards_under_srun_merge_to_the_schedule_at_the_target_rate() {
    if let Some(why) = no_cluster() {
        support::skip::skip("slurm::four_shards_under_srun", &why);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut sim = Sim(Command::new(BIN)
        .args(["sim", "--port", "0", "--host", "127.0.0.1"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap());
    let url = {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(sim.0.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "listening on http://127.0.0.1:PORT"
        line.trim()
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert!(url.starts_with("http://127.0.0.1:"), "sim printed {url:?}");
    let rates = [20.0, 40.0];
    let n = 400u32;
    let sc = tmp.path().join("slurm4.yaml");
    fs::write(
        &sc,
        format!(
            "version: 1\nname: slurm4\nendpoint:\n  base_url: {url}\n  request_timeout: 10s\n\
             model: sim-model\ntokenizer: {TOKENIZER}\nworkload:\n  input_tokens: 32\n  output_tokens: 8\n  \
             requests_per_rung: {n}\n  seed: 5\nload:\n  arrival: constant\n  rates: [20, 40]\n  cooldown: 1s\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("results");
    let job = tmp.path().join("job.sh");
    let r = spawn(ladder_cmd(&[
        "slurm",
        sc.to_str().unwrap(),
        "--shards",
        "4",
        "--out",
        out.to_str().unwrap(),
        "--lead",
        "20s",
        "--drain",
        "3s",
        "--ladder",
        BIN,
        "-o",
        job.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(30));
    assert!(r.status.success(), "{}", r.all());
    let log = tmp.path().join("slurm-%j.out");
    let mut sbatch = Command::new("sbatch")
        .args([
            "--wait",
            "--parsable",
            "--chdir",
            tmp.path().to_str().unwrap(),
        ])
        .arg(format!("--output={}", log.display()))
        .arg(&job)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = sbatch.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = Command::new("scancel")
                .args(["--name", "ladder-slurm4"])
                .status();
            let _ = sbatch.kill();
            panic!("the Slurm job did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    drop(sim);
    let logs: String = fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("slurm-")
        })
        .map(|p| fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(status.success(), "sbatch: {status}; job output:\n{logs}");
    assert!(logs.contains("merged 4 shards"), "{logs}");
    let merged = fs::read_dir(out.join("slurm4"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let d = check_folder(&merged);
    let shards = d.info.shards.as_ref().unwrap();
    assert_eq!(shards.count, 4);
    // Four Slurm tasks, each its own process with its own share.
    for (i, s) in shards.shards.iter().enumerate() {
        assert_eq!(s.shard.index as usize, i);
        assert_eq!(
            s.rungs.iter().map(|r| r.requests).sum::<u64>(),
            2 * u64::from(n) / 4
        );
    }
    for (rung, rate) in d.rungs.iter().zip(rates) {
        let idx: Vec<u32> = d.requests(rung).unwrap().iter().map(|l| l.index).collect();
        assert_eq!(
            idx,
            (0..n).collect::<Vec<u32>>(),
            "every index exactly once"
        );
        let achieved = rung.summary.achieved_rate;
        assert!(
            (achieved / rate - 1.0).abs() < 0.01,
            "rung {rate}: the four shards together sent at {achieved} req/s"
        );
        assert_eq!(rung.summary.failed, 0, "{:?}", rung.summary.errors_by_class);
    }
}
