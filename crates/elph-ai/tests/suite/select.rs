//! Building the provider a model selection names: the built-in table, catalogs, errors. (Which
//! selection wins is coding-agent's precedence rule, tested there.)

use std::collections::HashMap;
use std::path::Path;

use elph_ai::{ModelOrigin, ModelSelection, Provider, ProviderError, build_provider};
use serde_json::json;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::{run, simple_request};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// Builds the provider `spec` names, as `origin` gave it.
fn select(
    spec: &str,
    origin: ModelOrigin,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let selection = ModelSelection::parse(spec, &origin)?;
    build_provider(&selection, &origin, config_dir, env)
}

fn write_provider(config_dir: &Path, file: &str, def: serde_json::Value) {
    let dir = config_dir.join("providers");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), def.to_string()).unwrap();
}

#[test]
fn missing_keys_and_bad_specs_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let error = select("openai/gpt-4.1", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap();
    assert_eq!(
        error.to_string(),
        "OPENAI_API_KEY is not set; export it, or use --model scripted/PATH to run offline"
    );
    let error = select(
        "anthropic/claude-x",
        ModelOrigin::Settings(dir.path().join("settings.json")),
        dir.path(),
        &env_of(&[("ANTHROPIC_API_KEY", "")]),
    )
    .err()
    .unwrap();
    assert!(
        error.to_string().starts_with("ANTHROPIC_API_KEY is not set"),
        "{error}"
    );
    let error = select("gpt-4.1", ModelOrigin::Env, dir.path(), &no_env)
        .err()
        .unwrap();
    assert!(
        error
            .to_string()
            .contains("invalid model \"gpt-4.1\" (from ELPH_MODEL)"),
        "{error}"
    );
    let error = select("mystery/model", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap();
    let text = error.to_string();
    assert!(
        text.contains("unknown provider \"mystery\" (from --model)"),
        "{text}"
    );
    assert!(
        text.contains(&dir.path().join("providers").display().to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn builtin_providers_read_keys_and_base_urls_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let openai = FakeModelServer::start(Wire::OpenAi).await;
    let anthropic = FakeModelServer::start(Wire::Anthropic).await;
    openai.enqueue(FakeReply::text("from openai"));
    anthropic.enqueue(FakeReply::text("from anthropic"));
    let env = env_of(&[
        ("OPENAI_API_KEY", "sk-o"),
        ("OPENAI_BASE_URL", &openai.base_url()),
        ("ANTHROPIC_API_KEY", "sk-a"),
        ("ANTHROPIC_BASE_URL", &anthropic.base_url()),
    ]);

    let provider = select("openai/gpt-4.1", ModelOrigin::Flag, dir.path(), &env).unwrap();
    assert_eq!(
        (provider.provider_name(), provider.model_id()),
        ("openai", "gpt-4.1")
    );
    assert_eq!(provider.context_window(), 1_047_576);
    assert_eq!(
        run(provider.as_ref(), &simple_request()).await.0.unwrap().text,
        "from openai"
    );
    assert_eq!(openai.recorded()[0].header("authorization"), Some("Bearer sk-o"));
    assert_eq!(openai.requests()[0]["model"], json!("gpt-4.1"));

    let provider = select("anthropic/claude-sonnet-4-5", ModelOrigin::Env, dir.path(), &env).unwrap();
    assert_eq!(provider.provider_name(), "anthropic");
    assert_eq!(provider.context_window(), 200_000);
    assert_eq!(
        run(provider.as_ref(), &simple_request()).await.0.unwrap().text,
        "from anthropic"
    );
    assert_eq!(anthropic.recorded()[0].header("x-api-key"), Some("sk-a"));
}

#[tokio::test]
async fn custom_providers_from_the_catalog_reuse_the_adapters() {
    let dir = tempfile::tempdir().unwrap();
    let openai = FakeModelServer::start(Wire::OpenAi).await;
    let anthropic = FakeModelServer::start(Wire::Anthropic).await;
    write_provider(
        dir.path(),
        "local.json",
        json!({"name": "local", "api": "openai-chat", "baseUrl": openai.base_url(), "apiKeyEnv": "LOCAL_KEY",
               "models": [{"id": "qwen3/coder", "contextWindow": 32768}]}),
    );
    write_provider(
        dir.path(),
        "proxy.json",
        json!({"name": "proxy", "api": "anthropic-messages", "baseUrl": anthropic.base_url()}),
    );
    std::fs::write(dir.path().join("providers/notes.txt"), "not a provider").unwrap();
    openai.enqueue(FakeReply::text("local answer"));
    anthropic.enqueue(FakeReply::text("proxy answer"));
    let env = env_of(&[("LOCAL_KEY", "local-secret")]);

    let provider = select("local/qwen3/coder", ModelOrigin::Flag, dir.path(), &env).unwrap();
    assert_eq!(
        (provider.provider_name(), provider.model_id()),
        ("local", "qwen3/coder")
    );
    assert_eq!(provider.context_window(), 32768);
    assert_eq!(
        run(provider.as_ref(), &simple_request()).await.0.unwrap().text,
        "local answer"
    );
    assert_eq!(
        openai.recorded()[0].header("authorization"),
        Some("Bearer local-secret")
    );

    let provider = select("proxy/claude-haiku-4-5", ModelOrigin::Flag, dir.path(), &env).unwrap();
    assert_eq!(provider.context_window(), 200_000);
    assert_eq!(
        run(provider.as_ref(), &simple_request()).await.0.unwrap().text,
        "proxy answer"
    );
    assert_eq!(
        anthropic.recorded()[0].header("x-api-key"),
        None,
        "no apiKeyEnv, no key"
    );

    let error = select("local/qwen3", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap();
    assert_eq!(
        error.to_string(),
        "LOCAL_KEY is not set; export it, or use --model scripted/PATH to run offline"
    );
    let error = select("other/x", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap();
    assert!(error.to_string().ends_with("(found: local, proxy)"), "{error}");
}

#[test]
fn bad_provider_files_name_the_file_and_the_problem() {
    let cases = [
        (json!({"name": "x", "api": "grpc", "baseUrl": "http://h"}), "grpc"),
        (
            json!({"name": "x", "api": "openai-chat", "baseUrl": "http://h", "apiKey": "k"}),
            "apiKey",
        ),
        (
            json!({"name": "openai", "api": "openai-chat", "baseUrl": "http://h"}),
            "built-in",
        ),
        (
            json!({"name": "x", "api": "openai-chat", "baseUrl": "ftp://h"}),
            "http://",
        ),
        (json!({"name": "x", "api": "openai-chat"}), "baseUrl"),
    ];
    for (def, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        // Named after the provider asked for: a file whose "name" cannot be read (or is refused)
        // is found by its name.
        write_provider(dir.path(), "x.json", def);
        let error = select("x/m", ModelOrigin::Flag, dir.path(), &no_env)
            .err()
            .unwrap();
        let text = error.to_string();
        let path = dir.path().join("providers/x.json");
        assert!(
            text.starts_with(&format!("provider file {}: ", path.display())),
            "{text}"
        );
        assert!(text.contains(expected), "{text}");
    }

    let dir = tempfile::tempdir().unwrap();
    let def = json!({"name": "twin", "api": "openai-chat", "baseUrl": "http://h"});
    write_provider(dir.path(), "a.json", def.clone());
    write_provider(dir.path(), "b.json", def);
    let catalog = elph_ai::Catalog::load(dir.path());
    assert_eq!(catalog.providers().len(), 1, "the first file is used");
    let problem = &catalog.problems()[0];
    assert!(problem.message.contains("already defined in"), "{problem:?}");
    assert!(problem.path.ends_with("b.json"), "{problem:?}");
}

#[tokio::test]
async fn a_broken_provider_file_is_skipped_and_named_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("still works"));
    write_provider(
        dir.path(),
        "good.json",
        json!({"name": "good", "api": "openai-chat", "baseUrl": server.base_url()}),
    );
    // A field this version does not know, in the file of another provider.
    write_provider(
        dir.path(),
        "newer.json",
        json!({"name": "newer", "api": "openai-chat", "baseUrl": "http://h", "apiKeyEnv": "NEWER_KEY",
               "headers": {"X-Gateway": "${GATEWAY_TOKEN}"}, "reasoning": {"effort": "high"}}),
    );
    let broken = dir.path().join("providers/broken.json");
    std::fs::write(&broken, "{\"name\": \"broken\", ").unwrap();

    let provider = select("good/m", ModelOrigin::Flag, dir.path(), &no_env).unwrap();
    assert_eq!(
        run(provider.as_ref(), &simple_request()).await.0.unwrap().text,
        "still works"
    );

    let error = select("newer/m", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("newer.json"), "{error}");
    assert!(error.contains("unknown field `reasoning`"), "{error}");
    let error = select("broken/m", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with(&format!("provider file {}: ", broken.display())),
        "{error}"
    );
    let error = select("other/m", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("(found: good; skipped because of problems: "),
        "{error}"
    );
    assert!(
        error.contains("broken.json") && error.contains("newer.json"),
        "{error}"
    );

    let catalog = elph_ai::Catalog::load(dir.path());
    assert_eq!(catalog.problems().len(), 2);
    assert_eq!(
        catalog.secret_vars(),
        ["GATEWAY_TOKEN", "NEWER_KEY"],
        "a skipped file's key variables stay secret"
    );
}

#[tokio::test]
async fn headers_are_sent_with_variables_filled_in_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("routed"));
    write_provider(
        dir.path(),
        "router.json",
        json!({"name": "router", "api": "openai-chat", "baseUrl": server.base_url(), "apiKeyEnv": "ROUTER_KEY",
               "headers": {"HTTP-Referer": "https://elph.example", "X-Title": "Elph",
                           "X-Gateway-Key": "gw-${GATEWAY_TOKEN}"}}),
    );
    let env = env_of(&[("ROUTER_KEY", "sk-router"), ("GATEWAY_TOKEN", "tok-9731")]);
    let provider = select("router/m", ModelOrigin::Flag, dir.path(), &env).unwrap();
    run(provider.as_ref(), &simple_request()).await.0.unwrap();
    let request = &server.recorded()[0];
    assert_eq!(request.header("http-referer"), Some("https://elph.example"));
    assert_eq!(request.header("x-title"), Some("Elph"));
    assert_eq!(request.header("x-gateway-key"), Some("gw-tok-9731"));
    assert_eq!(request.header("authorization"), Some("Bearer sk-router"));

    let env = env_of(&[("ROUTER_KEY", "sk-router")]);
    let error = select("router/m", ModelOrigin::Flag, dir.path(), &env)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("router.json"), "{error}");
    assert!(
        error.contains("\"X-Gateway-Key\" uses ${GATEWAY_TOKEN}, which is not set"),
        "{error}"
    );

    for (headers, expected) in [
        (json!({"bad name": "x"}), "not a valid header name"),
        (json!({"X-A": "line\nbreak"}), "not allowed in a header"),
        (json!({"X-A": "${unclosed"}), "without its closing"),
        (json!({"X-A": 7}), "invalid type"),
    ] {
        write_provider(
            dir.path(),
            "router.json",
            json!({"name": "router", "api": "openai-chat", "baseUrl": server.base_url(), "headers": headers}),
        );
        let error = select("router/m", ModelOrigin::Flag, dir.path(), &no_env)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

#[tokio::test]
async fn a_provider_file_sets_its_stream_limits() {
    use std::time::Duration;
    use test_support::raw_http::{RawHttpServer, Step, sse_head};
    let dir = tempfile::tempdir().unwrap();
    let server = RawHttpServer::start(vec![sse_head(), Step::Wait(Duration::from_secs(3600))]).await;
    write_provider(
        dir.path(),
        "slow.json",
        json!({"name": "slow", "api": "openai-chat", "baseUrl": format!("{}/v1", server.url()),
               "limits": {"idleTimeout": 0.3, "responseTimeout": 5}}),
    );
    let provider = select("slow/m", ModelOrigin::Flag, dir.path(), &no_env).unwrap();
    let error = run(provider.as_ref(), &simple_request()).await.0.unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("slow: the server sent no complete line for 0.3 s"),
        "{text}"
    );
    assert!(text.contains("\"idleTimeout\""), "{text}");
    assert!(
        text.contains(&dir.path().join("providers/slow.json").display().to_string()),
        "{text}"
    );

    write_provider(
        dir.path(),
        "slow.json",
        json!({"name": "slow", "api": "openai-chat", "baseUrl": "http://h", "limits": {"idleTimeout": 0}}),
    );
    let error = select("slow/m", ModelOrigin::Flag, dir.path(), &no_env)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("\"limits\".\"idleTimeout\" must be more than 0"),
        "{error}"
    );
}
