//! Canonical trust keys and safe command resolution, through the real binary: every way of writing
//! a key for a folder (a symlink, `..`, `.`, a trailing slash) means that folder, and a home hook's
//! bare command name never resolves into the project through an empty or relative PATH entry.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::hook_scripts::write_script;

const ELPH: &str = env!("CARGO_BIN_EXE_elph");
const DEADLINE: Duration = Duration::from_secs(30);

fn elph(env: &TestEnv, cwd: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = assert_cmd::Command::from_std(env.command(Path::new(ELPH)));
    command
        .current_dir(cwd)
        .envs(vars.iter().copied())
        .args(args)
        .timeout(DEADLINE);
    let output = command.output().unwrap();
    assert!(
        output.status.code().is_some(),
        "elph {args:?} did not finish: {output:?}"
    );
    output
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("not JSON ({err}): {}", String::from_utf8_lossy(&output.stdout)))
}

/// `/x/code` (trusted) holding `fork`, with a hook in the fork that leaves a canary, and
/// `/x/codelink` → `/x/code`.
struct Forks {
    env: TestEnv,
    code: PathBuf,
    fork: PathBuf,
    canary: PathBuf,
}

impl Forks {
    fn new() -> Self {
        let env = TestEnv::new();
        let x = std::fs::canonicalize(env.root.path()).unwrap().join("x");
        let code = x.join("code");
        let fork = code.join("fork");
        std::fs::create_dir_all(fork.join(".elph")).unwrap();
        std::os::unix::fs::symlink(&code, x.join("codelink")).unwrap();
        let canary = env.evidence("fork-hook-ran");
        std::fs::write(
            fork.join(".elph/hooks.json"),
            json!({"hooks": [{"id": "fork-hook", "event": "sessionStart", "command": "/bin/sh",
                              "args": ["-c", format!("touch {}", canary.display())]}]})
            .to_string(),
        )
        .unwrap();
        Forks {
            env,
            code,
            fork,
            canary,
        }
    }

    fn write_trust(&self, false_key: &str) {
        std::fs::write(
            self.env.config_dir.join("trust.json"),
            json!({"directories": {self.code.display().to_string(): true, false_key: false}}).to_string(),
        )
        .unwrap();
    }
}

