//! Images in chat (`workload.images`): their type and their scenario checks.
//!
//! Each chat request carries `per_request` synthetic images of `width` × `height` pixels as
//! data URLs in OpenAI content parts, the same bytes for the same scenario (seeded by
//! `workload.seed`, the rung and the request's index). docs/endpoints.md describes them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnostic::Problem;
use super::yaml::Seg;

/// Most images in one request.
pub const MAX_IMAGES_PER_REQUEST: u32 = 16;

/// Widest (and tallest) image, pixels.
pub const MAX_IMAGE_SIDE: u32 = 4096;

/// Most image pixels one rung synthesises (requests × images × width × height, warmup
/// included): every request's images are encoded before the rung starts.
pub const MAX_RUNG_IMAGE_PIXELS: u64 = 1 << 31;

/// `workload.images`: synthetic images sent with every chat request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Images {
    /// Images per request (1 to 16).
    #[schemars(range(min = 1, max = 16))]
    pub per_request: u32,
    /// Width in pixels (1 to 4096).
    #[schemars(range(min = 1, max = 4096))]
    pub width: u32,
    /// Height in pixels (1 to 4096).
    #[schemars(range(min = 1, max = 4096))]
    pub height: u32,
    /// Encoding: `png` (default) or `jpeg`.
    #[serde(default)]
    pub format: ImageFormat,
}

/// How a synthetic image is encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// `image/png`, lossless.
    #[default]
    Png,
    /// `image/jpeg`, baseline, quality 85.
    Jpeg,
}

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key((*k).into())).collect()
}

fn get<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .try_fold(v, |v, k| v.get(*k))
        .filter(|x| !x.is_null())
}

/// The checks of `workload.images` against the rest of the scenario: chat only, no
/// sessions, sides within [`MAX_IMAGE_SIDE`] (the sweep's `image_size` values too), and a
/// rung's pixels within [`MAX_RUNG_IMAGE_PIXELS`].
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    let images = get(v, &["workload", "images"]);
    let sweeps_size = get(v, &["sweep", "field"]).and_then(Value::as_str) == Some("image_size");
    if sweeps_size && images.is_none() {
        out.push(
            Problem::value(
                p(&["sweep", "field"]),
                "`image_size` sweeps the side of `workload.images`, which is not set",
            )
            .hint("add `workload.images: { per_request: 1, width: 512, height: 512 }`"),
        );
    }
    let Some(images) = images else { return };
    let api = get(v, &["endpoint", "api"])
        .and_then(Value::as_str)
        .unwrap_or("completions");
    if api != "chat" {
        out.push(
            Problem::key(
                p(&["workload", "images"]),
                format!("images go in chat content parts; `endpoint.api` is `{api}`"),
            )
            .hint("set `endpoint.api: chat`, or remove `images`"),
        );
    }
    super::incompatible::check(v, super::incompatible::With::Images, out);
    let int = |k: &str| images.get(k).and_then(Value::as_u64);
    let per = int("per_request").unwrap_or(1);
    if !(1..=u64::from(MAX_IMAGES_PER_REQUEST)).contains(&per) {
        out.push(Problem::value(
            p(&["workload", "images", "per_request"]),
            format!("{per} images per request: must be 1 to {MAX_IMAGES_PER_REQUEST}"),
        ));
    }
    let mut sides = vec![(
        int("width").unwrap_or(1),
        p(&["workload", "images", "width"]),
    )];
    sides.push((
        int("height").unwrap_or(1),
        p(&["workload", "images", "height"]),
    ));
    let mut biggest = int("width")
        .unwrap_or(1)
        .saturating_mul(int("height").unwrap_or(1));
    if sweeps_size {
        for (i, x) in get(v, &["sweep", "values"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut path = p(&["sweep", "values"]);
            path.push(Seg::Index(i));
            let x = x.as_u64().unwrap_or(1);
            biggest = biggest.max(x.saturating_mul(x));
            sides.push((x, path));
        }
    }
    for (side, path) in sides {
        if !(1..=u64::from(MAX_IMAGE_SIDE)).contains(&side) {
            out.push(Problem::value(
                path,
                format!("an image side of {side} pixels: must be 1 to {MAX_IMAGE_SIDE}"),
            ));
            return;
        }
    }
    let requests = get(v, &["workload", "requests_per_rung"])
        .map_or(Some(200), Value::as_u64)
        .unwrap_or(0)
        .saturating_add(
            get(v, &["load", "warmup_requests"])
                .and_then(Value::as_u64)
                .unwrap_or(0),
        );
    let pixels = requests.saturating_mul(per).saturating_mul(biggest);
    if pixels > MAX_RUNG_IMAGE_PIXELS {
        out.push(
            Problem::value(
                p(&["workload", "images"]),
                format!(
                    "{requests} requests × {per} images of {biggest} pixels = {pixels} pixels a \
                     rung, more than the limit of {MAX_RUNG_IMAGE_PIXELS} synthesised before it"
                ),
            )
            .hint("fewer or smaller images, or fewer requests per rung"),
        );
    }
}
