//! The streaming client and preflight against small raw TCP servers on loopback, so every
//! byte and pause the server sends is under the test's control.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ladder::client::{ApiKey, Client, ClientConfig};
use ladder::record::{ErrorClass, RequestRecord, TokenSource};
use ladder::runner::preflight::{preflight, probe_longest, PreflightError};
use ladder::scenario::types::Api;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

const KEY: &str = "sk-test-7f3a9c-SECRET";

/// One thing the fake server does after reading a request.
enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
}

fn w(s: impl AsRef<[u8]>) -> Step {
    Step::Write(s.as_ref().to_vec())
}

fn sleep_ms(ms: u64) -> Step {
    Step::Sleep(Duration::from_millis(ms))
}

/// Response head for a close-delimited event stream.
fn sse_head() -> Step {
    w("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
}

fn json_response(status: u16, body: &str) -> Step {
    w(format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ))
}

fn text_event(t: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n")
}

type Requests = Arc<Mutex<Vec<String>>>;

/// A server that answers each connection's single request with `route(request head+body)`.
async fn server<F>(route: F) -> (String, Requests)
where
    F: Fn(&str) -> Vec<Step> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Requests = Arc::default();
    let seen2 = seen.clone();
    let route = Arc::new(route);
    tokio::spawn(async move {
        // Bounded: no test needs more than a handful of connections.
        for _ in 0..16 {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let route = route.clone();
            let seen = seen2.clone();
            tokio::spawn(async move { handle(sock, &*route, &seen).await });
        }
    });
    (base, seen)
}

/// Reads one request (head and `Content-Length` body) from `sock`, `buf` holding bytes
/// already read (a kept-alive connection's next request may start there). `None` at EOF.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let req = String::from_utf8_lossy(&buf[..head_end + len]).into_owned();
    buf.drain(..head_end + len);
    Some(req)
}

async fn handle(
    mut sock: TcpStream,
    route: &(dyn Fn(&str) -> Vec<Step> + Send + Sync),
    seen: &Requests,
) {
    let Some(req) = read_request(&mut sock, &mut Vec::new()).await else {
        return;
    };
    seen.lock().unwrap().push(req.clone());
    for step in route(&req) {
        match step {
            Step::Write(b) => {
                if sock.write_all(&b).await.is_err() {
                    return;
                }
                let _ = sock.flush().await;
            }
            Step::Sleep(d) => tokio::time::sleep(d).await,
        }
    }
    let _ = sock.shutdown().await;
}

fn config(base: &str) -> ClientConfig {
    ClientConfig {
        base_url: base.to_owned(),
        api: Api::Completions,
        api_key: Some(ApiKey::new(KEY)),
        model: "m".into(),
        request_timeout: Duration::from_secs(10),
        ttft_timeout: None,
        headers: BTreeMap::new(),
        ignore_eos: true,
        max_connections: 4,
        extra_body: Default::default(),
    }
}

async fn send_with(cfg: ClientConfig) -> RequestRecord {
    let client = Client::new(cfg).unwrap();
    send_on(&client).await
}

async fn send_on(client: &Client) -> RequestRecord {
    let req = client.prepare("hello world", 2, 16);
    let start = Instant::now();
    client.send(&req, start, Duration::ZERO, 3, false).await
}

async fn send_steps(steps: fn() -> Vec<Step>) -> RequestRecord {
    let (base, _) = server(move |_| steps()).await;
    send_with(config(&base)).await
}

fn class(r: &RequestRecord) -> Option<ErrorClass> {
    r.error.as_ref().map(|e| e.class)
}

fn full_stream(with_usage: bool) -> Vec<Step> {
    let mut v = vec![
        sse_head(),
        w(": ping\r\n\r\n"),
        w("data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n"),
        w(text_event("Hel")),
        sleep_ms(20),
        w(text_event("lo")),
        sleep_ms(20),
        // last token and usage arrive in one read, the usage split mid-line from [DONE]
        w(format!("{}data:", text_event(" you"))),
    ];
    if with_usage {
        v.push(w(" {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\r\n\r\ndata: [DONE]\r\n\r\n"));
    } else {
        v.push(w(" [DONE]\n\n"));
    }
    v
}

