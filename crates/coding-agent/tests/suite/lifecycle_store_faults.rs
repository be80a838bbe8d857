//! Honest exit codes when the session database cannot take a turn: a damaged file, a read-only
//! folder, a folder where the file should be, a full disk. Each gives one sentence with the path
//! and a fix, and exit code 1. The read-only folder and the full disk are real: a read-only bind
//! mount and a small tmpfs, in a user and mount namespace of the test's own (`unshare -rm`).

use std::path::Path;
use std::process::Output;

use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::{elph, run_elph};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `elph run PROMPT` inside a new user and mount namespace, after `setup` (shell commands run
/// there first, e.g. mounts).
fn run_in_namespace(env: &TestEnv, server: &FakeModelServer, setup: &str, prompt: &str) -> Output {
    let script = format!("set -e\n{setup}\nexec \"$ELPH\" run --model openai/gpt-test '{prompt}'");
    let mut command = env.command(Path::new("unshare"));
    command
        .env("ELPH", elph())
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["-rm", "sh", "-c", &script]);
    // Under a deadline: a run that hung would be killed and fail the test, not hold the suite.
    let output = assert_cmd::Command::from_std(command)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("run unshare");
    assert!(
        !stderr(&output).contains("unshare:") && !stderr(&output).contains("mount:"),
        "the namespace could be set up: {}",
        stderr(&output)
    );
    output
}

fn one_sentence(output: &Output) -> String {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(text.trim().lines().count(), 1, "one sentence, said once: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_data_folder_says_so() {
    let env = TestEnv::new();
    std::fs::create_dir_all(&env.data_dir).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let dir = env.data_dir.display().to_string();
    let setup = format!("mount --bind '{dir}' '{dir}'\nmount -o remount,bind,ro '{dir}'");
    let output = run_in_namespace(&env, &server, &setup, "hello");
    let text = one_sentence(&output);
    assert!(
        text.contains(&format!("in {dir}: the folder is read-only")) && text.contains("ELPH_DATA_DIR"),
        "{text}"
    );
    assert!(
        server.requests().is_empty(),
        "nothing was asked that could not be stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_in_place_of_the_database_says_so() {
    let env = TestEnv::new();
    let db = env.data_dir.join("sessions.db");
    std::fs::create_dir_all(&db).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let output = run_elph(&env, &server, &["hello"]).await;
    let text = one_sentence(&output);
    assert!(
        text.contains(&format!("{} is a folder", db.display())) && text.contains("mv "),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_says_so() {
    let env = TestEnv::new();
    std::fs::create_dir_all(&env.data_dir).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let dir = env.data_dir.display().to_string();
    // A 64 KiB file system, filled up.
    let setup = format!(
        "mount -t tmpfs -o size=64k tmpfs '{dir}'\ncat /dev/zero > '{dir}/filler' 2>/dev/null || true"
    );
    let output = run_in_namespace(&env, &server, &setup, "hello");
    let text = one_sentence(&output);
    assert!(
        text.contains("the disk that holds") && text.contains("is full") && text.contains(&dir),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_database_fails_the_turn_and_is_not_written_again() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let output = run_elph(&env, &server, &["before the damage"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    // Damage the root page of the `entries` table, leaving the schema readable.
    let path = env.data_dir.join("sessions.db");
    let (root, page_size): (i64, i64) = {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let root = db
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'entries'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let size = db.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        (root, size)
    };
    let mut bytes = std::fs::read(&path).unwrap();
    let start = ((root - 1) * page_size) as usize;
    for byte in &mut bytes[start..start + page_size as usize] {
        *byte = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();

    server.enqueue(FakeReply::text("an answer that cannot be stored"));
    let output = run_elph(&env, &server, &["after the damage"]).await;
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("is damaged"), "{text}");
    assert!(
        text.contains("was found damaged earlier in this run"),
        "later entries are not written into the damaged file: {text}"
    );
    assert!(text.contains("was not stored in full"), "{text}");
}
