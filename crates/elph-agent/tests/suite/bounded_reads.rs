//! The read tools' bounds on real files: special files are never opened, /proc and / end at the
//! deadline with a note, and a cancelled turn does not wait for a search.

use std::sync::Arc;
use std::time::Duration;

use elph_agent::harness::{AgentHarness, HarnessConfig};
use elph_agent::hooks::{HookRegistry, StopStatus};
use elph_agent::messages::ContentBlock;
use elph_agent::tools::{ToolCatalog, ToolContext, ToolOutput};
use elph_ai::ScriptedProvider;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A generous outer bound: only a tool that ignores its deadline comes near it.
const OUTER: Duration = Duration::from_secs(60);

async fn call(ctx: &ToolContext, name: &str, input: Value) -> ToolOutput {
    let catalog = ToolCatalog::native();
    catalog.validate(name, &input).unwrap();
    let tool = catalog.get(name).unwrap().clone();
    tokio::time::timeout(OUTER, tool.execute(input, ctx))
        .await
        .unwrap_or_else(|_| panic!("{name} ignored its deadline"))
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Image { .. } => String::new(),
        })
        .collect()
}

fn with_deadline(dir: &std::path::Path, deadline: Duration) -> ToolContext {
    let mut ctx = ToolContext::new(dir);
    ctx.read_deadline = deadline;
    ctx
}

#[tokio::test]
async fn fifos_sockets_and_devices_are_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::write(project.join("a.txt"), "needle in a file\n").unwrap();
    // Nobody ever writes to this FIFO: opening it for reading the usual way blocks forever.
    nix::unistd::mkfifo(&project.join("needle.fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(project.join("needle.sock")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", project.join("zero")).unwrap();
    let ctx = ToolContext::new(project);

    let grep = call(&ctx, "grep", json!({"pattern": "needle"})).await;
    assert!(!grep.is_error, "{grep:?}");
    assert!(
        text(&grep).starts_with("a.txt:1:needle in a file"),
        "{}",
        text(&grep)
    );
    assert!(
        text(&grep).contains("[2 special files (FIFOs, sockets, devices) were skipped]"),
        "{}",
        text(&grep)
    );

    for path in ["needle.fifo", "needle.sock", "zero"] {
        let read = call(&ctx, "read_file", json!({"path": path})).await;
        assert!(read.is_error, "{path}: {read:?}");
        assert!(text(&read).contains("special file"), "{path}: {}", text(&read));
        let grep_one = call(&ctx, "grep", json!({"pattern": "x", "path": path})).await;
        assert!(grep_one.is_error, "{path}: {grep_one:?}");
    }

    let listed = call(&ctx, "list_dir", json!({})).await;
    assert_eq!(
        text(&listed),
        "a.txt\nzero\n[2 special files (FIFOs, sockets, devices) not listed]"
    );
    let found = call(&ctx, "find_path", json!({"glob": "needle*"})).await;
    assert!(text(&found).starts_with("No paths match"), "{}", text(&found));
    assert!(text(&found).contains("[2 special files"), "{}", text(&found));
}

#[tokio::test]
async fn a_blocking_kernel_file_fails_at_once() {
    // /proc/kmsg blocks a plain read until the kernel logs something; opened without waiting it
    // either answers at once or refuses (without root it cannot be opened at all).
    if !std::path::Path::new("/proc/kmsg").exists() {
        eprintln!("skipped: this system has no /proc/kmsg");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ctx = with_deadline(dir.path(), Duration::from_secs(30));
    let output = call(&ctx, "read_file", json!({"path": "/proc/kmsg"})).await;
    assert!(output.is_error, "{output:?}");
    assert!(!text(&output).contains("deadline"), "{}", text(&output));
}

#[tokio::test]
async fn grep_on_proc_and_on_root_ends_by_the_deadline_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = with_deadline(dir.path(), Duration::from_millis(500));
    // No line matches, so only the deadline (or the end of the tree) stops the search.
    let pattern = "elph-never-matches-\\d{40}";
    let proc_search = call(&ctx, "grep", json!({"pattern": pattern, "path": "/proc"})).await;
    assert!(!proc_search.is_error, "{proc_search:?}");
    let proc_text = text(&proc_search);
    assert!(
        proc_text.contains("No matches found"),
        "either it finished or it stopped at the deadline: {proc_text}"
    );
    let root_search = call(&ctx, "grep", json!({"pattern": pattern, "path": "/"})).await;
    let root_text = text(&root_search);
    assert!(!root_search.is_error, "{root_search:?}");
    assert!(
        root_text.contains("[stopped at the 0.5 s deadline of the read tools"),
        "{root_text}"
    );
    assert_eq!(root_search.details["deadlineReached"], true);
    let found = call(&ctx, "find_path", json!({"glob": "elph-never-*", "path": "/"})).await;
    assert!(text(&found).contains("0.5 s deadline"), "{}", text(&found));
}

#[tokio::test]
async fn cancelling_the_turn_does_not_wait_for_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let turns = json!({"turns": [
        {"toolCalls": [{"name": "grep", "input": {"pattern": "elph-never-matches-\\d{40}", "path": "/"}}]},
        {"text": "never reached"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let provider = Arc::new(ScriptedProvider::load(&script).unwrap());
    // The deadline is far away: only the cancellation can end the search early.
    let mut config = HarnessConfig::new("s", dir.path());
    config.read_deadline = Duration::from_secs(600);
    config.approval = elph_agent::harness::ApprovalPolicy::Auto;
    let mut harness = AgentHarness::new(
        provider,
        Arc::new(ToolCatalog::native()),
        HookRegistry::default(),
        config,
    );
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let result = tokio::time::timeout(OUTER, harness.run_turn("search everything", &cancel))
        .await
        .expect("the cancelled turn ends long before the 600 s deadline");
    assert_eq!(result.status, StopStatus::Cancelled);
}