#[test]
fn send_future_can_be_spawned() {
    fn assert_send<T: Send + 'static>(_: T) {}
    let client = Client::new(config("http://127.0.0.1:9")).unwrap();
    let req = client.prepare("x", 1, 1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let start = Instant::now();
    assert_send(async move { client.send(&req, start, Duration::ZERO, 0, false).await });
}

#[tokio::test]
async fn done_then_held_open_is_still_a_success() {
    let r = send_steps(|| {
        vec![
            sse_head(),
            w(text_event("a")),
            w("data: [DONE]\n\n"),
            sleep_ms(30_000),
        ]
    })
    .await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!(r.output_tokens, 1);
}

#[tokio::test]
async fn success_with_usage() {
    let (base, seen) = server(|_| full_stream(true)).await;
    let r = send_with(config(&base)).await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!((r.index, r.warmup, r.input_tokens), (3, false, 2));
    assert_eq!(r.output_tokens, 7);
    assert_eq!(r.token_source, TokenSource::Usage);
    assert_eq!(r.server_prompt_tokens, Some(5));
    assert_eq!(r.itl.len(), 2, "three token chunks, two gaps");
    let first = r.first_token.unwrap();
    assert!(r.sent <= first && first <= r.end);
    // Gaps are stored to the nearest microsecond: each may read up to 0.5 µs long.
    let rounding = Duration::from_nanos(500) * r.itl.len() as u32;
    assert!(r.end - first + rounding >= r.itl.iter().sum::<Duration>());

    let reqs = seen.lock().unwrap();
    let req = &reqs[0];
    assert!(req.starts_with("POST /v1/completions HTTP/1.1"));
    assert!(
        req.contains(&format!("authorization: Bearer {KEY}"))
            || req.contains(&format!("Authorization: Bearer {KEY}"))
    );
    assert!(req.contains("\"stream\":true") && req.contains("\"include_usage\":true"));
}

#[tokio::test]
async fn one_byte_per_write_gives_the_same_result() {
    let (base, _) = server(|_| {
        let mut bytes = Vec::new();
        for step in full_stream(true) {
            if let Step::Write(b) = step {
                bytes.extend(b);
            }
        }
        bytes.into_iter().map(|b| w([b])).collect()
    })
    .await;
    let r = send_with(config(&base)).await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!((r.output_tokens, r.server_prompt_tokens), (7, Some(5)));
}

#[tokio::test]
async fn success_without_usage_is_retokenized_or_chunk_counted() {
    let (base, _) = server(|_| full_stream(false)).await;
    let client = Client::new(config(&base))
        .unwrap()
        .with_token_counter(Arc::new(|text: &str| text.len() as u32));
    let r = send_on(&client).await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!(r.token_source, TokenSource::Retokenized);
    assert_eq!(r.output_tokens, "Hello you".len() as u32);

    let r = send_with(config(&base)).await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!(r.token_source, TokenSource::ChunkCount);
    assert_eq!(r.output_tokens, 3);
    assert_eq!(r.server_prompt_tokens, None);
}

#[tokio::test]
async fn chat_stream_with_role_only_first_chunk() {
    let (base, seen) = server(|_| {
        vec![
            sse_head(),
            w("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"),
            w("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"),
            w("data: {\"choices\":[{\"delta\":{\"content\":\"!\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"),
        ]
    })
    .await;
    let mut cfg = config(&base);
    cfg.api = Api::Chat;
    let r = send_with(cfg).await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!(
        (r.output_tokens, r.token_source),
        (2, TokenSource::ChunkCount)
    );
    assert!(seen.lock().unwrap()[0].starts_with("POST /v1/chat/completions "));
}

#[tokio::test]
async fn unauthorized_body_echoing_the_key_is_redacted() {
    let (base, _) = server(|_| {
        vec![json_response(
            401,
            &format!("{{\"error\":\"invalid key Bearer {KEY}; key {KEY} unknown\"}}"),
        )]
    })
    .await;
    let r = send_with(config(&base)).await;
    let e = r.error.clone().unwrap();
    assert_eq!((e.class, e.status), (ErrorClass::Auth, Some(401)));
    assert!(
        !e.detail.contains(KEY) && !e.detail.contains("7f3a9c"),
        "{}",
        e.detail
    );
    assert!(e.detail.contains("Bearer ***"), "{}", e.detail);
    assert!(!format!("{r:?}").contains(KEY));
}

#[tokio::test]
async fn status_classes_and_truncated_bodies() {
    let r = send_steps(|| vec![json_response(429, "{\"error\":\"slow down\"}")]).await;
    assert_eq!(class(&r), Some(ErrorClass::RateLimit));
    assert!(r.error.unwrap().detail.contains("slow down"));

    let r = send_steps(|| vec![json_response(500, &"x".repeat(10_000))]).await;
    let e = r.error.unwrap();
    assert_eq!((e.class, e.status), (ErrorClass::Server5xx, Some(500)));
    assert!(
        e.detail.len() < 400,
        "detail is truncated: {}",
        e.detail.len()
    );
    assert_eq!(r.first_token, None);
}

#[tokio::test]
async fn refused_connection_is_connect() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let r = send_with(config(&base)).await;
    assert_eq!(class(&r), Some(ErrorClass::Connect), "{:?}", r.error);
}

