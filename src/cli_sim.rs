//! `ladder sim`: the simulator's flags (one per scenario `sim:` key) and serving it.

/// Flags of `ladder sim`; each settings flag has the name of its scenario `sim:` key
/// (`--max-num-seqs` ↔ `max_num_seqs`) and defaults to [`ladder::sim::SimConfig::default`]
/// (shown as `[default: …]` in `--help`).
#[derive(clap::Args, Debug)]
pub(crate) struct SimArgs {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// Port to bind; 0 picks a free one (printed on the first line of stdout).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Require `Authorization: Bearer KEY` on /v1/* (never printed) [default: none, no key
    /// required].
    #[arg(long, env = ladder::sim::API_KEY_ENV, hide_env_values = true)]
    api_key: Option<String>,
    /// Seed of output words, lengths and sampled faults.
    #[arg(long, default_value_t = d().seed)]
    seed: u64,
    /// Clock speed: modelled times are divided by it.
    #[arg(long, default_value_t = d().speed)]
    speed: f64,
    /// Extra served model names (repeatable; `sim-model` is always served) [default: none].
    #[arg(long = "served-model-names", num_args = 1..)]
    served_model_names: Vec<String>,
    /// A served model with its own decode speed, `NAME=SPEED` with SPEED in (0, 1] (an
    /// adapter slower than its base; repeatable; the name is served too) [default: none].
    #[arg(long = "model-speed", value_parser = parse_model_speed)]
    model_speed: Vec<ladder::sim::SimModel>,
    /// Context length in tokens.
    #[arg(long, default_value_t = d().max_model_len)]
    max_model_len: u32,
    /// Most sequences in one batch.
    #[arg(long, default_value_t = d().max_num_seqs)]
    max_num_seqs: u32,
    /// KV-cache budget in tokens (prompt + max_tokens reserved per sequence).
    #[arg(long, default_value_t = d().kv_cache_tokens)]
    kv_cache_tokens: u32,
    /// Token budget of one step (decode + chunked prefill).
    #[arg(long, default_value_t = d().max_num_batched_tokens)]
    max_num_batched_tokens: u32,
    /// Fixed step cost, ms.
    #[arg(long, default_value_t = d().step_base_ms)]
    step_base_ms: f64,
    /// Step cost per sequence in the batch, ms.
    #[arg(long, default_value_t = d().step_per_seq_ms)]
    step_per_seq_ms: f64,
    /// Prefill cost per prompt token, µs.
    #[arg(long, default_value_t = d().prefill_per_token_us)]
    prefill_per_token_us: f64,
    /// Multiplier of the decode part of a step.
    #[arg(long, default_value_t = d().decode_scale)]
    decode_scale: f64,
    /// Output tokens per streamed chunk.
    #[arg(long, default_value_t = d().chunk_tokens)]
    chunk_tokens: u32,
    /// No modelled time: tokens as fast as the client reads (client benchmarks) [default:
    /// off].
    #[arg(long)]
    zero_cost: bool,
    /// Waiting-queue limit.
    #[arg(long, default_value_t = d().max_waiting)]
    max_waiting: u32,
    /// Longest modelled wait for a batch slot, ms.
    #[arg(long, default_value_t = d().max_queue_wait_ms)]
    max_queue_wait_ms: u64,
    /// Status of a queue rejection: 429 or 503.
    #[arg(long, default_value_t = d().reject_status)]
    reject_status: u16,
    /// Retry-After seconds on 429/503.
    #[arg(long, default_value_t = d().retry_after_s)]
    retry_after_s: u32,
    /// max_tokens when a request gives none.
    #[arg(long, default_value_t = d().default_max_tokens)]
    default_max_tokens: u32,
    /// Extra prompt tokens counted for every chat request (a chat template's overhead).
    #[arg(long, default_value_t = d().chat_template_tokens)]
    chat_template_tokens: u32,
    /// Chat answers reason for this many tokens first (`reasoning_content`).
    #[arg(long, default_value_t = d().reasoning_tokens)]
    reasoning_tokens: u32,
    /// Model a prefix cache whose hits shorten prefill [default: off].
    #[arg(long)]
    prefix_caching: bool,
    /// Tokens per prefix-cache block.
    #[arg(long, default_value_t = d().prefix_cache_block_size)]
    prefix_cache_block_size: u32,
    /// Prefix-cache capacity in tokens (LRU beyond it).
    #[arg(long, default_value_t = d().prefix_cache_tokens)]
    prefix_cache_tokens: u32,
    /// Fraction of requests answered 500.
    #[arg(long, default_value_t = d().fault_http_500)]
    fault_http_500: f64,
    /// Fraction of requests answered 429.
    #[arg(long, default_value_t = d().fault_http_429)]
    fault_http_429: f64,
    /// Fraction of connections dropped mid-stream.
    #[arg(long, default_value_t = d().fault_drop_mid_stream)]
    fault_drop_mid_stream: f64,
    /// Fraction of streams with a malformed chunk.
    #[arg(long, default_value_t = d().fault_malformed_chunk)]
    fault_malformed_chunk: f64,
    /// Fraction of streams with an error object mid-stream.
    #[arg(long, default_value_t = d().fault_stream_error)]
    fault_stream_error: f64,
    /// Fraction of streams that stall for --stall-ms.
    #[arg(long, default_value_t = d().fault_stall)]
    fault_stall: f64,
    /// Fraction of requests answered 404 model_not_found.
    #[arg(long, default_value_t = d().fault_unknown_model)]
    fault_unknown_model: f64,
    /// Stall length, ms (wall clock).
    #[arg(long, default_value_t = d().stall_ms)]
    stall_ms: u64,
    /// Run-to-run drift: CV of this process's speed factor (drawn once, from --drift-seed).
    #[arg(long, default_value_t = d().drift)]
    drift: f64,
    /// Seed of the drift draw.
    #[arg(long, default_value_t = d().drift_seed)]
    drift_seed: u64,
    /// Background noise: CV of a factor on every engine step's time.
    #[arg(long, default_value_t = d().step_jitter)]
    step_jitter: f64,
}

