//! SSE framing and chunk parsing: any bytes, split at a point taken from the input.
#![no_main]

use ladder::client::chunk;
use ladder::client::sse::SseParser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let cut = (cut as usize).min(rest.len());
    let mut p = SseParser::new(4096);
    let on = |d: &[u8]| {
        assert!(d.len() <= 4096);
        let _ = chunk::parse(d);
        true
    };
    if p.feed(&rest[..cut], on).is_ok() && p.feed(&rest[cut..], on).is_ok() {
        let _ = p.finish(on);
    }
    let _ = chunk::parse(rest);
});