#[tokio::test]
async fn closed_mid_stream_is_reset() {
    // Close-delimited body: the stream just ends after tokens, without [DONE].
    let r = send_steps(|| vec![sse_head(), w(text_event("a")), w(text_event("b"))]).await;
    assert_eq!(class(&r), Some(ErrorClass::Reset), "{:?}", r.error);
    assert!(r.first_token.is_some());
    assert_eq!(r.output_tokens, 2);

    // Chunked body cut in the middle of a chunk: a transport-level break.
    let r = send_steps(|| {
        let ev = text_event("a");
        vec![
            w("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"),
            w(format!("{:x}\r\n{ev}\r\n", ev.len())),
            w("400\r\ndata: {\"choi"),
        ]
    })
    .await;
    assert_eq!(class(&r), Some(ErrorClass::Reset), "{:?}", r.error);
}

#[tokio::test]
async fn accept_and_close_is_reset_and_garbage_is_malformed() {
    let r = send_steps(Vec::new).await;
    assert_eq!(class(&r), Some(ErrorClass::Reset), "{:?}", r.error);
    let r = send_steps(|| vec![w("SSH-2.0-OpenSSH_9.6\r\nnonsense\r\n\r\n")]).await;
    assert_eq!(class(&r), Some(ErrorClass::Malformed), "{:?}", r.error);
}

#[tokio::test]
async fn malformed_streams() {
    let r = send_steps(|| vec![sse_head(), w(text_event("a")), w("data: {not json\n\n")]).await;
    assert_eq!(class(&r), Some(ErrorClass::Malformed), "{:?}", r.error);

    let r = send_steps(|| vec![sse_head(), w("data: {\"id\":\"x\"}\n\n")]).await;
    assert_eq!(class(&r), Some(ErrorClass::Malformed), "{:?}", r.error);

    // 200 that ends with no token and no [DONE]
    let r = send_steps(|| vec![sse_head(), w(": nothing here\n\n")]).await;
    assert_eq!(class(&r), Some(ErrorClass::Malformed), "{:?}", r.error);

    // a 2 MiB line without a newline is refused, not buffered
    let r = send_steps(|| {
        let mut v = vec![sse_head(), w("data: ")];
        v.extend((0..32).map(|_| w(vec![b'a'; 64 * 1024])));
        v
    })
    .await;
    assert_eq!(class(&r), Some(ErrorClass::Malformed), "{:?}", r.error);
}

