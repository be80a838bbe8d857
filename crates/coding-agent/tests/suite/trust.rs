//! Project trust through the real binary: `elph trust`, `elph untrust`, `elph trust --status`, the
//! startup gate without a terminal, concurrency, and the canary (nothing runs, nothing is written).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const ELPH: &str = env!("CARGO_BIN_EXE_elph");
const DEADLINE: Duration = Duration::from_secs(60);

/// A hermetic world: HOME, CONFIG_DIR (ELPH_HOME), DATA_DIR and a folder for projects.
struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
    data: PathBuf,
    projects: PathBuf,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        let world = World {
            home: base.join("home"),
            config: base.join("config"),
            data: base.join("data"),
            projects: base.join("projects"),
            _root: root,
        };
        std::fs::create_dir(&world.home).unwrap();
        std::fs::create_dir(&world.projects).unwrap();
        world
    }

    /// A project folder (created), canonical.
    fn project(&self, relative: &str) -> PathBuf {
        let dir = self.projects.join(relative);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(dir).unwrap()
    }

    fn trust_file(&self) -> PathBuf {
        self.config.join("trust.json")
    }

    fn write_trust(&self, text: &str) {
        std::fs::create_dir_all(&self.config).unwrap();
        std::fs::write(self.trust_file(), text).unwrap();
    }

    fn read_trust(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.trust_file()).unwrap()).unwrap()
    }

    fn command(&self, config: &Path) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::new(ELPH);
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("ELPH_HOME", config)
            .env("ELPH_DATA_DIR", &self.data)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(&self.projects)
            .timeout(DEADLINE);
        cmd
    }

    /// Runs `elph ARGS` with stdin from /dev/null.
    fn run(&self, args: &[&str]) -> Output {
        self.run_with_config(&self.config, args)
    }

    fn run_with_config(&self, config: &Path, args: &[&str]) -> Output {
        let mut cmd = self.command(config);
        cmd.args(args);
        let output = cmd.output().unwrap();
        assert!(
            output.status.code().is_some(),
            "elph {args:?} did not exit normally (timed out?): {output:?}"
        );
        output
    }

    /// `elph trust --status --json DIR`.
    fn status(&self, dir: &Path) -> Value {
        let output = self.run(&["trust", "--status", "--json", dir.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "elph {args:?}\nstdout: {}\nstderr: {}",
            text(&output.stdout),
            text(&output.stderr)
        );
        text(&output.stdout)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn trust_is_inherited_from_a_trusted_parent() {
    let world = World::new();
    let parent = world.project("parent");
    let child = world.project("parent/child");
    let out = world.ok(&["trust", s(&parent)]);
    assert!(out.contains(&format!("Trusted {}.", parent.display())), "{out}");
    let status = world.status(&child);
    assert_eq!(
        status,
        json!({
            "projectDir": child,
            "trusted": true,
            "source": {"kind": "entry", "path": parent, "trusted": true},
            "default": "ask",
            "trustFile": world.trust_file(),
        })
    );
    let human = world.ok(&["trust", "--status", "--cwd", s(&child)]);
    assert_eq!(
        human,
        format!(
            "{}: trusted\ndecided by entry {} = true\nnot pinned: trusted by path only, so a change to \
             its hooks would run without a question; run `elph trust` here to pin what is there now\n\
             default: ask\ntrust file: {}\n",
            child.display(),
            parent.display(),
            world.trust_file().display()
        )
    );
}

#[test]
fn an_explicit_false_under_a_trusted_parent_wins() {
    let world = World::new();
    let parent = world.project("parent");
    let child = world.project("parent/child");
    world.ok(&["trust", s(&parent)]);
    let out = world.ok(&["untrust", s(&child)]);
    assert!(
        out.contains(&format!("no longer inherits trust from {}", parent.display())),
        "{out}"
    );
    let status = world.status(&child);
    assert_eq!(status["trusted"], false);
    assert_eq!(
        status["source"],
        json!({"kind": "entry", "path": child, "trusted": false})
    );
    assert_eq!(world.status(&parent)["trusted"], true);
    let file = world.read_trust();
    assert_eq!(file["directories"], json!({s(&parent): true, s(&child): false}));
    // Trusting pinned the parent's content; the explicit false pins nothing.
    let pins = file["pins"].as_object().unwrap();
    assert_eq!(pins.keys().collect::<Vec<_>>(), [s(&parent)]);
}

#[test]
fn an_explicit_true_under_an_untrusted_parent_wins() {
    let world = World::new();
    let parent = world.project("parent");
    let child = world.project("parent/child");
    world.write_trust(&json!({"directories": {s(&parent): false}}).to_string());
    world.ok(&["trust", "--cwd", s(&child)]);
    assert_eq!(world.status(&child)["trusted"], true);
    assert_eq!(world.status(&parent)["trusted"], false);
    assert_eq!(world.status(&world.project("parent/other"))["trusted"], false);
}

#[test]
fn untrust_is_refused_unless_the_project_is_trusted() {
    let world = World::new();
    let project = world.project("p");
    let output = world.run(&["untrust", s(&project)]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("{} is not trusted", project.display()))
            && stderr.contains("nothing to untrust")
            && stderr.contains("decided by the default (ask)"),
        "{stderr}"
    );
    assert!(!world.config.exists(), "a refused untrust writes nothing");
}

#[test]
fn a_project_reached_through_a_symlink_is_decided_by_its_canonical_path() {
    let world = World::new();
    let real = world.project("real");
    let link = world.projects.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    world.ok(&["trust", "--cwd", s(&link)]);
    assert_eq!(world.read_trust()["directories"], json!({s(&real): true}));
    let through_link = world.status(&link);
    assert_eq!(through_link["projectDir"], json!(real));
    assert_eq!(through_link["trusted"], true);

    // A trusted key that is a link (as a trusted folder replaced by a link would be) trusts
    // nothing: where it points is decided by its own entries, with a warning.
    world.write_trust(&json!({"directories": {s(&link): true}}).to_string());
    let status = world.status(&link);
    assert_eq!(status["trusted"], false, "{status}");
    assert_eq!(status["source"], json!({"kind": "default"}));
    let warnings = status["warnings"].to_string();
    assert!(
        warnings.contains("is now a symbolic link to") && warnings.contains("it trusts nothing"),
        "{status}"
    );
    // Trusting the folder then replaces the link key with the folder's own.
    world.ok(&["trust", "--cwd", s(&link)]);
    assert_eq!(world.read_trust()["directories"], json!({s(&real): true}));
    assert_eq!(world.status(&link)["trusted"], true);
}

#[test]
fn a_trusted_folder_replaced_by_a_link_does_not_trust_the_links_target() {
    let world = World::new();
    let trusted = world.project("trusted");
    let evil = world.project("evil");
    world.ok(&["trust", "--cwd", s(&trusted)]);
    std::fs::remove_dir_all(&trusted).unwrap();
    std::os::unix::fs::symlink(&evil, &trusted).unwrap();
    let status = world.status(&trusted);
    assert_eq!(status["projectDir"], json!(evil));
    assert_eq!(status["trusted"], false, "{status}");
    assert!(
        status["warnings"]
            .to_string()
            .contains(&format!("is now a symbolic link to {}", evil.display())),
        "{status}"
    );
    let human = world.ok(&["trust", "--status", "--cwd", s(&trusted)]);
    assert!(human.contains("it trusts nothing"), "{human}");
}

#[test]
fn tilde_and_home_keys_are_expanded_and_kept_as_written() {
    let world = World::new();
    let code = world.home.join("code");
    let project = code.join("p");
    let other = world.home.join("other");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    world.write_trust(r#"{"directories": {"~/code": true, "$HOME/other": true}}"#);
    let status = world.status(&project);
    assert_eq!(status["trusted"], true);
    assert_eq!(
        status["source"],
        json!({"kind": "entry", "path": code, "trusted": true})
    );
    assert_eq!(world.status(&other)["trusted"], true);
    assert_eq!(world.status(&world.home)["trusted"], false);

    world.ok(&["untrust", s(&code)]);
    assert_eq!(
        world.read_trust(),
        json!({"directories": {"~/code": false, "$HOME/other": true}}),
        "the key is updated as written, not duplicated"
    );
}

#[test]
fn each_default_value() {
    let world = World::new();
    let project = world.project("p");
    let trusted_entry = world.project("t");
    let cases = [
        (None, "ask", false),
        (Some(r#"{}"#), "ask", false),
        (Some(r#"{"defaultProjectTrust": "ask"}"#), "ask", false),
        (Some(r#"{"defaultProjectTrust": "never"}"#), "never", false),
        (Some(r#"{"defaultProjectTrust": "always"}"#), "always", true),
        (Some(r#"{"default_project_trust": "always"}"#), "always", true),
        (Some(r#"{"default_project_trust": "never"}"#), "never", false),
    ];
    for (file, default, trusted) in cases {
        let _ = std::fs::remove_file(world.trust_file());
        if let Some(file) = file {
            world.write_trust(file);
        }
        let status = world.status(&project);
        assert_eq!(status["default"], default, "{file:?}");
        assert_eq!(status["trusted"], trusted, "{file:?}");
        assert_eq!(status["source"], json!({"kind": "default"}), "{file:?}");

        // The startup gate without a terminal.
        let output = world.run(&["--cwd", s(&project)]);
        let stderr = text(&output.stderr);
        match default {
            "always" => assert_ne!(output.status.code(), Some(4), "{stderr}"),
            "never" => {
                assert_eq!(output.status.code(), Some(4), "{stderr}");
                let line = format!("elph: project is not trusted ({})", project.display());
                assert_eq!(stderr.lines().next(), Some(line.as_str()), "{stderr}");
            }
            _ => {
                assert_eq!(output.status.code(), Some(4), "{stderr}");
                assert_eq!(
                    stderr.lines().next(),
                    Some("elph: project trust not given: there is no terminal to ask on; exiting")
                );
                assert!(stderr.contains("elph trust"), "says what to do next: {stderr}");
            }
        }

        // An explicit entry beats every default.
        let mut with_entry: Value = serde_json::from_str(file.unwrap_or("{}")).unwrap();
        with_entry["directories"] = json!({s(&trusted_entry): true, s(&project): false});
        world.write_trust(&with_entry.to_string());
        assert_eq!(world.status(&trusted_entry)["trusted"], true, "{file:?}");
        assert_eq!(world.status(&project)["trusted"], false, "{file:?}");
        if default == "always" {
            // An explicit false under `always` goes on (with its hooks off), without a question.
            let output = world.run(&["--cwd", s(&project)]);
            assert_ne!(output.status.code(), Some(4), "{}", text(&output.stderr));
        }
    }
}

#[test]
fn a_corrupt_trust_file_means_untrusted_is_reported_and_never_overwritten() {
    let world = World::new();
    let project = world.project("p");
    let corrupt = "{\"directories\": {\"/x\": tru";
    world.write_trust(corrupt);
    let trust_file = world.trust_file().display().to_string();

    let output = world.run(&["trust", "--status", s(&project)]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("not trusted"), "{stdout}");
    assert!(stdout.contains(&format!("{trust_file} is corrupt")), "{stdout}");
    assert!(
        stdout.contains("line 1 column"),
        "names the parse error: {stdout}"
    );
    let json = world.status(&project);
    assert_eq!(json["trusted"], false);
    assert_eq!(json["default"], Value::Null);
    assert_eq!(json["source"]["kind"], "error");

    for args in [vec!["trust", s(&project)], vec!["untrust", s(&project)]] {
        let output = world.run(&args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(&format!("{trust_file} is corrupt")), "{stderr}");
        assert!(stderr.contains("Fix or remove it"), "{stderr}");
    }

    let output = world.run(&["--cwd", s(&project)]);
    assert_eq!(output.status.code(), Some(4));
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&format!("{trust_file} is corrupt")), "{stderr}");

    assert_eq!(std::fs::read_to_string(world.trust_file()).unwrap(), corrupt);
    let names: Vec<_> = std::fs::read_dir(&world.config)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["trust.json"], "no lock file, no temporary file");
}

/// Whether writes to `dir` really fail (they do not for root, whatever the mode says).
fn writes_fail_in(dir: &Path) -> bool {
    let probe = dir.join(".probe");
    match std::fs::write(&probe, "x") {
        Ok(()) => {
            let _ = std::fs::remove_file(probe);
            false
        }
        Err(_) => true,
    }
}

#[test]
fn a_read_only_config_dir_is_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    let project = world.project("p");
    let seeded = json!({"directories": {s(&project): true}}).to_string();
    world.write_trust(&seeded);
    std::fs::set_permissions(&world.config, std::fs::Permissions::from_mode(0o500)).unwrap();
    let (config, named) = if writes_fail_in(&world.config) {
        (world.config.clone(), world.config.clone())
    } else {
        // Running as root: permission bits do not stop writes. A CONFIG_DIR below a regular file
        // cannot be created or written either, for anyone.
        let file = world.home.join("not-a-folder");
        std::fs::write(&file, "").unwrap();
        (file.join("elph"), file)
    };
    for args in [vec!["trust", s(&project)], vec!["untrust", s(&project)]] {
        let output = world.run_with_config(&config, &args);
        std::fs::set_permissions(&world.config, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.starts_with("elph: "), "{stderr}");
        assert!(
            stderr.contains(&named.display().to_string()),
            "names the path: {stderr}"
        );
        assert!(stderr.contains(&project.display().to_string()), "{stderr}");
        std::fs::set_permissions(&world.config, std::fs::Permissions::from_mode(0o500)).unwrap();
    }
    std::fs::set_permissions(&world.config, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(std::fs::read_to_string(world.trust_file()).unwrap(), seeded);
}

#[test]
fn fifty_processes_trusting_fifty_folders_lose_no_entry() {
    let world = World::new();
    // A file of some size, so that each read-modify-write takes a while and unlocked writers
    // would overlap.
    let mut seeded = serde_json::Map::new();
    seeded.insert("/already/here".into(), json!(false));
    for i in 0..3000 {
        seeded.insert(format!("/seeded/folder/number/{i:05}"), json!(i % 2 == 0));
    }
    world.write_trust(
        &json!({"defaultProjectTrust": "ask", "futureField": {"kept": true}, "directories": seeded})
            .to_string(),
    );
    let dirs: Vec<PathBuf> = (0..50).map(|i| world.project(&format!("p{i:02}"))).collect();

    // Hold the sidecar lock while all fifty start: each must wait for it.
    let lock = std::fs::File::create(world.config.join("trust.json.lock")).unwrap();
    lock.lock().unwrap();
    let trust = |dir: &PathBuf| {
        let child = std::process::Command::new(ELPH)
            .env_clear()
            .env("HOME", &world.home)
            .env("ELPH_HOME", &world.config)
            .env("ELPH_DATA_DIR", &world.data)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(["trust", s(dir)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (dir.clone(), child)
    };
    let mut children: Vec<(PathBuf, std::process::Child)> = dirs.iter().map(trust).collect();
    std::thread::sleep(Duration::from_millis(500));
    for (dir, child) in &mut children {
        assert!(
            child.try_wait().unwrap().is_none(),
            "elph trust {} finished while another process held trust.json.lock",
            dir.display()
        );
    }
    drop(lock);

    // Each waiter gives up after 10 s without progress in the queue; on a loaded machine a holder
    // can take that long, and a waiter then says so and records nothing. The ones that gave up are
    // started again, all at once (as a user would rerun the command): the concurrency stays, and
    // any other failure, or an entry missing after a success, still fails the test.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut failures = Vec::new();
    let mut waves = 0;
    while !children.is_empty() {
        waves += 1;
        let mut gave_up = Vec::new();
        for (dir, mut child) in children.drain(..) {
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("elph trust {} did not finish in time", dir.display());
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            if !status.success() {
                let mut stderr = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
                if stderr.contains("without finishing a change, so nothing was recorded") {
                    gave_up.push(dir);
                } else {
                    failures.push(format!("{}: {status}: {stderr}", dir.display()));
                }
            }
        }
        if !gave_up.is_empty() {
            eprintln!(
                "wave {waves}: {} gave up waiting for the lock; running them again",
                gave_up.len()
            );
        }
        children = gave_up.iter().map(trust).collect();
    }
    assert!(failures.is_empty(), "{failures:#?}");

    let file = world.read_trust();
    assert_eq!(file["futureField"], json!({"kept": true}));
    assert_eq!(file["defaultProjectTrust"], "ask");
    let entries = file["directories"].as_object().unwrap();
    assert_eq!(entries.len(), 3051);
    assert_eq!(entries["/already/here"], false);
    assert_eq!(entries["/seeded/folder/number/00002"], true);
    for dir in &dirs {
        assert_eq!(entries.get(s(dir)), Some(&json!(true)), "{}", dir.display());
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(world.trust_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let mut names: Vec<String> = std::fs::read_dir(&world.config)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["trust.json", "trust.json.lock"],
        "no temporary file left behind"
    );
}

/// Every file and folder under `dir`, with file contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            if path.is_dir() {
                stack.push(path);
                found.insert(relative, None);
            } else {
                found.insert(relative, Some(std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    found
}

/// The commands that must neither run an untrusted project's hooks nor write anything into it.
/// Add `doctor`, `doctor --json` and `hooks test sessionStart` here once they exist.
const CANARY_COMMANDS: &[&[&str]] = &[
    &["hooks", "list"],
    &["hooks", "list", "--json"],
    &["hooks", "validate"],
    &["trust", "--status"],
    &["trust", "--status", "--json"],
    &["doctor"],
    &["doctor", "--json"],
    &["hooks", "test", "sessionStart"],
    &["hooks", "test", "sessionStart", "--json"],
    // `elph` itself, with no terminal (stdin from /dev/null).
    &[],
];

#[test]
fn an_untrusted_project_runs_no_hook_and_gets_no_file() {
    let world = World::new();
    let project = world.project("untrusted");
    let canary = world.home.join("CANARY");
    std::fs::create_dir(project.join(".elph")).unwrap();
    let hook = json!({
        "hooks": [{
            "id": "canary",
            "event": "sessionStart",
            "command": "/bin/sh",
            "args": ["-c", format!("echo ran > '{}'; mkdir -p .elph/created", canary.display())],
        }]
    });
    std::fs::write(project.join(".elph/hooks.json"), hook.to_string()).unwrap();
    let before = snapshot(&project);

    for args in CANARY_COMMANDS {
        let mut cmd = world.command(&world.config);
        cmd.args(*args).arg("--cwd").arg(&project).current_dir(&project);
        let output = cmd.output().unwrap();
        let code = output.status.code();
        assert!(
            code.is_some(),
            "elph {args:?} timed out or was killed: {output:?}"
        );
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        if args.first() == Some(&"hooks") && args.get(1) == Some(&"list") {
            assert!(
                all.contains(&format!(
                    "project hooks skipped until {} is trusted",
                    project.display()
                )),
                "elph {args:?}: {all}"
            );
        }
        if args.is_empty() {
            assert_eq!(code, Some(4), "{all}");
        }
        assert!(!canary.exists(), "elph {args:?} ran the untrusted project's hook");
        assert_eq!(snapshot(&project), before, "elph {args:?} wrote into the project");
    }
    assert!(!world.config.exists(), "nothing was written to CONFIG_DIR");

    // A real headless session (offline scripted model) in the untrusted project: sessionStart fires,
    // but not the project's hook, and nothing lands inside the project. (`elph acp` in an untrusted
    // cwd is covered by the ACP tests.)
    let script = world.home.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello"}]}"#).unwrap();
    let model = format!("scripted/{}", script.display());
    for extra in [&["--no-session"][..], &[][..]] {
        let mut cmd = world.command(&world.config);
        cmd.args(["run", "--model", &model, "--cwd"])
            .arg(&project)
            .args(extra)
            .arg("hi")
            .current_dir(&project);
        let output = cmd.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        assert!(
            text(&output.stderr).contains("project hook(s) are OFF in this run"),
            "{output:?}"
        );
        assert!(!canary.exists(), "elph run ran the untrusted project's hook");
        assert_eq!(snapshot(&project), before, "elph run wrote into the project");
    }

    // The fixture is live: once trusted, the same file loads its hook.
    world.ok(&["trust", s(&project)]);
    let list = world.ok(&["hooks", "list", "--json", "--cwd", s(&project)]);
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["hooks"][0]["id"], "canary", "{list}");
}

#[test]
fn elph_without_a_terminal_writes_nothing_anywhere() {
    let world = World::new();
    let project = world.project("p");
    let before = snapshot(&world.projects);
    let output = world.run(&["--cwd", s(&project)]);
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(
        text(&output.stderr).lines().next(),
        Some("elph: project trust not given: there is no terminal to ask on; exiting")
    );
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    assert_eq!(snapshot(&world.projects), before);
    assert!(!world.config.exists());
    assert!(!world.data.exists());
    assert_eq!(snapshot(&world.home), BTreeMap::new());
}

#[test]
fn status_json_needs_status_and_a_missing_dir_is_a_clear_error() {
    let world = World::new();
    let output = world.run(&["trust", "--json"]);
    assert_eq!(output.status.code(), Some(2));
    let missing = world.projects.join("missing");
    let output = world.run(&["trust", s(&missing)]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(!world.config.exists());
}
