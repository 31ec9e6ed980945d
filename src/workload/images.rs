//! Synthetic images for chat requests (`workload.images`): deterministic pictures encoded as
//! PNG or JPEG and written as `data:` URLs.
//!
//! A picture is a grid of 16 × 16-pixel cells, each of one colour drawn from a seed made of
//! `workload.seed`, the rung's seed, the request's index and the image's number: the same
//! scenario sends the same bytes, and no two images of a run are alike (a server's image
//! cache cannot answer them). Flat cells keep the encoded size small (PNG's row filters and
//! JPEG's blocks compress them well) while the pixel count, which is what a vision encoder's
//! cost follows, is exactly the one asked for.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::scenario::images::{ImageFormat, Images};

/// Side of one flat cell, pixels.
const CELL: u32 = 16;

/// JPEG quality.
const JPEG_QUALITY: u8 = 85;

/// splitmix64: a well-mixed 64-bit step.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The RGB pixels of image `n` of request `index`.
fn pixels(w: u32, h: u32, seed: u64) -> Vec<u8> {
    let cols = w.div_ceil(CELL) as usize;
    let colours: Vec<[u8; 3]> = (0..cols * h.div_ceil(CELL) as usize)
        .map(|c| {
            let x = mix(seed ^ mix(c as u64));
            [x as u8, (x >> 8) as u8, (x >> 16) as u8]
        })
        .collect();
    let mut out = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h as usize {
        let row = (y / CELL as usize) * cols;
        for x in 0..w as usize {
            out.extend_from_slice(&colours[row + x / CELL as usize]);
        }
    }
    out
}

/// Why an image could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The PNG encoder failed.
    #[error("PNG encoding failed: {0}")]
    Png(#[source] png::EncodingError),
    /// JPEG holds at most 65,535 pixels a side.
    #[error("a JPEG of {width}×{height} pixels is too large")]
    JpegTooLarge { width: u32, height: u32 },
    /// The JPEG encoder failed.
    #[error("JPEG encoding failed: {0}")]
    Jpeg(#[source] jpeg_encoder::EncodingError),
}

/// One encoded image, or why it could not be encoded.
fn encode(format: ImageFormat, w: u32, h: u32, rgb: &[u8]) -> Result<Vec<u8>, ImageError> {
    let mut bytes = Vec::new();
    match format {
        ImageFormat::Png => {
            let mut enc = png::Encoder::new(&mut bytes, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.write_header()
                .and_then(|mut wr| wr.write_image_data(rgb))
                .map_err(ImageError::Png)?;
        }
        ImageFormat::Jpeg => {
            let (Ok(w16), Ok(h16)) = (u16::try_from(w), u16::try_from(h)) else {
                return Err(ImageError::JpegTooLarge {
                    width: w,
                    height: h,
                });
            };
            jpeg_encoder::Encoder::new(&mut bytes, JPEG_QUALITY)
                .encode(rgb, w16, h16, jpeg_encoder::ColorType::Rgb)
                .map_err(ImageError::Jpeg)?;
        }
    }
    Ok(bytes)
}

/// The `data:` URLs of request `index`'s images, deterministic for (`seed`, `rung_seed`,
/// `index`).
pub fn data_urls(
    images: &Images,
    seed: u64,
    rung_seed: u64,
    index: usize,
) -> Result<Vec<String>, ImageError> {
    let mime = match images.format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
    };
    (0..images.per_request)
        .map(|n| {
            let s = mix(mix(mix(seed) ^ rung_seed) ^ index as u64) ^ u64::from(n);
            let rgb = pixels(images.width, images.height, s);
            let bytes = encode(images.format, images.width, images.height, &rgb)?;
            Ok(format!("data:{mime};base64,{}", STANDARD.encode(bytes)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jpeg_wider_than_the_format_allows_is_refused_with_its_size() {
        let e = data_urls(&spec(ImageFormat::Jpeg, 70_000, 1), 1, 2, 3).unwrap_err();
        assert!(
            matches!(
                e,
                ImageError::JpegTooLarge {
                    width: 70_000,
                    height: 1
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "a JPEG of 70000×1 pixels is too large");
        // A prompt set says which setting it came from.
        let w = crate::workload::WorkloadError::from(e);
        assert_eq!(
            w.to_string(),
            "`workload.images`: a JPEG of 70000×1 pixels is too large"
        );
    }

    #[test]
    fn an_encoder_failure_names_the_format_and_keeps_the_cause() {
        // Pixels that do not fill the picture: each encoder refuses them.
        let short = [0u8; 3];
        let png = encode(ImageFormat::Png, 2, 2, &short).unwrap_err();
        let ImageError::Png(cause) = &png else {
            panic!("{png:?}");
        };
        assert_eq!(png.to_string(), format!("PNG encoding failed: {cause}"));
        let jpeg = encode(ImageFormat::Jpeg, 2, 2, &short).unwrap_err();
        let ImageError::Jpeg(cause) = &jpeg else {
            panic!("{jpeg:?}");
        };
        assert_eq!(jpeg.to_string(), format!("JPEG encoding failed: {cause}"));
    }

    fn spec(format: ImageFormat, w: u32, h: u32) -> Images {
        Images {
            per_request: 2,
            width: w,
            height: h,
            format,
        }
    }

    fn decoded(url: &str) -> Vec<u8> {
        let b64 = url.split_once(";base64,").unwrap().1;
        STANDARD.decode(b64).unwrap()
    }

    #[test]
    fn the_same_seed_and_index_give_the_same_bytes_and_others_do_not() {
        let s = spec(ImageFormat::Png, 40, 24);
        let a = data_urls(&s, 7, 3, 5).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a, data_urls(&s, 7, 3, 5).unwrap());
        assert_ne!(a[0], a[1]);
        assert_ne!(a, data_urls(&s, 7, 3, 6).unwrap());
        assert_ne!(a, data_urls(&s, 8, 3, 5).unwrap());
        assert_ne!(a, data_urls(&s, 7, 4, 5).unwrap());
        assert!(a[0].starts_with("data:image/png;base64,"));
    }

    #[test]
    fn a_png_has_the_asked_size_in_its_header_and_a_jpeg_its_markers() {
        let png = decoded(&data_urls(&spec(ImageFormat::Png, 1000, 333), 0, 0, 0).unwrap()[0]);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 1000);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 333);
        // Flat cells compress: a fraction of the 1 MB of raw pixels (134 kB as measured).
        assert!(png.len() < 250_000, "{}", png.len());
        let url = &data_urls(&spec(ImageFormat::Jpeg, 64, 48), 0, 0, 0).unwrap()[0];
        assert!(url.starts_with("data:image/jpeg;base64,"));
        let jpg = decoded(url);
        assert_eq!(&jpg[..2], &[0xFF, 0xD8]);
        assert_eq!(&jpg[jpg.len() - 2..], &[0xFF, 0xD9]);
    }
}
