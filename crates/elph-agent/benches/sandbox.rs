//! What the sandbox costs a command: a trivial `shell_exec` (`true`) under `workspace-write`
//! (Landlock, the seccomp filter, the mount namespace that keeps `.elph/` read-only, the user
//! namespace, the PID namespace with its own `/proc` and its init, the capabilities cleared, the
//! limits set) against the same call under `full-access` (no confinement), in the same run. The
//! claim is the ratio of the two medians (target: at most 1.3×). Both start their child sharing
//! Elph's memory (the sandboxed one in `elph-process`'s `sandbox/start.rs`); run it as root and
//! as a user who is not (`setpriv --reuid N --regid N --clear-groups env HOME=/tmp BENCH --bench`),
//! who takes one more short-lived process per command. On a loaded machine the medians mostly
//! measure how long each process waits for a CPU: compare them on a quiet one.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::sync::OnceLock;

use divan::Bencher;
use elph_agent::tools::{ToolCatalog, ToolContext};
use elph_process::sandbox::{SandboxMode, SandboxPolicy};
use serde_json::json;

fn main() {
    divan::main();
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    catalog: ToolCatalog,
    project: tempfile::TempDir,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| Setup {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
        catalog: ToolCatalog::native(),
        project: tempfile::tempdir().unwrap(),
    })
}

fn context(mode: SandboxMode) -> ToolContext {
    let project = setup().project.path();
    ToolContext::new(project).with_sandbox(SandboxPolicy::workspace(project).with_mode(mode))
}

fn shell_true(bencher: Bencher, mode: SandboxMode) {
    let setup = setup();
    let tool = setup.catalog.get("shell_exec").unwrap().clone();
    let ctx = context(mode);
    bencher.bench_local(|| {
        let output = setup
            .runtime
            .block_on(tool.execute(json!({"command": "true"}), &ctx));
        assert!(!output.is_error, "{output:?}");
    });
}

#[divan::bench]
fn unsandboxed_full_access(bencher: Bencher) {
    shell_true(bencher, SandboxMode::FullAccess);
}

#[divan::bench]
fn sandboxed_workspace_write(bencher: Bencher) {
    shell_true(bencher, SandboxMode::WorkspaceWrite);
}

#[divan::bench]
fn sandboxed_read_only(bencher: Bencher) {
    shell_true(bencher, SandboxMode::ReadOnly);
}
