//! Secrets by other names, the private temp dir, resource limits and weaker systems, end to end
//! through the real `elph` binary, as root and as a user who is not (see `sandbox_users`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use test_support::env::TestEnv;

use super::sandbox_e2e::landlock;
use super::sandbox_users::{Who, elph_as, everyone, output, shell_as, text};

#[tokio::test]
async fn secrets_by_other_names_and_a_broken_providers_key_stay_out_of_env() {
    let test = "secrets_by_other_names_and_a_broken_providers_key_stay_out_of_env";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        // A custom provider's key with an innocent name, and another provider file that is broken:
        // the key is still known and held back.
        let providers = env.config_dir.join("providers");
        std::fs::create_dir_all(&providers).unwrap();
        std::fs::write(
            providers.join("acme.json"),
            json!({"name": "acme", "api": "openai-chat", "baseUrl": "http://127.0.0.1:9/v1",
                   "apiKeyEnv": "ACME_ACCESS", "models": [{"id": "m"}]})
            .to_string(),
        )
        .unwrap();
        std::fs::write(providers.join("broken.json"), "{\"name\": \"broken\", ").unwrap();
        let secrets = [
            ("ACME_ACCESS", "secret-acme-provider"),
            ("DATABASE_URL", "postgres://app:secret-db-url@db.internal/app"),
            ("DB_PASS", "secret-db-pass"),
            ("MYSQL_PWD", "secret-mysql-pwd"),
            ("GH_PAT", "secret-gh-pat"),
            ("CI_JOB_JWT", "secret-ci-jwt"),
            (
                "SLACK_WEBHOOK_URL",
                "https://hooks.slack.example/services/secret-webhook",
            ),
            (
                "SENTRY_DSN",
                "https://secret-sentry-dsn@o1.ingest.sentry.example/2",
            ),
            ("HTTPS_PROXY", "http://user:secret-proxy-pw@proxy.internal:3128"),
            ("OP_SESSION_my", "secret-op-session"),
            ("DOCKER_AUTH_CONFIG", "secret-docker-auth"),
            ("ACME_AUTH", "secret-acme-auth"),
            ("BROWSER_COOKIE", "secret-cookie"),
        ];
        let mut vars: Vec<(&str, &str)> = secrets.to_vec();
        vars.push(("PLAIN_SETTING", "visible-plain-value"));
        vars.push(("GIT_AUTHOR_NAME", "visible-author"));
        let (result, out) = shell_as(&env, who, "env; echo env-done", &vars, &[]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(result.contains("env-done"), "{who:?}: {result}");
        assert!(
            result.contains("PLAIN_SETTING=visible-plain-value"),
            "{who:?}: {result}"
        );
        assert!(
            result.contains("GIT_AUTHOR_NAME=visible-author"),
            "{who:?}: {result}"
        );
        for (name, value) in secrets {
            assert!(!result.contains(value), "{who:?}: {name} leaked: {result}");
        }

        // `elph doctor` names each one held back and why, and shows no value.
        let mut doctor = elph_as(&env, who);
        doctor.envs(vars.iter().copied()).arg("doctor");
        let report = text(&output(doctor).stdout);
        assert!(
            report.contains("ACME_ACCESS: a provider's key variable"),
            "{report}"
        );
        assert!(
            report.contains("DATABASE_URL: its value is a URL with a user name or password"),
            "{report}"
        );
        assert!(report.contains("GH_PAT: its name has the word PAT"), "{report}");
        for (_, value) in secrets {
            assert!(
                !report.contains(value),
                "{who:?}: doctor printed a value: {report}"
            );
        }
    }
}

#[test]
fn the_temp_dir_is_private_and_a_dead_elphs_is_removed_at_the_next_start() {
    let test = "the_temp_dir_is_private_and_a_dead_elphs_is_removed_at_the_next_start";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        let temp = env.home.join("tmp");
        std::fs::create_dir_all(&temp).unwrap();
        let mut command = elph_as(&env, who);
        command.env("TMPDIR", &temp).args([
            "sandbox",
            "--",
            "sh",
            "-c",
            "stat -c 'mode=%a owner=%u' \"$TMPDIR\"",
        ]);
        let out = output(command);
        let said = text(&out.stdout);
        assert!(
            said.contains(&format!("mode=700 owner={}", who.uid())),
            "{who:?}: {said}{}",
            text(&out.stderr)
        );

        // An Elph killed with SIGKILL leaves its folder behind…
        let mut command = elph_as(&env, who);
        command
            .env("TMPDIR", &temp)
            .args(["sandbox", "--", "sleep", "29.7"]);
        let mut running = command.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let left = loop {
            if let Some(dir) = sandbox_dirs(&temp).into_iter().next() {
                break dir;
            }
            assert!(Instant::now() < deadline, "the sandbox's temp dir appeared");
            std::thread::sleep(Duration::from_millis(20));
        };
        // setpriv execs elph: the child is Elph itself.
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(running.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        running.wait().unwrap();
        assert!(left.exists(), "{who:?}: left behind by the killed Elph");
        // …and the next Elph removes it.
        let mut next = elph_as(&env, who);
        next.env("TMPDIR", &temp).args(["sandbox", "--", "true"]);
        assert!(output(next).status.success());
        assert!(!left.exists(), "{who:?}: removed at the next start");
        assert!(
            sandbox_dirs(&temp).is_empty(),
            "{who:?}: {:?}",
            sandbox_dirs(&temp)
        );
        let _ = std::process::Command::new("pkill")
            .args(["-KILL", "-x", "-f", "sleep 29.7"])
            .status();
    }
}

