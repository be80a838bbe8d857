//! The stream limits against a real misbehaving server on 127.0.0.1: slow headers, a trickle that
//! never completes a line, silence mid-stream, a huge event, an endless stream. Each test sets
//! short limits, so nothing here sleeps long; each error names the provider and the limit.

use std::time::Duration;

use elph_ai::{
    AnthropicProvider, HttpProviderConfig, Limit, OpenAiProvider, ProviderError, RetryPolicy, StreamLimits,
};
use serde_json::json;
use test_support::raw_http::{RawHttpServer, Step, sse_event, sse_head};

use super::{run, simple_request, streamed_text};

fn short_limits() -> StreamLimits {
    StreamLimits {
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_millis(400),
        idle_timeout: Duration::from_millis(400),
        max_event_bytes: 64 * 1024,
        max_response_bytes: 1024 * 1024,
    }
}

fn openai(server: &RawHttpServer, limits: StreamLimits) -> OpenAiProvider {
    let config = HttpProviderConfig::new("slowpoke", "m", format!("{}/v1", server.url()))
        .with_api_key("sk-limits-secret")
        .with_retry(RetryPolicy::none())
        .with_limits(limits)
        .with_config_file("/cfg/providers/slowpoke.json");
    OpenAiProvider::new(config).unwrap()
}

fn delta(text: &str) -> serde_json::Value {
    json!({"choices": [{"index": 0, "delta": {"content": text}}]})
}