#[test]
fn an_explicit_false_wins_however_its_key_is_written() {
    for form in [
        "{x}/codelink/fork",
        "{x}/code/a/../fork",
        "{x}/code/./fork",
        "{x}/code/fork/",
    ] {
        let forks = Forks::new();
        let x = forks.code.parent().unwrap().display().to_string();
        let key = form.replace("{x}", &x);
        forks.write_trust(&key);

        let status = json_of(&elph(
            &forks.env,
            &forks.fork,
            &[],
            &["trust", "--status", "--json"],
        ));
        assert_eq!(status["trusted"], false, "{key}: {status}");
        assert_eq!(
            status["source"]["path"],
            json!(forks.fork),
            "{key}: decided by the fork's own entry"
        );
        assert!(
            status["warnings"][0]
                .as_str()
                .unwrap()
                .contains("is not canonical"),
            "{key}: {status}"
        );
        let human = elph(&forks.env, &forks.fork, &[], &["trust", "--status"]);
        let human = String::from_utf8_lossy(&human.stdout);
        assert!(human.contains("warning: trust.json key"), "{key}: {human}");

        let list = json_of(&elph(&forks.env, &forks.fork, &[], &["hooks", "list", "--json"]));
        assert_eq!(
            list["hooks"],
            json!([]),
            "{key}: the fork's hooks stay off: {list}"
        );
        let test = elph(&forks.env, &forks.fork, &[], &["hooks", "test", "sessionStart"]);
        assert_eq!(test.status.code(), Some(0), "{test:?}");
        assert!(!forks.canary.exists(), "{key}: `hooks test` ran the fork's hook");

        let doctor = json_of(&elph(&forks.env, &forks.fork, &[], &["doctor", "--json"]));
        assert!(
            doctor["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|problem| problem["message"].as_str().unwrap().contains("is not canonical")),
            "{key}: doctor warns: {}",
            doctor["problems"]
        );
    }
}

#[test]
fn trusting_through_a_symlink_updates_the_existing_key() {
    let forks = Forks::new();
    let link_key = forks
        .code
        .parent()
        .unwrap()
        .join("codelink/fork")
        .display()
        .to_string();
    forks.write_trust(&link_key);
    let output = elph(&forks.env, &forks.fork, &[], &["trust"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(forks.env.config_dir.join("trust.json")).unwrap())
            .unwrap();
    let directories = written["directories"].as_object().unwrap();
    assert_eq!(
        directories.len(),
        2,
        "no second key for the same folder: {written}"
    );
    assert_eq!(directories[&link_key], true);
}

#[test]
fn clashing_keys_for_one_folder_keep_false() {
    let forks = Forks::new();
    let link_key = forks
        .code
        .parent()
        .unwrap()
        .join("codelink/fork")
        .display()
        .to_string();
    std::fs::write(
        forks.env.config_dir.join("trust.json"),
        json!({"directories": {forks.fork.display().to_string(): true, link_key: false}}).to_string(),
    )
    .unwrap();
    let status = json_of(&elph(
        &forks.env,
        &forks.fork,
        &[],
        &["trust", "--status", "--json"],
    ));
    assert_eq!(status["trusted"], false, "{status}");
    assert!(status["warnings"].to_string().contains("false wins"), "{status}");
}

/// A home hook named by a bare command, and a repository that ships an executable of that name in
/// the places a relative PATH entry would find it.
fn planted_repo(env: &TestEnv) -> PathBuf {
    let canary = env.evidence("repo-binary-ran");
    let body = format!("cat >/dev/null\ntouch {}\n", canary.display());
    write_script(&env.project, "elph-audit", &body);
    write_script(&env.project.join("node_modules/.bin"), "elph-audit", &body);
    env.write_home_hooks(
        &json!({"hooks": [{"id": "audit", "event": "sessionStart", "command": "elph-audit"}]}),
    );
    canary
}

#[test]
fn empty_and_relative_path_entries_never_find_the_repositorys_binary() {
    for path in [
        "/usr/bin:/bin:",
        ":/usr/bin:/bin",
        "/usr/bin::/bin",
        ".:/usr/bin:/bin",
        "./node_modules/.bin:/usr/bin:/bin",
    ] {
        let env = TestEnv::new();
        let canary = planted_repo(&env);
        let test = elph(
            &env,
            &env.project,
            &[("PATH", path)],
            &["hooks", "test", "sessionStart"],
        );
        assert!(!canary.exists(), "PATH={path}: the repository's ./elph-audit ran");
        let out = String::from_utf8_lossy(&test.stdout);
        assert!(
            out.contains("not in any absolute PATH entry"),
            "PATH={path}: {out}"
        );
        let list = json_of(&elph(
            &env,
            &env.project,
            &[("PATH", path)],
            &["hooks", "list", "--json"],
        ));
        assert_eq!(
            list["hooks"][0]["command"]["executable"], false,
            "PATH={path}: {list}"
        );
        assert_eq!(
            list["hooks"][0]["command"]["path"], "elph-audit",
            "PATH={path}: {list}"
        );
    }
}

#[test]
fn a_home_hook_resolving_into_the_project_is_refused_and_an_absolute_one_is_shown() {
    let env = TestEnv::new();
    let canary = planted_repo(&env);
    // An absolute PATH entry that happens to be inside the project.
    let inside = format!(
        "{}:/usr/bin:/bin",
        env.project.join("node_modules/.bin").display()
    );
    let list = json_of(&elph(
        &env,
        &env.project,
        &[("PATH", &inside)],
        &["hooks", "list", "--json"],
    ));
    assert_eq!(list["hooks"], json!([]), "{list}");
    assert!(
        list["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("inside the current project"),
        "{list}"
    );
    elph(
        &env,
        &env.project,
        &[("PATH", &inside)],
        &["hooks", "test", "sessionStart"],
    );
    assert!(!canary.exists(), "the refused hook did not run");

    // The same name from a folder outside the project resolves to its absolute path, which is shown.
    let tools = env.root.path().join("tools");
    let outside = write_script(&tools, "elph-audit", "cat >/dev/null\n");
    let path = format!("{}:/usr/bin:/bin", tools.display());
    let list = elph(&env, &env.project, &[("PATH", &path)], &["hooks", "list"]);
    let out = String::from_utf8_lossy(&list.stdout);
    assert!(out.contains(&outside.display().to_string()), "{out}");
}

#[test]
fn doctor_warns_about_files_others_can_write() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let script = write_script(&env.root.path().join("scripts"), "audit.sh", "cat >/dev/null\n");
    env.write_home_hooks(&json!({"hooks": [{"id": "audit", "event": "stop", "command": script}]}));
    let doctor = json_of(&elph(&env, &env.project, &[], &["doctor", "--json"]));
    assert!(
        !doctor["problems"].to_string().contains("writable by"),
        "{}",
        doctor["problems"]
    );
    std::fs::set_permissions(&env.config_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(
        env.config_dir.join("hooks.json"),
        std::fs::Permissions::from_mode(0o664),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o777)).unwrap();
    let doctor = json_of(&elph(&env, &env.project, &[], &["doctor", "--json"]));
    let problems = doctor["problems"].to_string();
    assert!(problems.contains("CONFIG_DIR"), "{problems}");
    assert!(problems.contains("writable by everyone"), "{problems}");
    assert!(problems.contains("your hooks.json"), "{problems}");
    assert!(problems.contains("writable by its group"), "{problems}");
    assert!(problems.contains("this home hook's command"), "{problems}");
    assert!(problems.contains("chmod go-w"), "{problems}");
    let human = elph(&env, &env.project, &[], &["doctor"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("writable by everyone"));
}

#[test]
fn a_home_mcp_server_resolving_into_the_project_is_refused_trusted_or_not() {
    let env = TestEnv::new();
    let canary = env.evidence("repo-server-ran");
    write_script(
        &env.project.join("node_modules/.bin"),
        "elph-helper",
        &format!("touch {}\nexit 1\n", canary.display()),
    );
    std::fs::write(
        env.config_dir.join("mcp.json"),
        r#"{"mcpServers": {"helper": {"command": "elph-helper"}}}"#,
    )
    .unwrap();
    let inside = format!(
        "{}:/usr/bin:/bin",
        env.project.join("node_modules/.bin").display()
    );
    let script = env.home.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello"}]}"#).unwrap();
    let model = format!("scripted/{}", script.display());
    for trusted in [false, true] {
        if trusted {
            let trust = elph(&env, &env.project, &[], &["trust"]);
            assert!(trust.status.success(), "{trust:?}");
        }
        let run = elph(
            &env,
            &env.project,
            &[("PATH", &inside)],
            &["run", "--no-session", "--model", &model, "hi"],
        );
        assert_eq!(run.status.code(), Some(0), "{run:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains("home MCP server 'helper' refused: its command 'elph-helper' resolves to"),
            "trusted={trusted}: {stderr}"
        );
        assert!(stderr.contains("inside the current project"), "{stderr}");
        assert!(
            !canary.exists(),
            "trusted={trusted}: the project's file ran as a home server"
        );
        let doctor = elph(&env, &env.project, &[("PATH", &inside)], &["doctor"]);
        let out = String::from_utf8_lossy(&doctor.stdout);
        assert!(out.contains("home MCP server 'helper' refused"), "{out}");
    }

    // The same name from a folder outside the project is the user's own and is not refused.
    let tools = env.root.path().join("tools");
    write_script(&tools, "elph-helper", "exit 1\n");
    let path = format!("{}:/usr/bin:/bin", tools.display());
    let doctor = elph(&env, &env.project, &[("PATH", &path)], &["doctor"]);
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert!(!out.contains("refused"), "{out}");
}
