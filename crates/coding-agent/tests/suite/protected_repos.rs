//! Git repositories made or redirected during a session, end to end: whatever a sandboxed
//! command, `elph sandbox` or a sandboxed hook makes (a nested `git init` with a hook and
//! `core.fsmonitor`, a `core.hooksPath` folder, a bare repository, `.git` files and links pointing
//! at one, a `commondir` that moves the project's config, a submodule added in the session, a
//! background process that writes after its command ended), the user's own `git status` and
//! `git commit` afterwards run nothing the model wrote, and the model is told what was refused.
//! As root and as a user that is not root (see `protected_e2e`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::protected_e2e::{World, landlock, output_within, refused, status_of, tool_results, users};

/// A folder every user may write, where only a hook the model planted would leave a file.
fn evidence(world: &World) -> PathBuf {
    let evidence = world.env.root.path().join("evidence");
    std::fs::create_dir_all(&evidence).unwrap();
    std::fs::set_permissions(&evidence, std::fs::Permissions::from_mode(0o777)).unwrap();
    evidence
}

/// A shell line that plants, in repository `repo`, a pre-commit hook, a post-checkout hook and a
/// `core.fsmonitor`, each of which would leave `NAME-…` in `evidence`.
fn plant(repo: &str, evidence: &Path) -> String {
    let ev = evidence.display();
    let name = repo.replace('/', "_");
    format!(
        "h=$(git -C {repo} rev-parse --path-format=absolute --git-path hooks) && mkdir -p $h && \
         for n in pre-commit post-checkout post-commit; do \
         printf '#!/bin/sh\\ntouch {ev}/{name}-'$n'\\n' > $h/$n && chmod +x $h/$n; done && \
         git -C {repo} config core.fsmonitor 'touch {ev}/{name}-fsmonitor; false'"
    )
}

