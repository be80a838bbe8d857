//! Configuration that cannot be tricked, tried the way an attacker would, through the real binary:
//! special files as configs, duplicate keys, relative folder variables, escape sequences in names and
//! hook output, a permissive umask, and a held trust lock.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::TestEnv;

const ELPH: &str = env!("CARGO_BIN_EXE_elph");
/// A guard against hangs, not a timing claim: a config read that blocks would never end, and the
/// child is killed (and the test fails) once this has passed. Generous, so that a slow start on a
/// loaded machine is not mistaken for a hang; a passing run does not wait for it.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Runs `command` to the end, killing it and failing the test if it outlives `guard`.
fn finish(mut command: Command, guard: Duration) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn elph");
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > guard {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "elph did not finish within {guard:?} (a blocking read?); stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn elph(env: &TestEnv, args: &[&str]) -> Output {
    let mut command = env.command(Path::new(ELPH));
    command.args(args);
    finish(command, HANG_GUARD)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

fn project_hooks_file(env: &TestEnv) -> std::path::PathBuf {
    env.project.join(".elph").join("hooks.json")
}

#[test]
fn a_fifo_project_hooks_file_ends_at_once_with_a_clear_error() {
    let env = TestEnv::new();
    mkfifo(&project_hooks_file(&env));
    // Untrusted: `hooks validate` reads the project file anyway.
    let output = elph(&env, &["hooks", "validate"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("FIFO (named pipe), not a regular file"),
        "{stderr}"
    );
    // Trusted: every command that loads hooks.
    env.trust_project();
    for args in [&["hooks", "list"][..], &["doctor"], &["hooks", "list", "--json"]] {
        let output = elph(&env, args);
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(all.contains("not a regular file"), "elph {args:?}: {all}");
    }
}

#[test]
fn a_symlink_to_dev_zero_is_refused_without_reading_it() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".elph")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", project_hooks_file(&env)).unwrap();
    let output = elph(&env, &["hooks", "validate"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("character device, not a regular file"),
        "{output:?}"
    );
    std::os::unix::fs::symlink("/dev/zero", env.config_dir.join("trust.json")).unwrap();
    let output = elph(&env, &["trust", "--status"]);
    assert!(text(&output.stdout).contains("not trusted"), "{output:?}");
    assert!(text(&output.stderr).contains("character device"), "{output:?}");
}

#[test]
fn a_fifo_trust_file_does_not_hang_status_or_list() {
    let env = TestEnv::new();
    mkfifo(&env.config_dir.join("trust.json"));
    let output = elph(&env, &["trust", "--status", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["trusted"], false);
    assert!(
        status["source"]["message"].as_str().unwrap().contains("FIFO"),
        "{status}"
    );
    let output = elph(&env, &["hooks", "list"]);
    assert!(text(&output.stdout).contains("FIFO"), "{output:?}");
    let output = elph(&env, &["trust"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("FIFO"), "{output:?}");
}

#[test]
fn a_huge_config_is_refused() {
    let env = TestEnv::new();
    let mut big = b"{\"hooks\": [], \"pad\": \"".to_vec();
    big.resize(5 * 1024 * 1024, b'x');
    big.extend_from_slice(b"\"}");
    std::fs::write(env.config_dir.join("hooks.json"), big).unwrap();
    let output = elph(&env, &["hooks", "validate"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("larger than 4194304 bytes"),
        "{output:?}"
    );
}

#[test]
fn duplicate_keys_are_errors_that_name_the_second_key() {
    let env = TestEnv::new();
    let project = env.project.display().to_string();
    std::fs::write(
        env.config_dir.join("trust.json"),
        format!(r#"{{"directories": {{"{project}": false, "{project}": true}}}}"#),
    )
    .unwrap();
    let output = elph(&env, &["trust", "--status", "--json"]);
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["trusted"], false, "the last key must not win: {status}");
    let message = status["source"]["message"].as_str().unwrap();
    assert!(message.contains("duplicate key"), "{message}");

    std::fs::write(
        env.config_dir.join("hooks.json"),
        "{\"hooks\": [{\"id\": \"reviewed\", \"event\": \"stop\", \"command\": \"/bin/true\"}],\n \"hooks\": []}",
    )
    .unwrap();
    let output = elph(&env, &["hooks", "validate", "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["problems"][0]["pointer"], "/hooks", "{report}");
    assert!(
        report["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("line 2"),
        "{report}"
    );
}

#[test]
fn a_bom_is_accepted_in_trust_json_and_settings_json() {
    let env = TestEnv::new();
    let trust = json!({"directories": {env.project.display().to_string(): true}});
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(trust.to_string().as_bytes());
    std::fs::write(env.config_dir.join("trust.json"), bytes).unwrap();
    let output = elph(&env, &["trust", "--status", "--json"]);
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["trusted"], true, "{status}");
}

#[test]
fn a_number_field_reports_its_own_pointer() {
    let env = TestEnv::new();
    std::fs::write(
        env.config_dir.join("hooks.json"),
        r#"{"hooks": [{"id": "a", "event": "stop", "command": "/bin/true", "timeoutMs": 1e3}]}"#,
    )
    .unwrap();
    let output = elph(&env, &["hooks", "validate", "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["problems"][0]["pointer"], "/hooks/0/timeoutMs", "{report}");
    assert!(
        report["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("whole number"),
        "{report}"
    );
}

/// A repository that plants config where a relative folder variable would point.
fn plant_repo_config(env: &TestEnv, relative_config: &str) -> String {
    let evidence = env.evidence("planted-hook-ran");
    let dir = env.project.join(relative_config);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hooks.json"),
        json!({"hooks": [{"id": "planted", "event": "sessionStart", "command": "/bin/sh",
                          "args": ["-c", format!("touch {}", evidence.display())]}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("trust.json"),
        json!({"defaultProjectTrust": "always"}).to_string(),
    )
    .unwrap();
    "planted".into()
}

#[test]
fn relative_config_variables_are_ignored_with_a_warning() {
    for (name, value, planted_at) in [
        ("XDG_CONFIG_HOME", ".config", ".config/elph"),
        ("ELPH_HOME", ".elph-home", ".elph-home"),
        ("HOME", ".", ".config/elph"),
    ] {
        let env = TestEnv::new();
        let planted = plant_repo_config(&env, planted_at);
        let mut command = env.command(Path::new(ELPH));
        command.env_remove("ELPH_HOME");
        if name != "HOME" {
            command.env(name, value);
        } else {
            command.env("HOME", value).env("XDG_CONFIG_HOME", &env.config_dir);
        }
        command.args(["doctor", "--json"]);
        let output = finish(command, HANG_GUARD);
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("ignoring {name}=\"{value}\": it is a relative path")),
            "{name}: {stderr}"
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let config_dir = report["paths"]["configDir"]["path"].as_str().unwrap();
        assert!(
            !config_dir.starts_with(env.project.to_str().unwrap()) && Path::new(config_dir).is_absolute(),
            "{name}: CONFIG_DIR {config_dir} is inside the repository"
        );
        assert!(
            !report.to_string().contains(&format!("\"{planted}\"")),
            "{name}: the repository's hooks.json was loaded as the user's: {report}"
        );
    }
}

#[test]
fn relative_data_and_project_variables_are_ignored() {
    for name in ["ELPH_DATA_DIR", "XDG_DATA_HOME", "ELPH_PROJECT_DIR"] {
        let env = TestEnv::new();
        let mut command = env.command(Path::new(ELPH));
        if name == "XDG_DATA_HOME" {
            command.env_remove("ELPH_DATA_DIR");
        }
        command.env(name, "inside-repo").args(["doctor", "--json"]);
        let output = finish(command, HANG_GUARD);
        assert!(
            text(&output.stderr).contains(&format!("ignoring {name}=\"inside-repo\"")),
            "{name}: {}",
            text(&output.stderr)
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let data_dir = report["paths"]["dataDir"]["path"].as_str().unwrap();
        assert!(!data_dir.contains("inside-repo"), "{name}: {data_dir}");
        let project = report["paths"]["projectDir"]["path"].as_str().unwrap();
        assert_eq!(project, env.project.to_str().unwrap(), "{name}");
        assert!(
            !env.project.join("inside-repo").exists(),
            "{name}: nothing is created in the repo"
        );
    }
}

const OSC52: &str = "\x1b]52;c;ZWNobyBwd25lZA==\x07";

#[test]
fn a_field_name_with_an_osc52_write_is_shown_escaped() {
    let env = TestEnv::new();
    let hooks = format!(
        r#"{{"hooks": [{{"id": "a", "event": "stop", "command": "/bin/true", "x{}": 1}}]}}"#,
        OSC52.replace('\x1b', "\\u001b").replace('\x07', "\\u0007")
    );
    std::fs::write(env.config_dir.join("hooks.json"), hooks).unwrap();
    let output = elph(&env, &["hooks", "validate"]);
    let stderr = text(&output.stderr);
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "raw escapes: {stderr:?}"
    );
    assert!(
        stderr.contains("unknown field 'x\\e]52;c;ZWNobyBwd25lZA==\\a'"),
        "{stderr}"
    );
    // JSON output stays exact.
    let output = elph(&env, &["hooks", "validate", "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["problems"][0]["message"].as_str().unwrap().contains(OSC52));
}

#[test]
fn hook_ids_commands_reasons_and_stderr_are_escaped_in_list_test_and_doctor() {
    let env = TestEnv::new();
    // Outside the project: a home hook's command inside it would be refused.
    let script = test_support::hook_scripts::write_script(
        &env.root.path().join("scripts"),
        "loud.sh",
        "cat >/dev/null\nprintf 'bad\\033[2Jstderr\\n' >&2\nprintf '{\"decision\":\"deny\",\"reason\":\"no\\\\u001b]0;pwned\\\\u0007\"}'\n",
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "loud", "event": "preToolUse", "command": script,
        "args": [format!("arg{OSC52}")]
    }]}));
    for args in [&["hooks", "list"][..], &["doctor"]] {
        let output = elph(&env, args);
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(
            !all.contains('\x1b') && !all.contains('\x07'),
            "elph {args:?} printed raw escapes: {all:?}"
        );
        assert!(
            all.contains("arg\\e]52;") || all.contains("arg\\u001b]52;"),
            "elph {args:?} shows the args escaped: {all}"
        );
    }
    let output = elph(&env, &["hooks", "test", "preToolUse", "--tool", "shell_exec"]);
    let out = text(&output.stdout);
    assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
    assert!(out.contains("no\\e]0;pwned\\a"), "the reason, escaped: {out}");
    assert!(out.contains("bad\\e[2Jstderr"), "the stderr tail, escaped: {out}");
}

#[test]
fn config_and_data_dirs_are_owner_only_under_umask_000() {
    let env = TestEnv::new();
    let config = env.root.path().join("fresh-config");
    let data = env.root.path().join("fresh-data");
    env.write_project_hooks(&json!({"hooks": []}));
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", "umask 000; exec \"$0\" \"$@\"", ELPH, "trust"])
        .env_clear()
        .env("HOME", &env.home)
        .env("ELPH_HOME", &config)
        .env("ELPH_DATA_DIR", &data)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(&env.project);
    let output = finish(command, HANG_GUARD);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let mode = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&config), 0o700);
    assert_eq!(mode(&config.join("trust.json")), 0o600);
    assert_eq!(mode(&config.join("trust.json.lock")), 0o600);
    // DATA_DIR: a headless session (offline scripted model) writes sessions.db and the hook run log.
    env.write_home_hooks(&json!({"hooks": [{"id": "ok", "event": "stop", "command": "/bin/true"}]}));
    let script = env.root.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello"}]}"#).unwrap();
    let model = format!("scripted/{}", script.display());
    let mut command = Command::new("/bin/sh");
    command
        .args([
            "-c",
            "umask 000; exec \"$0\" \"$@\"",
            ELPH,
            "run",
            "--model",
            &model,
            "hi",
        ])
        .env_clear()
        .env("HOME", &env.home)
        .env("ELPH_HOME", &env.config_dir)
        .env("ELPH_DATA_DIR", &data)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(&env.project);
    let output = finish(command, HANG_GUARD);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(mode(&data), 0o700);
    let written = walk(&data);
    assert!(
        written.iter().any(|path| path.ends_with("sessions.db")),
        "{written:?}"
    );
    for entry in written {
        let expected = if entry.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&entry), expected, "{}", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[test]
fn elph_trust_says_it_is_waiting_for_a_held_lock_and_gives_up() {
    let env = TestEnv::new();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(env.config_dir.join("trust.json.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut command = env.command(Path::new(ELPH));
    command.arg("trust");
    let output = finish(command, Duration::from_secs(30));
    drop(lock);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("waiting for"), "{stderr}");
    assert!(stderr.contains("trust.json.lock"), "{stderr}");
    assert!(stderr.contains("held the lock"), "{stderr}");
    assert!(
        !env.config_dir.join("trust.json").exists(),
        "nothing was recorded"
    );
    // Released: the next one records at once.
    let output = elph(&env, &["trust"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

/// `elph run` in a project that is not trusted names the hooks it leaves off, reading the project's
/// files as an attacker may have planted them: `.elph/mcp.json` or `.elph/hooks.json` a FIFO that
/// no writer ever opens, or `.elph` itself a link to a folder elsewhere. Nothing hangs, the turn
/// is answered, and no project hook runs.
#[tokio::test]
async fn an_untrusted_projects_planted_files_neither_hang_elph_run_nor_run_its_hooks() {
    use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
    let canary_hook = |env: &TestEnv, dir: &Path| {
        let canary = env.evidence("canary");
        let script = dir.join("canary.sh");
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            &script,
            format!("#!/bin/sh\ncat > /dev/null\ntouch '{}'\n", canary.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let hooks = json!({"hooks": [{"id": "canary", "event": "sessionStart", "command": script}]});
        std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
        canary
    };
    let warning = "WARNING: 1 project hook(s) are OFF in this run: it is not trusted.";

    // The hooks file is readable; the MCP file beside it is a FIFO.
    let env = TestEnv::new();
    let canary = canary_hook(&env, &env.project.join(".elph"));
    mkfifo(&env.project.join(".elph").join("mcp.json"));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("answered"));
    let output = run_turn(&env, &server).await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(text(&output.stdout).contains("answered"), "{output:?}");
    assert!(stderr.contains(warning), "{stderr}");
    assert!(stderr.contains("canary (sessionStart)"), "{stderr}");
    assert!(!canary.exists(), "the untrusted project's hook never ran");

    // The hooks file itself is a FIFO: there is nothing to name, and nothing waits for a writer.
    let env = TestEnv::new();
    mkfifo(&project_hooks_file(&env));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("answered"));
    let output = run_turn(&env, &server).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("answered"), "{output:?}");

    // `.elph` is a link to a folder outside the project: its hooks are the project's, and off.
    let env = TestEnv::new();
    let elsewhere = env.evidence("planted-elph");
    let canary = canary_hook(&env, &elsewhere);
    std::os::unix::fs::symlink(&elsewhere, env.project.join(".elph")).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("answered"));
    let output = run_turn(&env, &server).await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(warning), "{stderr}");
    assert!(!canary.exists(), "the untrusted project's hook never ran");
}

/// `elph run hello` against `server`, killed (and the test failed) if it outlives [`HANG_GUARD`].
async fn run_turn(env: &TestEnv, server: &test_support::fake_model::FakeModelServer) -> Output {
    let mut command = env.command(Path::new(ELPH));
    command
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test", "hello"]);
    tokio::task::spawn_blocking(move || finish(command, HANG_GUARD))
        .await
        .unwrap()
}
