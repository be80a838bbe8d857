//! What trusting pins, each form changed after `elph trust` (docs/trust.md, "What is pinned"): a
//! hook's command, an interpreter's script, `python -m`, `--opt=path`, a `sh -c` script's words, a
//! bare name found through a PATH entry inside the project, a file of `.elph/` a hook sources, an
//! MCP server's script. And a change during a session, caught right before the next hook run; and
//! a changed project with fail-closed hooks, which `elph run` and `elph acp` refuse to run unguarded.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp::{Setup, finish};
use super::run_e2e::{elph, run_elph, run_elph_with};

fn cli(env: &TestEnv, args: &[&str], path_var: &str) -> Output {
    let mut command = env.command(&elph());
    command.env("PATH", path_var).args(args);
    assert_cmd::Command::from_std(command)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("elph runs")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn executable(path: &Path, text: &str) {
    test_support::hook_scripts::write_with_mode(path, text, 0o755);
}

#[test]
fn each_pinned_form_changed_after_trust_is_named_by_status() {
    let env = TestEnv::new();
    let project = &env.project;
    let path_var = format!(
        "{}:{}",
        project.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (file, text) in [
        ("tools/direct.sh", "#!/bin/sh\n"),
        ("tools/interp.sh", "true\n"),
        ("pkg/__init__.py", ""),
        ("pkg/mod.py", "print(1)\n"),
        ("conf/rules.toml", "strict = true\n"),
        ("tools/lib.sh", "true\n"),
        (".elph/hooks/sourced.sh", "true\n"),
        ("servers/srv.py", "print(1)\n"),
    ] {
        write(&project.join(file), text);
    }
    executable(&project.join("bin/guard"), "#!/bin/sh\n");
    executable(&project.join("tools/direct.sh"), "#!/bin/sh\n");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "direct", "event": "stop", "command": "../tools/direct.sh"},
        {"id": "interp", "event": "stop", "command": "/bin/sh", "args": ["tools/interp.sh"]},
        {"id": "module", "event": "stop", "command": "/usr/bin/python3", "args": ["-m", "pkg.mod"]},
        {"id": "opt", "event": "stop", "command": "/bin/true", "args": ["--config=conf/rules.toml"]},
        {"id": "shc", "event": "stop", "command": "/bin/sh", "args": ["-c", ". tools/lib.sh && . .elph/hooks/sourced.sh"]},
        {"id": "path", "event": "stop", "command": "guard"},
    ]}));
    write(
        &project.join(".elph/mcp.json"),
        &json!({"mcpServers": {"srv": {"command": "/usr/bin/python3", "args": ["servers/srv.py"]}}})
            .to_string(),
    );

    for changed in [
        "tools/direct.sh",
        "tools/interp.sh",
        "pkg/mod.py",
        "pkg/__init__.py",
        "conf/rules.toml",
        "tools/lib.sh",
        ".elph/hooks/sourced.sh",
        "bin/guard",
        "servers/srv.py",
    ] {
        let trusted = cli(&env, &["trust"], &path_var);
        assert!(trusted.status.success(), "{trusted:?}");
        let status: Value =
            serde_json::from_slice(&cli(&env, &["trust", "--status", "--json"], &path_var).stdout).unwrap();
        assert_eq!(status["pin"]["state"], "matches", "{changed}: {status}");

        let path = project.join(changed);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("# changed\n");
        std::fs::write(&path, text).unwrap();

        let status: Value =
            serde_json::from_slice(&cli(&env, &["trust", "--status", "--json"], &path_var).stdout).unwrap();
        assert_eq!(status["trusted"], false, "{changed}: {status}");
        assert_eq!(
            status["pin"]["changes"]["files"],
            json!([{"path": changed, "change": "changed"}]),
            "{changed}"
        );
        let human = cli(&env, &["trust", "--status"], &path_var);
        let human = String::from_utf8_lossy(&human.stdout);
        assert!(human.contains(&format!("file changed: {changed}")), "{human}");
    }

    // What the command lines cannot show is listed as not pinned.
    cli(&env, &["trust"], &path_var);
    let status: Value =
        serde_json::from_slice(&cli(&env, &["trust", "--status", "--json"], &path_var).stdout).unwrap();
    let unseen = status["notPinned"].to_string();
    assert!(
        unseen.contains("hook interp sources, imports or opens at run time"),
        "{status}"
    );
    assert!(unseen.contains("MCP server srv"), "{status}");
    let human = String::from_utf8_lossy(&cli(&env, &["trust", "--status"], &path_var).stdout).into_owned();
    assert!(
        human.contains("not pinned (Elph cannot see them from the command lines):"),
        "{human}"
    );
}

