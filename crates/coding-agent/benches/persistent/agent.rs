//! An agent turn of [`TOOL_CALLS`] `list_dir` calls through the real harness, without hooks and
//! with [`HOOKS`] persistent hooks of each program on preToolUse.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coding_agent::hooks::discovery::{FileLoad, merge};
use coding_agent::hooks::{HookHost, HookScope};
use elph_agent::harness::{AgentHarness, HarnessConfig};
use elph_agent::hooks::HookRegistry;
use elph_agent::tools::ToolCatalog;
use elph_ai::ScriptedProvider;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Fixture, HOOKS, TOOL_CALLS};

/// The script of the turn and the hooks files: none, and each program's.
pub struct AgentRun {
    script: PathBuf,
    pub without: PathBuf,
    pub with: Vec<PathBuf>,
}

impl AgentRun {
    pub fn new(fixture: &Fixture) -> Self {
        let mut turns: Vec<serde_json::Value> = (0..TOOL_CALLS)
            .map(|_| json!({"text": "", "toolCalls": [{"name": "list_dir", "input": {"path": "."}}]}))
            .collect();
        turns.push(json!({"text": "done"}));
        let script = fixture.project.join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let without = fixture.project.join("no-hooks.json");
        std::fs::write(&without, r#"{"hooks": []}"#).unwrap();
        let with = fixture
            .programs
            .iter()
            .map(|(name, program)| {
                let hooks: Vec<_> = (0..HOOKS)
                    .map(|i| json!({"id": format!("{name}-{i}"), "event": "preToolUse", "command": program, "persistent": true}))
                    .collect();
                let file = fixture.project.join(format!("{name}.json"));
                std::fs::write(&file, json!({ "hooks": hooks }).to_string()).unwrap();
                file
            })
            .collect();
        AgentRun {
            script,
            without,
            with,
        }
    }

    /// A host for the hooks of `hooks_file`; it keeps its persistent processes across runs, as a
    /// session keeps them across turns.
    pub fn host(fixture: &Fixture, hooks_file: &Path) -> Arc<HookHost> {
        let set = merge(
            vec![FileLoad::read(hooks_file.to_path_buf(), HookScope::Home)],
            None,
        );
        Arc::new(HookHost::new(set, fixture.project.clone(), &fixture.data))
    }

    /// One turn's wall time.
    pub fn run(
        &self,
        runtime: &tokio::runtime::Runtime,
        fixture: &Fixture,
        host: &Arc<HookHost>,
    ) -> Duration {
        let provider = Arc::new(ScriptedProvider::load(&self.script).unwrap());
        let mut harness = AgentHarness::new(
            provider,
            Arc::new(ToolCatalog::native()),
            HookRegistry::new(host.clone()),
            HarnessConfig {
                max_turns: 1000,
                ..HarnessConfig::new("bench", fixture.project.clone())
            },
        );
        let started = Instant::now();
        let result = runtime.block_on(harness.run_turn("go", &CancellationToken::new()));
        let elapsed = started.elapsed();
        assert_eq!(result.text, "done");
        elapsed
    }
}
