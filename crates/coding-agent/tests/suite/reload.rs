//! `/reload` (docs/contract.md, "Reload and tools for hook authors") through `HookLoader`, the one place every front end reloads from: a new
//! hook is picked up; a file that now fails keeps its previous hooks, with a diagnostic; a fix loads
//! the new contents; an untrusted project loses its hooks; and the swap is one step for a running
//! `HookHost` dispatch. Real files, real trust.json, real hook processes.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coding_agent::hooks::host::HookHost;
use coding_agent::hooks::reload::HookLoader;
use coding_agent::hooks::{FileState, HookSet};
use coding_agent::paths::Paths;
use coding_agent::trust::TrustStore;
use elph_agent::hooks::{Dispatch, HookPayload, PayloadBase, RunStatus, StopPayload, StopStatus};
use serde_json::{Value, json};
use test_support::hook_scripts::write_script;

const DEADLINE: Duration = Duration::from_secs(30);

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(DEADLINE, future)
        .await
        .expect("finished within the test deadline")
}

struct World {
    _root: tempfile::TempDir,
    paths: Paths,
    /// Where hooks write what they saw.
    evidence: PathBuf,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        let paths = Paths {
            config_dir: base.join("config"),
            data_dir: base.join("data"),
            project_dir: base.join("project"),
        };
        for dir in [
            &paths.config_dir,
            &paths.project_dir.join(".elph"),
            &base.join("evidence"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        World {
            evidence: base.join("evidence"),
            paths,
            _root: root,
        }
    }

    /// Trusts the project by path only: these tests edit the project's hooks after trusting it to
    /// see what a reload does, which pinning (suite::trust_pinning) would turn into "changed since
    /// trusted".
    fn trust(&self) {
        std::fs::create_dir_all(&self.paths.config_dir).unwrap();
        std::fs::write(
            self.paths.config_dir.join("settings.json"),
            r#"{"trustPinning": false}"#,
        )
        .unwrap();
        TrustStore::with_home(&self.paths.config_dir, None)
            .trust(&self.paths.project_dir)
            .unwrap();
    }

    fn untrust(&self) {
        TrustStore::with_home(&self.paths.config_dir, None)
            .untrust(&self.paths.project_dir)
            .unwrap();
    }

    /// Writes a hooks.json atomically (a reader never sees half a file).
    fn write(&self, path: &Path, contents: &str) {
        let temp = path.with_extension("json.tmp");
        std::fs::write(&temp, contents).unwrap();
        std::fs::rename(&temp, path).unwrap();
    }

    fn write_home(&self, hooks: Value) {
        self.write(
            &self.paths.home_hooks_file(),
            &json!({ "hooks": hooks }).to_string(),
        );
    }

    fn write_project(&self, hooks: Value) {
        self.write(
            &self.paths.project_hooks_file(),
            &json!({ "hooks": hooks }).to_string(),
        );
    }

    /// A `stop` hook that appends its id (from ELPH_HOOK_ID) to the evidence log.
    fn recording_hook(&self, id: &str) -> Value {
        let script = self.evidence.join("record.sh");
        if !script.exists() {
            let log = self.evidence.join("ran.log");
            write_script(
                &self.evidence,
                "record.sh",
                &format!("cat > /dev/null\necho \"$ELPH_HOOK_ID\" >> '{}'", log.display()),
            );
        }
        json!({"id": id, "event": "stop", "command": script.display().to_string()})
    }

    fn host(&self, set: HookSet) -> Arc<HookHost> {
        Arc::new(
            HookHost::new(set, self.paths.project_dir.clone(), &self.paths.data_dir)
                .with_parent_env([("PATH", "/usr/bin:/bin")]),
        )
    }

    fn stop(&self) -> HookPayload {
        HookPayload::Stop(StopPayload {
            base: PayloadBase::new("s-reload", &self.paths.project_dir),
            status: StopStatus::Completed,
            continuations: 0,
        })
    }

    /// The ids of the hooks that ran, in order, and clears the log.
    fn ran(&self) -> Vec<String> {
        let log = self.evidence.join("ran.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines().map(str::to_string).collect()
    }
}

fn ids(set: &HookSet) -> Vec<&str> {
    set.hooks.iter().map(|hook| hook.id.as_str()).collect()
}

fn run_ids(dispatch: &Dispatch) -> Vec<&str> {
    dispatch.runs.iter().map(|run| run.hook_id.as_str()).collect()
}

#[tokio::test]
async fn a_reload_picks_up_a_new_hook() {
    let world = World::new();
    world.write_home(json!([world.recording_hook("one")]));
    let loader = HookLoader::new(world.paths.clone());
    let (_, set) = loader.load();
    let host = world.host(set);
    assert_eq!(ids(&host.set()), ["one"]);

    world.write_home(json!([world.recording_hook("one"), world.recording_hook("two")]));
    assert_eq!(
        ids(&host.set()),
        ["one"],
        "editing the file changes nothing until the reload"
    );
    let (_, set) = loader.reload(&host);
    assert_eq!(ids(&set), ["one", "two"]);
    assert!(
        Arc::ptr_eq(&set, &host.set()),
        "the host holds exactly the new set"
    );
    assert_eq!(set.files[0].state, FileState::Loaded { hooks: 2 });
    assert!(
        set.diagnostics.iter().all(|d| !d.message.contains("now fails")),
        "{:?}",
        set.diagnostics
    );

    let dispatch = within(host.run_chain(world.stop())).await;
    assert_eq!(run_ids(&dispatch), ["one", "two"]);
    assert_eq!(world.ran(), ["one", "two"], "both hooks really ran");
}

#[tokio::test]
async fn a_now_malformed_file_keeps_its_hooks_until_a_fix_loads_the_new_contents() {
    let world = World::new();
    world.trust();
    world.write_home(json!([world.recording_hook("home-hook")]));
    world.write_project(json!([world.recording_hook("old-project-hook")]));
    let loader = HookLoader::new(world.paths.clone());
    let (_, set) = loader.load();
    let host = world.host(set);
    assert_eq!(ids(&host.set()), ["home-hook", "old-project-hook"]);

    // The project file breaks: its previous hooks stay, and a diagnostic says so.
    let project_file = world.paths.project_hooks_file();
    world.write(
        &project_file,
        r#"{"hooks": [{"id": "new", "event": "stop", "command": "x", "typo": 1}]}"#,
    );
    let (decision, set) = loader.reload(&host);
    assert!(decision.trusted);
    assert_eq!(ids(&set), ["home-hook", "old-project-hook"]);
    assert_eq!(set.files[1].state, FileState::Loaded { hooks: 1 });
    let kept: Vec<_> = set
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("now fails to load"))
        .collect();
    assert_eq!(kept.len(), 1, "{:?}", set.diagnostics);
    assert_eq!(kept[0].file.as_deref(), Some(project_file.as_path()));
    assert!(
        kept[0].message.contains("at /hooks/0/typo"),
        "{}",
        kept[0].message
    );
    assert!(
        kept[0].message.contains("unknown field 'typo'"),
        "{}",
        kept[0].message
    );
    assert!(
        kept[0]
            .message
            .contains("its 1 previously loaded hook(s) stay active until it is fixed"),
        "{}",
        kept[0].message
    );
    let dispatch = within(host.run_chain(world.stop())).await;
    assert_eq!(
        run_ids(&dispatch),
        ["home-hook", "old-project-hook"],
        "the kept hooks still run"
    );
    assert!(dispatch.runs.iter().all(|run| run.status == RunStatus::Ok));
    world.ran();

    // Still broken on the next reload: still kept.
    let (_, set) = loader.reload(&host);
    assert_eq!(ids(&set), ["home-hook", "old-project-hook"]);

    // The fix loads the new contents, and the diagnostic is gone.
    world.write_project(json!([world.recording_hook("new-project-hook")]));
    let (_, set) = loader.reload(&host);
    assert_eq!(ids(&set), ["home-hook", "new-project-hook"]);
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    within(host.run_chain(world.stop())).await;
    assert_eq!(world.ran(), ["home-hook", "new-project-hook"]);

    // A file that never loaded has nothing to keep: it is malformed, and none of it runs.
    let fresh = HookLoader::new(world.paths.clone());
    world.write(&project_file, "{not json");
    let (_, set) = fresh.load();
    assert_eq!(ids(&set), ["home-hook"]);
    assert!(
        matches!(set.files[1].state, FileState::Malformed { .. }),
        "{:?}",
        set.files[1]
    );

    // The same loader, though, remembers the last good contents across a deletion only until the
    // file is gone: a deleted file is missing, not kept.
    std::fs::remove_file(&project_file).unwrap();
    let (_, set) = loader.reload(&host);
    assert_eq!(ids(&set), ["home-hook"]);
    assert_eq!(set.files[1].state, FileState::Missing);
    world.write(&project_file, "{not json");
    let (_, set) = loader.reload(&host);
    assert_eq!(
        ids(&set),
        ["home-hook"],
        "nothing to keep after the file was deleted"
    );
    assert!(matches!(set.files[1].state, FileState::Malformed { .. }));
}

#[tokio::test]
async fn a_project_that_becomes_untrusted_loses_its_hooks() {
    let world = World::new();
    world.trust();
    world.write_home(json!([world.recording_hook("home-hook")]));
    world.write_project(json!([world.recording_hook("project-hook")]));
    let loader = HookLoader::new(world.paths.clone());
    let (decision, set) = loader.load();
    assert!(decision.trusted);
    let host = world.host(set);
    within(host.run_chain(world.stop())).await;
    assert_eq!(world.ran(), ["home-hook", "project-hook"]);

    world.untrust();
    let (decision, set) = loader.reload(&host);
    assert!(!decision.trusted);
    assert!(decision.explicitly_untrusted());
    assert_eq!(ids(&set), ["home-hook"]);
    assert_eq!(set.files[1].state, FileState::SkippedUntrusted);
    let skipped = format!(
        "project hooks skipped until {} is trusted",
        world.paths.project_dir.display()
    );
    assert!(
        set.diagnostics.iter().any(|d| d.message.contains(&skipped)),
        "{:?}",
        set.diagnostics
    );
    let dispatch = within(host.run_chain(world.stop())).await;
    assert_eq!(run_ids(&dispatch), ["home-hook"]);
    assert_eq!(world.ran(), ["home-hook"], "the project's hook no longer runs");

    // Trusting it again brings them back on the next reload.
    world.trust();
    let (_, set) = loader.reload(&host);
    assert_eq!(ids(&set), ["home-hook", "project-hook"]);

    // A trust.json that turns corrupt untrusts too, with the error as a diagnostic.
    std::fs::write(world.paths.trust_file(), "{\"directories\": ").unwrap();
    let (decision, set) = loader.reload(&host);
    assert!(!decision.trusted && decision.error().is_some());
    assert_eq!(ids(&set), ["home-hook"]);
    assert!(
        set.diagnostics
            .iter()
            .any(|d| d.message.contains("project trust cannot be decided"))
    );
}

/// A first hook that signals it started and then waits for a release file, so a reload can happen
/// while the dispatch is in the middle of its chain.
#[tokio::test]
async fn the_swap_is_one_step_for_a_running_dispatch() {
    let world = World::new();
    let started = world.evidence.join("started");
    let release = world.evidence.join("release");
    let gate = write_script(
        &world.evidence,
        "gate.sh",
        &format!(
            "cat > /dev/null\necho \"$ELPH_HOOK_ID\" >> '{log}'\ntouch '{started}'\n\
             i=0; while [ ! -e '{release}' ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done",
            log = world.evidence.join("ran.log").display(),
            started = started.display(),
            release = release.display()
        ),
    );
    let gated = |id: &str| json!({"id": id, "event": "stop", "command": gate.display().to_string()});
    world.write_home(json!([gated("old-1"), world.recording_hook("old-2")]));
    let loader = HookLoader::new(world.paths.clone());
    let host = world.host(loader.load().1);

    let running = tokio::spawn({
        let host = host.clone();
        let payload = world.stop();
        async move { host.run_chain(payload).await }
    });
    let deadline = Instant::now() + DEADLINE;
    while !started.exists() {
        assert!(Instant::now() < deadline, "the first hook never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Mid-chain: swap in a set with other hooks.
    world.write_home(json!([
        world.recording_hook("new-1"),
        world.recording_hook("new-2")
    ]));
    let (_, set) = loader.reload(&host);
    assert_eq!(ids(&set), ["new-1", "new-2"]);
    assert_eq!(
        ids(&host.set()),
        ["new-1", "new-2"],
        "the next dispatch sees the new set at once"
    );
    std::fs::write(&release, "").unwrap();

    let old = within(running).await.unwrap();
    assert_eq!(
        run_ids(&old),
        ["old-1", "old-2"],
        "the running dispatch finished with the set it started with"
    );
    let new = within(host.run_chain(world.stop())).await;
    assert_eq!(run_ids(&new), ["new-1", "new-2"]);
    assert_eq!(world.ran(), ["old-1", "old-2", "new-1", "new-2"]);
}

/// Dispatches racing reloads that alternate between two sets: every dispatch sees one whole set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_dispatches_never_see_half_a_set() {
    let world = World::new();
    let hook = |id: &str| json!({"id": id, "event": "stop", "command": "/bin/true"});
    let set_a = json!([hook("a-1"), hook("a-2"), hook("a-3")]);
    let set_b = json!([hook("b-1"), hook("b-2")]);
    world.write_home(set_a.clone());
    let loader = HookLoader::new(world.paths.clone());
    let host = world.host(loader.load().1);

    let dispatchers: Vec<_> = (0..2)
        .map(|_| {
            let host = host.clone();
            let payload = world.stop();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for _ in 0..15 {
                    let dispatch = host.run_chain(payload.clone()).await;
                    seen.push(run_ids(&dispatch).join(","));
                }
                seen
            })
        })
        .collect();
    for round in 0..30 {
        world.write_home(if round % 2 == 0 {
            set_b.clone()
        } else {
            set_a.clone()
        });
        loader.reload(&host);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    for dispatcher in dispatchers {
        for seen in within(dispatcher).await.unwrap() {
            assert!(
                seen == "a-1,a-2,a-3" || seen == "b-1,b-2",
                "a dispatch saw a mixed set: {seen}"
            );
        }
    }
}