#[tokio::test]
async fn a_script_changed_during_a_session_is_caught_before_the_next_hook_run() {
    let env = TestEnv::new();
    let ran = env.evidence("guard-ran.jsonl");
    let script = env.project.join("tools/guard.sh");
    write(&script, &format!("cat >> '{}'\n", ran.display()));
    env.write_project_hooks(&json!({"hooks": [
        {"id": "guard", "event": "preToolUse", "command": "/bin/sh", "args": ["tools/guard.sh"]},
    ]}));
    // Something outside the model changes the script between two tool calls (an editor, a pull):
    // here the user's own postToolUse hook.
    env.write_home_hooks(&json!({"hooks": [
        {"id": "editor", "event": "postToolUse", "command": "/bin/sh",
         "args": ["-c", format!("echo '# edited' >> '{}'", script.display())]},
    ]}));
    let trusted = cli(&env, &["trust"], &std::env::var("PATH").unwrap_or_default());
    assert!(trusted.status.success(), "{trusted:?}");

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["look twice"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(json_lines(&ran).len(), 1, "the guard ran before the change only");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not run: the project changed since you trusted it (file changed: tools/guard.sh)"),
        "{stderr}"
    );
}

/// The host keeps the pin check's answer while nothing it read changed (trust::watch): a rewrite
/// that keeps the script's size, inode and mtime (`touch -d` back), after checks were answered
/// from what was kept, is still caught before the next run. Only ctime shows it.
/// The mtime every version of the guard carries: a change is never told by its time.
const STAMP: &str = "@946684800";

fn set_back(path: &Path) {
    let touched = std::process::Command::new("touch")
        .args(["-h", "-d", STAMP])
        .arg(path)
        .status()
        .unwrap();
    assert!(touched.success());
}

/// A trusted project whose guard `tools/guard.sh` (written by the caller, its mtime set back) runs
/// before each of three tool calls; after the second, a home postToolUse hook runs `change` (a
/// shell command). Returns how often the guard ran and the run's stderr: the checks of the first
/// two calls were kept (older than the settling span), so only the cheap check stands between
/// the change and the third run.
async fn guard_changed_after_kept_checks(env: &TestEnv, change: &str) -> (usize, String) {
    let guard =
        json!({"id": "guard", "event": "preToolUse", "command": "/bin/sh", "args": ["tools/guard.sh"]});
    let path_var = std::env::var("PATH").unwrap_or_default();
    hook_changed_after_kept_checks(env, guard, &path_var, change).await
}

/// [`guard_changed_after_kept_checks`] with the guard's hook definition and the PATH that
/// `elph trust` and `elph run` get.
async fn hook_changed_after_kept_checks(
    env: &TestEnv,
    guard: Value,
    path_var: &str,
    change: &str,
) -> (usize, String) {
    let ran = env.evidence("guard-ran.jsonl");
    let edited = env.evidence("edited");
    env.write_project_hooks(&json!({"hooks": [guard]}));
    let edit = format!(
        "cat > /dev/null; if [ -e '{edited}' ]; then {change}; else : > '{edited}'; fi",
        edited = edited.display(),
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "editor", "event": "postToolUse", "command": "/bin/sh", "args": ["-c", edit]},
    ]}));
    let trusted = cli(env, &["trust"], path_var);
    assert!(trusted.status.success(), "{trusted:?}");
    // Older than the settling span, so that the checks of the first two calls are kept.
    tokio::time::sleep(coding_agent::trust::watch::SETTLED + Duration::from_secs(1)).await;

    let server = FakeModelServer::start(Wire::OpenAi).await;
    for _ in 0..3 {
        server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    }
    server.enqueue(FakeReply::text("done"));
    let output = run_elph_with(env, &server, &[("PATH", path_var)], &["look three times"]).await;
    assert!(output.status.success(), "{output:?}");
    let runs = if ran.exists() { json_lines(&ran).len() } else { 0 };
    (runs, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The guard's two versions, of one size: A appends its payload to the evidence file, B too (the
/// change is in a comment), so only the pin can tell them apart. The file's name is in the
/// script's text: a file named in the hook's `env` would be watched by the pin check, and the
/// guard's own writes to it would keep every check from being kept.
fn guard_text(env: &TestEnv, version: char) -> String {
    format!(
        "cat >> '{}' # {version}\n",
        env.evidence("guard-ran.jsonl").display()
    )
}

#[tokio::test]
async fn a_rewrite_that_keeps_size_and_mtime_is_caught_after_kept_checks() {
    let env = TestEnv::new();
    let script = env.project.join("tools/guard.sh");
    write(&script, &guard_text(&env, 'A'));
    set_back(&script);
    // A becomes B in place (same inode, same size), and the mtime is set back.
    let change = format!(
        "sed 's/# A$/# B/' '{script}' > '{script}.new' && cat '{script}.new' > '{script}' && \
         rm '{script}.new' && touch -d {STAMP} '{script}'",
        script = script.display(),
    );
    let (runs, stderr) = guard_changed_after_kept_checks(&env, &change).await;
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.ends_with("# B\n"), "the script was rewritten: {text}");
    let meta = std::fs::metadata(&script).unwrap();
    assert_eq!(
        meta.modified().unwrap(),
        std::time::UNIX_EPOCH + Duration::from_secs(946_684_800),
        "its mtime was set back"
    );
    assert_eq!(runs, 2, "the guard ran before the change only");
    assert!(
        stderr.contains("not run: the project changed since you trusted it (file changed: tools/guard.sh)"),
        "{stderr}"
    );
}

