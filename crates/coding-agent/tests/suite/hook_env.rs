//! What reaches a hook's environment through the real binary: the CA and proxy variables of the
//! user's shell (a proxy URL with a password left out), the hook's own `env` with `${NAME}` taken
//! from Elph's environment, and a hook whose `env` names an unset variable not run at all.

use serde_json::json;
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::run_elph_with;

fn environment_of(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn ca_and_proxy_variables_and_a_hooks_env_reach_the_hook() {
    let env = TestEnv::new();
    let seen = env.evidence("hook-env.txt");
    let never = env.evidence("never.txt");
    let script = test_support::hook_scripts::write_script(
        &env.config_dir.join("hooks"),
        "dump.sh",
        &format!("cat > /dev/null\nenv | sort > '{}'\n", seen.display()),
    );
    let unset = test_support::hook_scripts::write_script(
        &env.config_dir.join("hooks"),
        "unset.sh",
        &format!("cat > /dev/null\ntouch '{}'\n", never.display()),
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "dump", "event": "sessionStart", "command": script.to_str().unwrap(),
         "env": {"HOOK_LEVEL": "debug", "FOR_THIS_HOOK": "${CORP_TOKEN}",
                 "WITH_DEFAULT": "${NOT_SET_ANYWHERE:-fallback}", "ELPH_HOOK_ID": "forged"}},
        {"id": "needs-unset", "event": "sessionStart", "command": unset.to_str().unwrap(),
         "env": {"X": "${NOT_SET_ANYWHERE}"}}
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("done"));
    let output = run_elph_with(
        &env,
        &server,
        &[
            ("SSL_CERT_FILE", "/etc/corp/ca.pem"),
            ("NODE_EXTRA_CA_CERTS", "/etc/corp/ca.pem"),
            ("REQUESTS_CA_BUNDLE", "/etc/corp/bundle.pem"),
            ("https_proxy", "http://proxy.corp.example:3128"),
            ("NO_PROXY", "localhost,.corp.example"),
            ("HTTPS_PROXY", "http://me:hunter2@proxy.corp.example:3128"),
            ("CORP_TOKEN", "tok-for-one-hook"),
            ("UNRELATED_VAR", "stays-out"),
        ],
        &["hi"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let vars = environment_of(&seen);
    for expected in [
        "SSL_CERT_FILE=/etc/corp/ca.pem",
        "NODE_EXTRA_CA_CERTS=/etc/corp/ca.pem",
        "REQUESTS_CA_BUNDLE=/etc/corp/bundle.pem",
        "https_proxy=http://proxy.corp.example:3128",
        "NO_PROXY=localhost,.corp.example",
        "HOOK_LEVEL=debug",
        "FOR_THIS_HOOK=tok-for-one-hook",
        "WITH_DEFAULT=fallback",
        "ELPH_HOOK_ID=dump",
    ] {
        assert!(
            vars.iter().any(|line| line == expected),
            "{expected} in {vars:#?}"
        );
    }
    let all = vars.join("\n");
    for absent in [
        "hunter2",
        "HTTPS_PROXY=",
        "stays-out",
        "sk-test-secret-key",
        "CORP_TOKEN=",
    ] {
        assert!(!all.contains(absent), "{absent} reached the hook:\n{all}");
    }
    assert!(!never.exists(), "a hook whose env names an unset variable ran");
    assert!(
        stderr.contains("NOT_SET_ANYWHERE") && stderr.contains("needs-unset"),
        "the skipped run is said: {stderr}"
    );

    let list = env
        .command(&super::run_e2e::elph())
        .args(["hooks", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("(env: ELPH_HOOK_ID, FOR_THIS_HOOK, HOOK_LEVEL, WITH_DEFAULT)"),
        "{listed}"
    );
    assert!(!listed.contains("debug"), "values are never listed: {listed}");
}
