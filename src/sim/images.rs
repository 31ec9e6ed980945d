//! Images in the simulator's chat requests: an `image_url` content part holding a `data:`
//! URL of a PNG or JPEG is read (bounded) for its size, and costs image tokens.
//!
//! The token rule: an image of `w` × `h` pixels is `ceil(w / 28) × ceil(h / 28)` tokens (one
//! per 28 × 28-pixel patch, as Qwen2-VL's 14-pixel patches merged 2 × 2 count them), added to
//! the prompt's tokens: its prefill, and so its TTFT, grows with them. Only the header is
//! decoded (PNG's IHDR, JPEG's first start-of-frame within the first [`HEAD_BYTES`]); the rest
//! of the URL is never decoded or kept. The simulator fetches nothing: an `http(s)` URL is a
//! 400.

use serde_json::Value;

/// Side of one image token's patch, pixels.
pub const PATCH: u64 = 28;

/// Most images one request may carry.
pub const MAX_IMAGES: usize = 64;

/// Most base64 characters decoded from one image (its header lies within them).
const HEAD_BYTES: usize = 64 * 1024;

/// The value of one base64 character.
fn sextet(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// The bytes of base64 text `b64`'s first whole quads, at most [`HEAD_BYTES`] characters.
fn decode_head(b64: &[u8]) -> Result<Vec<u8>, &'static str> {
    let head = &b64[..b64.len().min(HEAD_BYTES) / 4 * 4];
    let mut out = Vec::with_capacity(head.len() / 4 * 3);
    for quad in head.chunks_exact(4) {
        let pad = quad.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 {
            return Err("the image's base64 is malformed");
        }
        let mut v = 0u32;
        for c in &quad[..4 - pad] {
            v = v << 6 | sextet(*c).ok_or("the image's base64 is malformed")?;
        }
        v <<= 6 * pad as u32;
        out.extend_from_slice(&v.to_be_bytes()[1..4 - pad]);
        if pad > 0 {
            break;
        }
    }
    Ok(out)
}

/// Width and height from a PNG's or JPEG's first bytes.
fn size(bytes: &[u8]) -> Result<(u64, u64), &'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() >= 24 && &bytes[12..16] == b"IHDR" {
        let be = |r: std::ops::Range<usize>| {
            u64::from(u32::from_be_bytes(bytes[r].try_into().expect("four bytes")))
        };
        return Ok((be(16..20), be(20..24)));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        let mut i = 2;
        while i + 9 <= bytes.len() {
            if bytes[i] != 0xFF {
                return Err("the JPEG's segments are malformed");
            }
            let marker = bytes[i + 1];
            let len = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
            // Start of frame (baseline, extended, progressive, lossless): height then width.
            if matches!(marker, 0xC0..=0xC3) {
                let h = u16::from_be_bytes([bytes[i + 5], bytes[i + 6]]);
                let w = u16::from_be_bytes([bytes[i + 7], bytes[i + 8]]);
                return Ok((u64::from(w), u64::from(h)));
            }
            i += 2 + len;
        }
        return Err("no JPEG frame header in the image's first 48 KiB");
    }
    Err("the image is neither a PNG nor a JPEG")
}

/// Image tokens of one content part that is an `image_url` (`None` for other parts).
pub(super) fn part_tokens(part: &Value) -> Option<Result<u64, &'static str>> {
    if part.get("type").and_then(Value::as_str) != Some("image_url") {
        return None;
    }
    let url = part
        .get("image_url")
        .and_then(|u| u.get("url").or(Some(u)))
        .and_then(Value::as_str);
    Some(
        url.ok_or("an `image_url` part needs `image_url.url`")
            .and_then(url_tokens),
    )
}

/// Image tokens of a `data:` URL.
fn url_tokens(url: &str) -> Result<u64, &'static str> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err("the simulator reads `data:` image URLs only; it fetches nothing");
    };
    let (_, b64) = rest
        .split_once(";base64,")
        .ok_or("a `data:` image URL must be base64 (`data:image/png;base64,...`)")?;
    let (w, h) = size(&decode_head(b64.as_bytes())?)?;
    if w == 0 || h == 0 {
        return Err("the image has no pixels");
    }
    Ok(w.div_ceil(PATCH) * h.div_ceil(PATCH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Base64 of `bytes` (the test's own encoder; the simulator only decodes).
    fn b64(bytes: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for c in bytes.chunks(3) {
            let v = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for k in 0..4 {
                if k <= c.len() {
                    s.push(A[(v >> (18 - 6 * k) & 63) as usize] as char);
                } else {
                    s.push('=');
                }
            }
        }
        s
    }

    fn png_head(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 2, 0, 0, 0]);
        b
    }

    fn part(url: &str) -> Value {
        json!({"type": "image_url", "image_url": {"url": url}})
    }

    #[test]
    fn an_image_costs_one_token_per_28_pixel_patch() {
        let url = format!("data:image/png;base64,{}", b64(&png_head(56, 29)));
        assert_eq!(part_tokens(&part(&url)), Some(Ok(2 * 2)));
        let url = format!("data:image/png;base64,{}", b64(&png_head(1024, 1024)));
        assert_eq!(part_tokens(&part(&url)), Some(Ok(37 * 37)));
        // A JPEG: SOI, an APP0 segment, then a baseline frame of 100 × 50.
        let mut jpg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0];
        jpg.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8, 0, 50, 0, 100, 3, 0]);
        let url = format!("data:image/jpeg;base64,{}", b64(&jpg));
        assert_eq!(part_tokens(&part(&url)), Some(Ok(4 * 2)));
        assert_eq!(part_tokens(&json!({"type": "text", "text": "a"})), None);
    }

    #[test]
    fn what_is_not_a_data_url_of_an_image_is_refused() {
        for url in [
            "https://example.com/a.png".to_owned(),
            "data:image/png,rawbytes".to_owned(),
            "data:image/png;base64,@@@@".to_owned(),
            format!("data:image/gif;base64,{}", b64(b"GIF89a\x01\0\x01\0")),
            format!("data:image/png;base64,{}", b64(&png_head(0, 5))),
            format!(
                "data:image/jpeg;base64,{}",
                b64(&[0xFF, 0xD8, 0x00, 0x00, 0, 0, 0, 0, 0, 0])
            ),
        ] {
            assert!(matches!(part_tokens(&part(&url)), Some(Err(_))), "{url}");
        }
        assert!(matches!(
            part_tokens(&json!({"type": "image_url"})),
            Some(Err(_))
        ));
    }
}
