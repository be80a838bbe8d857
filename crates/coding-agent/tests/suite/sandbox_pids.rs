//! A sandboxed command sees no process outside its own, as root and as a user who is not (see
//! `sandbox_users`): through the real `elph` binary on the real kernel, a `shell_exec` command
//! tries to list Elph and another process of the same user in `/proc`, read Elph's environment,
//! signal both, kill the other one and trace it. A control runs the same script in `full-access`
//! and shows that each attempt is a real one. Where the system refuses a PID namespace, Elph
//! says so at start and refuses unless the user accepts it; accepted, the command sees the
//! system's processes again (the weaker path, on the real kernel).

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::sandbox_e2e::landlock;
use super::sandbox_users::{Who, elph_as, everyone, output, program_as, text};

/// Attaches to the pid given as its argument with ptrace(PTRACE_ATTACH) and prints the result.
const PTRACE_PROBE: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
result = libc.ptrace(16, int(sys.argv[1]), None, None)
print("ptrace=%d errno=%d" % (result, ctypes.get_errno()), flush=True)
"#;

/// The attempts, given Elph's pid (read from `elph.pid` in the project, which the test writes
/// once Elph runs) and the victim's.
fn script(env: &TestEnv, victim: u32, attack: bool) -> String {
    let probe = env.root.path().join("ptrace_probe.py");
    std::fs::write(&probe, PTRACE_PROBE).unwrap();
    let kill = if attack {
        format!("kill -9 {victim}; echo \"kill=$?\"; ")
    } else {
        String::new()
    };
    format!(
        "i=0; while [ ! -s elph.pid ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
         elph=$(cat elph.pid); echo \"elph is $elph\"; \
         echo \"processes=$(ls /proc | grep -c '^[0-9]*$')\"; \
         ls /proc | grep -qx \"$elph\" && echo listed-elph; \
         ls /proc | grep -qx {victim} && echo listed-victim; \
         tr '\\0' '\\n' < /proc/$elph/environ; echo \"environ=$?\"; \
         kill -0 \"$elph\"; echo \"signal-elph=$?\"; \
         kill -0 {victim}; echo \"signal-victim=$?\"; \
         {kill}/usr/bin/python3 '{probe}' {victim}; \
         echo written > /dev/stdout",
        probe = probe.display()
    )
}

/// `elph run` by `who`, whose model asks for `command` with `shell_exec`; writes Elph's pid to
/// the project's `elph.pid` once it runs. Returns the tool result and the output.
async fn run_knowing_elph(env: &TestEnv, who: Who, command: &str, args: &[&str]) -> (String, Output) {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": command})));
    server.enqueue(FakeReply::text("done"));
    let _ = std::fs::remove_file(env.project.join("elph.pid"));
    let mut elph = elph_as(env, who);
    elph.env("OPENAI_API_KEY", "sk-test-secret-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test"])
        .args(args)
        .arg("go")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = elph.spawn().unwrap();
    // `setpriv` executes Elph in its own process: the pid is Elph's.
    std::fs::write(env.project.join("elph.pid"), child.id().to_string()).unwrap();
    let out = tokio::task::spawn_blocking(move || wait_under_deadline(child))
        .await
        .unwrap();
    let result = server
        .requests()
        .get(1)
        .and_then(|request| request["messages"].as_array())
        .and_then(|messages| messages.last())
        .map(|message| message["content"].to_string())
        .unwrap_or_default();
    (result, out)
}

