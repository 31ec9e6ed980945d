//! SSE framing and chunk parsing throughput (MB/s of stream bytes), on streams shaped like
//! the simulator's and vLLM's completions output. Run: `cargo bench --bench sse`.
//!
//! The stream is fed in reads of a fixed size, as the network hands it over; the figures
//! are per byte of stream, so MB/s ÷ event size = events/s (one token per event with
//! `chunk_tokens: 1`).
//!
//! The `parse/*` groups time `chunk::parse` alone (the hot-path scanner) against
//! `chunk::parse_serde` (the serde reference) on the same event payloads, per byte of
//! payload, so the two lines give the ratio directly.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ladder::client::chunk::{self, Chunk};
use ladder::client::sse::SseParser;

/// `events` token events of `words` words each, then usage and `[DONE]`, byte-for-byte the
/// simulator's completions format.
fn stream(events: usize, words: usize) -> Vec<u8> {
    let base =
        r#""id":"cmpl-sim-17","object":"text_completion","created":1764680000,"model":"sim-model""#;
    let vocab = ["bafu ", "chodi ", "dene ", "fira ", "bochu ", "dalo "];
    let mut out = Vec::new();
    for i in 0..events {
        out.extend_from_slice(b"data: {");
        out.extend_from_slice(base.as_bytes());
        out.extend_from_slice(br#","choices":[{"index":0,"text":""#);
        for w in 0..words {
            out.extend_from_slice(vocab[(i + w) % vocab.len()].as_bytes());
        }
        out.extend_from_slice(br#"","logprobs":null,"finish_reason":null}]}"#);
        out.extend_from_slice(b"\n\n");
    }
    out.extend_from_slice(b"data: {");
    out.extend_from_slice(base.as_bytes());
    out.extend_from_slice(
        br#","choices":[],"usage":{"prompt_tokens":512,"completion_tokens":1024,"total_tokens":1536}}"#,
    );
    out.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    out
}

/// vLLM-style chat events: `events` content deltas of `words` words, then usage.
fn chat_events(events: usize, words: usize) -> Vec<Vec<u8>> {
    let base = r#""id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1764680000,"model":"sim-model""#;
    let vocab = ["bafu ", "chodi ", "dene ", "fira ", "bochu ", "dalo "];
    let mut out = Vec::new();
    for i in 0..events {
        let mut text = String::new();
        for w in 0..words {
            text.push_str(vocab[(i + w) % vocab.len()]);
        }
        out.push(
            format!(
                r#"{{{base},"choices":[{{"index":0,"delta":{{"content":"{text}"}},"logprobs":null,"finish_reason":null}}],"usage":null}}"#
            )
            .into_bytes(),
        );
    }
    out.push(
        format!(
            r#"{{{base},"choices":[],"usage":{{"prompt_tokens":512,"completion_tokens":{events},"total_tokens":1536}}}}"#
        )
        .into_bytes(),
    );
    out
}

/// The `data` payloads of a stream, as the framer hands them to the parser.
fn payloads(s: &[u8]) -> Vec<Vec<u8>> {
    let mut p = SseParser::default();
    let mut out = Vec::new();
    p.feed(s, |d| {
        out.push(d.to_vec());
        true
    })
    .unwrap();
    out
}

fn bench_parse(c: &mut Criterion) {
    let inputs = [
        ("completions-1tok", payloads(&stream(1024, 1))),
        ("completions-16tok", payloads(&stream(1024, 16))),
        ("chat-1tok", chat_events(1024, 1)),
    ];
    for (label, events) in &inputs {
        let bytes: usize = events.iter().map(Vec::len).sum();
        let mut g = c.benchmark_group(format!("parse/{label}"));
        g.throughput(Throughput::Bytes(bytes as u64));
        for (name, f) in [
            ("fast", chunk::parse as fn(&[u8]) -> Chunk<'_>),
            ("serde", chunk::parse_serde),
        ] {
            // Same answers, or the comparison means nothing.
            assert!(events.iter().all(|e| f(e) == chunk::parse_serde(e)));
            g.bench_function(name, |b| {
                b.iter(|| {
                    let mut text = 0usize;
                    for e in events {
                        if let Chunk::Data { text: t, .. } = f(black_box(e)) {
                            text += t.len();
                        }
                    }
                    text
                })
            });
        }
        g.finish();
    }
}

fn bench(c: &mut Criterion) {
    for (label, words) in [("1tok", 1), ("16tok", 16)] {
        let s = stream(1024, words);
        for read in [1460usize, 16 * 1024] {
            let mut g = c.benchmark_group(format!("sse/{label}/read{read}"));
            g.throughput(Throughput::Bytes(s.len() as u64));
            g.bench_function("frame", |b| {
                b.iter(|| {
                    let mut p = SseParser::default();
                    let mut n = 0usize;
                    for part in s.chunks(read) {
                        p.feed(black_box(part), |d| {
                            n += d.len();
                            true
                        })
                        .unwrap();
                    }
                    p.finish(|_| true).unwrap();
                    n
                })
            });
            g.bench_function("frame+parse", |b| {
                b.iter(|| {
                    let mut p = SseParser::default();
                    let mut text = 0usize;
                    for part in s.chunks(read) {
                        p.feed(black_box(part), |d| {
                            if let Chunk::Data { text: t, .. } = chunk::parse(d) {
                                text += t.len();
                            }
                            true
                        })
                        .unwrap();
                    }
                    text
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench, bench_parse);
criterion_main!(benches);