/// What the user's own git, unconfined, runs in each of `dirs` (relative to the project).
fn users_git(world: &World, dirs: &[&str]) -> String {
    let mut script = String::new();
    for dir in dirs {
        script.push_str(&format!(
            "(cd {dir} 2>/dev/null && git status --short; git -c user.name=u -c user.email=u@x commit -q \
             --allow-empty -m user; git checkout -q -b user-branch) >/dev/null 2>&1\n"
        ));
    }
    let output = world.user_sh(&script);
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn planted(evidence: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(evidence)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The user's repository with one commit, made by the user.
fn user_repository(world: &World) {
    let setup = world.user_sh(
        "set -e; git init -q -b main . && echo base > a.txt && git add a.txt && \
         git -c user.name=u -c user.email=u@x commit -qm base",
    );
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
}

/// The second command: waits (up to 20 s) until the background process of the first one has
/// planted everything in `late`.
const WAIT_FOR_LATE: &str =
    "for i in $(seq 200); do grep -qs fsmonitor late/.git/config && break; sleep 0.1; done; echo slept";

/// The sessionEnd hook: waits (up to 20 s) until the background process of the last command has
/// planted everything in `tail`, so that it was all there before the session's last look.
const WAIT_FOR_TAIL: &str =
    "for i in $(seq 200); do grep -qs fsmonitor tail/.git/config && break; sleep 0.1; done";

/// Through `shell_exec`, in a project that is a repository: nested repositories with hooks and
/// fsmonitor, one with a `core.hooksPath` folder, a bare repository with `.git` files and links
/// pointing at it, a `commondir` written into the project's own `.git`, a worktree of the
/// project (which stays), and a background process that makes one after its command ended and
/// another after the last command (caught when the session ends). The user's git runs nothing.
#[tokio::test]
async fn repositories_made_by_the_shell_run_nothing_for_the_user() {
    if !landlock("repositories_made_by_the_shell_run_nothing_for_the_user") {
        return;
    }
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let evidence = evidence(&world);
        // A sessionEnd hook of the user's that takes a while: the background process of the last
        // command writes while it runs, before the session's last look.
        std::fs::write(
            env.config_dir.join("hooks.json"),
            serde_json::to_string(&json!({"hooks": [{
                "id": "slow-end", "event": "sessionEnd", "command": "/bin/sh", "args": ["-c", WAIT_FOR_TAIL], "timeoutMs": 30000
            }]}))
            .unwrap(),
        )
        .unwrap();
        world.hand_over();
        user_repository(&world);
        let ev = evidence.display();
        // The control (the project's own commit) and the worktree go first; the `commondir`
        // that redirects the project's repository last.
        let first = format!(
            "echo model > a.txt && git add a.txt && git -c user.name=m -c user.email=m@x commit -qm model; echo commit=$?\n\
             git worktree add -q --detach wt; echo worktree=$?\n\
             git init -q sub && {}; echo sub=$?\n\
             git init -q hp && mkdir hp/planted && printf '#!/bin/sh\\ntouch {ev}/hookspath\\n' > hp/planted/pre-commit && \
             chmod +x hp/planted/pre-commit && git -C hp config core.hooksPath planted; echo hookspath=$?\n\
             git init -q --bare bare.git && git -C bare.git config core.fsmonitor 'touch {ev}/bare; false' && \
             printf '#!/bin/sh\\ntouch {ev}/bare-hook\\n' > bare.git/hooks/pre-commit && chmod +x bare.git/hooks/pre-commit; echo bare=$?\n\
             mkdir pointed && echo 'gitdir: ../bare.git' > pointed/.git; echo pointed=$?\n\
             mkdir linked && ln -s ../bare.git linked/.git; echo linked=$?\n\
             (sleep 1; git init -q late && {}) >/dev/null 2>&1 &\n\
             echo ../bare.git > .git/commondir; echo commondir=$?",
            plant("sub", &evidence),
            plant("late", &evidence)
        );
        // And one that leaves its process group and waits past the session's end.
        let last = format!(
            "(sleep 1; git init -q tail && {}) >/dev/null 2>&1 &\n\
             setsid sh -c '{}' >/dev/null 2>&1 &\n\
             echo started",
            plant("tail", &evidence),
            format!("sleep 6; git init -q escaped && {}", plant("escaped", &evidence)).replace('\'', "'\\''")
        );
        let server = FakeModelServer::start(Wire::OpenAi).await;
        server.enqueue(FakeReply::tool_call("shell_exec", json!({ "command": first })));
        server.enqueue(FakeReply::tool_call(
            "shell_exec",
            json!({ "command": WAIT_FOR_LATE }),
        ));
        server.enqueue(FakeReply::tool_call("shell_exec", json!({ "command": last })));
        server.enqueue(FakeReply::text("done"));
        let output = world.run(&server, &["go"]).await;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        let result = tool_results(&server);
        let context = format!("{}: {result}\nstderr: {stderr}", world.who());
        if std::env::var_os("ELPH_SHOW").is_some() {
            eprintln!("{context}");
        }
        for step in [
            "sub",
            "hookspath",
            "bare",
            "pointed",
            "linked",
            "commondir",
            "worktree",
            "commit",
        ] {
            assert_eq!(
                status_of(&result, step),
                Some(0),
                "{step}: the commands themselves run, {context}"
            );
        }
        let project = env.project.display();
        for words in [
            format!("Refused: {project}/sub/.git is a git repository made by a sandboxed command"),
            format!("{project}/hp/.git is a git repository made by a sandboxed command"),
            format!("{project}/bare.git is a git repository made by a sandboxed command"),
            format!("Refused: {project}/pointed/.git points git at that repository"),
            format!("Refused: {project}/linked/.git points git at that repository"),
            format!("Refused: {project}/.git/commondir was written by a sandboxed command"),
            format!("Refused: {project}/late/.git is a git repository made by a sandboxed command"),
            "git runs a repository's hooks and the commands its config names (core.fsmonitor, core.hooksPath, …) outside the sandbox".to_string(),
            "ask the user to create the repository".to_string(),
        ] {
            assert!(result.contains(&words), "the tool results say {words:?}, {context}");
        }
        assert!(
            stderr.contains(&format!(
                "{project}/tail/.git is a git repository made by a sandboxed command"
            )),
            "the end of the session refused what the last background process made: {context}"
        );
        assert!(
            env.project.join("wt/.git").is_file(),
            "a worktree of the project stays, {context}"
        );
        // The process that left its group died with the session's sandbox (its PID namespace).
        std::thread::sleep(std::time::Duration::from_secs(7));
        assert!(
            !env.project.join("escaped").exists(),
            "a process that left its group outlived the session and wrote, {context}"
        );
        let after = users_git(
            &world,
            &[
                ".", "sub", "hp", "bare.git", "pointed", "linked", "wt", "late", "tail", "escaped",
            ],
        );
        assert_eq!(
            planted(&evidence),
            Vec::<String>::new(),
            "the user's git ran what the model planted, {context}\nuser's git: {after}"
        );
        let log = world.user_sh("git log --format=%s main");
        assert!(
            String::from_utf8_lossy(&log.stdout).contains("model"),
            "the model's commit is in the project's repository, {context}"
        );
    }
}

/// `elph sandbox -- CMD` and a sandboxed hook are held to the same: a repository either makes is
/// refused when it ends, and said (on stderr, and as the hook's note).
#[tokio::test]
async fn repositories_made_by_elph_sandbox_or_a_sandboxed_hook_run_nothing_for_the_user() {
    if !landlock("repositories_made_by_elph_sandbox_or_a_sandboxed_hook_run_nothing_for_the_user") {
        return;
    }
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let evidence = evidence(&world);
        let hook_script = format!("git init -q viahook && {}", plant("viahook", &evidence));
        std::fs::write(
            env.config_dir.join("hooks.json"),
            serde_json::to_string(&json!({"hooks": [{
                "id": "maker", "event": "userPromptSubmit", "command": "/bin/sh",
                "args": ["-c", hook_script], "sandbox": "workspace-write"
            }]}))
            .unwrap(),
        )
        .unwrap();
        world.hand_over();
        user_repository(&world);
        let mut command = world.command(&world.binary);
        command.args(["sandbox", "--", "/bin/sh", "-c"]).arg(format!(
            "git init -q viasandbox && {} && (sleep 30 >/dev/null 2>&1 &) ; echo made",
            plant("viasandbox", &evidence)
        ));
        let sandboxed = output_within(command);
        let stderr = String::from_utf8_lossy(&sandboxed.stderr).into_owned();
        let project = env.project.display();
        assert!(
            stderr.contains(&format!(
                "elph sandbox: Refused: {project}/viasandbox/.git is a git repository made by a sandboxed command"
            )),
            "{}: {stderr}",
            world.who()
        );
        let server = FakeModelServer::start(Wire::OpenAi).await;
        server.enqueue(FakeReply::text("done"));
        let output = world.run(&server, &["go"]).await;
        let run_stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{run_stderr}");
        assert!(
            run_stderr.contains(&format!(
                "{project}/viahook/.git is a git repository made by a sandboxed command"
            )),
            "the hook's note says what was refused, {}: {run_stderr}",
            world.who()
        );
        let after = users_git(&world, &[".", "viasandbox", "viahook"]);
        assert_eq!(
            planted(&evidence),
            Vec::<String>::new(),
            "the user's git ran what was planted, {}: {after}",
            world.who()
        );
    }
}

