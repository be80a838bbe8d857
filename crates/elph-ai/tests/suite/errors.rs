//! Errors people read: authentication, server messages, and keys that never leak.

use elph_ai::{AnthropicProvider, OpenAiProvider, ProviderError};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::{config, run, simple_request};

const KEY: &str = "sk-live-0123456789abcdef-SECRET";

#[tokio::test]
async fn openai_401_says_authentication_failed_without_the_key() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::error(
        401,
        format!("Incorrect API key provided: {KEY}. Find your key at ..."),
    ));
    let provider = OpenAiProvider::new(config("openai", server.base_url(), KEY)).unwrap();
    let (turn, _) = run(&provider, &simple_request()).await;
    let error = turn.unwrap_err();
    assert!(
        matches!(error, ProviderError::Authentication { status: 401, .. }),
        "{error:?}"
    );
    let display = error.to_string();
    let debug = format!("{error:?}");
    assert!(display.contains("authentication failed"), "{display}");
    assert!(display.contains("OPENAI_API_KEY"), "{display}");
    assert!(
        display.contains("Incorrect API key provided: [REDACTED]"),
        "{display}"
    );
    assert!(
        !display.contains(KEY) && !debug.contains(KEY),
        "{display} / {debug}"
    );
    assert!(!format!("{provider:?}").contains(KEY));
    assert_eq!(
        server.requests().len(),
        1,
        "authentication failures are not retried"
    );
    assert_eq!(
        server.recorded()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn anthropic_errors_redact_an_echoed_key() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    server.enqueue(FakeReply::error(403, format!("key {KEY} may not use this model")));
    server.enqueue(FakeReply::error(400, format!("bad request from {KEY}")));
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), KEY)).unwrap();
    for _ in 0..2 {
        let (turn, _) = run(&provider, &simple_request()).await;
        let error = turn.unwrap_err();
        assert!(!error.to_string().contains(KEY), "{error}");
        assert!(!format!("{error:?}").contains(KEY), "{error:?}");
        assert!(error.to_string().contains("[REDACTED]"), "{error}");
    }
    assert!(!format!("{provider:?}").contains(KEY));
}

#[test]
fn missing_key_message_says_what_to_do() {
    let error = ProviderError::MissingApiKey {
        var: "OPENAI_API_KEY".into(),
    };
    assert_eq!(
        error.to_string(),
        "OPENAI_API_KEY is not set; export it, or use --model scripted/PATH to run offline"
    );
}

/// A `Write` that appends to a shared buffer, for capturing log output.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn logs_never_show_the_key() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::error(500, format!("upstream rejected {KEY}")));
    server.enqueue(FakeReply::error(401, format!("bad key {KEY}")));
    let provider = OpenAiProvider::new(config("openai", server.base_url(), KEY)).unwrap();
    let (turn, _) = run(&provider, &simple_request()).await;
    assert!(matches!(turn, Err(ProviderError::Authentication { .. })));

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("retrying"), "the retry was logged: {logs}");
    assert!(logs.contains("[REDACTED]"), "{logs}");
    assert!(!logs.contains(KEY), "{logs}");
}
