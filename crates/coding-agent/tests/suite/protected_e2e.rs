//! Protected paths and the read-only view of the file system, end to end: the real `elph run`,
//! the real kernel (mount namespaces, Landlock), real git, and a fake model that tries what an
//! attacker would. Each test runs as root and, when the tests run as root (as CI does), again as
//! a user that is not root, made for the test with `setpriv` (a uid with no other files).
//!
//! The witnesses: evidence files that only an escaped command would create, the files' own
//! metadata, and the user's own git commands run afterwards outside any sandbox.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::elph;

/// The user that is not root: a uid nothing else on the machine owns.
pub(super) const OTHER_USER: u32 = 4242;
const SETPRIV: &str = "/usr/bin/setpriv";
const PYTHON: &str = "/usr/bin/python3";

/// Whether the kernel has Landlock; without it says why the test skips, or fails under
/// `ELPH_REQUIRE_LANDLOCK=1`.
pub(super) fn landlock(test: &str) -> bool {
    if elph_process::sandbox::landlock_support().available() {
        return true;
    }
    let why = format!("{test}: skipped: this kernel has no Landlock, so the sandbox cannot be tested here");
    if std::env::var_os("ELPH_REQUIRE_LANDLOCK").is_some_and(|v| v == "1") {
        panic!("{why}; ELPH_REQUIRE_LANDLOCK=1 forbids skipping");
    }
    eprintln!("{why}");
    false
}

/// Who the tests run as: the current user, and the other user when the current one is root.
pub(super) fn users() -> Vec<Option<u32>> {
    let mut users = vec![None];
    if nix::unistd::geteuid().is_root() && Path::new(SETPRIV).exists() {
        users.push(Some(OTHER_USER));
    } else {
        eprintln!("the non-root runs need root and {SETPRIV}; running as the current user only");
    }
    users
}

/// One test's world, owned by `user`.
pub(super) struct World {
    pub(super) env: TestEnv,
    pub(super) user: Option<u32>,
    pub(super) binary: PathBuf,
}

impl World {
    pub(super) fn new(user: Option<u32>) -> World {
        World::with(TestEnv::new(), user)
    }

    pub(super) fn with(env: TestEnv, user: Option<u32>) -> World {
        let mut binary = elph();
        if user.is_some() {
            std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            // A link to the binary where the other user can reach it (the build folder may not be).
            binary = env.root.path().join("elph");
            std::fs::hard_link(elph(), &binary)
                .or_else(|_| std::fs::copy(elph(), &binary).map(drop))
                .unwrap();
        }
        World { env, user, binary }
    }