fn wait_under_deadline(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("elph run did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn count(result: &str, name: &str) -> usize {
    let start = result.find(&format!("{name}=")).map(|at| at + name.len() + 1);
    start
        .and_then(|at| result.get(at..))
        .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(usize::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_command_cannot_see_signal_or_trace_elph_or_another_process() {
    let test = "a_sandboxed_command_cannot_see_signal_or_trace_elph_or_another_process";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        let mut victim = program_as(&env, who, "/bin/sleep");
        victim.arg("120").env("VICTIM_SECRET", "victim-secret-value");
        let mut victim = victim.spawn().unwrap();
        let (result, out) = run_knowing_elph(&env, who, &script(&env, victim.id(), true), &[]).await;
        let victim_survived = victim.try_wait().unwrap().is_none();
        let (control, _) = run_knowing_elph(
            &env,
            who,
            &script(&env, victim.id(), false),
            &["--sandbox", "full-access"],
        )
        .await;
        let _ = victim.kill();
        let _ = victim.wait();

        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(
            result.contains("written"),
            "{who:?}: the script ran to its end: {result}"
        );
        for seen in [
            "listed-elph",
            "listed-victim",
            "environ=0",
            "signal-elph=0",
            "signal-victim=0",
        ] {
            assert!(!result.contains(seen), "{who:?}: {seen}: {result}");
        }
        assert!(!result.contains("kill=0"), "{who:?}: killed the victim: {result}");
        assert!(victim_survived, "{who:?}: the victim was killed: {result}");
        assert!(
            result.contains("ptrace=-1"),
            "{who:?}: traced the victim: {result}"
        );
        assert!(!result.contains("sk-test-secret-key"), "{who:?}: {result}");
        // Its own /proc: the sandbox's init, the shell and what it runs, nothing else.
        let processes = count(&result, "processes");
        assert!(
            processes <= 6,
            "{who:?}: {processes} processes in /proc: {result}"
        );

        // Unconfined, the same script sees and reaches both: the attempts are real ones.
        for seen in [
            "listed-elph",
            "listed-victim",
            "signal-elph=0",
            "signal-victim=0",
            "ptrace=0",
        ] {
            assert!(control.contains(seen), "{who:?}: control: {seen}: {control}");
        }
        assert!(count(&control, "processes") > processes, "{who:?}: {control}");
    }
}

/// A background process a command leaves still runs in its namespace after the command ended
/// (`shell_exec` leaves it running), even one that left the command's group and session, and
/// the kernel ends it with the namespace when Elph's orphan watcher kills the group at Elph's
/// end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_outlives_its_command_and_dies_with_elph() {
    let test = "a_background_process_outlives_its_command_and_dies_with_elph";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        let server = FakeModelServer::start(Wire::OpenAi).await;
        let first = format!(
            "setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo \"{}\" > bg.pid; echo started",
            test_support::hook_scripts::LAST_JOB_PID
        );
        // The second command starts once the first has ended, and waits for the test.
        let second = "touch second.started; i=0; while [ ! -e go-on ] && [ $i -lt 400 ]; do \
                      sleep 0.05; i=$((i+1)); done";
        server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": first})));
        server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": second})));
        server.enqueue(FakeReply::text("done"));
        let mut elph = elph_as(&env, who);
        elph.env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", server.base_url())
            .args(["run", "--model", "openai/gpt-test", "go"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = elph.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let background = loop {
            let recorded = std::fs::read_to_string(env.project.join("bg.pid")).unwrap_or_default();
            if recorded.ends_with('\n')
                && let Some(pid) = test_support::hook_scripts::host_pid(&recorded)
            {
                break pid;
            }
            assert!(Instant::now() < deadline, "{who:?}: never recorded: {recorded:?}");
            std::thread::sleep(Duration::from_millis(10));
        };
        while !env.project.join("second.started").exists() {
            assert!(
                Instant::now() < deadline,
                "{who:?}: the second command never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let outlived = test_support::hook_scripts::is_alive(background);
        std::fs::write(env.project.join("go-on"), "").unwrap();
        let out = tokio::task::spawn_blocking(move || wait_under_deadline(child))
            .await
            .unwrap();
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(outlived, "{who:?}: the background process died with its command");
        let left = test_support::hook_scripts::still_alive(&[background], Duration::from_secs(10));
        assert!(left.is_empty(), "{who:?}: outlived Elph: {left:?}");
    }
}

/// Where the system refuses `CLONE_NEWPID`, Elph says that commands can see every process and
/// refuses to start; accepted, the command does see them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_without_pid_namespaces_is_said_and_refused_unless_accepted() {
    let test = "a_system_without_pid_namespaces_is_said_and_refused_unless_accepted";
    if !landlock(test) {
        return;
    }
    let deny = test_support::hook_scripts::test_support_binary("deny-namespaces");
    for who in everyone(test) {
        let env = TestEnv::new();
        let helper = env.root.path().join("deny-namespaces");
        // A hard link: a copy's write descriptor, inherited by a child another test thread forks
        // at that moment, would make running it fail with ETXTBSY.
        std::fs::hard_link(&deny, &helper)
            .or_else(|_| std::fs::copy(&deny, &helper).map(|_| ()))
            .unwrap();
        let server = FakeModelServer::start(Wire::OpenAi).await;
        let weaker = |extra: &[&str]| {
            let elph = elph_as(&env, who);
            let mut command = env.command(&helper);
            command
                .arg("--pid")
                .arg(elph.get_program())
                .args(elph.get_args())
                .env("OPENAI_API_KEY", "sk-test-secret-key")
                .env("OPENAI_BASE_URL", server.base_url())
                .args(["run", "--model", "openai/gpt-test"])
                .args(extra)
                .arg("go");
            command
        };
        let refused = output(weaker(&[]));
        let said = text(&refused.stderr);
        assert!(!refused.status.success(), "{who:?}: {said}");
        assert!(said.contains("no PID namespace"), "{who:?}: {said}");
        assert!(said.contains("list every process"), "{who:?}: {said}");
        assert!(server.requests().is_empty(), "{who:?}: no turn started");

        server.enqueue(FakeReply::tool_call(
            "shell_exec",
            json!({"command": "echo \"processes=$(ls /proc | grep -c '^[0-9]*$')\""}),
        ));
        server.enqueue(FakeReply::text("done"));
        let accepted = output(weaker(&["--allow-weaker-sandbox"]));
        assert!(accepted.status.success(), "{who:?}: {}", text(&accepted.stderr));
        let result = server
            .requests()
            .get(1)
            .and_then(|request| request["messages"].as_array())
            .and_then(|messages| messages.last())
            .map(|message| message["content"].to_string())
            .unwrap_or_default();
        // The system's processes: this test's threads' process alone holds more than a few.
        assert!(count(&result, "processes") > 6, "{who:?}: {result}");
    }
}

/// Where no mount namespace can give `read-only` its read-only view (the weaker path, accepted),
/// the seccomp filter still refuses every change of metadata outside the project: `chmod`,
/// `chown`, `touch -d` and `setfattr` on a file of the user's home fail, and the file keeps its
/// mode and times. Unconfined, the same script changes them: the attempt is a real one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_mount_namespaces_read_only_still_refuses_metadata_changes() {
    use std::os::unix::fs::MetadataExt;
    let test = "without_mount_namespaces_read_only_still_refuses_metadata_changes";
    if !landlock(test) {
        return;
    }
    let deny = test_support::hook_scripts::test_support_binary("deny-namespaces");
    for who in everyone(test) {
        let env = TestEnv::new();
        let helper = env.root.path().join("deny-namespaces");
        std::fs::hard_link(&deny, &helper)
            .or_else(|_| std::fs::copy(&deny, &helper).map(|_| ()))
            .unwrap();
        let victim = env.home.join("dotfile");
        std::fs::write(&victim, "x").unwrap();
        let script = format!(
            "chmod 600 '{v}'; echo \"chmod=$?\"; chown {uid} '{v}'; echo \"chown=$?\"; \
             touch -d 2001-01-01 '{v}'; echo \"utime=$?\"; \
             /usr/bin/python3 -c \"import os; os.setxattr('{v}', 'user.x', b'1'); print('xattr=0')\"; \
             echo done",
            v = victim.display(),
            uid = who.uid()
        );
        let run = |mode: &str| {
            let elph = elph_as(&env, who);
            let mut command = env.command(&helper);
            command
                .arg("--mount")
                .arg(elph.get_program())
                .args(elph.get_args())
                .args([
                    "sandbox",
                    "--allow-weaker-sandbox",
                    "--mode",
                    mode,
                    "--",
                    "sh",
                    "-c",
                    &script,
                ]);
            output(command)
        };
        let before = std::fs::metadata(&victim).unwrap();
        let confined = run("read-only");
        let said = text(&confined.stdout);
        assert!(
            said.contains("done"),
            "{who:?}: {said} {}",
            text(&confined.stderr)
        );
        for changed in ["chmod=0", "chown=0", "utime=0", "xattr=0"] {
            assert!(!said.contains(changed), "{who:?}: {changed}: {said}");
        }
        let after = std::fs::metadata(&victim).unwrap();
        assert_eq!(
            (before.mode(), before.mtime()),
            (after.mode(), after.mtime()),
            "{who:?}"
        );
        let control = text(&run("full-access").stdout);
        assert!(
            control.contains("chmod=0") && control.contains("utime=0"),
            "{who:?}: control: {control}"
        );
    }
}