/// In a project that is no repository, `git init` at its top fails during the command: an empty
/// `.git` stands in, read-only, and is gone after the session; the refusal says why. A `.mcp.json`
/// the project did not have is moved aside after the command.
#[tokio::test]
async fn git_init_at_the_top_of_a_project_that_is_no_repository_is_refused_while_it_runs() {
    if !landlock("git_init_at_the_top_of_a_project_that_is_no_repository_is_refused_while_it_runs") {
        return;
    }
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let evidence = evidence(&world);
        world.hand_over();
        let ev = evidence.display();
        let script = format!(
            "git init -q .; echo init=$?\n\
             printf '#!/bin/sh\\ntouch {ev}/hook\\n' > .git/hooks/pre-commit; echo hook=$?\n\
             git status >/dev/null 2>&1; echo status=$?\n\
             echo '{{\"mcpServers\":{{}}}}' > .mcp.json; echo mcp=$?\n\
             echo ok > notes.txt; echo inside=$?"
        );
        let result = world.shell(&script, &[]).await;
        let context = format!("{}: {result}", world.who());
        assert!(refused(&result, "init") && refused(&result, "hook"), "{context}");
        assert_eq!(status_of(&result, "inside"), Some(0), "{context}");
        for words in [
            format!(
                "{}/.git is protected by the sandbox: the place of a git repository, which the session must not make",
                env.project.display()
            ),
            ".mcp.json was created by a sandboxed command, and it is protected: .mcp.json: another agent's"
                .into(),
            ".mcp.json.elph-refused".into(),
        ] {
            assert!(result.contains(&words), "the result says {words:?}, {context}");
        }
        assert!(
            !env.project.join(".git").exists() && !env.project.join(".mcp.json").exists(),
            "the stand-in is gone after the session, {context}"
        );
        let after = world.user_sh(
            "git status 2>&1; git -c user.name=u -c user.email=u@x commit -q --allow-empty -m u 2>&1",
        );
        assert_eq!(
            planted(&evidence),
            Vec::<String>::new(),
            "{}",
            String::from_utf8_lossy(&after.stdout)
        );
    }
}