/// Lays out a case's guard (version A) and gives the shell command that changes it to B.
type Prepare = fn(&TestEnv) -> String;

/// The other ways an attacker would try to slip a change past a kept check: the guard's folder
/// renamed away and a copy with the new text put in its place (every file keeps its size and
/// time), a symlink turned to another target of the same size and time, and a write through a
/// second name (a hard link) of the same file.
#[tokio::test]
async fn a_renamed_folder_a_turned_symlink_or_a_second_name_is_caught_after_kept_checks() {
    let cases: [(&str, Prepare); 3] = [
        ("renamed parent", |env| {
            let tools = env.project.join("tools");
            write(&tools.join("guard.sh"), &guard_text(env, 'A'));
            set_back(&tools.join("guard.sh"));
            format!(
                "mv '{tools}' '{tools}.old' && mkdir '{tools}' && \
                 sed 's/# A$/# B/' '{tools}.old/guard.sh' > '{tools}/guard.sh' && \
                 touch -d {STAMP} '{tools}/guard.sh'",
                tools = tools.display(),
            )
        }),
        ("symlink turned", |env| {
            let tools = env.project.join("tools");
            write(&tools.join("real/a.sh"), &guard_text(env, 'A'));
            write(&tools.join("real/b.sh"), &guard_text(env, 'B'));
            set_back(&tools.join("real/a.sh"));
            set_back(&tools.join("real/b.sh"));
            std::os::unix::fs::symlink("real/a.sh", tools.join("guard.sh")).unwrap();
            set_back(&tools.join("guard.sh"));
            format!(
                "ln -sfn real/b.sh '{link}' && touch -h -d {STAMP} '{link}'",
                link = tools.join("guard.sh").display(),
            )
        }),
        ("second name", |env| {
            let tools = env.project.join("tools");
            write(&tools.join("guard.sh"), &guard_text(env, 'A'));
            set_back(&tools.join("guard.sh"));
            let alias = env.project.join("alias.sh");
            std::fs::hard_link(tools.join("guard.sh"), &alias).unwrap();
            format!(
                "sed 's/# A$/# B/' '{alias}' > '{alias}.new' && cat '{alias}.new' > '{alias}' && \
                 rm '{alias}.new' && touch -d {STAMP} '{alias}'",
                alias = alias.display(),
            )
        }),
    ];
    for (case, prepare) in cases {
        let env = TestEnv::new();
        let change = prepare(&env);
        let (runs, stderr) = guard_changed_after_kept_checks(&env, &change).await;
        let now = std::fs::read_to_string(env.project.join("tools/guard.sh")).unwrap();
        assert_eq!(
            now,
            guard_text(&env, 'B'),
            "{case}: the guard the next run would start is B"
        );
        assert_eq!(runs, 2, "{case}: the guard ran before the change only\n{stderr}");
        assert!(
            stderr.contains("not run: the project changed since you trusted it"),
            "{case}: {stderr}"
        );
    }
}