#[tokio::test]
async fn error_object_mid_stream_is_stream_error() {
    let r = send_steps(|| {
        vec![
            sse_head(),
            w(text_event("a")),
            w(format!("data: {{\"error\":{{\"message\":\"engine died, key {KEY}\",\"code\":500}}}}\n\ndata: [DONE]\n\n")),
        ]
    })
    .await;
    let e = r.error.clone().unwrap();
    assert_eq!(e.class, ErrorClass::StreamError);
    assert!(
        e.detail.contains("engine died") && !e.detail.contains(KEY),
        "{}",
        e.detail
    );
    assert!(
        r.first_token.is_some(),
        "tokens before the error are still timed"
    );
}

#[tokio::test]
async fn stall_before_first_token_hits_ttft_timeout() {
    let (base, _) = server(|_| {
        vec![
            sse_head(),
            w(": ping\n\n"),
            sleep_ms(3000),
            w(text_event("late")),
        ]
    })
    .await;
    let mut cfg = config(&base);
    cfg.ttft_timeout = Some(Duration::from_millis(300));
    let r = send_with(cfg).await;
    let e = r.error.unwrap();
    assert_eq!(e.class, ErrorClass::Timeout);
    assert!(e.detail.contains("ttft"), "{}", e.detail);
    assert!(r.end - r.sent >= Duration::from_millis(300));
}

#[tokio::test]
async fn stall_after_tokens_hits_request_timeout() {
    let (base, _) = server(|_| {
        vec![
            sse_head(),
            w(text_event("a")),
            sleep_ms(3000),
            w("data: [DONE]\n\n"),
        ]
    })
    .await;
    let mut cfg = config(&base);
    cfg.request_timeout = Duration::from_millis(300);
    let r = send_with(cfg).await;
    let e = r.error.unwrap();
    assert_eq!(e.class, ErrorClass::Timeout);
    assert!(e.detail.contains("request_timeout"), "{}", e.detail);
    assert!(r.first_token.is_some());

    // headers never come
    let (base, _) = server(|_| vec![sleep_ms(3000)]).await;
    let mut cfg = config(&base);
    cfg.request_timeout = Duration::from_millis(300);
    assert_eq!(class(&send_with(cfg).await), Some(ErrorClass::Timeout));
}

#[tokio::test]
async fn non_streaming_json_is_one_chunk() {
    let r = send_steps(|| {
        vec![json_response(
            200,
            "{\"choices\":[{\"text\":\"whole answer\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":4}}",
        )]
    })
    .await;
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!((r.output_tokens, r.token_source), (4, TokenSource::Usage));
    assert_eq!(r.first_token, Some(r.end));
    assert!(r.itl.is_empty());
}

#[tokio::test]
async fn cross_host_redirect_is_not_followed() {
    let (other, other_seen) = server(|_| full_stream(true)).await;
    let location = format!("{other}/v1/completions");
    let (base, _) = server(move |_| {
        vec![w(format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ))]
    })
    .await;
    let r = send_with(config(&base)).await;
    let e = r.error.unwrap();
    assert_eq!((e.class, e.status), (ErrorClass::Client4xx, Some(307)));
    assert!(
        other_seen.lock().unwrap().is_empty(),
        "the key must not reach another host"
    );
}

