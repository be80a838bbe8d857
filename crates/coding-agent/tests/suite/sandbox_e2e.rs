//! The sandbox, the shell environment policy and sandboxed hooks, end to end: the real `elph`
//! binary, the real kernel (Landlock, seccomp, mount namespaces), a local fake model that asks for
//! the commands an attacker would try, and the file system and a TCP listener as witnesses.
//!
//! Tests that need Landlock say why they skip on a kernel without it; with
//! `ELPH_REQUIRE_LANDLOCK=1` (set by `.ci/run`) they fail instead, so a CI machine without
//! Landlock cannot pass them silently.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph, run_elph_with};

/// Whether the kernel has Landlock; without it, says why the test skips, or fails it when
/// `ELPH_REQUIRE_LANDLOCK=1`.
pub(super) fn landlock(test: &str) -> bool {
    if elph_process::sandbox::landlock_support().available() {
        return true;
    }
    let why = format!(
        "{test}: skipped: this kernel has no Landlock (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK and \
         landlock in the lsm= boot list), so the sandbox cannot be tested here"
    );
    if std::env::var_os("ELPH_REQUIRE_LANDLOCK").is_some_and(|v| v == "1") {
        panic!("{why}; ELPH_REQUIRE_LANDLOCK=1 forbids skipping");
    }
    eprintln!("{why}");
    false
}