/// The simulator's defaults: every flag's `[default: …]` in `ladder sim --help` is read
/// from here, the one place they are set.
fn d() -> ladder::sim::SimConfig {
    ladder::sim::SimConfig::default()
}

impl SimArgs {
    fn config(&self) -> ladder::sim::SimConfig {
        let mut c = ladder::sim::SimConfig::default();
        macro_rules! set {
            ($($f:ident),*) => { $( c.$f = self.$f; )* };
        }
        set!(
            seed,
            speed,
            max_model_len,
            max_num_seqs,
            kv_cache_tokens,
            max_num_batched_tokens,
            step_base_ms,
            step_per_seq_ms,
            prefill_per_token_us,
            decode_scale,
            chunk_tokens,
            max_waiting,
            max_queue_wait_ms,
            reject_status,
            retry_after_s,
            default_max_tokens,
            chat_template_tokens,
            reasoning_tokens,
            prefix_cache_block_size,
            prefix_cache_tokens,
            fault_http_500,
            fault_http_429,
            fault_drop_mid_stream,
            fault_malformed_chunk,
            fault_stream_error,
            fault_stall,
            fault_unknown_model,
            stall_ms,
            drift,
            drift_seed,
            step_jitter
        );
        c.served_model_names = self.served_model_names.clone();
        c.models = self.model_speed.clone();
        c.zero_cost = self.zero_cost;
        c.prefix_caching = self.prefix_caching;
        c
    }
}

/// `--model-speed NAME=SPEED`: the name, and a number (its range is checked with the other
/// settings by `SimConfig::problems`).
fn parse_model_speed(s: &str) -> Result<ladder::sim::SimModel, String> {
    let (name, speed) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=SPEED (e.g. sql-lora=0.7)"))?;
    let speed: f64 = speed
        .trim()
        .parse()
        .map_err(|_| format!("`{speed}` in `{s}` is not a number (e.g. sql-lora=0.7)"))?;
    Ok(ladder::sim::SimModel {
        name: name.to_string(),
        speed,
    })
}

pub(crate) fn run_sim(args: SimArgs) -> i32 {
    let cfg = args.config();
    let problems = cfg.problems();
    if !problems.is_empty() {
        for p in problems {
            eprintln!("error: ladder sim: {p}");
        }
        return ladder::exit::BAD_INPUT;
    }
    let addr = std::net::SocketAddr::new(args.host, args.port);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: ladder sim: cannot start the async runtime: {e}");
            return ladder::exit::BAD_INPUT;
        }
    };
    let listening = |at: std::net::SocketAddr| -> std::io::Result<()> {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{at}")?;
        out.flush()
    };
    match rt.block_on(ladder::sim::serve_until_signal(
        cfg,
        addr,
        args.api_key,
        listening,
    )) {
        Ok(()) => ladder::exit::OK,
        Err(e) => {
            eprintln!("error: ladder sim: cannot serve on {addr}: {e}");
            ladder::exit::BAD_INPUT
        }
    }
}
