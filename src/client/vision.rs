//! Chat requests with images (`workload.images`): the user message's content is a list of
//! OpenAI content parts, the prompt's text first and then one `image_url` part per image,
//! each a `data:` URL. The rest of the body is the plain chat request's.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Serialize;

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url<'a> },
}

#[derive(Serialize)]
struct Url<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Vec<Part<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: [Message<'a>; 1],
    max_tokens: u32,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ignore_eos: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(flatten)]
    extra: &'a BTreeMap<String, serde_json::Value>,
}

/// The streamed chat body of `prompt` with `images` (data URLs), greedy unless `extra` sets
/// a temperature, as [`super::Client::prepare`]'s chat body.
pub(super) fn body(
    model: &str,
    prompt: &str,
    images: &[String],
    max_tokens: u32,
    ignore_eos: bool,
    extra: &BTreeMap<String, serde_json::Value>,
) -> Bytes {
    let mut content = Vec::with_capacity(1 + images.len());
    content.push(Part::Text { text: prompt });
    content.extend(images.iter().map(|u| Part::ImageUrl {
        image_url: Url { url: u },
    }));
    let body = Body {
        model,
        messages: [Message {
            role: "user",
            content,
        }],
        max_tokens,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        ignore_eos,
        temperature: (!extra.contains_key("temperature")).then_some(0.0),
        extra,
    };
    Bytes::from(serde_json::to_vec(&body).expect("a request body always serialises"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_follow_the_text_as_image_url_parts() {
        let v: serde_json::Value = serde_json::from_slice(&body(
            "m",
            "describe",
            &["data:image/png;base64,AA==".into()],
            8,
            true,
            &BTreeMap::new(),
        ))
        .unwrap();
        assert_eq!(
            v["messages"],
            serde_json::json!([{"role": "user", "content": [
                {"type": "text", "text": "describe"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
            ]}])
        );
        assert_eq!(v["max_tokens"], 8);
        assert_eq!(v["stream"], true);
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["temperature"], 0.0);
    }
}