/// A trusted project with a fail-closed guard, whose script then changes.
/// A guard named by a bare command (`"command": "guard"`) runs from the first PATH entry that has
/// it. The pin check watches the entries up to that one, not those after it, so an attacker
/// tries the two ways around that: a guard put in an earlier entry, and a guard put in a later
/// entry with the one that runs then made not executable, so that the search falls through to
/// it. Each is caught before the next run, and neither the new guard nor the old one runs.
#[tokio::test]
async fn a_guard_found_on_path_is_not_replaced_from_an_earlier_or_a_later_entry() {
    let cases: [(&str, &str); 2] = [
        ("earlier entry", "cp \"$B\" early/guard && chmod +x early/guard"),
        (
            "later entry, the found one made not executable",
            "cp \"$B\" late/guard && chmod +x late/guard && chmod -x found/guard",
        ),
    ];
    for (case, change) in cases {
        let env = TestEnv::new();
        let project = &env.project;
        for folder in ["early", "found", "late"] {
            std::fs::create_dir_all(project.join(folder)).unwrap();
        }
        let guard = project.join("found/guard");
        executable(&guard, &format!("#!/bin/sh\n{}", guard_text(&env, 'A')));
        set_back(&guard);
        // The attacker's guard, B, waits outside the project.
        let staged = env.evidence("guard-b");
        write(&staged, &format!("#!/bin/sh\n{}", guard_text(&env, 'B')));
        let path_var = format!(
            "{}:{}:{}:{}",
            project.join("early").display(),
            project.join("found").display(),
            project.join("late").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let change = format!(
            "cd '{}' && B='{}' && {change}",
            project.display(),
            staged.display()
        );
        let hook = json!({"id": "guard", "event": "preToolUse", "command": "guard"});
        let (runs, stderr) = hook_changed_after_kept_checks(&env, hook, &path_var, &change).await;
        let moved = if case == "earlier entry" {
            "early/guard"
        } else {
            "late/guard"
        };
        assert!(
            project.join(moved).is_file(),
            "{case}: the attacker's guard is in place"
        );
        assert_eq!(runs, 2, "{case}: the guard ran before the change only\n{stderr}");
        assert!(
            stderr.contains("not run: the project changed since you trusted it"),
            "{case}: {stderr}"
        );
    }
}

fn changed_guarded_project(env: &TestEnv) {
    let guard = env.project_script("guard.sh", "exit 0\n");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "no-secrets", "event": "preToolUse", "command": guard.display().to_string(), "failClosed": true},
    ]}));
    coding_agent::trust::TrustStore::new(&env.config_dir)
        .trust(&env.project)
        .unwrap();
    env.project_script("guard.sh", "exit 0\n# changed\n");
}

#[tokio::test]
async fn elph_run_refuses_a_changed_project_with_fail_closed_hooks() {
    let env = TestEnv::new();
    changed_guarded_project(&env);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": "true"})));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["go"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let dir = env.project.display().to_string();
    assert!(
        stderr.contains(&format!(
            "elph run: refusing to start the turn: {dir} changed since you trusted it (file changed: \
             .elph/hooks/guard.sh)"
        )) && stderr.contains("its fail-closed hooks (no-secrets) would not guard this turn")
            && stderr.contains(&format!("run `elph trust {dir}`")),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "nothing reached the model");

    // Trusted again, the turn runs (with its guard).
    let trusted = cli(&env, &["trust"], &std::env::var("PATH").unwrap_or_default());
    assert!(trusted.status.success(), "{trusted:?}");
    let output = run_elph_with::<&str>(&env, &server, &[], &["go"]).await;
    assert!(output.status.success(), "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elph_acp_refuses_a_turn_in_a_changed_project_with_fail_closed_hooks() {
    let setup = Setup::new().await;
    changed_guarded_project(&setup.env);
    setup.server.enqueue(FakeReply::text("after trusting"));
    let (client, agent) = setup.connect(elph_agent::harness::ApprovalPolicy::Auto).await;
    let session = client.new_session(&setup.env.project).await;
    let refused = client.prompt(&session, "go").await.unwrap_err();
    let message = refused.to_string();
    assert!(
        message.contains("refusing to start the turn")
            && message.contains("changed since you trusted it")
            && message.contains("no-secrets")
            && message.contains("elph trust"),
        "{message}"
    );
    assert!(setup.server.requests().is_empty(), "nothing reached the model");
    // `/trust` pins the new content; then turns run.
    client.prompt(&session, "/trust").await.unwrap();
    client.prompt(&session, "go").await.unwrap();
    assert_eq!(setup.server.requests().len(), 1);
    finish(client, agent).await;
}

#[test]
fn a_project_server_changed_after_the_decision_is_not_started() {
    let env = TestEnv::new();
    let canary = env.evidence("server-started");
    let server = env.project_script("server.sh", &format!("touch '{}'\nexit 1\n", canary.display()));
    write(
        &env.project.join(".elph/mcp.json"),
        &json!({"mcpServers": {"repo": {"command": server.display().to_string()}}}).to_string(),
    );
    coding_agent::trust::TrustStore::new(&env.config_dir)
        .trust(&env.project)
        .unwrap();
    // The session decided "trusted"; the script changes before the servers are spawned.
    env.project_script("server.sh", &format!("touch '{}'\n# changed\n", canary.display()));
    let paths = coding_agent::paths::Paths {
        config_dir: env.config_dir.clone(),
        data_dir: env.data_dir.clone(),
        project_dir: env.project,
    };
    let (_manager, tools, diagnostics) = coding_agent::mcp::McpManager::start(&paths, true);
    assert!(tools.is_empty());
    assert!(!canary.exists(), "the changed server was started");
    let said: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert!(
        said.iter().any(|line| line.contains(
            "MCP server 'repo' not started: the project changed since you trusted it (file changed: .elph/hooks/server.sh)"
        )),
        "{said:?}"
    );
}