    /// Gives every folder of the test to the test's user (after the test set them up as root).
    pub(super) fn hand_over(&self) {
        let Some(uid) = self.user else { return };
        std::fs::create_dir_all(&self.env.data_dir).unwrap();
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{uid}:{uid}"))
            .args([
                &self.env.home,
                &self.env.config_dir,
                &self.env.data_dir,
                &self.env.project,
            ])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// A command run as the test's user, outside any sandbox, in the project.
    pub(super) fn command(&self, program: &Path) -> Command {
        match self.user {
            None => self.env.command(program),
            Some(uid) => {
                let mut command = self.env.command(Path::new(SETPRIV));
                command
                    .arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .arg("--clear-groups")
                    .arg(program);
                command
            }
        }
    }

    /// The user's own shell command, unconfined (what runs after the session).
    pub(super) fn user_sh(&self, script: &str) -> Output {
        let mut command = self.command(Path::new("/bin/sh"));
        command.args(["-c", script]);
        output_within(command)
    }

    /// `elph run` against `server` with `args`.
    pub(super) async fn run(&self, server: &FakeModelServer, args: &[&str]) -> Output {
        let mut command = self.command(&self.binary);
        command
            .env("OPENAI_API_KEY", "sk-test-secret-key")
            .env("OPENAI_BASE_URL", server.base_url())
            .args(["run", "--model", "openai/gpt-test"])
            .args(args);
        tokio::task::spawn_blocking(move || output_within(command))
            .await
            .unwrap()
    }

    /// Has the model run `script` through `shell_exec` with `args`; returns everything the model
    /// was sent afterwards (the tool result among it).
    pub(super) async fn shell(&self, script: &str, args: &[&str]) -> String {
        let server = FakeModelServer::start(Wire::OpenAi).await;
        server.enqueue(FakeReply::tool_call("shell_exec", json!({ "command": script })));
        server.enqueue(FakeReply::text("done"));
        let mut all = args.to_vec();
        all.push("go");
        let output = self.run(&server, &all).await;
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        tool_results(&server)
    }

    pub(super) fn who(&self) -> String {
        match self.user {
            None => format!("as uid {}", nix::unistd::geteuid()),
            Some(uid) => format!("as uid {uid}"),
        }
    }
}

pub(super) fn output_within(command: Command) -> Output {
    assert_cmd::Command::from_std(command)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap()
}

/// The text of every tool result the model was sent.
pub(super) fn tool_results(server: &FakeModelServer) -> String {
    let mut text = String::new();
    for request in server.requests() {
        for message in request["messages"].as_array().into_iter().flatten() {
            if message["role"] == "tool" {
                match &message["content"] {
                    Value::String(content) => text.push_str(content),
                    other => text.push_str(&other.to_string()),
                }
                text.push('\n');
            }
        }
    }
    text
}

/// The exit status a probe script echoed as `name=N`.
pub(super) fn status_of(result: &str, name: &str) -> Option<i32> {
    let prefix = format!("{name}=");
    result
        .split(|c: char| c.is_whitespace() || c == '"' || c == '\\')
        .find_map(|word| word.strip_prefix(&prefix)?.parse().ok())
}

pub(super) fn refused(result: &str, name: &str) -> bool {
    status_of(result, name).is_some_and(|code| code != 0)
}

fn xattrs(path: &Path) -> String {
    let output = Command::new(PYTHON)
        .args([
            "-c",
            "import os,sys; print(os.listxattr(sys.argv[1], follow_symlinks=False))",
        ])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A python probe that tries chmod, chown, utime and setxattr on each path and prints
/// `NAME:PATH=0` when the change went through, `NAME:PATH=ERRNO` when it was refused.
fn metadata_probe(paths: &[&Path]) -> String {
    let list: Vec<String> = paths
        .iter()
        .map(|path| format!("{:?}", path.display().to_string()))
        .collect();
    format!(
        "{PYTHON} - <<'EOF'\n\
         import os\n\
         for p in [{}]:\n\
         \x20   for name, change in [\n\
         \x20       ('chmod', lambda: os.chmod(p, 0o777)),\n\
         \x20       ('chown', lambda: os.chown(p, os.getuid(), os.getgid())),\n\
         \x20       ('utime', lambda: os.utime(p, (1, 1))),\n\
         \x20       ('setxattr', lambda: os.setxattr(p, 'user.elph', b'x')),\n\
         \x20   ]:\n\
         \x20       try:\n\
         \x20           change(); print(f'{{name}}:{{p}}=0')\n\
         \x20       except OSError as e:\n\
         \x20           print(f'{{name}}:{{p}}={{e.errno}}')\n\
         EOF",
        list.join(", ")
    )
}

/// Outside the writable roots nothing changes, metadata included, in workspace-write, read-only
/// and plan, as root and not: `~/.bashrc` and CONFIG_DIR keep their mode, owner, times and
/// attributes. Inside the project (workspace-write) the same probe succeeds: the probe works.
#[tokio::test]
async fn metadata_outside_the_writable_roots_cannot_change_in_any_mode() {
    if !landlock("metadata_outside_the_writable_roots_cannot_change_in_any_mode")
        || !Path::new(PYTHON).exists()
    {
        return;
    }
    for user in users() {
        for mode in [&[][..], &["--sandbox", "read-only"][..], &["--mode", "plan"][..]] {
            let world = World::new(user);
            let env = &world.env;
            let bashrc = env.home.join(".bashrc");
            std::fs::write(&bashrc, "alias ls='ls -F'\n").unwrap();
            std::fs::set_permissions(&bashrc, std::fs::Permissions::from_mode(0o644)).unwrap();
            let inside = env.project.join("inside.txt");
            std::fs::write(&inside, "x").unwrap();
            world.hand_over();
            let before: Vec<(u32, i64, String)> = [&bashrc, &env.config_dir]
                .iter()
                .map(|path| {
                    let meta = std::fs::metadata(path).unwrap();
                    (meta.mode(), meta.mtime(), xattrs(path))
                })
                .collect();
            let script = metadata_probe(&[&bashrc, &env.config_dir, &inside]);
            let result = world.shell(&script, mode).await;
            let context = format!("{} {mode:?}: {result}", world.who());
            for path in [&bashrc, &env.config_dir] {
                for name in ["chmod", "chown", "utime", "setxattr"] {
                    let probe = format!("{name}:{}", path.display());
                    assert!(refused(&result, &probe), "{probe} was not refused, {context}");
                }
            }
            let after: Vec<(u32, i64, String)> = [&bashrc, &env.config_dir]
                .iter()
                .map(|path| {
                    let meta = std::fs::metadata(path).unwrap();
                    (meta.mode(), meta.mtime(), xattrs(path))
                })
                .collect();
            assert_eq!(before, after, "{context}");
            if mode.is_empty() {
                for name in ["chmod", "chown", "utime", "setxattr"] {
                    let probe = format!("{name}:{}", inside.display());
                    assert_eq!(
                        status_of(&result, &probe),
                        Some(0),
                        "{probe} inside the project, {context}"
                    );
                }
            }
        }
    }
}

/// Git's config, hooks and info, a nested repository's, `.claude/`, and a symlinked `.elph` hold
/// against a sandboxed shell; the `.git` folder cannot be renamed away and rebuilt; git's own work
/// (add, commit, branch, stash, checkout) still goes through. Afterwards the user's git runs
/// nothing the model wrote.
#[tokio::test]
async fn a_sandboxed_shell_cannot_plant_what_git_or_other_agents_run_later() {
    if !landlock("a_sandboxed_shell_cannot_plant_what_git_or_other_agents_run_later") {
        return;
    }
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let evidence = env.root.path().join("evidence");
        std::fs::create_dir_all(&evidence).unwrap();
        std::fs::set_permissions(&evidence, std::fs::Permissions::from_mode(0o777)).unwrap();
        // The project's `.elph` is a link to a folder inside the project.
        std::fs::create_dir_all(env.project.join("config/elph-real")).unwrap();
        std::fs::write(
            env.project.join("config/elph-real/hooks.json"),
            r#"{"hooks": []}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink("config/elph-real", env.project.join(".elph")).unwrap();
        std::fs::create_dir_all(env.project.join(".claude")).unwrap();
        std::fs::write(env.project.join(".claude/settings.json"), "{}").unwrap();
        world.hand_over();
        let setup = world.user_sh(
            "set -e; git init -q -b main . && git init -q -b main nested && \
             echo base > a.txt && git add a.txt && \
             git -c user.name=u -c user.email=u@x commit -qm base",
        );
        assert!(
            setup.status.success(),
            "{}",
            String::from_utf8_lossy(&setup.stderr)
        );
        let ev = evidence.display();
        let script = format!(
            "git config core.fsmonitor 'touch {ev}/fsmonitor'; echo \"fsmonitor=$?\"\n\
             git config core.hooksPath planted-hooks; echo \"hookspath=$?\"\n\
             printf '#!/bin/sh\\ntouch {ev}/hook\\n' > .git/hooks/pre-commit; echo \"hook=$?\"\n\
             mv .git moved-git; echo \"mvgit=$?\"\n\
             mv .git/hooks .git/hooks-old; echo \"mvhooks=$?\"\n\
             printf '#!/bin/sh\\ntouch {ev}/nested\\n' > nested/.git/hooks/post-checkout; echo \"nested=$?\"\n\
             git -C nested config core.fsmonitor 'touch {ev}/nested-fsmonitor'; echo \"nestedcfg=$?\"\n\
             echo '{{\"hooks\":{{}}}}' > .claude/settings.json; echo \"claude=$?\"\n\
             echo '{{}}' > .elph/hooks.json; echo \"elph=$?\"\n\
             rm .elph; echo \"rmlink=$?\"\n\
             mv config moved-config; echo \"mvtarget=$?\"\n\
             echo model > a.txt && git add a.txt && git -c user.name=m -c user.email=m@x commit -qm model; echo \"commit=$?\"\n\
             git branch topic; echo \"branch=$?\"\n\
             echo more >> a.txt && git stash -q; echo \"stash=$?\"\n\
             git checkout -q topic; echo \"checkout=$?\""
        );
        let result = world.shell(&script, &[]).await;
        let context = format!("{}: {result}", world.who());
        if std::env::var_os("ELPH_SHOW").is_some() {
            eprintln!("{context}");
        }
        for step in [
            "fsmonitor",
            "hookspath",
            "hook",
            "mvgit",
            "mvhooks",
            "nested",
            "nestedcfg",
            "claude",
            "elph",
            "rmlink",
            "mvtarget",
        ] {
            assert!(refused(&result, step), "{step} was not refused, {context}");
        }
        for step in ["commit", "branch", "stash", "checkout"] {
            assert_eq!(status_of(&result, step), Some(0), "{step} failed, {context}");
        }
        for words in [
            "is protected by the sandbox: a git repository's config (git runs what it names outside the sandbox",
            "is protected by the sandbox: a git repository's hooks",
            ".claude: another agent's or editor's configuration, which runs commands outside the sandbox",
            "is protected by the sandbox: the project's .elph folder",
            "holds",
        ] {
            assert!(result.contains(words), "the refusal says {words:?}, {context}");
        }
        assert!(
            env.project.join(".git/HEAD").is_file() && !env.project.join("moved-git").exists(),
            "{context}"
        );
        assert!(
            std::fs::symlink_metadata(env.project.join(".elph"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(env.project.join(".claude/settings.json")).unwrap(),
            "{}"
        );
        // The user's own git, unconfined, afterwards.
        let after = world.user_sh(
            "git status --short >/dev/null && git -c user.name=u -c user.email=u@x commit -q --allow-empty -m user && \
             git -C nested status --short >/dev/null && git -C nested -c user.name=u -c user.email=u@x commit -q \
             --allow-empty -m user && git checkout -q main && git log --format=%s",
        );
        let log = String::from_utf8_lossy(&after.stdout);
        assert!(
            after.status.success(),
            "{}",
            String::from_utf8_lossy(&after.stderr)
        );
        assert!(log.contains("model"), "the model's commit is there: {log}");
        let planted: Vec<_> = std::fs::read_dir(&evidence)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            planted.is_empty(),
            "the user's git ran what the model planted: {planted:?}, {context}"
        );
    }
}

/// With the project at HOME and CONFIG_DIR and DATA_DIR beneath it, their parents cannot be moved
/// aside to make a fresh CONFIG_DIR (`mv .config .config-moved && mkdir -p .config/elph`).
#[tokio::test]
async fn a_project_at_home_cannot_move_config_dir_aside() {
    if !landlock("a_project_at_home_cannot_move_config_dir_aside") {
        return;
    }
    for user in users() {
        let (world, home) = world_at_home(user, true);
        let config = home.join(".config/elph");
        let server = FakeModelServer::start(Wire::OpenAi).await;
        server.enqueue(FakeReply::tool_call(
            "shell_exec",
            json!({ "command": "mv .config .config-moved; echo \"mvconfig=$?\"\n\
                                mkdir -p .config/elph && echo '{}' > .config/elph/hooks.json; echo \"fresh=$?\"\n\
                                mv .local/share x; echo \"mvdata=$?\"\n\
                                echo '{\"directories\":{\"/\":true}}' > .config/elph/trust.json; echo \"trust=$?\"\n\
                                echo ok > notes.txt; echo \"inside=$?\"" }),
        ));
        let result = run_at_home(&world, &home, &server).await;
        let context = format!("{}: {result}", world.who());
        for step in ["mvconfig", "fresh", "mvdata", "trust"] {
            assert!(refused(&result, step), "{step} was not refused, {context}");
        }
        assert_eq!(status_of(&result, "inside"), Some(0), "{context}");
        assert!(result.contains("CONFIG_DIR"), "{context}");
        assert!(
            !home.join(".config-moved").exists() && !config.join("hooks.json").exists(),
            "{context}"
        );
        assert_eq!(
            std::fs::read_to_string(config.join("trust.json")).unwrap(),
            r#"{"directories":{}}"#
        );
    }
}

/// A first run, with the project at HOME and no DATA_DIR yet: Elph makes DATA_DIR before it works
/// out the sandbox, so DATA_DIR is held read-only like any other protected place. (Were it made
/// after, by the store opening beside the policy, the policy would count it as missing, it would
/// exist by the first command, and nothing would hold it: the model could rewrite the session
/// store or move it aside.) As root and as a user that is not.
#[tokio::test]
async fn a_first_run_at_home_holds_the_data_dir_it_makes() {
    if !landlock("a_first_run_at_home_holds_the_data_dir_it_makes") {
        return;
    }
    for user in users() {
        let (world, home) = world_at_home(user, false);
        let data = home.join(".local/share/elph");
        assert!(!data.exists(), "the test needs a first run");
        let server = FakeModelServer::start(Wire::OpenAi).await;
        let d = data.display();
        server.enqueue(FakeReply::tool_call(
            "shell_exec",
            json!({ "command": format!(
                "echo planted > {d}/planted; echo \"plant=$?\"\n\
                 echo garbage >> {d}/sessions.db; echo \"db=$?\"\n\
                 mv {d} {d}-moved; echo \"mvdata=$?\"\n\
                 mv .local .local-moved; echo \"mvlocal=$?\"\n\
                 echo ok > notes.txt; echo \"inside=$?\"") }),
        ));
        let result = run_at_home(&world, &home, &server).await;
        let context = format!("{}: {result}", world.who());
        for step in ["plant", "db", "mvdata", "mvlocal"] {
            assert!(refused(&result, step), "{step} was not refused, {context}");
        }
        assert_eq!(status_of(&result, "inside"), Some(0), "{context}");
        assert!(result.contains("DATA_DIR"), "{context}");
        assert!(!data.join("planted").exists(), "{context}");
        assert!(!home.join(".local/share/elph-moved").exists(), "{context}");
        // The session was stored where it belongs, in a store nothing else wrote to.
        let db = rusqlite::Connection::open(data.join("sessions.db")).unwrap();
        let sessions: i64 = db
            .query_row("SELECT count(*) FROM sessions", [], |row| row.get(0))
            .unwrap();
        assert_eq!(sessions, 1, "{context}");
        let check: String = db
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(check, "ok", "{context}");
    }
}

/// A project that is `user`'s HOME, with CONFIG_DIR at its XDG place beneath it (trusting
/// nothing) and DATA_DIR there too when `with_data_dir`, handed over to `user`.
fn world_at_home(user: Option<u32>, with_data_dir: bool) -> (World, PathBuf) {
    let env = TestEnv::new();
    let home = env.project.clone();
    let config = home.join(".config/elph");
    std::fs::create_dir_all(&config).unwrap();
    if with_data_dir {
        std::fs::create_dir_all(home.join(".local/share/elph")).unwrap();
    }
    std::fs::write(config.join("trust.json"), r#"{"directories":{}}"#).unwrap();
    let world = World::with(env, user);
    world.hand_over();
    (world, home)
}

/// Runs `elph run` as `world`'s user with the project as HOME (CONFIG_DIR and DATA_DIR at their
/// XDG places beneath it), after the model's queued replies and a closing "done"; returns what the
/// model was handed back.
async fn run_at_home(world: &World, home: &Path, server: &FakeModelServer) -> String {
    server.enqueue(FakeReply::text("done"));
    let mut command = world.command(&world.binary);
    command
        .env("HOME", home)
        .env("ELPH_HOME", home.join(".config/elph"))
        .env("ELPH_DATA_DIR", home.join(".local/share/elph"))
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test", "go"]);
    let output = tokio::task::spawn_blocking(move || output_within(command))
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    tool_results(server)
}

/// The native write tools refuse the same protected paths, by name, whether they exist or not
/// (a repository made during the session included), and say which protection refused them; as
/// root and as a user that is not.
#[tokio::test]
async fn the_native_write_tools_refuse_the_same_protected_paths() {
    for user in users() {
        native_write_tools_refuse_as(user).await;
    }
}

async fn native_write_tools_refuse_as(user: Option<u32>) {
    let world = World::new(user);
    let env = &world.env;
    world.hand_over();
    let setup = world.user_sh("git init -q -b main . && mkdir .claude");
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let attempts = [
        (".git/config", "a git repository's config"),
        (".git/hooks/pre-commit", "a git repository's hooks"),
        ("fresh/.git/hooks/pre-commit", "a git repository's hooks"),
        (
            ".claude/settings.json",
            ".claude: another agent's or editor's configuration",
        ),
        (
            ".mcp.json",
            ".mcp.json: another agent's or editor's configuration",
        ),
    ];
    for (path, _) in attempts {
        server.enqueue(FakeReply::tool_call(
            "write_file",
            json!({ "path": path, "content": "#!/bin/sh\ntouch /tmp/planted\n" }),
        ));
    }
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({ "path": "notes.txt", "content": "ok" }),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = world.run(&server, &["go"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = tool_results(&server);
    for (path, why) in attempts {
        let words = format!("Tool call refused: write_file would write {path} ({why}");
        assert!(result.contains(&words), "{words:?} in {result}");
        assert!(
            !env.project.join(path).is_file() || *path == *".git/config",
            "{path} was written"
        );
    }
    assert!(
        !std::fs::read_to_string(env.project.join(".git/config"))
            .unwrap()
            .contains("planted")
    );
    assert_eq!(
        std::fs::read_to_string(env.project.join("notes.txt")).unwrap(),
        "ok"
    );
}
