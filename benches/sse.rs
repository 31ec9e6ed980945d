//! SSE framing and chunk parsing throughput (MB/s of stream bytes), on streams shaped like
//! the simulator's and vLLM's completions output. Run: `cargo bench --bench sse`.
//!
//! The stream is fed in reads of a fixed size, as the network hands it over; the figures
//! are per byte of stream, so MB/s ÷ event size = events/s (one token per event with
//! `chunk_tokens: 1`).

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

criterion_group!(benches, bench);
criterion_main!(benches);
