//! Writes a synthetic result folder of any size, for measuring `compare`, `gate`, `history`
//! and `report` on big runs (BENCHMARKS.md, "Big runs"). Not a measurement of any server:
//! the records are drawn from seeded lognormal latencies and written through ladder's own
//! summariser and writer, so the folder is exactly what `ladder run` would write for them
//! and passes every check `ladder compare` makes when it loads a folder.
//!
//! ```text
//! cargo run --release --example bigrun -- TEMPLATE_RUN_DIR OUT_DIR REQUESTS [SLOWDOWN] [SEED] [TOKENS]
//! ```
//!
//! TEMPLATE_RUN_DIR is any finished run folder (its run.json gives the scenario, rates and
//! host); OUT_DIR must not exist. Every rung gets REQUESTS measured requests of TOKENS output
//! tokens (default 16), each with every inter-token gap; SLOWDOWN (default 1.0) multiplies
//! every latency, so two folders with 1.0 and 1.1 make a regression to find.

use std::path::PathBuf;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal};

use ladder::metrics::{summarize, RungContext};
use ladder::record::{ErrorClass, ItlGaps, RequestError, RequestRecord, TokenSource};
use ladder::results::{ResultDir, RunStatus, RunWriter};
use ladder::scenario::Slo;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: bigrun TEMPLATE_RUN_DIR OUT_DIR REQUESTS [SLOWDOWN] [SEED] [TOKENS]");
        std::process::exit(2);
    }
    let template = ResultDir::open(&PathBuf::from(&args[0])).expect("template folder opens");
    let out = PathBuf::from(&args[1]);
    let n: u32 = args[2].parse().expect("REQUESTS is a whole number");
    let slowdown: f64 = args.get(3).map_or(1.0, |s| s.parse().expect("SLOWDOWN"));
    let seed: u64 = args.get(4).map_or(0, |s| s.parse().expect("SEED"));
    let tokens: u32 = args.get(5).map_or(16, |s| s.parse().expect("TOKENS"));

    let mut info = template.info.clone();
    let rates: Vec<f64> = info.rungs.iter().map(|e| e.rate).collect();
    info.rungs.clear();
    info.warnings.clear();
    info.status = RunStatus::Running;
    info.started_at = chrono::Utc::now();
    info.ended_at = None;
    let slo: Slo = serde_json::from_value(info.scenario["slo"].clone()).unwrap_or_default();
    let mut writer = RunWriter::create_exact(&out, info).expect("OUT_DIR is new");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (k, &rate) in rates.iter().enumerate() {
        let load = 1.0 + k as f64 * 0.15;
        let ttft = LogNormal::new((0.030 * slowdown * load).ln(), 0.35).expect("ttft");
        let tpot = LogNormal::new((0.010 * slowdown * load).ln(), 0.2).expect("tpot");
        let jitter = LogNormal::new(0.0, 0.25).expect("jitter");
        let gap = Exp::new(rate).expect("rate");
        let mut at = 0.02;
        let records: Vec<RequestRecord> = (0..n)
            .map(|index| {
                at += gap.sample(&mut rng);
                let sent = Duration::from_secs_f64(at);
                let first = sent + Duration::from_secs_f64(ttft.sample(&mut rng));
                let per = tpot.sample(&mut rng);
                let itl: ItlGaps = (1..tokens)
                    .map(|_| Duration::from_secs_f64(per * jitter.sample(&mut rng)))
                    .collect();
                let end = first + itl.iter().sum::<Duration>();
                let failed = index % 1000 == 999;
                RequestRecord {
                    index,
                    scheduled: sent,
                    sent,
                    first_token: (!failed).then_some(first),
                    first_content: (!failed).then_some(first),
                    end: if failed { first } else { end },
                    input_tokens: 128,
                    server_prompt_tokens: Some(128),
                    output_tokens: if failed { 0 } else { tokens },
                    token_source: TokenSource::Usage,
                    itl: if failed { ItlGaps::new() } else { itl },
                    error: failed.then(|| RequestError {
                        class: ErrorClass::Server5xx,
                        status: Some(500),
                        detail: "synthetic server error".into(),
                    }),
                    server_completion_tokens: (!failed).then_some(tokens),
                    requested_output_tokens: tokens,
                    ..RequestRecord::default()
                }
            })
            .collect();
        let ctx = RungContext {
            rate,
            burstiness: 1.0,
            slo: slo.clone(),
            ..RungContext::default()
        };
        let summary = summarize(&records, &ctx);
        writer
            .write_rung(&summary, &records, true)
            .expect("rung written");
        eprintln!("rung {rate}: {n} requests written");
    }
    writer
        .finish(RunStatus::Complete, None, chrono::Utc::now())
        .expect("run.json written");
    println!("{}", out.display());
}
