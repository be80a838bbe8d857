//! Property test of the ACP connection (issue 28): any sequence of lines — JSON-RPC requests and
//! notifications of every method with ids and params of every kind, broken JSON, text — gets
//! answers or errors, never a panic, and the connection ends when the client's side closes.
//! In-process (`serve` over a Lines transport) so that a few dozen connections take seconds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Lines;
use coding_agent::acp::AcpConfig;
use coding_agent::paths::Paths;
use proptest::prelude::*;
use serde_json::{Value, json};
use test_support::env::TestEnv;

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..4).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
        "[a-z]{0,4}".prop_map(Value::from),
        Just(json!({"nested": 1})),
        Just(json!(1.5)),
    ]
}

fn params(project: String) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        Just(Value::from(project)),
        Just(Value::from("relative/dir")),
        Just(json!([{"type": "text", "text": "hi"}])),
        Just(json!([{"type": "image", "data": "AAAA", "mimeType": "image/png"}])),
    ];
    let keys = prop_oneof![
        Just("protocolVersion"),
        Just("clientCapabilities"),
        Just("cwd"),
        Just("mcpServers"),
        Just("sessionId"),
        Just("prompt"),
        Just("modeId"),
        Just("name"),
        Just("command"),
        Just("args"),
        Just("env"),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::vec((keys.clone(), inner), 0..5).prop_map(|fields| {
                Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

fn line(project: String) -> impl Strategy<Value = String> {
    let method = prop_oneof![
        Just("initialize"),
        Just("session/new"),
        Just("session/load"),
        Just("session/prompt"),
        Just("session/cancel"),
        Just("session/set_mode"),
        Just("authenticate"),
        Just("no/such/method"),
    ];
    prop_oneof![
        8 => (method, id(), params(project), any::<bool>()).prop_map(|(method, id, params, notification)| {
            let mut frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
            if !notification {
                frame["id"] = id;
            }
            frame.to_string()
        }),
        1 => ".{0,40}",
        1 => Just(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_lines_get_answers_and_the_connection_ends(
        lines in proptest::collection::vec(line("/PROJECT".into()), 1..10),
    ) {
        let env = TestEnv::new();
        let project = env.project.display().to_string();
        let lines: Vec<String> = lines.into_iter().map(|l| l.replace("/PROJECT", &project)).collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let written = Arc::new(Mutex::new(Vec::<String>::new()));
        let result = runtime.block_on(async {
            let mut config = AcpConfig::new(Paths {
                config_dir: env.config_dir.clone(),
                data_dir: env.data_dir.clone(),
                project_dir: env.project.clone(),
            });
            let script = env.root.path().join("script.json");
            std::fs::write(&script, json!({"turns": [{"text": "hi"}, {"text": "again"}]}).to_string()).unwrap();
            config.model = Some(format!("scripted/{}", script.display()));
            let incoming = futures::stream::iter(lines.clone().into_iter().map(Ok::<_, std::io::Error>));
            let sink_frames = written.clone();
            let outgoing = futures::sink::unfold((), move |(), frame: String| {
                sink_frames.lock().unwrap().push(frame);
                async { Ok::<_, std::io::Error>(()) }
            });
            tokio::time::timeout(
                Duration::from_secs(30),
                coding_agent::acp::serve(config, Lines::new(Box::pin(outgoing), Box::pin(incoming))),
            )
            .await
        });
        runtime.shutdown_timeout(Duration::from_secs(5));
        prop_assert!(result.is_ok(), "the connection ended once the lines did: {lines:?}");
        for frame in written.lock().unwrap().iter() {
            prop_assert!(serde_json::from_str::<Value>(frame).is_ok(), "not JSON: {frame}");
        }
    }
}