#[tokio::test]
async fn keep_alive_connection_is_reused() {
    // One connection answers several requests with chunked streams.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(Mutex::new(0u32));
    let acc = accepted.clone();
    tokio::spawn(async move {
        for _ in 0..4 {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            *acc.lock().unwrap() += 1;
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                for _ in 0..3 {
                    let Ok(n) = sock.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    let body = format!("{}data: [DONE]\n\n", text_event("x"));
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let client = Client::new(config(&base)).unwrap();
    for _ in 0..3 {
        let r = send_on(&client).await;
        assert!(r.ok(), "{:?}", r.error);
    }
    assert_eq!(*accepted.lock().unwrap(), 1);
}

// ---- preflight ----

fn models_then(probe: fn() -> Vec<Step>) -> impl Fn(&str) -> Vec<Step> + Send + Sync + 'static {
    move |req: &str| {
        if req.starts_with("GET /v1/models") {
            vec![json_response(
                200,
                "{\"object\":\"list\",\"data\":[{\"id\":\"alpha\"},{\"id\":\"beta\"}]}",
            )]
        } else {
            probe()
        }
    }
}

#[tokio::test]
async fn preflight_passes_and_reports() {
    let (base, _) = server(models_then(|| full_stream(true))).await;
    let client = Client::new(config(&base)).unwrap();
    let rep = preflight(&client, "alpha", Some("MY_KEY"), true)
        .await
        .unwrap();
    assert_eq!(rep.served_models, Some(vec!["alpha".into(), "beta".into()]));
    assert!(rep.probe_ttft.is_some());
    assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
}

#[tokio::test]
async fn preflight_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let client = Client::new(config(&base)).unwrap();
    let err = preflight(&client, "m", Some("MY_KEY"), true)
        .await
        .unwrap_err();
    assert!(matches!(err, PreflightError::NoServer { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("no server at") && msg.contains(&base) && msg.contains("is it up?"),
        "{msg}"
    );
}

#[tokio::test]
async fn preflight_tls_to_a_plain_http_server() {
    // Like a plain http server: reads whatever arrives (a TLS ClientHello) and answers 400.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        for _ in 0..4 {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let _ = sock
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
        }
    });
    let client = Client::new(config(&base.replacen("http:", "https:", 1))).unwrap();
    let r = send_on(&client).await;
    assert_eq!(class(&r), Some(ErrorClass::Connect), "{:?}", r.error);
    let err = preflight(&client, "m", None, false).await.unwrap_err();
    assert!(matches!(err, PreflightError::Tls { .. }), "{err}");
    assert!(err.to_string().contains("TLS handshake"), "{err}");
}

#[tokio::test]
async fn preflight_unauthorized_names_the_variable() {
    let (base, _) = server(|_| {
        vec![json_response(
            401,
            &format!("{{\"error\":\"bad key {KEY}\"}}"),
        )]
    })
    .await;
    let client = Client::new(config(&base)).unwrap();
    let msg = preflight(&client, "m", Some("MY_KEY"), true)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("$MY_KEY") && msg.contains("401") && msg.contains(&base),
        "{msg}"
    );
    assert!(!msg.contains(KEY), "{msg}");

    let mut cfg = config(&base);
    cfg.api_key = None;
    let client = Client::new(cfg).unwrap();
    let msg = preflight(&client, "m", None, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(msg.contains("set endpoint.api_key_env"), "{msg}");
}

#[tokio::test]
async fn preflight_unknown_model_lists_served_names() {
    let (base, _) = server(models_then(|| {
        vec![json_response(
            404,
            "{\"object\":\"error\",\"message\":\"The model `gamma` does not exist.\",\"code\":404}",
        )]
    }))
    .await;
    let client = Client::new(config(&base)).unwrap();
    let err = preflight(&client, "gamma", None, false).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PreflightError::UnknownModel { .. }), "{msg}");
    assert!(msg.contains("served model names are: alpha, beta"), "{msg}");
}

#[tokio::test]
async fn preflight_wrong_path() {
    let (base, _) = server(|_| vec![json_response(404, "{\"detail\":\"Not Found\"}")]).await;
    let client = Client::new(config(&format!("{base}/v1"))).unwrap();
    let err = preflight(&client, "m", None, false).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PreflightError::WrongPath { .. }), "{msg}");
    assert!(
        msg.contains("should end before /v1") && msg.contains("/v1/v1/completions"),
        "{msg}"
    );
}

