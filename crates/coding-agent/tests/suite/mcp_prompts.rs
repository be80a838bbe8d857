//! MCP prompts and resources end to end (docs/mcp.md, "Prompts" and "Resources"): the real `elph`
//! binary, real MCP servers (test-support's `mcp-test-server` and the reference
//! `@modelcontextprotocol/server-everything` from npm), real hook processes, and a fake model that
//! records what reached it.

use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::mcp::{Evidence, stderr, tool_messages, wait_for_servers, write_home_mcp};
use super::run_e2e::run_elph;

/// The test server with its prompts and resources on.
fn offering_server(evidence: &Evidence) -> Value {
    let mut config = evidence.server(json!({}));
    config["servers"]["test"]["env"]["MCP_TEST_OFFERS"] = json!("1");
    config
}

/// The text of the last user message of `request`.
fn user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn tool<'a>(request: &'a Value, name: &str) -> Option<&'a Value> {
    request["tools"]
        .as_array()?
        .iter()
        .find(|tool| tool["function"]["name"] == name)
}

#[tokio::test]
async fn an_mcp_prompt_runs_as_a_command_and_its_text_reaches_the_model() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &offering_server(&evidence));
    // A userPromptSubmit hook sees the prompt's text, and the command it came from.
    let seen = env.evidence("prompt-submit.jsonl");
    let script = env.project_script(
        "seen.sh",
        &format!(
            "cat >> '{}'\necho >> '{}'\nprintf '{{}}'\n",
            seen.display(),
            seen.display()
        ),
    );
    env.trust_project();
    env.write_project_hooks(&json!({"hooks": [{
        "id": "seen", "event": "userPromptSubmit", "command": script.display().to_string()
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hello Ada"));

    // The server is still starting when the run begins: the command waits for it.
    let output = run_elph(&env, &server, &["/test:greet Ada style=formal"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(user_text(&requests[0]), "Say hello to Ada in a formal style.");
    assert_eq!(
        evidence.calls(),
        [json!({"prompt": "greet", "arguments": {"name": "Ada", "style": "formal"}})]
    );
    let hook = json_lines(&seen);
    assert!(!hook.is_empty(), "{}", stderr(&output));
    assert_eq!(hook[0]["prompt"], "Say hello to Ada in a formal style.");
    assert_eq!(hook[0]["template"], "test:greet");

    // A prompt whose message embeds a resource: its text goes with the turn.
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("summarized"));
    let output = run_elph(&env, &server, &["/test:with_readme"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        user_text(&server.requests()[0]),
        "Summarize this file:\n\n<resource uri=\"test://docs/readme\">\n\
         The readme of the test server: MCP-RESOURCE-TEXT\n</resource>"
    );
}

#[tokio::test]
async fn a_prompt_without_its_required_argument_is_refused_and_nothing_reaches_the_model() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &offering_server(&evidence));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("never"));

    let output = run_elph(&env, &server, &["/test:greet style=formal"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(
        stderr.contains(
            "elph run: /test:greet needs the argument 'name' (usage: /test:greet <name> [style]); nothing was sent"
        ),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "nothing reached the model");
    assert!(
        !evidence.calls().iter().any(|call| call.get("prompt").is_some()),
        "the server was not asked: {:?}",
        evidence.calls()
    );

    // An unknown prompt of a known server says which prompts there are.
    let output = run_elph(&env, &server, &["/test:nope"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        super::mcp::stderr(&output)
            .contains("the MCP server 'test' has no prompt 'nope' (its prompts: greet, with_readme)"),
        "{}",
        super::mcp::stderr(&output)
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_model_reads_resources_with_the_tool_through_its_hooks() {
    let env = TestEnv::new();
    env.trust_project();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &offering_server(&evidence));
    let hooked = env.evidence("hooked.jsonl");
    let script = env.project_script(
        "record.sh",
        &format!(
            "cat >> '{}'\necho >> '{}'\nprintf '{{}}'\n",
            hooked.display(),
            hooked.display()
        ),
    );
    let command = script.display().to_string();
    env.write_project_hooks(&json!({"hooks": [
        {"id": "pre", "event": "preToolUse", "command": command, "matcher": {"toolNames": ["mcp_read_resource"]}},
        {"id": "post", "event": "postToolUse", "command": command, "matcher": {"toolNames": ["mcp_read_resource"]}}
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_read_resource",
        json!({"server": "test", "uri": "test://docs/readme"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "mcp_read_resource",
        json!({"server": "test", "uri": "test://data/blob"}),
    ));
    server.enqueue(FakeReply::tool_call("mcp_test__link", json!({})));
    server.enqueue(FakeReply::text("read"));

    let output = run_elph(&env, &server, &["read the readme"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{}", stderr(&output));
    // Offered once the server answered, with its resources in the description.
    let read = tool(&requests[1], "mcp_read_resource").expect("the read tool is offered");
    let description = read["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("- server 'test': readme <test://docs/readme>: the test server's readme"),
        "{description}"
    );
    assert!(
        description.contains("- server 'test': blob <test://data/blob>"),
        "{description}"
    );
    assert_eq!(
        read["function"]["parameters"]["required"],
        json!(["server", "uri"])
    );

    let results = tool_messages(&requests[4]);
    assert_eq!(results[0], "The readme of the test server: MCP-RESOURCE-TEXT");
    assert_eq!(
        results[1], "[resource test://data/blob: application/octet-stream of 300 bytes, not shown]",
        "binary data is described, never sent"
    );
    assert!(
        results[2].contains(
            r#"[resource link test://docs/readme (readme); read it with mcp_read_resource {"server":"test","uri":"test://docs/readme"}]"#
        ),
        "{}",
        results[2]
    );
    let reads: Vec<Value> = evidence
        .calls()
        .into_iter()
        .filter(|call| call.get("read").is_some())
        .collect();
    assert_eq!(
        reads,
        [
            json!({"read": "test://docs/readme"}),
            json!({"read": "test://data/blob"})
        ]
    );

    // Both reads went through preToolUse and postToolUse.
    let payloads = json_lines(&hooked);
    let events: Vec<(&str, &str)> = payloads
        .iter()
        .map(|p| {
            (
                p["event"].as_str().unwrap_or(""),
                p["toolInput"]["uri"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("preToolUse", "test://docs/readme"),
            ("postToolUse", "test://docs/readme"),
            ("preToolUse", "test://data/blob"),
            ("postToolUse", "test://data/blob"),
        ],
        "{payloads:?}"
    );
}

#[tokio::test]
async fn resource_templates_are_listed_and_a_uri_built_from_one_is_read_within_the_limits() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &offering_server(&evidence));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_read_resource",
        json!({"server": "test", "uri": "test://sized/12"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "mcp_read_resource",
        json!({"server": "test", "uri": "test://sized/100000"}),
    ));
    server.enqueue(FakeReply::text("read"));

    let output = run_elph(&env, &server, &["read sized texts"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", stderr(&output));
    // Listed beside the resources, with the template and its description.
    let read = tool(&requests[1], "mcp_read_resource").expect("the read tool is offered");
    let description = read["function"]["description"].as_str().unwrap();
    let (resources, templates) = description
        .split_once("\nResource templates (URI templates, RFC 6570):")
        .expect("the templates are listed");
    assert!(
        resources.contains("\nResources:\n- server 'test': readme <test://docs/readme>"),
        "{description}"
    );
    assert_eq!(
        templates,
        "\n- server 'test': sized <test://sized/{bytes}>: a text of {bytes} x's"
    );
    assert!(
        description.contains("built from a resource template listed here"),
        "{description}"
    );

    // A URI built from the template is read by the same tool, and cut at the same limit.
    let results = tool_messages(&requests[3]);
    assert_eq!(results[0], "x".repeat(12));
    assert!(
        results[1].starts_with(&"x".repeat(65536))
            && results[1].ends_with("[… 34464 more bytes cut: a resource is limited to 65536 bytes]"),
        "{} bytes: {}",
        results[1].len(),
        results[1].trim_start_matches('x')
    );
    let reads: Vec<Value> = evidence
        .calls()
        .into_iter()
        .filter(|call| call.get("read").is_some())
        .collect();
    assert_eq!(
        reads,
        [
            json!({"read": "test://sized/12"}),
            json!({"read": "test://sized/100000"})
        ]
    );
}

#[tokio::test]
async fn a_pre_tool_use_hook_can_block_a_resource_read() {
    let env = TestEnv::new();
    env.trust_project();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &offering_server(&evidence));
    let script = env.project_script(
        "deny.sh",
        "cat >/dev/null\nprintf '{\"block\": true, \"reason\": \"no reading of test resources\"}'\n",
    );
    env.write_project_hooks(&json!({"hooks": [{
        "id": "deny", "event": "preToolUse", "command": script.display().to_string(),
        "matcher": {"toolNames": ["mcp_read_resource"]}
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("could not"));

    // A mention is read with the same tool, so the same hook stops it.
    let output = run_elph(&env, &server, &["explain @test:test://docs/readme"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = user_text(&server.requests()[0]);
    assert_eq!(text, "explain @test:test://docs/readme", "nothing was inlined");
    let stderr = stderr(&output);
    assert!(
        stderr.contains("@test:test://docs/readme was not read")
            && stderr.contains("no reading of test resources"),
        "{stderr}"
    );
    assert!(
        !evidence.calls().iter().any(|call| call.get("read").is_some()),
        "the server never saw the read"
    );
}

#[tokio::test]
async fn an_at_mention_of_a_resource_inlines_it() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &offering_server(&evidence));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("explained"));

    let output = run_elph(
        &env,
        &server,
        &["explain @test:test://docs/readme, and mail me@test:x about @other:thing"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        user_text(&server.requests()[0]),
        "explain @test:test://docs/readme, and mail me@test:x about @other:thing\n\n\
         <resource server=\"test\" uri=\"test://docs/readme\">\n\
         The readme of the test server: MCP-RESOURCE-TEXT\n</resource>",
        "only the mention of a server of the session is read"
    );
}

/// The reference server of the MCP project, from npm.
const EVERYTHING_VERSION: &str = "2026.8.31";

fn everything_server() -> Value {
    let dir = super::acp_ts::npm_package_dir("@modelcontextprotocol/server-everything", EVERYTHING_VERSION);
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({"servers": {"everything": {
        "command": node().display().to_string(),
        "args": [entry.display().to_string(), "stdio"],
        "startupTimeoutMs": 60000
    }}})
}

fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("node on PATH")
}

#[tokio::test]
async fn server_everything_prompts_run_as_commands_and_its_resources_are_read() {
    let env = TestEnv::new();
    let config = tokio::task::spawn_blocking(everything_server).await.unwrap();
    write_home_mcp(&env, &config);

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("sunny"));
    let output = run_elph(&env, &server, &["/everything:args-prompt Paris state=Texas"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        user_text(&server.requests()[0]),
        "What's weather in Paris, Texas?"
    );

    let output = run_elph(&env, &server, &["/everything:args-prompt state=Texas"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("/everything:args-prompt needs the argument 'city'"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.requests().len(), 1, "the refused prompt sent nothing");

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "mcp_read_resource",
        json!({"server": "everything", "uri": "demo://resource/dynamic/blob/1"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "mcp_everything__get-resource-links",
        json!({"count": 1}),
    ));
    // A URI built from one of its resource templates.
    server.enqueue(FakeReply::tool_call(
        "mcp_read_resource",
        json!({"server": "everything", "uri": "demo://resource/dynamic/text/7"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(
        &env,
        &server,
        &["what is in @everything:demo://resource/static/document/features.md"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", stderr(&output));
    let prompt = user_text(&requests[0]);
    assert!(
        prompt.contains(
            "<resource server=\"everything\" uri=\"demo://resource/static/document/features.md\">\n#"
        ),
        "the mention is inlined: {prompt}"
    );
    let description = tool(&requests[0], "mcp_read_resource").expect("offered")["function"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        description.contains("<demo://resource/static/document/architecture.md>"),
        "{description}"
    );
    assert!(
        description.contains(
            "- server 'everything': Dynamic Text Resource <demo://resource/dynamic/text/{resourceId}>: \
             Plaintext dynamic resource fabricated from the {resourceId} variable"
        ),
        "{description}"
    );
    let results = tool_messages(&requests[3]);
    assert!(
        results[0].starts_with("[resource demo://resource/dynamic/blob/1: ")
            && results[0].ends_with("bytes, not shown]"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("read it with mcp_read_resource"),
        "{}",
        results[1]
    );
    assert!(
        results[2].starts_with("Resource 7: This is a plaintext resource created at"),
        "{}",
        results[2]
    );
}

/// The commands an `available_commands_update` advertises, by name, with their input hints.
fn advertised(update: &Value) -> Vec<(String, Value)> {
    update["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|command| {
            (
                command["name"].as_str().unwrap().to_string(),
                command["input"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_gets_the_prompts_as_commands_when_they_arrive_and_runs_them() {
    use super::acp::Setup;
    use super::acp_ts::Scenario;

    let setup = Setup::new().await;
    let evidence = Evidence::new(&setup.env);
    let mut server = offering_server(&evidence);
    // The listing after `add_prompt` answers late: the turn that added the prompt still ends
    // after the editor has heard of it (the call's answer waits for the listing).
    server["servers"]["test"]["env"]["MCP_TEST_SLOW_RELIST_MS"] = json!("1500");
    write_home_mcp(&setup.env, &server);
    setup.server.enqueue_all([
        FakeReply::text("hello Ada"),
        FakeReply::tool_call("mcp_test__add_prompt", json!({"name": "fresh"})),
        FakeReply::text("added"),
        FakeReply::text("you are welcome"),
        FakeReply::text("fresh done"),
    ]);
    let prompt =
        |text: &str| json!({"sessionId": "${s.sessionId}", "prompt": [{"type": "text", "text": text}]});
    let run = Scenario::new(&setup.env, &["acp", "--model", "fake/gpt-test"])
        .step(
            "session/new",
            json!({"cwd": setup.env.project, "mcpServers": []}),
            Some("s"),
        )
        .step("session/prompt", prompt("/test:greet Ada"), None)
        .step("session/prompt", prompt("add a prompt"), None)
        .step("session/prompt", prompt("thanks"), None)
        .step("session/prompt", prompt("/test:fresh"), None)
        .run()
        .await;
    for index in 1..=4 {
        assert_eq!(run.ok(index + 1)["stopReason"], "end_turn", "prompt {index}");
    }
    let requests = setup.server.requests();
    assert_eq!(user_text(&requests[0]), "Say hello to Ada in a plain style.");
    assert_eq!(user_text(&requests[4]), "The added prompt fresh.");

    // The server came up after the session did: its prompts were advertised when they arrived,
    // with their arguments as the input hint; the one it added later, after it said so.
    let updates = run.updates("available_commands_update");
    let greet = updates
        .iter()
        .map(|update| advertised(update))
        .find(|commands| commands.iter().any(|(name, _)| name == "test:greet"))
        .unwrap_or_else(|| panic!("test:greet advertised: {updates:#?}"));
    let (_, input) = greet.iter().find(|(name, _)| name == "test:greet").unwrap();
    assert_eq!(input["hint"], "<name> [style]");
    assert!(greet.iter().any(|(name, _)| name == "test:with_readme"));
    // The prompt the server added is advertised once it says its prompts changed: before the
    // editor ever runs it (request 5 is that prompt).
    let fresh = run
        .wire
        .iter()
        .position(|line| {
            line.dir == "in"
                && line.message["params"]["update"]["sessionUpdate"] == "available_commands_update"
                && advertised(&line.message["params"]["update"])
                    .iter()
                    .any(|(name, _)| name == "test:fresh")
        })
        .unwrap_or_else(|| panic!("test:fresh advertised: {updates:#?}"));
    let ran = run
        .wire
        .iter()
        .position(|line| line.dir == "out" && line.message["id"] == 5)
        .expect("the editor sent /test:fresh");
    assert!(fresh < ran, "advertised at {fresh}, run at {ran}");
}