fn finish() -> Vec<Step> {
    vec![
        sse_event(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        Step::Send(b"data: [DONE]\n\n".to_vec()),
    ]
}

/// The error's limit, after checking that its words name the provider, the setting and the file.
fn limit_of(error: &ProviderError) -> Limit {
    let text = error.to_string();
    assert!(text.starts_with("slowpoke: "), "names the provider: {text}");
    assert!(!text.contains("sk-limits-secret"), "{text}");
    match error {
        ProviderError::StreamLimit { limit, .. } => {
            assert!(text.contains(limit.setting()), "names the setting: {text}");
            assert!(
                text.contains("/cfg/providers/slowpoke.json"),
                "says where: {text}"
            );
            *limit
        }
        other => panic!("expected a stream limit error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_never_sends_headers_fails_at_the_response_timeout() {
    let server = RawHttpServer::start(vec![Step::Wait(Duration::from_secs(3600))]).await;
    let (result, _) = run(&openai(&server, short_limits()), &simple_request()).await;
    let error = result.unwrap_err();
    assert_eq!(limit_of(&error), Limit::ResponseTimeout);
    assert!(
        error
            .to_string()
            .contains("no response from the server within 0.4 s"),
        "{error}"
    );
}

#[tokio::test]
async fn a_trickle_that_never_completes_a_line_fails_at_the_idle_timeout() {
    // A byte every 50 ms: never silent for long, never a whole line.
    let server = RawHttpServer::start(vec![
        sse_head(),
        sse_event(&delta("Hello")),
        Step::Forever {
            bytes: b"x".to_vec(),
            every: Duration::from_millis(50),
        },
    ])
    .await;
    let (result, events) = run(&openai(&server, short_limits()), &simple_request()).await;
    assert_eq!(limit_of(&result.unwrap_err()), Limit::IdleTimeout);
    assert_eq!(streamed_text(&events).0, "Hello", "what arrived was shown");
}

#[tokio::test]
async fn silence_mid_stream_fails_at_the_idle_timeout_and_is_retried_when_nothing_was_shown() {
    let server = RawHttpServer::start(vec![sse_head(), Step::Wait(Duration::from_secs(3600))]).await;
    let config = HttpProviderConfig::new("slowpoke", "m", format!("{}/v1", server.url()))
        .with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        })
        .with_limits(short_limits())
        .with_config_file("/cfg/providers/slowpoke.json");
    let provider = OpenAiProvider::new(config).unwrap();
    let (result, _) = run(&provider, &simple_request()).await;
    assert_eq!(limit_of(&result.unwrap_err()), Limit::IdleTimeout);
    assert_eq!(
        server.connections(),
        2,
        "a silent server may answer the next time"
    );
}

#[tokio::test]
async fn keep_alive_comments_are_a_sign_of_life() {
    let mut script = vec![sse_head()];
    for _ in 0..4 {
        script.push(Step::Wait(Duration::from_millis(150)));
        script.push(Step::Send(b": still thinking\n".to_vec()));
    }
    script.push(sse_event(&delta("answer")));
    script.extend(finish());
    let server = RawHttpServer::start(script).await;
    let (result, _) = run(&openai(&server, short_limits()), &simple_request()).await;
    assert_eq!(
        result.unwrap().text,
        "answer",
        "600 ms in all, never 400 ms without a line"
    );
}

#[tokio::test]
async fn a_huge_event_fails_at_the_event_cap_without_reading_it_all() {
    // 64 MiB of one event's data in 64 KiB writes; the cap is 64 KiB.
    let server = RawHttpServer::start(vec![
        sse_head(),
        Step::Send(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec()),
        Step::Repeat {
            bytes: vec![b'a'; 64 * 1024],
            times: 1024,
        },
    ])
    .await;
    let (result, _) = run(&openai(&server, short_limits()), &simple_request()).await;
    let error = result.unwrap_err();
    assert_eq!(limit_of(&error), Limit::MaxEventBytes);
    assert!(error.to_string().contains("larger than 65536 bytes"), "{error}");
}

#[tokio::test]
async fn an_endless_stream_of_small_events_fails_at_the_answer_cap() {
    let server = RawHttpServer::start(vec![
        sse_head(),
        Step::Repeat {
            bytes: format!("data: {}\n\n", delta("la ")).into_bytes(),
            times: usize::MAX,
        },
    ])
    .await;
    let (result, events) = run(&openai(&server, short_limits()), &simple_request()).await;
    assert_eq!(limit_of(&result.unwrap_err()), Limit::MaxResponseBytes);
    assert!(
        streamed_text(&events).1 > 1000,
        "the events before the cap were shown"
    );
}

#[tokio::test]
async fn a_four_mib_delta_in_small_pieces_arrives_whole() {
    // One 4 MiB text delta, written 1 KiB at a time (the quadratic parser took seconds here).
    let piece = vec![b'z'; 1024];
    let mut script = vec![
        sse_head(),
        Step::Send(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec()),
        Step::Repeat {
            bytes: piece,
            times: 4096,
        },
        Step::Send(b"\"}}]}\n\n".to_vec()),
    ];
    script.extend(finish());
    let server = RawHttpServer::start(script).await;
    let provider = openai(&server, StreamLimits::default());
    let (result, events) = run(&provider, &simple_request()).await;
    let turn = result.unwrap();
    assert_eq!(turn.text.len(), 4 * 1024 * 1024);
    assert!(turn.text.bytes().all(|b| b == b'z'));
    assert_eq!(streamed_text(&events).1, 1, "one delta, as sent");
}

#[tokio::test]
async fn an_endless_error_page_is_read_only_in_part() {
    let server = RawHttpServer::start(vec![
        Step::Send(
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                .to_vec(),
        ),
        Step::Repeat {
            bytes: b"overloaded ".to_vec(),
            times: usize::MAX,
        },
    ])
    .await;
    let (result, _) = run(&openai(&server, short_limits()), &simple_request()).await;
    match result.unwrap_err() {
        ProviderError::Http { status, message, .. } => {
            assert_eq!(status, 500);
            assert!(message.starts_with("overloaded overloaded"), "{message}");
            assert!(message.chars().count() <= 2_001, "shortened");
        }
        other => panic!("expected the HTTP error, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_streams_have_the_same_limits() {
    let server = RawHttpServer::start(vec![
        sse_head(),
        Step::Send(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n".to_vec()),
        Step::Wait(Duration::from_secs(3600)),
    ])
    .await;
    let config = HttpProviderConfig::new("slowpoke", "m", server.url())
        .with_retry(RetryPolicy::none())
        .with_limits(short_limits())
        .with_config_file("/cfg/providers/slowpoke.json");
    let provider = AnthropicProvider::new(config).unwrap();
    let (result, _) = run(&provider, &simple_request()).await;
    assert_eq!(limit_of(&result.unwrap_err()), Limit::IdleTimeout);
}

#[tokio::test]
async fn a_connect_that_is_never_answered_fails_at_the_connect_timeout() {
    // A listener whose accept queue is full drops further SYNs: the connect hangs.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..8 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(200), connect).await {
            Ok(Ok(stream)) => fillers.push(stream),
            _ => break,
        }
    }
    let config = HttpProviderConfig::new("slowpoke", "m", format!("http://{addr}/v1"))
        .with_retry(RetryPolicy::none())
        .with_limits(StreamLimits {
            connect_timeout: Duration::from_millis(300),
            response_timeout: Duration::from_secs(10),
            ..short_limits()
        })
        .with_config_file("/cfg/providers/slowpoke.json");
    let provider = OpenAiProvider::new(config).unwrap();
    let (result, _) = run(&provider, &simple_request()).await;
    assert_eq!(limit_of(&result.unwrap_err()), Limit::ConnectTimeout);
    drop(listener);
}