#[tokio::test]
async fn preflight_rate_limited_and_timeout() {
    let (base, _) = server(models_then(|| vec![json_response(429, "{}")])).await;
    let client = Client::new(config(&base)).unwrap();
    let msg = preflight(&client, "alpha", None, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(msg.contains("429") && msg.contains("rate limited"), "{msg}");

    let (base, _) = server(|_| vec![sleep_ms(3000)]).await;
    let mut cfg = config(&base);
    cfg.request_timeout = Duration::from_millis(300);
    let client = Client::new(cfg).unwrap();
    let err = preflight(&client, "alpha", None, false).await.unwrap_err();
    assert!(matches!(err, PreflightError::Timeout { .. }), "{err}");
}

/// A keep-alive server like uvicorn's or cpp-httplib's, with the race they have made
/// deterministic: a request that arrives on a connection idle for more than `idle_close` is
/// the one that meets the server's close (it is read, then the connection is closed with no
/// answer). Returns the base URL and the number of connections accepted.
async fn keep_alive_server(idle_close: Duration) -> (String, Arc<Mutex<usize>>) {
    keep_alive_server_closing(idle_close, usize::MAX).await
}

/// [`keep_alive_server`] that also closes, unanswered, the request after the first
/// `answers` on each connection (a server that closes after each stream, its close crossing
/// the client's next request).
async fn keep_alive_server_closing(
    idle_close: Duration,
    answers: usize,
) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let conns = Arc::new(Mutex::new(0usize));
    let conns2 = conns.clone();
    tokio::spawn(async move {
        for _ in 0..8 {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            *conns2.lock().unwrap() += 1;
            tokio::spawn(async move {
                let mut last = Instant::now();
                let mut answered = 0usize;
                let mut buf = Vec::new();
                loop {
                    let Some(req) = read_request(&mut sock, &mut buf).await else {
                        return;
                    };
                    if last.elapsed() > idle_close || answered >= answers {
                        // The server's idle timer fired as this request arrived.
                        let _ = sock.shutdown().await;
                        return;
                    }
                    // llama-server's /tokenize answer, or a one-token stream.
                    let (kind, body) = if req.starts_with("POST /tokenize ") {
                        ("application/json", "{\"tokens\":[9,8,7]}".to_string())
                    } else if req.starts_with("GET /v1/models ") {
                        (
                            "application/json",
                            "{\"data\":[{\"id\":\"alpha\"}]}".to_string(),
                        )
                    } else {
                        ("text/event-stream", format!(
                        "{}data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":2,\"completion_tokens\":1}}}}\n\ndata: [DONE]\n\n",
                        text_event("a")
                    ))
                    };
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                    last = Instant::now();
                    answered += 1;
                }
            });
        }
    });
    (base, conns)
}

