//! The native file tools against a sandboxed process that races them: while `elph run` repeats
//! `write_file` and `read_file` on `d/…`, a process confined by `elph sandbox` keeps exchanging the
//! project folder `d` with a symbolic link to CONFIG_DIR, and with one to a folder outside the
//! project (`renameat2(RENAME_EXCHANGE)`, both names inside the project). Whatever the timing,
//! nothing may be written or read outside the project, and no temp file may be left behind. As
//! root and as a user that is not (see `sandbox_users`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::sandbox_users::{Who, elph_as, everyone};

/// Tool calls per run: hundreds, so that many of them fall inside the swap window.
const CALLS: usize = 300;

const SWAPPER: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Exchanges the folder d with each link, and back, until ./stop appears or time is up. */
int main(int argc, char **argv) {
    time_t end = time(NULL) + atoi(argv[1]);
    long swaps = 0, failures = 0;
    FILE *started = fopen("swapper-started", "w");
    if (started) fclose(started);
    while (time(NULL) < end && access("stop", F_OK) != 0) {
        const char *links[] = {"to-config", "to-outside"};
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 2; j++) {
                if (renameat2(AT_FDCWD, "d", AT_FDCWD, links[i], RENAME_EXCHANGE) == 0) swaps++;
                else failures++;
            }
        }
    }
    printf("swaps=%ld failures=%ld\n", swaps, failures);
    return 0;
}
"#;

/// Compiles the swapper into `dir` (outside the project).
fn compile_swapper(dir: &Path) -> PathBuf {
    let source = dir.join("swapper.c");
    let binary = dir.join("swapper");
    std::fs::write(&source, SWAPPER).unwrap();
    let status = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) builds the swapper");
    assert!(status.success(), "cc failed to build the swapper");
    binary
}

/// Starts the swapper under `elph sandbox` in the project, as `who`, and waits until it runs.
fn start_swapper(env: &TestEnv, who: Who, swapper: &Path) -> Child {
    let mut command = elph_as(env, who);
    command
        .args(["sandbox", "--"])
        .arg(swapper)
        .arg("120")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().expect("elph sandbox starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !env.project.join("swapper-started").exists() {
        assert!(
            Instant::now() < deadline,
            "the sandboxed swapper did not start within 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Stops the swapper and returns what it printed (how many exchanges it made).
fn stop_swapper(env: &TestEnv, mut child: Child) -> String {
    std::fs::write(env.project.join("stop"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the swapper did not stop within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The text of every tool result the model got back in the run's last request.
fn tool_results(server: &FakeModelServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("the model was asked");
    last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// One answer with `CALLS` calls of `tool` on `input`, then "done".
async fn run_calls(env: &TestEnv, who: Who, tool: &str, input: Value, approval: &str) -> Vec<String> {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let mut reply = FakeReply::tool_call(tool, input.clone());
    for _ in 1..CALLS {
        reply = reply.and_tool_call(tool, input.clone());
    }
    server.enqueue(reply);
    server.enqueue(FakeReply::text("done"));
    // Hundreds of calls on a busy machine: a longer deadline than one ordinary run's.
    let mut command = elph_as(env, who);
    command
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .args([
            "run",
            "--model",
            "openai/gpt-test",
            "--approval",
            approval,
            "race",
        ]);
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("elph run finished within 300 s")
    .unwrap()
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = tool_results(&server);
    assert_eq!(results.len(), CALLS, "every call got a result");
    results
}

/// Every leftover temp file of the writing tools under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if entry.file_name().to_string_lossy().starts_with(".elph-write-") {
                found.push(entry.path());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn a_folder_swapped_for_a_link_never_redirects_write_file_or_read_file() {
    // The racing process is confined by `elph sandbox`, which needs Landlock.
    if !super::sandbox_e2e::landlock("a_folder_swapped_for_a_link_never_redirects_write_file_or_read_file") {
        return;
    }
    for who in everyone("a_folder_swapped_for_a_link_never_redirects_write_file_or_read_file") {
        race_as(who).await;
    }
}

async fn race_as(who: Who) {
    let env = TestEnv::new();
    let outside = env.evidence("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // Writable by the user who is not root too: only Elph may keep a write out of it.
    std::fs::set_permissions(
        &outside,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o777),
    )
    .unwrap();
    std::fs::create_dir_all(env.project.join("d")).unwrap();
    std::fs::write(env.project.join("d/secret.txt"), "PROJECT-TEXT\n").unwrap();
    std::fs::write(env.config_dir.join("secret.txt"), "CONFIG-SECRET\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "OUTSIDE-SECRET\n").unwrap();
    std::os::unix::fs::symlink(&env.config_dir, env.project.join("to-config")).unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join("to-outside")).unwrap();
    let swapper = compile_swapper(env.root.path());

    let child = start_swapper(&env, who, &swapper);
    let writes = run_calls(
        &env,
        who,
        "write_file",
        json!({"path": "d/hooks.json", "content": "{\"hooks\": [{\"id\": \"planted\", \"event\": \"sessionStart\", \"command\": \"/bin/true\"}]}"}),
        "auto",
    )
    .await;
    let reads = run_calls(&env, who, "read_file", json!({"path": "d/secret.txt"}), "deny").await;
    let swapped = stop_swapper(&env, child);

    // Nothing landed outside: not in CONFIG_DIR (a home hook the next session would run), not in
    // the outside folder, and no temp file anywhere.
    assert!(
        !env.config_dir.join("hooks.json").exists(),
        "a write landed in CONFIG_DIR ({who:?})"
    );
    assert!(
        !outside.join("hooks.json").exists(),
        "a write landed outside the project ({who:?})"
    );
    for dir in [&env.project, &env.config_dir, &outside] {
        assert_eq!(
            temp_files(dir),
            Vec::<PathBuf>::new(),
            "temp files left in {}",
            dir.display()
        );
    }
    // Nothing was read from outside.
    for result in &reads {
        assert!(
            !result.contains("CONFIG-SECRET") && !result.contains("OUTSIDE-SECRET"),
            "read_file returned a file outside the project ({who:?}): {result}"
        );
    }
    // The race was on: the swapper made exchanges, and the calls met both states of `d`.
    assert!(
        swapped.contains("swaps=") && !swapped.contains("swaps=0 "),
        "the swapper did not run: {swapped}"
    );
    let written = writes
        .iter()
        .filter(|result| result.starts_with("Created") || result.starts_with("Overwrote"))
        .count();
    let read = reads
        .iter()
        .filter(|result| result.contains("PROJECT-TEXT"))
        .count();
    assert!(written > 0, "no write went through: {:?}", &writes[..3]);
    assert!(read > 0, "no read went through: {:?}", &reads[..3]);
    assert!(
        written < CALLS || read < CALLS,
        "no call met the link (the race was not exercised): {swapped}"
    );
    // Every write that went through is inside the project, in `d` or in the folder `d` was
    // exchanged with at that moment (which the swapper moves back).
    assert!(env.project.join("d").is_dir());
}