fn sandbox_dirs(temp: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(temp)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| {
                    path.is_dir()
                        && path
                            .file_name()
                            .is_some_and(|name| name.to_string_lossy().starts_with("elph-sandbox-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn each_limit_is_applied() {
    let test = "each_limit_is_applied";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        std::fs::write(
            env.config_dir.join("settings.json"),
            json!({"sandbox": {"limits": {
                "fileSizeMiB": 1, "addressSpaceMiB": 512, "processes": 64, "cpuSeconds": 1}}})
            .to_string(),
        )
        .unwrap();
        let script = "head -c 2097152 /dev/zero > big 2>/dev/null; echo \"fsize=$? size=$(stat -c %s big)\"; \
             python3 -c 'b = bytearray(1024 * 1024 * 1024)' 2>/dev/null; echo \"as=$?\"; \
             sh -c 'i=0; while [ $i -lt 100 ]; do (sleep 2) & i=$((i+1)); done; wait' 2>&1 | grep -c -i 'fork' | sed 's/^/forkfail=/'; \
             sh -c 'while :; do :; done'; echo \"cpu=$?\"";
        let (result, out) = shell_as(&env, who, script, &[], &[]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(result.contains("size=1048576"), "{who:?}: file size: {result}");
        assert!(!result.contains("fsize=0"), "{who:?}: {result}");
        assert!(result.contains("as=1"), "{who:?}: address space: {result}");
        // SIGXCPU (24) past the CPU limit.
        assert!(result.contains("cpu=152"), "{who:?}: CPU seconds: {result}");
        if who == Who::User {
            assert!(!result.contains("forkfail=0"), "{who:?}: processes: {result}");
        }
        // The kernel never applies RLIMIT_NPROC to uid 0 (docs/security.md says so).
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_without_namespaces_is_refused_unless_accepted_and_says_what_is_off() {
    let test = "a_system_without_namespaces_is_refused_unless_accepted_and_says_what_is_off";
    if !landlock(test) {
        return;
    }
    let deny = test_support::hook_scripts::test_support_binary("deny-namespaces");
    for who in everyone(test) {
        let env = TestEnv::new();
        // The helper where the other user can run it.
        let helper = env.root.path().join("deny-namespaces");
        // A hard link, not a copy: a copy's write descriptor, inherited by a child another test
        // thread forks at that moment, would make running it fail with ETXTBSY.
        std::fs::hard_link(&deny, &helper)
            .or_else(|_| std::fs::copy(&deny, &helper).map(|_| ()))
            .unwrap();
        let server =
            test_support::fake_model::FakeModelServer::start(test_support::fake_model::Wire::OpenAi).await;
        let weaker = |extra: &[&str]| {
            let elph = elph_as(&env, who);
            let mut command = env.command(&helper);
            command
                .arg("--mount")
                .arg(elph.get_program())
                .args(elph.get_args());
            command
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
        assert!(said.contains("cannot give every protection"), "{who:?}: {said}");
        assert!(said.contains("no user namespace"), "{who:?}: {said}");
        assert!(
            said.contains(".elph"),
            "{who:?}: names the writable paths: {said}"
        );
        assert!(said.contains("--allow-weaker-sandbox"), "{who:?}: {said}");
        assert!(server.requests().is_empty(), "{who:?}: no turn started");

        server.enqueue(test_support::fake_model::FakeReply::tool_call(
            "shell_exec",
            json!({"command": "echo x > outside-attempt-$$ ; echo ok"}),
        ));
        server.enqueue(test_support::fake_model::FakeReply::text("done"));
        let accepted = output(weaker(&["--allow-weaker-sandbox"]));
        let said = text(&accepted.stderr);
        assert!(accepted.status.success(), "{who:?}: {said}");
        assert!(said.contains("sandbox weaker on this system"), "{who:?}: {said}");
        assert!(said.contains("no user namespace"), "{who:?}: {said}");
        // Also `elph doctor` names it.
        let doctor = elph_as(&env, who);
        let mut command = env.command(&helper);
        command
            .arg("--mount")
            .arg(doctor.get_program())
            .args(doctor.get_args())
            .arg("doctor");
        let report = text(&output(command).stdout);
        assert!(
            report.contains("sandbox weaker on this system"),
            "{who:?}: {report}"
        );
    }
}