/// A submodule's `.git/modules/NAME/hooks` and `config` hold against the sandboxed shell, its
/// folders cannot be moved away, and a submodule the model adds in the session is refused; the
/// user's git in both submodules runs nothing the model wrote.
#[tokio::test]
async fn submodules_hooks_and_config_hold_and_a_new_one_is_refused() {
    if !landlock("submodules_hooks_and_config_hold_and_a_new_one_is_refused") {
        return;
    }
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let evidence = evidence(&world);
        let source = env.root.path().join("lib-src");
        std::fs::create_dir_all(&source).unwrap();
        world.hand_over();
        let chown = std::process::Command::new("chown")
            .arg("-R")
            .arg(match user {
                Some(uid) => format!("{uid}:{uid}"),
                None => format!("{0}:{0}", nix::unistd::geteuid()),
            })
            .arg(&source)
            .status()
            .unwrap();
        assert!(chown.success());
        let setup = world.user_sh(&format!(
            "set -e; cd {src} && git init -q -b main . && echo lib > lib.txt && git add . && \
             git -c user.name=u -c user.email=u@x commit -qm lib && cd {project} && \
             git init -q -b main . && git -c protocol.file.allow=always submodule -q add {src} lib && \
             git -c user.name=u -c user.email=u@x commit -qm 'with lib'",
            src = source.display(),
            project = env.project.display()
        ));
        assert!(
            setup.status.success(),
            "{}",
            String::from_utf8_lossy(&setup.stderr)
        );
        let ev = evidence.display();
        let script = format!(
            "printf '#!/bin/sh\\ntouch {ev}/modhook\\n' > .git/modules/lib/hooks/pre-commit; echo modhook=$?\n\
             git -C lib config core.fsmonitor 'touch {ev}/modfsmonitor; false'; echo modconfig=$?\n\
             printf '[core]\\n\\tfsmonitor = touch {ev}/modappend\\n' >> .git/modules/lib/config; echo modappend=$?\n\
             mv .git/modules/lib .git/modules/lib-moved; echo mvmodule=$?\n\
             mv .git/modules .git/modules-moved; echo mvmodules=$?\n\
             git -c protocol.file.allow=always submodule -q add {src} lib2; echo newsub=$?\n\
             {plant}; echo plant2=$?",
            src = source.display(),
            plant = plant("lib2", &evidence)
        );
        let result = world.shell(&script, &[]).await;
        let context = format!("{}: {result}", world.who());
        for step in ["modhook", "modconfig", "modappend", "mvmodule", "mvmodules"] {
            assert!(refused(&result, step), "{step} was not refused, {context}");
        }
        assert_eq!(status_of(&result, "newsub"), Some(0), "{context}");
        let project = env.project.display();
        for words in [
            format!("{project}/.git/modules/lib/hooks is protected by the sandbox: a git repository's hooks"),
            format!(
                "{project}/.git/modules/lib/config is protected by the sandbox: a git repository's config"
            ),
            format!("Refused: {project}/.git/modules/lib2 is a git repository made by a sandboxed command"),
            format!("Refused: {project}/lib2/.git points git at that repository"),
        ] {
            assert!(result.contains(&words), "the result says {words:?}, {context}");
        }
        let after = users_git(&world, &[".", "lib", "lib2"]);
        assert_eq!(
            planted(&evidence),
            Vec::<String>::new(),
            "the user's git ran what the model planted, {context}\nuser's git: {after}"
        );
    }
}

/// A trusted folder replaced by a symbolic link: the session that starts where it points says so
/// (it trusts nothing), not only `elph trust --status`.
#[tokio::test]
async fn a_trusted_path_replaced_by_a_link_is_said_at_the_start_of_a_session() {
    for user in users() {
        let world = World::new(user);
        let env = &world.env;
        let link = env.root.path().join("was-trusted");
        std::os::unix::fs::symlink(&env.project, &link).unwrap();
        std::fs::write(
            env.config_dir.join("trust.json"),
            serde_json::to_string(&json!({"directories": {link.to_str().unwrap(): true}})).unwrap(),
        )
        .unwrap();
        world.hand_over();
        let server = FakeModelServer::start(Wire::OpenAi).await;
        server.enqueue(FakeReply::text("done"));
        let output = world.run(&server, &["go"]).await;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        let real = env.project.canonicalize().unwrap();
        let words = format!(
            "trust.json key \"{}\" is now a symbolic link to {}; it trusts nothing",
            link.display(),
            real.display()
        );
        assert!(stderr.contains(&words), "{}: {words:?} in {stderr}", world.who());
    }
}
