//! Nothing Elph started outlives it, even when it is killed with SIGKILL and runs no code of its
//! own: the real binary, a real `shell_exec` command, a 40 s hook (one-shot or persistent) or an MCP
//! server, and /proc. (`elph sandbox`'s command: `children`.)

use std::time::Duration;

use serde_json::json;
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::{descendants, still_alive, test_support_binary, write_script};

use super::lifecycle_support::{Running, acp_open_session, acp_prompt, long_command, pids_in};

#[derive(Clone, Copy, Debug)]
pub enum Front {
    Run,
    Acp,
}

#[derive(Clone, Copy, Debug)]
pub enum During {
    ShellExec,
    Hook,
    PersistentHook,
    McpServer,
}

/// Starts `front` busy with a 40 s `during`; returns it once the busy processes have recorded their
/// pids, with those pids.
pub async fn busy_elph(
    env: &TestEnv,
    server: &FakeModelServer,
    front: Front,
    during: During,
) -> (Running, Vec<i32>) {
    busy_elph_with(env, server, front, during, Vec::new()).await
}

/// `busy_elph` with more project hooks.
pub async fn busy_elph_with(
    env: &TestEnv,
    server: &FakeModelServer,
    front: Front,
    during: During,
    hooks: Vec<serde_json::Value>,
) -> (Running, Vec<i32>) {
    busy_elph_with_vars(env, server, front, during, hooks, &[]).await
}

/// `busy_elph_with`, elph started with more environment variables.
pub async fn busy_elph_with_vars(
    env: &TestEnv,
    server: &FakeModelServer,
    front: Front,
    during: During,
    mut hooks: Vec<serde_json::Value>,
    vars: &[(&str, &str)],
) -> (Running, Vec<i32>) {
    env.trust_project();
    // Inside the project: the default sandbox (workspace-write) lets a command write only there.
    let pid_file = env.project.join("busy.pids");
    match during {
        During::ShellExec => {
            server.enqueue(FakeReply::tool_call(
                "shell_exec",
                json!({"command": long_command(&pid_file, 40)}),
            ));
            env.write_project_hooks(&json!({ "hooks": hooks }));
        }
        During::Hook => {
            let body = format!("cat > /dev/null\n{}\n", long_command(&pid_file, 40));
            env.project_script("slow.sh", &body);
            hooks.push(json!({"id": "slow", "event": "userPromptSubmit",
                "command": "hooks/slow.sh", "timeoutMs": 60000}));
            env.write_project_hooks(&json!({ "hooks": hooks }));
        }
        During::PersistentHook => {
            // Never answers: the event waits for it up to the timeout.
            env.project_script("slow.sh", &long_command(&pid_file, 40));
            hooks.push(json!({"id": "slow", "event": "userPromptSubmit",
                "command": "hooks/slow.sh", "timeoutMs": 60000, "persistent": true}));
            env.write_project_hooks(&json!({ "hooks": hooks }));
        }
        During::McpServer => {
            // The server's shell leaves a `sleep` in its group and becomes the server.
            let script = write_script(
                &env.evidence("mcp"),
                "server.sh",
                &format!(
                    "sleep 40 & echo $! >> '{file}'; echo $$ >> '{file}'\nexec '{server}'",
                    file = pid_file.display(),
                    server = test_support_binary("mcp-test-server").display()
                ),
            );
            std::fs::write(
                env.config_dir.join("mcp.json"),
                json!({"servers": {"busy": {"command": script.display().to_string()}}}).to_string(),
            )
            .unwrap();
            // The model never answers, so the run (and the server) stay up.
            server.enqueue(FakeReply::text("never sent").hang());
            env.write_project_hooks(&json!({ "hooks": hooks }));
        }
    }
    let mut running = match front {
        Front::Run => Running::start_with(
            env,
            server,
            &[
                "run",
                "--model",
                "openai/gpt-test",
                "--output-format",
                "stream-json",
                "go",
            ],
            vars,
            false,
        ),
        Front::Acp => {
            let mut running = Running::start_with(
                env,
                server,
                &["acp", "--model", "openai/gpt-test", "--approval", "auto"],
                vars,
                true,
            );
            let session = acp_open_session(&mut running, &env.project).await;
            acp_prompt(&mut running, &session, "go").await;
            running
        }
    };
    let pids = pids_in(&pid_file, 2).await;
    let _ = &mut running;
    (running, pids)
}

async fn kill_9_leaves_nothing(front: Front, during: During) {
    kill_9_leaves_nothing_with(front, during, &[]).await;
}

/// Unconfined children (hooks, MCP servers) start in a child sharing Elph's memory until it
/// executes; `ELPH_SPAWN=fork` starts them through the fork that confined ones take. Both register
/// the child's group with the orphan watcher before its program runs.
const THROUGH_THE_FORK: [(&str, &str); 1] = [("ELPH_SPAWN", "fork")];

async fn kill_9_leaves_nothing_with(front: Front, during: During, vars: &[(&str, &str)]) {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let (running, busy) = busy_elph_with_vars(&env, &server, front, during, Vec::new(), vars).await;
    let mut family = descendants(running.pid);
    for pid in &busy {
        assert!(family.contains(pid), "{pid} is a descendant of elph ({family:?})");
    }
    // A sandboxed command is created by its view's starter, a process of Elph's that must die
    // with it too (docs/security.md, "How it is enforced").
    let through_fork = vars.contains(&THROUGH_THE_FORK[0])
        || std::env::var_os("ELPH_SPAWN").is_some_and(|value| value == "fork");
    let through_starter = matches!(during, During::ShellExec)
        && !through_fork
        && elph_process::sandbox::mount_namespaces_available();
    if through_starter {
        let comm = |pid: &i32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert!(
            family.iter().any(|pid| comm(pid).trim() == "elph-starter"),
            "the view's starter is among elph's descendants: {family:?}"
        );
    }
    family.sort_unstable();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running.pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (code, _, _) = running.finish().await;
    assert_eq!(code, None, "killed by a signal");
    let left = still_alive(&family, Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "{front:?}/{during:?}: still alive 10 s after kill -9: {left:?} of {family:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_run_during_shell_exec_leaves_no_process() {
    kill_9_leaves_nothing(Front::Run, During::ShellExec).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_run_during_a_hook_leaves_no_process() {
    kill_9_leaves_nothing(Front::Run, During::Hook).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_run_during_a_hook_started_through_the_fork_leaves_no_process() {
    kill_9_leaves_nothing_with(Front::Run, During::Hook, &THROUGH_THE_FORK).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_run_with_an_mcp_server_started_through_the_fork_leaves_no_process() {
    kill_9_leaves_nothing_with(Front::Run, During::McpServer, &THROUGH_THE_FORK).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_run_during_a_persistent_hook_leaves_no_process() {
    kill_9_leaves_nothing(Front::Run, During::PersistentHook).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_run_with_an_mcp_server_leaves_no_process() {
    kill_9_leaves_nothing(Front::Run, During::McpServer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_acp_during_shell_exec_leaves_no_process() {
    kill_9_leaves_nothing(Front::Acp, During::ShellExec).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_elph_acp_during_a_hook_leaves_no_process() {
    kill_9_leaves_nothing(Front::Acp, During::Hook).await;
}
