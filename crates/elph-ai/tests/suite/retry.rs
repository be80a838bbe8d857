//! Retries, dropped connections and cancellation, over real connections.

use std::time::{Duration, Instant};

use elph_ai::{AnthropicProvider, OpenAiProvider, Provider, ProviderError, RetryPolicy, StreamEvent};
use test_support::fake_model::{FakeModelServer, FakeReply, Gate, Wire};

use super::{DEADLINE, config, run, simple_request, streamed_text};

fn openai(server: &FakeModelServer) -> OpenAiProvider {
    OpenAiProvider::new(config("openai", server.base_url(), "sk-test")).unwrap()
}

#[tokio::test]
async fn a_dropped_connection_is_retried_and_succeeds() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::drop_connection());
    server.enqueue(FakeReply::text("second time lucky"));
    let (turn, events) = run(&openai(&server), &simple_request()).await;
    assert_eq!(turn.unwrap().text, "second time lucky");
    assert_eq!(
        streamed_text(&events).0,
        "second time lucky",
        "nothing of the failed attempt was emitted"
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        server.requests()[0],
        server.requests()[1],
        "the same request was sent again"
    );
}

#[tokio::test]
async fn a_stream_cut_before_any_event_is_retried() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    // message_start and ping carry no event for the caller; the cut comes before any text.
    server.enqueue(FakeReply::text("lost words").drop_after(2));
    server.enqueue(FakeReply::text("kept words"));
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), "k")).unwrap();
    let (turn, events) = run(&provider, &simple_request()).await;
    assert_eq!(turn.unwrap().text, "kept words");
    assert_eq!(streamed_text(&events).0, "kept words");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_after_events_fails_without_retry() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("one two three four").drop_after(3));
    server.enqueue(FakeReply::text("never asked for"));
    let (turn, events) = run(&openai(&server), &simple_request()).await;
    let error = turn.unwrap_err();
    assert!(matches!(error, ProviderError::Connection { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("dropped before the reply was complete"),
        "{error}"
    );
    assert_eq!(streamed_text(&events).0, "one two ");
    assert_eq!(
        server.requests().len(),
        1,
        "no retry once text reached the caller"
    );
}

#[tokio::test]
async fn status_429_waits_for_retry_after_then_succeeds() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::status(429, Some(1)));
    server.enqueue(FakeReply::text("after the pause"));
    let started = Instant::now();
    let (turn, _) = run(&openai(&server), &simple_request()).await;
    assert_eq!(turn.unwrap().text, "after the pause");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(950),
        "Retry-After: 1 was honoured (waited {waited:?})"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried_a_bounded_number_of_times() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    server.enqueue_all((0..5).map(|_| FakeReply::error(529, "Overloaded")));
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), "k")).unwrap();
    let (turn, events) = run(&provider, &simple_request()).await;
    let error = turn.unwrap_err();
    assert_eq!(error.status(), Some(529));
    assert_eq!(error.to_string(), "anthropic: HTTP 529: Overloaded");
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), 4, "four attempts in all");
    assert_eq!(server.pending(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::error(400, "messages: field required"));
    let (turn, _) = run(&openai(&server), &simple_request()).await;
    assert_eq!(
        turn.unwrap_err().to_string(),
        "openai: HTTP 400: messages: field required"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = config("openai", format!("http://127.0.0.1:{port}/v1"), "sk-test");
    let provider = OpenAiProvider::new(config.with_retry(RetryPolicy::none())).unwrap();
    let (turn, _) = run(&provider, &simple_request()).await;
    let error = turn.unwrap_err();
    assert!(matches!(error, ProviderError::Connection { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.starts_with("openai: could not reach the server"), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
}

#[tokio::test]
async fn dropping_the_call_mid_stream_closes_the_connection() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("partial answer").hang());
    let provider = openai(&server);
    let request = simple_request();
    let seen = std::sync::Mutex::new(Vec::new());
    {
        let mut on_event = |event: StreamEvent| seen.lock().unwrap().push(event);
        let mut call = std::pin::pin!(provider.stream(&request, &mut on_event));
        // Driven until the whole text has arrived (however slow the machine), then dropped.
        let shown = tokio::time::timeout(DEADLINE, async {
            while streamed_text(&seen.lock().unwrap()).0 != "partial answer" {
                tokio::select! {
                    outcome = &mut call => panic!("the held reply finished by itself: {outcome:?}"),
                    () = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
        })
        .await;
        assert!(shown.is_ok(), "the text arrived: {:?}", seen.lock().unwrap());
    }
    assert_eq!(streamed_text(&seen.lock().unwrap()).0, "partial answer");
    tokio::time::timeout(DEADLINE, async {
        while server.disconnects() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the server saw the client go away");
}

#[tokio::test]
async fn a_held_reply_finishes_when_released() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    let gate = Gate::new();
    server.enqueue(
        FakeReply::text("slow and steady")
            .chunk_delay(Duration::from_millis(5))
            .hold(&gate),
    );
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), "k")).unwrap();
    let request = simple_request();
    let call = tokio::spawn(async move {
        let mut count = 0;
        let turn = provider.stream(&request, &mut |_| count += 1).await;
        (turn, count)
    });
    server.wait_for_requests(1, DEADLINE).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!call.is_finished());
    gate.open();
    let (turn, count) = tokio::time::timeout(DEADLINE, call).await.unwrap().unwrap();
    assert_eq!(turn.unwrap().text, "slow and steady");
    assert_eq!(count, 4, "three text deltas and the usage");
    assert_eq!(server.completed(), 1);
}