#[tokio::test]
async fn a_connection_idle_past_the_servers_keep_alive_is_never_reused() {
    // Common servers close an idle keep-alive connection after 5 s (uvicorn for vLLM and
    // SGLang, cpp-httplib for llama.cpp); here after 3.5 s, still above ladder's 3 s pool
    // timeout. A request sent on such a connection as the server closes it fails with a reset
    // that is ladder's artefact, not the server's (seen in CI against llama-server).
    let (base, conns) = keep_alive_server(Duration::from_millis(3500)).await;
    let client = Client::new(config(&base)).unwrap();
    let first = send_on(&client).await;
    assert!(first.ok(), "{:?}", first.error);
    // Within the pool's idle timeout the connection is reused...
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = send_on(&client).await;
    assert!(second.ok(), "{:?}", second.error);
    assert_eq!(
        *conns.lock().unwrap(),
        1,
        "a fresh connection was opened too early"
    );
    // ...past it, it is dropped, not raced against the server's close.
    tokio::time::sleep(Duration::from_millis(3700)).await;
    let third = send_on(&client).await;
    assert!(
        third.ok(),
        "a request reused an idle connection: {:?}",
        third.error
    );
    assert_eq!(*conns.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_request_crossing_the_servers_close_is_resent_once_on_a_new_connection() {
    // llama.cpp's server closes the connection after every streamed answer without saying
    // `Connection: close`; a request sent on it before the close arrives gets no answer
    // (seen in CI: "connection closed before message completed"). It is sent once more.
    let (base, conns) = keep_alive_server_closing(Duration::from_secs(60), 1).await;
    let client = Client::new(config(&base)).unwrap();
    let first = send_on(&client).await;
    assert!(first.ok() && !first.resent, "{first:?}");
    let second = send_on(&client).await;
    assert!(second.ok(), "{:?}", second.error);
    assert!(second.resent, "the lost send is recorded");
    assert_eq!(*conns.lock().unwrap(), 2);
    // The time lost on the dead connection is before `sent`: the client's, not the server's.
    assert!(second.sent >= Duration::ZERO && second.ttft().is_some());
}

#[tokio::test]
async fn tokenize_and_models_calls_crossing_the_servers_close_are_sent_once_more() {
    // `tokenizer: server` against llama-server: preflight's streamed probe leaves a kept-alive
    // connection the server closes, and the first /tokenize call went out on it (seen in CI:
    // "cannot reach …/tokenize: … connection closed before message completed").
    let (base, conns) = keep_alive_server_closing(Duration::from_secs(60), 1).await;
    let client = Client::new(config(&base)).unwrap();
    assert!(send_on(&client).await.ok());
    let ids = client
        .token_ids("hello", ladder::client::TokenizeShape::LlamaCpp)
        .await
        .expect("the lost /tokenize call is sent again on a new connection");
    assert_eq!(ids, vec![9, 8, 7]);
    assert_eq!(*conns.lock().unwrap(), 2);
    // So is preflight's GET /v1/models.
    let models = client.list_models().await;
    assert!(
        matches!(&models, ladder::client::ModelsReply::Served(m) if m == &["alpha"]),
        "{models:?}"
    );
    assert_eq!(*conns.lock().unwrap(), 3);
    // Once more, never in a loop: a server that closes every request unanswered is named
    // after exactly two sends.
    let (dead, seen) = server(|_| vec![]).await;
    let client = Client::new(config(&dead)).unwrap();
    let err = client
        .tokenize("hello", ladder::client::TokenizeShape::LlamaCpp)
        .await
        .unwrap_err();
    assert!(err.0.contains("sent twice"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_server_that_never_answers_is_still_a_reset_after_one_resend() {
    // Every request read and the connection closed: a new connection gets the same, so the
    // request is a `reset` after exactly one more try, never retried in a loop.
    let (base, seen) = server(|_| vec![]).await;
    let r = send_with(config(&base)).await;
    assert_eq!(class(&r), Some(ErrorClass::Reset), "{:?}", r.error);
    assert!(r.resent);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn the_long_probe_is_tried_once_more_after_a_closed_connection_but_not_after_a_400() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let posts = Arc::new(AtomicUsize::new(0));
    let seen = posts.clone();
    let (base, _) = server(move |_req: &str| {
        // The first try finds its connection closed without an answer; the second is served.
        if seen.fetch_add(1, SeqCst) == 0 {
            vec![]
        } else {
            full_stream(true)
        }
    })
    .await;
    let client = Client::new(config(&base)).unwrap();
    let long = probe_longest(&client, "alpha", None, "a b c", &[], &[], 3, None, false)
        .await
        .unwrap();
    assert!(long.ttft.is_some());
    assert_eq!(posts.load(SeqCst), 2);

    // A refusal is the answer: said at once, with the server's words, and not sent again.
    let posts = Arc::new(AtomicUsize::new(0));
    let seen = posts.clone();
    let (base, _) = server(move |_req: &str| {
        seen.fetch_add(1, SeqCst);
        vec![json_response(
            400,
            "{\"error\":{\"code\":400,\"message\":\"This model's maximum context length is 8 tokens\"}}",
        )]
    })
    .await;
    let client = Client::new(config(&base)).unwrap();
    let err = probe_longest(&client, "alpha", None, "a b c", &[], &[], 3000, None, false)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            PreflightError::PromptRefused {
                status: 400,
                tokens: 3000,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("maximum context length is 8 tokens"), "{msg}");
    assert!(!msg.contains("not served"), "{msg}");
    assert_eq!(posts.load(SeqCst), 1);
}