/// Runs the real binary in `env` with `args` (and extra variables), under a deadline.
fn cli(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = env.command(&elph());
    command.envs(vars.iter().copied()).args(args);
    assert_cmd::Command::from_std(command)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("elph runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The text of the tool result the model got back (the last message of the second request).
fn tool_result_text(server: &FakeModelServer) -> String {
    let requests = server.requests();
    assert!(requests.len() >= 2, "the model saw the tool result: {requests:?}");
    requests[1]["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .map(|message| message["content"].to_string())
        .unwrap_or_default()
}

/// What one attack script left behind.
struct Attempt {
    outside: PathBuf,
    project_hooks: PathBuf,
    trust: PathBuf,
    inside: PathBuf,
    connected: bool,
    result: String,
}

/// Has the model run, through `shell_exec` under `mode_args`, a script that writes outside the
/// project, into `.elph/`, into CONFIG_DIR/trust.json, inside the project, connects to a TCP port on
/// 127.0.0.1 and sends a UDP datagram there.
async fn attack(env: &TestEnv, mode_args: &[&str]) -> Attempt {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = env.evidence("outside.txt");
    let trust = env.config_dir.join("trust.json");
    std::fs::write(&trust, r#"{"directories":{}}"#).unwrap();
    let script = format!(
        "echo pwned > '{outside}'; echo \"outside=$?\"\n\
         mkdir -p .elph && echo '{{\"hooks\": []}}' > .elph/hooks.json; echo \"elph=$?\"\n\
         echo '{{\"directories\":{{\"/\":true}}}}' > '{trust}'; echo \"trust=$?\"\n\
         bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'; echo \"connect=$?\"\n\
         bash -c 'echo datagram > /dev/udp/127.0.0.1/{port}'; echo \"udp=$?\"\n\
         echo fine > inside.txt; echo \"inside=$?\"",
        outside = outside.display(),
        trust = trust.display(),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": script})));
    server.enqueue(FakeReply::text("done"));
    let mut args = mode_args.to_vec();
    args.push("try it");
    let output = run_elph(env, &server, &args).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let connected = listener.accept().is_ok();
    Attempt {
        outside,
        project_hooks: env.project.join(".elph/hooks.json"),
        trust,
        inside: env.project.join("inside.txt"),
        connected,
        result: tool_result_text(&server),
    }
}

#[tokio::test]
async fn workspace_write_keeps_a_shell_command_in_the_project_and_off_the_network() {
    if !landlock("workspace_write_keeps_a_shell_command_in_the_project_and_off_the_network") {
        return;
    }
    let env = TestEnv::new();
    // The default of `elph run` is workspace-write: no flag.
    let attempt = attack(&env, &[]).await;
    assert!(
        !attempt.outside.exists(),
        "wrote outside the project: {}",
        attempt.result
    );
    assert!(
        !attempt.project_hooks.exists(),
        "wrote the project's .elph/hooks.json: {}",
        attempt.result
    );
    assert_eq!(
        std::fs::read_to_string(&attempt.trust).unwrap(),
        r#"{"directories":{}}"#,
        "trust.json is unchanged: {}",
        attempt.result
    );
    assert!(!attempt.connected, "reached 127.0.0.1: {}", attempt.result);
    assert!(
        attempt.inside.exists(),
        "the project itself is writable: {}",
        attempt.result
    );
    for failed in ["outside=", "elph=", "trust=", "connect=", "udp="] {
        assert!(
            !attempt.result.contains(&format!("{failed}0")),
            "{failed} failed: {}",
            attempt.result
        );
    }
    assert!(attempt.result.contains("inside=0"), "{}", attempt.result);

    // The same explicitly, and read-only: not even the project.
    let env = TestEnv::new();
    let attempt = attack(&env, &["--sandbox", "read-only"]).await;
    assert!(
        !attempt.outside.exists() && !attempt.inside.exists(),
        "{}",
        attempt.result
    );
    assert!(!attempt.connected, "{}", attempt.result);
}

#[tokio::test]
async fn full_access_lets_the_same_command_do_all_of_it() {
    if !landlock("full_access_lets_the_same_command_do_all_of_it") {
        return;
    }
    let env = TestEnv::new();
    let attempt = attack(&env, &["--sandbox", "full-access"]).await;
    assert!(attempt.outside.exists(), "{}", attempt.result);
    assert!(attempt.project_hooks.exists(), "{}", attempt.result);
    assert!(
        std::fs::read_to_string(&attempt.trust)
            .unwrap()
            .contains(r#""/":true"#),
        "{}",
        attempt.result
    );
    assert!(attempt.connected, "{}", attempt.result);
    assert!(attempt.inside.exists(), "{}", attempt.result);
    assert!(attempt.result.contains("udp=0"), "{}", attempt.result);
}

#[tokio::test]
async fn the_network_flag_and_settings_turn_the_network_on_and_writable_roots_add_a_folder() {
    if !landlock("the_network_flag_and_settings_turn_the_network_on_and_writable_roots_add_a_folder") {
        return;
    }
    let env = TestEnv::new();
    let extra = env.root.path().join("scratch");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(
        env.config_dir.join("settings.json"),
        json!({"sandbox": {"writableRoots": [extra.display().to_string()]}}).to_string(),
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!(
            "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && touch '{}/made' && touch \"$TMPDIR/tmp-ok\" && echo \"tmp=$TMPDIR\"",
            extra.display()
        )}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["--sandbox-network", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = tool_result_text(&server);
    assert!(listener.accept().is_ok(), "--sandbox-network connects: {result}");
    assert!(extra.join("made").exists(), "writableRoots is writable: {result}");
    assert!(
        result.contains("tmp=") && result.contains("exit code 0"),
        "{result}"
    );
    assert!(
        !result.contains("tmp=/tmp\\n"),
        "TMPDIR is the session's own: {result}"
    );
}

#[tokio::test]
async fn env_run_by_the_model_shows_no_secret_and_the_provider_never_receives_one() {
    let env = TestEnv::new();
    // A custom provider whose key variable has an innocent name: excluded because it is a key.
    std::fs::create_dir_all(env.config_dir.join("providers")).unwrap();
    std::fs::write(
        env.config_dir.join("providers/local.json"),
        json!({"name": "local", "api": "openai-chat", "baseUrl": "http://127.0.0.1:9/v1",
               "apiKeyEnv": "LOCAL_LLM_AUTH", "models": [{"id": "m"}]})
        .to_string(),
    )
    .unwrap();
    // One variable per default exclude, in mixed case where it matters.
    let secrets = [
        ("ANTHROPIC_API_KEY", "secret-anthropic-value"),
        ("MY_SERVICE_KEY", "secret-key-marker"),
        ("aws_secret_access_key", "secret-secret-marker"),
        ("GITHUB_TOKEN", "secret-token-marker"),
        ("DB_Password", "secret-password-marker"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "secret-credential-marker"),
        ("LOCAL_LLM_AUTH", "secret-custom-provider-marker"),
    ];
    let mut vars: Vec<(&str, &str)> = secrets.to_vec();
    vars.push(("PLAIN_SETTING", "visible-plain-value"));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": "env"})));
    server.enqueue(FakeReply::text("done"));
    // The sandbox is not what this test is about: full access, so it runs on any kernel.
    let output = run_elph_with(&env, &server, &vars, &["--sandbox", "full-access", "show env"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = tool_result_text(&server);
    assert!(result.contains("PLAIN_SETTING=visible-plain-value"), "{result}");
    let everything_sent: String = server
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    // run_elph sets OPENAI_API_KEY=sk-test-secret-key for the provider itself.
    for (name, value) in secrets.iter().chain(&[("OPENAI_API_KEY", "sk-test-secret-key")]) {
        assert!(!result.contains(name), "{name} reached the command: {result}");
        assert!(
            !everything_sent.contains(value),
            "the value of {name} reached the provider"
        );
    }
    // Nor the session store.
    for entry in walk(&env.data_dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for (name, value) in &secrets {
            assert!(!text.contains(value), "{name} is in {}", entry.display());
        }
    }
}

#[tokio::test]
async fn shell_environment_settings_choose_inherit_exclude_include_and_set() {
    let env = TestEnv::new();
    std::fs::write(
        env.config_dir.join("settings.json"),
        json!({"shellEnvironment": {"inherit": "core", "include": ["NPM_TOKEN"], "set": {"CI": "1"}}})
            .to_string(),
    )
    .unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "env | sort"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let vars = [("NPM_TOKEN", "given-on-purpose"), ("EDITOR_CHOICE", "vi")];
    let output = run_elph_with(&env, &server, &vars, &["--sandbox", "full-access", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = tool_result_text(&server);
    assert!(
        result.contains("NPM_TOKEN=given-on-purpose"),
        "include wins: {result}"
    );
    assert!(result.contains("CI=1"), "set: {result}");
    assert!(result.contains("HOME="), "core: {result}");
    assert!(!result.contains("EDITOR_CHOICE"), "not core: {result}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// A home hook that tries to write `marker` and exits 3 if it cannot.
fn marker_hook(env: &TestEnv, id: &str, marker: &Path, sandbox: Option<&str>) -> Value {
    let script = write_script(
        &env.config_dir.join("hooks"),
        &format!("{id}.sh"),
        &format!("cat > /dev/null\necho ran > '{}' || exit 3\n", marker.display()),
    );
    let mut hook = json!({"id": id, "event": "userPromptSubmit", "command": script.display().to_string()});
    if let Some(sandbox) = sandbox {
        hook["sandbox"] = json!(sandbox);
    }
    hook
}

#[tokio::test]
async fn a_read_only_hook_cannot_write_its_marker_while_an_unsandboxed_one_can() {
    if !landlock("a_read_only_hook_cannot_write_its_marker_while_an_unsandboxed_one_can") {
        return;
    }
    let env = TestEnv::new();
    let free = env.evidence("free-marker");
    let confined = env.project.join("confined-marker");
    let in_project = env.project.join("ww-marker");
    env.write_home_hooks(&json!({"hooks": [
        marker_hook(&env, "free", &free, None),
        marker_hook(&env, "confined", &confined, Some("read-only")),
        marker_hook(&env, "workspace", &in_project, Some("workspace-write")),
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hello"));
    // The session itself has full access: a hook's sandbox is its own.
    let output = run_elph(&env, &server, &["--sandbox", "full-access", "hi"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        free.exists(),
        "the unsandboxed hook wrote its marker: {}",
        stderr(&output)
    );
    assert!(
        !confined.exists(),
        "the read-only hook could not write, even in the project"
    );
    assert!(
        in_project.exists(),
        "a workspace-write hook writes in the project"
    );
    assert!(
        stderr(&output).contains("confined") && stderr(&output).contains("exited with code 3"),
        "the read-only hook ran and failed to write: {}",
        stderr(&output)
    );

    // `hooks list` and `hooks test` show it.
    let list = stdout(&cli(&env, &["hooks", "list"], &[]));
    assert!(list.contains("SANDBOX") && list.contains("read-only"), "{list}");
    let test = cli(&env, &["hooks", "test", "userPromptSubmit"], &[]);
    assert!(
        stdout(&test).contains("ran in the read-only sandbox"),
        "{}",
        stdout(&test)
    );
}

#[tokio::test]
async fn project_hooks_sandbox_confines_project_hooks_that_declare_none() {
    if !landlock("project_hooks_sandbox_confines_project_hooks_that_declare_none") {
        return;
    }
    let env = TestEnv::new();
    env.trust_project();
    std::fs::write(
        env.config_dir.join("settings.json"),
        r#"{"projectHooks": {"sandbox": "read-only"}}"#,
    )
    .unwrap();
    let marker = env.project.join("project-hook-marker");
    env.project_script(
        "mark.sh",
        &format!("cat > /dev/null\necho ran > '{}' || exit 3\n", marker.display()),
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "project-mark", "event": "userPromptSubmit", "command": "hooks/mark.sh"}
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hello"));
    let output = run_elph(&env, &server, &["hi"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "the project hook ran read-only");
    assert!(
        stderr(&output).contains("exited with code 3"),
        "{}",
        stderr(&output)
    );
    let doctor = cli(&env, &["doctor"], &[]);
    assert!(
        stdout(&doctor).contains("project-mark  userPromptSubmit  sandbox: read-only"),
        "{}",
        stdout(&doctor)
    );
}

#[test]
fn elph_sandbox_runs_one_command_under_the_policy() {
    if !landlock("elph_sandbox_runs_one_command_under_the_policy") {
        return;
    }
    let env = TestEnv::new();
    let outside = env.evidence("sandbox-cli-outside");
    let run = |args: &[&str]| {
        let output = cli(&env, &[&["sandbox"], args].concat(), &[]);
        (output.status.code(), stderr(&output))
    };
    let touch = format!("touch '{}'", outside.display());
    let (code, err) = run(&["--", "sh", "-c", &touch]);
    assert_eq!(code, Some(1), "{err}");
    // The read-only view of the file system refuses it before Landlock would.
    assert!(err.contains("Read-only file system"), "{err}");
    assert!(!outside.exists());
    let (code, err) = run(&["--", "sh", "-c", "echo x > .elph/x"]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    let (code, err) = run(&["--explain", "--", "touch", "inside"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("mode: workspace-write"), "{err}");
    assert!(env.project.join("inside").exists());
    let (code, err) = run(&["--mode", "full-access", "--", "sh", "-c", &touch]);
    assert_eq!(code, Some(0), "{err}");
    assert!(outside.exists());
    let (code, _) = run(&["--", "sh", "-c", "exit 7"]);
    assert_eq!(code, Some(7), "the command's status is elph's");
}

#[test]
fn bad_modes_are_clear_errors() {
    let env = TestEnv::new();
    let output = cli(&env, &["run", "--sandbox", "danger", "hi"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unknown sandbox mode 'danger'")
            && stderr(&output).contains("workspace-write"),
        "{}",
        stderr(&output)
    );
    std::fs::write(
        env.config_dir.join("settings.json"),
        r#"{"sandbox": {"mode": "off"}}"#,
    )
    .unwrap();
    let output = cli(&env, &["sandbox", "--", "true"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("settings.json") && stderr(&output).contains("unknown variant `off`"),
        "{}",
        stderr(&output)
    );
    let output = cli(&env, &["sandbox", "--mode", "nope", "--", "true"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn doctor_shows_landlock_the_mode_and_the_shell_variables_by_name() {
    let env = TestEnv::new();
    let output = cli(
        &env,
        &["doctor"],
        &[("GITHUB_TOKEN", "never-listed"), ("PLAIN_SETTING", "x")],
    );
    let text = stdout(&output);
    assert!(text.contains("Landlock"), "{text}");
    assert!(text.contains("mode: workspace-write"), "{text}");
    assert!(text.contains("network: off"), "{text}");
    let names = text
        .lines()
        .skip_while(|line| !line.starts_with("Shell environment"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        names.contains("PLAIN_SETTING") && names.contains("TMPDIR"),
        "{text}"
    );
    // Held back by name, with the reason, and never its value.
    assert!(
        text.contains("GITHUB_TOKEN: its name contains TOKEN") && !text.contains("never-listed"),
        "{text}"
    );
    assert!(!names.contains("GITHUB_TOKEN"), "{text}");
    let json = cli(&env, &["doctor", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["sandbox"]["mode"], "workspace-write");
    assert_eq!(
        doc["sandbox"]["landlockAbi"].is_number(),
        elph_process::sandbox::landlock_support().available()
    );
}

#[test]
fn every_json_example_of_the_security_page_is_accepted() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md"))
        .unwrap();
    let blocks: Vec<&str> = page
        .split("```json\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 4, "the page has its examples");
    for block in blocks {
        let env = TestEnv::new();
        let value: Value = serde_json::from_str(block).unwrap_or_else(|err| panic!("{err}: {block}"));
        if value.get("hooks").is_some() {
            let file = env.root.path().join("hooks.json");
            std::fs::write(&file, block).unwrap();
            let output = cli(&env, &["hooks", "validate", &file.display().to_string()], &[]);
            assert!(output.status.success(), "{block}\n{}", stdout(&output));
        } else {
            std::fs::write(env.config_dir.join("settings.json"), block).unwrap();
            coding_agent::settings::Settings::load(&env.config_dir)
                .unwrap_or_else(|err| panic!("{err}: {block}"));
        }
    }
}

/// As a user who is not root, the read-only paths inside the project are held read-only through a
/// user namespace (root needs none). CI runs as root, so the test switches to `nobody` with
/// `setpriv` to take that path for real.
#[test]
fn an_unprivileged_user_gets_the_same_sandbox_through_a_user_namespace() {
    use std::os::unix::fs::PermissionsExt;
    if !landlock("an_unprivileged_user_gets_the_same_sandbox_through_a_user_namespace") {
        return;
    }
    let setpriv = Path::new("/usr/bin/setpriv");
    if !nix::unistd::geteuid().is_root() || !setpriv.exists() {
        eprintln!(
            "an_unprivileged_user_gets_the_same_sandbox_through_a_user_namespace: skipped: switching \
             to another user needs root and setpriv; as a non-root user every other test here takes \
             this path already"
        );
        return;
    }
    let env = TestEnv::new();
    let nobody = nix::unistd::Uid::from_raw(65534);
    let nogroup = nix::unistd::Gid::from_raw(65534);
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for dir in [&env.home, &env.config_dir, &env.project] {
        nix::unistd::chown(dir.as_path(), Some(nobody), Some(nogroup)).unwrap();
    }
    // A link to the binary where `nobody` can reach it (the build folder may not be).
    let binary = env.root.path().join("elph");
    std::fs::hard_link(elph(), &binary)
        .or_else(|_| std::fs::copy(elph(), &binary).map(|_| ()))
        .unwrap();
    let outside = env.root.path().join("outside");
    let mut command = env.command(setpriv);
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&binary)
        .args(["sandbox", "--", "sh", "-c"])
        .arg(format!(
            "id -u; echo a > inside; echo \"inside=$?\"; echo b > .elph/x; echo \"elph=$?\"; \
             echo c > '{}'; echo \"outside=$?\"",
            outside.display()
        ));
    let output = assert_cmd::Command::from_std(command)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let out = stdout(&output);
    assert!(
        out.starts_with("65534\n"),
        "ran as nobody: {out}{}",
        stderr(&output)
    );
    assert!(out.contains("inside=0"), "{out}{}", stderr(&output));
    assert!(
        !out.contains("elph=0") && out.contains("elph="),
        "{out}{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("Read-only file system"),
        "{}",
        stderr(&output)
    );
    assert!(!out.contains("outside=0") && !outside.exists(), "{out}");
}

/// Every command of a session joins the same read-only mount namespace: the second and third
/// commands are held exactly like the first, and still run in their own working directory.
#[tokio::test]
async fn every_command_of_a_session_is_held_the_same_way() {
    if !landlock("every_command_of_a_session_is_held_the_same_way") {
        return;
    }
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join("sub")).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    for n in 1..=3 {
        server.enqueue(FakeReply::tool_call(
            "shell_exec",
            json!({"command": format!(
                "echo x > .elph/try{n}; echo \"elph{n}=$?\"; echo y > sub/ok{n}; echo \"inside{n}=$?\""
            )}),
        ));
    }
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["three times"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let everything: String = server.requests().iter().map(Value::to_string).collect();
    for n in 1..=3 {
        assert!(!env.project.join(format!(".elph/try{n}")).exists());
        assert!(env.project.join(format!("sub/ok{n}")).exists(), "{everything}");
        assert!(everything.contains(&format!("inside{n}=0")), "{everything}");
        assert!(!everything.contains(&format!("elph{n}=0")), "{everything}");
    }
    // `sub/ok{n}` is relative: its existence shows each command ran in the project, not at the
    // namespace's root where `setns` leaves a process.
}
