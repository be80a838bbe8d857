//! `hooks.jsonl` and `elph.log` rotate at their size (set small with `ELPH_LOG_MAX_BYTES`), keep
//! three old files, and `elph doctor` reads the runs across all of them.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, Wire};

use super::lifecycle_support::{Running, acp_new_session, acp_open_session};
use super::run_e2e::{elph, run_elph_with};

const MAX: u64 = 1200;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The log and its rotated files that exist, with their line counts; asserts the bounds.
fn check_rotated(log: &Path) -> usize {
    assert!(
        with_suffix(log, ".3").exists(),
        "three rotated files of {}",
        log.display()
    );
    assert!(!with_suffix(log, ".4").exists(), "no fourth rotated file");
    let mut lines = 0;
    for suffix in ["", ".1", ".2", ".3"] {
        let text = std::fs::read_to_string(with_suffix(log, suffix)).unwrap();
        let longest = text.lines().map(str::len).max().unwrap_or(0) as u64;
        // A file is rotated once it holds MAX bytes: at most one write past it.
        assert!(
            (text.len() as u64) < MAX + longest + 1,
            "{}{suffix} has {} bytes",
            log.display(),
            text.len()
        );
        assert!(text.is_empty() || text.ends_with('\n'), "whole lines only");
        lines += text.lines().count();
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hook_run_log_rotates_and_doctor_reads_across_the_files() {
    let env = TestEnv::new();
    env.trust_project();
    env.project_script("ok.sh", "cat > /dev/null\necho '{}'\n");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "start", "event": "sessionStart", "command": "hooks/ok.sh"},
        {"id": "stop", "event": "stop", "command": "hooks/ok.sh"},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    for _ in 0..24 {
        let output = run_elph_with(&env, &server, &[("ELPH_LOG_MAX_BYTES", "1200")], &["hi"]).await;
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let log = env.data_dir.join("logs/hooks.jsonl");
    let kept = check_rotated(&log);
    assert!(kept < 48, "the oldest runs were dropped ({kept} kept)");

    let output = env
        .command(&elph())
        .env("ELPH_LOG_MAX_BYTES", "1200")
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["runLog"]["runs"], json!(kept), "{}", report["runLog"]);
    let stop = report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|hook| hook["id"] == "stop")
        .unwrap();
    let in_files: usize = ["", ".1", ".2", ".3"]
        .iter()
        .map(|suffix| {
            std::fs::read_to_string(with_suffix(&log, suffix))
                .unwrap()
                .lines()
                .filter(|line| line.contains("\"hookId\":\"stop\""))
                .count()
        })
        .sum();
    assert_eq!(stop["recentRuns"]["count"], json!(in_files));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elph_log_rotates_at_its_size() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let log = env.data_dir.join("logs/elph.log");
    // Each `elph acp` opens the log anew and writes a few lines per session.
    for _ in 0..6 {
        let mut running = Running::start_with(
            &env,
            &server,
            &["acp", "--model", "openai/gpt-test"],
            &[("ELPH_LOG_MAX_BYTES", "1200"), ("ELPH_LOG", "debug")],
            true,
        );
        acp_open_session(&mut running, &env.project).await;
        for id in 10..13 {
            acp_new_session(&mut running, &env.project, id).await;
        }
        let (code, _, stderr) = running.finish().await;
        assert_eq!(code, Some(0), "{stderr}");
    }
    check_rotated(&log);
}
