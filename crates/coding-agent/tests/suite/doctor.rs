//! `elph doctor` through the real binary: the human report and `--json` for a mixed layout, run
//! statistics from a hand-written run log, an untrusted project, a corrupt trust.json. Doctor exits
//! 0 whatever it finds, never runs a hook and never writes anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::hook_scripts::{write_script, write_with_mode};

const ELPH: &str = env!("CARGO_BIN_EXE_elph");

/// Runs `elph ARGS` in `env` (stdin from /dev/null, under a deadline).
fn elph(env: &TestEnv, args: &[&str]) -> Output {
    let mut command = assert_cmd::Command::new(ELPH);
    command
        .env_clear()
        .env("HOME", &env.home)
        .env("ELPH_HOME", &env.config_dir)
        .env("ELPH_DATA_DIR", &env.data_dir)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .current_dir(&env.project)
        .args(args)
        .timeout(Duration::from_secs(60));
    let output = command.output().unwrap();
    assert!(
        output.status.code().is_some(),
        "elph {args:?} was killed: {output:?}"
    );
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `elph doctor`: exit 0, the human report.
fn doctor(env: &TestEnv) -> String {
    let output = elph(env, &["doctor"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    text(&output.stdout)
}

/// `elph doctor --json`: exit 0, one JSON document.
fn doctor_json(env: &TestEnv) -> Value {
    let output = elph(env, &["doctor", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let document: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("not one JSON document ({err}): {}", text(&output.stdout)));
    assert_eq!(document["schemaVersion"], 1);
    document
}

fn hook<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|hook| hook["id"] == id)
        .unwrap_or_else(|| panic!("no hook '{id}' in {report:#}"))
}

fn messages(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["message"].as_str().unwrap().to_string())
        .collect()
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// Every file and folder under `root` with its contents, for "nothing was written" checks.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.insert(path.clone(), None);
                stack.push(path);
            } else {
                files.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    files
}

/// The line of `report` that contains `needle` (for checking marks and layout).
fn line_with<'a>(report: &'a str, needle: &str) -> &'a str {
    report
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{report}"))
}

/// A home file with one hook of each kind of trouble, and a malformed project file.
fn mixed_layout() -> TestEnv {
    let env = TestEnv::new();
    env.trust_project();
    let hooks_dir = env.config_dir.join("hooks");
    write_script(&hooks_dir, "audit.sh", "cat > /dev/null");
    write_with_mode(&hooks_dir.join("not-exec.sh"), "#!/bin/sh\nexit 0\n", 0o644);
    write_with_mode(&hooks_dir.join("crlf.sh"), "#!/bin/sh\r\nexit 0\r\n", 0o755);
    env.write_home_hooks(&json!({"hooks": [
        {"id": "audit", "event": "sessionStart", "command": "hooks/audit.sh", "timeoutMs": 5000},
        {"id": "missing-cmd", "event": "stop", "command": "no-such-hook-program-xyz"},
        {"id": "not-exec", "event": "preToolUse", "matcher": {"toolNames": ["edit_file", "write_*"]},
         "command": "hooks/not-exec.sh", "args": ["--strict", "two words"]},
        {"id": "crlf", "event": "postToolUse", "command": "hooks/crlf.sh"},
        {"id": "off", "event": "stop", "command": "/bin/true", "enabled": false},
    ]}));
    std::fs::create_dir_all(env.project.join(".elph")).unwrap();
    std::fs::write(
        env.project.join(".elph/hooks.json"),
        r#"{"hooks": [{"id": "p", "event": "sessionStart", "command": "x", "bogus": 1}]}"#,
    )
    .unwrap();
    env
}

#[test]
fn json_report_of_a_mixed_layout() {
    let env = mixed_layout();
    let project_before = snapshot(&env.project);
    let config_before = snapshot(&env.config_dir);
    let report = doctor_json(&env);

    // The three paths, and where each came from.
    assert_eq!(report["paths"]["configDir"]["path"], s(&env.config_dir));
    assert_eq!(report["paths"]["configDir"]["from"], "$ELPH_HOME");
    assert_eq!(report["paths"]["dataDir"]["path"], s(&env.data_dir));
    assert_eq!(report["paths"]["dataDir"]["from"], "$ELPH_DATA_DIR");
    assert_eq!(report["paths"]["projectDir"]["path"], s(&env.project));
    assert_eq!(report["paths"]["projectDir"]["from"], "the current directory");

    // Trust and the entry that decided it.
    let trust = &report["trust"];
    assert_eq!(trust["trusted"], true);
    assert_eq!(
        trust["source"],
        json!({"kind": "entry", "path": s(&env.project), "trusted": true})
    );
    assert_eq!(
        trust["explanation"],
        format!("decided by entry {} = true", env.project.display())
    );
    assert_eq!(trust["trustFile"], s(&env.config_dir.join("trust.json")));
    assert_eq!(trust["error"], Value::Null);

    // The two files.
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["scope"], "home");
    assert_eq!(files[0]["state"], "loaded");
    assert_eq!(files[0]["hooks"], 5);
    assert_eq!(files[1]["scope"], "project");
    assert_eq!(files[1]["state"], "malformed");
    assert_eq!(files[1]["pointer"], "/hooks/0/bogus");
    assert!(
        files[1]["reason"]
            .as_str()
            .unwrap()
            .contains("unknown field 'bogus'"),
        "{}",
        files[1]
    );
    assert_eq!(files[1]["finding"]["level"], "error");
    let project_file = env.project.join(".elph/hooks.json");
    assert_eq!(
        files[1]["finding"]["fix"],
        format!(
            "fix it, then check it with: elph hooks validate {}",
            project_file.display()
        )
    );

    // Every hook, in order, with its fields.
    let ids: Vec<&str> = report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["audit", "missing-cmd", "not-exec", "crlf", "off"]);
    let audit = hook(&report, "audit");
    assert_eq!(audit["event"], "sessionStart");
    assert_eq!(audit["matcher"], Value::Null);
    assert_eq!(audit["timeoutMs"], 5000);
    assert_eq!(audit["source"], s(&env.config_dir.join("hooks.json")));
    assert_eq!(audit["scope"], "home");
    assert_eq!(audit["enabled"], true);
    assert_eq!(audit["status"], "ok");
    assert_eq!(
        audit["command"],
        json!({"written": "hooks/audit.sh", "path": s(&env.config_dir.join("hooks/audit.sh")),
               "exists": true, "executable": true, "interpreter": "/bin/sh"})
    );
    assert_eq!(audit["findings"], json!([]));
    assert_eq!(audit["recentRuns"], Value::Null);

    let missing = hook(&report, "missing-cmd");
    assert_eq!(missing["status"], "error");
    assert_eq!(missing["command"]["exists"], false);
    assert_eq!(
        messages(&missing["findings"]),
        ["command not found: 'no-such-hook-program-xyz' is not on PATH"]
    );

    let not_exec = hook(&report, "not-exec");
    let script = env.config_dir.join("hooks/not-exec.sh");
    assert_eq!(not_exec["status"], "error");
    assert_eq!(not_exec["matcher"], json!(["edit_file", "write_*"]));
    assert_eq!(not_exec["args"], json!(["--strict", "two words"]));
    assert_eq!(not_exec["timeoutMs"], 10000);
    assert_eq!(
        (&not_exec["command"]["exists"], &not_exec["command"]["executable"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(
        not_exec["findings"],
        json!([{"level": "error", "message": format!("not executable: {}", script.display()),
                "fix": format!("chmod +x {}", script.display())}])
    );

    let crlf = hook(&report, "crlf");
    assert_eq!(crlf["status"], "error");
    assert!(
        messages(&crlf["findings"])[0].contains("carriage return"),
        "{crlf}"
    );

    let off = hook(&report, "off");
    assert_eq!(off["enabled"], false);
    assert_eq!(off["status"], "info");
    assert_eq!(messages(&off["findings"]), ["disabled: listed, never run"]);

    // Diagnostics: the malformed file, with its pointer.
    let diagnostics = report["diagnostics"].as_array().unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d["file"] == s(&project_file) && d["pointer"] == "/hooks/0/bogus"),
        "{diagnostics:#?}"
    );

    // Problems: each with a subject and a fix.
    let problems = report["problems"].as_array().unwrap();
    let subjects: Vec<&str> = problems.iter().map(|p| p["subject"].as_str().unwrap()).collect();
    assert_eq!(
        subjects,
        [
            format!("file {}", project_file.display()).as_str(),
            "hook 'missing-cmd'",
            "hook 'not-exec'",
            "hook 'crlf'"
        ]
    );
    assert!(problems.iter().all(|p| p["fix"].is_string()), "{problems:#?}");
    assert_eq!(
        report["summary"],
        json!({"hooks": 5, "enabled": 4, "errors": 4, "warnings": 0, "failedOpenRuns": 0})
    );

    // Doctor wrote nothing: not in the project, not in CONFIG_DIR, and DATA_DIR was not created.
    assert_eq!(snapshot(&env.project), project_before);
    assert_eq!(snapshot(&env.config_dir), config_before);
    assert!(!env.data_dir.exists());
}

#[test]
fn human_report_of_a_mixed_layout() {
    let env = mixed_layout();
    let report = doctor(&env);
    for heading in [
        "Paths",
        "Trust",
        "Hook files",
        "Run log",
        "Diagnostics (1)",
        "Summary",
    ] {
        assert!(
            report.lines().any(|line| line == heading),
            "no heading {heading:?} in:\n{report}"
        );
    }
    assert!(
        report
            .lines()
            .any(|line| line.starts_with("Hooks: 5 (4 enabled, 1 disabled)")),
        "{report}"
    );
    let config = env.config_dir.display().to_string();
    assert!(
        line_with(&report, "CONFIG_DIR").contains(&format!("{config}  (from $ELPH_HOME)")),
        "{report}"
    );
    assert!(
        line_with(&report, "DATA_DIR").contains("not created yet"),
        "{report}"
    );
    assert!(line_with(&report, "PROJECT_DIR").contains(&env.project.display().to_string()));
    assert!(
        line_with(&report, "is trusted").trim_start().starts_with("✓"),
        "the trust line carries a mark: {report}"
    );

    let project_file = env.project.join(".elph/hooks.json");
    let file_line = line_with(&report, &format!("project  {}", project_file.display()));
    assert!(file_line.trim_start().starts_with("✗") && file_line.contains("malformed at /hooks/0/bogus"));
    assert!(line_with(&report, "home     ").contains("loaded 5 hook(s)"));
    assert!(report.contains(&format!(
        "→ fix it, then check it with: elph hooks validate {}",
        project_file.display()
    )));

    let script = env.config_dir.join("hooks/not-exec.sh");
    assert!(line_with(&report, "not-exec  preToolUse").contains("tools: edit_file, write_*"));
    assert!(
        line_with(&report, "not-exec  preToolUse")
            .trim_start()
            .starts_with("✗")
    );
    assert!(
        report.contains(&format!("✗ not executable: {}", script.display())),
        "{report}"
    );
    assert!(
        report.contains(&format!("→ chmod +x {}", script.display())),
        "{report}"
    );
    assert!(report.contains(r#"args     "--strict" "two words""#), "{report}");
    assert!(report.contains("✗ command not found: 'no-such-hook-program-xyz' is not on PATH"));
    assert!(
        line_with(&report, "audit  sessionStart")
            .trim_start()
            .starts_with("✓")
    );
    assert!(report.contains(&format!(
        "command  hooks/audit.sh → {config}/hooks/audit.sh (executable)"
    )));
    assert!(report.contains("timeout  5000 ms"));
    assert!(line_with(&report, "off  stop").trim_start().starts_with("-"));
    assert!(report.contains("enabled  no"));
    assert!(line_with(&report, "hooks.jsonl").contains("no runs recorded yet"));
    assert!(
        line_with(&report, "problem(s)").contains("4 problem(s), 0 warning(s)"),
        "{report}"
    );
}

/// A run log line as the host writes it.
fn run_line(id: &str, ms: u64, status: &str, timed_out: bool, cause: Option<&str>) -> String {
    json!({
        "time": "2025-06-01T12:00:00Z", "hookId": id, "event": "stop", "durationMs": ms,
        "exit": if status == "ok" { json!(0) } else { Value::Null }, "signal": null,
        "timedOut": timed_out, "status": status, "cause": cause,
    })
    .to_string()
}

#[test]
fn recent_run_statistics_and_warnings_come_from_the_run_log() {
    let env = TestEnv::new();
    let true_hook = |id: &str, event: &str, timeout: u64| json!({"id": id, "event": event, "command": "/bin/true", "timeoutMs": timeout});
    env.write_home_hooks(&json!({"hooks": [
        true_hook("fast", "stop", 10000),
        true_hook("near-timeout", "stop", 3000),
        true_hook("over-2s", "beforeAgent", 60000),
        true_hook("flaky", "preToolUse", 10000),
        true_hook("many", "stop", 10000),
        true_hook("never-ran", "stop", 10000),
    ]}));
    let mut lines = vec![
        "not json at all".to_string(),
        r#"{"hookId": "fast"}"#.to_string(),
        String::new(),
    ];
    for ms in [10, 20, 30, 40, 50] {
        lines.push(run_line("fast", ms, "ok", false, None));
    }
    for ms in (1..=20).map(|n| n * 100) {
        lines.push(run_line("near-timeout", ms, "ok", false, None));
    }
    for _ in 0..4 {
        lines.push(run_line("over-2s", 2500, "ok", false, None));
    }
    lines.push(run_line("flaky", 5, "ok", false, None));
    lines.push(run_line("flaky", 6, "ok", false, None));
    lines.push(run_line("flaky", 7, "failed", false, Some("exited with code 1")));
    lines.push(run_line(
        "flaky",
        10000,
        "failed",
        true,
        Some("timed out after 10000 ms"),
    ));
    lines.push(run_line("flaky", 8, "ok", false, None));
    lines.push(run_line("flaky", 9, "failed", false, Some("exited with code 2")));
    // 1,200 runs: the 200 oldest failed; only the latest 1,000 count.
    for _ in 0..200 {
        lines.push(run_line("many", 900, "failed", false, Some("old failure")));
    }
    for _ in 0..1000 {
        lines.push(run_line("many", 5, "ok", false, None));
    }
    lines.push(run_line("retired", 1, "ok", false, None));
    lines.push(run_line("retired", 1, "ok", false, None));
    let mut log = lines.join("\n");
    log.push_str("\n{\"hookId\": \"fast\", \"durationMs\": 1"); // cut off mid-write
    std::fs::create_dir_all(env.data_dir.join("logs")).unwrap();
    std::fs::write(env.data_dir.join("logs/hooks.jsonl"), log).unwrap();

    let report = doctor_json(&env);
    assert_eq!(
        report["runLog"],
        json!({"path": s(&env.data_dir.join("logs/hooks.jsonl")), "exists": true, "runs": 1237,
               "skippedLines": 3, "unknownHookRuns": 2, "window": 1000})
    );
    let stats = |id: &str| hook(&report, id)["recentRuns"].clone();
    let fast = stats("fast");
    assert_eq!(
        (&fast["count"], &fast["failures"], &fast["timeouts"]),
        (&json!(5), &json!(0), &json!(0))
    );
    assert_eq!((&fast["p50Ms"], &fast["p95Ms"]), (&json!(30), &json!(50)));
    assert_eq!(hook(&report, "fast")["status"], "ok");

    let near = stats("near-timeout");
    assert_eq!(
        (&near["count"], &near["p50Ms"], &near["p95Ms"]),
        (&json!(20), &json!(1000), &json!(1900))
    );
    assert_eq!(
        messages(&hook(&report, "near-timeout")["findings"]),
        ["slow: p95 1900 ms is over half its 3000 ms timeout"]
    );
    assert_eq!(hook(&report, "near-timeout")["status"], "warning");

    assert_eq!(stats("over-2s")["p95Ms"], 2500);
    assert_eq!(
        messages(&hook(&report, "over-2s")["findings"]),
        ["slow: p95 2500 ms; hooks are awaited one after another, so every beforeAgent waits for it"]
    );

    let flaky = stats("flaky");
    assert_eq!(
        (
            &flaky["count"],
            &flaky["ok"],
            &flaky["failures"],
            &flaky["timeouts"]
        ),
        (&json!(6), &json!(3), &json!(3), &json!(1))
    );
    assert_eq!(
        (&flaky["recentFailures"], &flaky["recentWindow"]),
        (&json!(3), &json!(5))
    );
    assert_eq!(flaky["lastFailure"]["cause"], "exited with code 2");
    // Its timed-out run took the whole timeout, so it is slow as well as failing.
    assert_eq!(
        hook(&report, "flaky")["findings"],
        json!([
            {"level": "warning", "message": "slow: p95 10000 ms is over half its 10000 ms timeout",
             "fix": format!("make it faster, or raise \"timeoutMs\" in {} (at most 60000); a run past the \
                             timeout is killed and changes nothing", env.config_dir.join("hooks.json").display())},
            {"level": "warning",
             "message": "keeps failing: 3 of its last 5 runs failed; last: exited with code 2",
             "fix": "run `elph hooks test preToolUse --tool NAME` to see its exit code, stderr and outcome"},
        ])
    );

    let many = stats("many");
    assert_eq!(
        (&many["count"], &many["failures"], &many["p95Ms"]),
        (&json!(1000), &json!(0), &json!(5))
    );
    assert_eq!(hook(&report, "many")["findings"], json!([]));
    assert_eq!(stats("never-ran"), Value::Null);
    assert_eq!(report["summary"]["warnings"], 4);
    assert_eq!(report["summary"]["errors"], 0);

    let human = doctor(&env);
    assert!(
        human.contains("runs     5 recent: 0 failed, 0 timed out; p50 30 ms, p95 50 ms"),
        "{human}"
    );
    assert!(
        human.contains("runs     6 recent: 3 failed, 1 timed out; p50 7 ms, p95 10000 ms"),
        "{human}"
    );
    assert!(
        human.contains("runs     1000 recent: 0 failed, 0 timed out; p50 5 ms, p95 5 ms"),
        "{human}"
    );
    assert!(
        human.contains("! slow: p95 1900 ms is over half its 3000 ms timeout"),
        "{human}"
    );
    assert!(
        human.contains("→ make it faster, or raise \"timeoutMs\" in"),
        "{human}"
    );
    assert!(human.contains("! keeps failing: 3 of its last 5 runs failed; last: exited with code 2"));
    assert!(human.contains("→ run `elph hooks test preToolUse --tool NAME`"));
    assert!(
        line_with(&human, "flaky  preToolUse")
            .trim_start()
            .starts_with("!")
    );
    assert!(line_with(&human, "never-ran  stop").trim_start().starts_with("✓"));
    assert!(human.contains("runs     none recorded"));
    let log_line = line_with(&human, "hooks.jsonl:");
    assert!(log_line.contains("1237 run(s) read"), "{log_line}");
    assert!(log_line.contains("3 unreadable line(s) skipped"), "{log_line}");
    assert!(
        log_line.contains("2 run(s) of hooks no longer configured"),
        "{log_line}"
    );
    assert!(line_with(&human, "problem(s)").contains("0 problem(s), 4 warning(s)"));
}

#[test]
fn an_untrusted_project_is_skipped_not_run_and_not_written() {
    let env = TestEnv::new();
    let canary = env.evidence("CANARY");
    env.write_project_hooks(&json!({"hooks": [{
        "id": "canary", "event": "sessionStart", "command": "/bin/sh",
        "args": ["-c", format!("echo ran > '{}'; mkdir -p .elph/created", canary.display())],
    }]}));
    let project_before = snapshot(&env.project);
    let config_before = snapshot(&env.config_dir);

    let report = doctor_json(&env);
    let trust = &report["trust"];
    assert_eq!(trust["trusted"], false);
    assert_eq!(trust["source"], json!({"kind": "default"}));
    assert_eq!(trust["explanation"], "decided by the default (ask)");
    assert_eq!(trust["trustFileExists"], false);
    assert_eq!(trust["finding"]["level"], "warning");
    assert_eq!(
        trust["finding"]["fix"],
        format!(
            "if you trust this project's hooks: elph trust {} (or /trust in the app)",
            env.project.display()
        )
    );
    let project_file = &report["files"][1];
    assert_eq!(project_file["state"], "skippedUntrusted");
    assert_eq!(project_file["exists"], true);
    assert_eq!(
        project_file["finding"]["message"],
        "skipped: the project is not trusted"
    );
    assert_eq!(
        report["hooks"],
        json!([]),
        "the untrusted project's hook is not listed as loaded"
    );
    let skipped = format!("project hooks skipped until {} is trusted", env.project.display());
    assert!(
        report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["message"].as_str().unwrap().contains(&skipped)),
        "{report:#}"
    );

    let human = doctor(&env);
    assert!(
        line_with(&human, "is not trusted (decided by the default (ask))")
            .trim_start()
            .starts_with("!")
    );
    let file_line = line_with(&human, "skipped: the project is not trusted");
    assert!(file_line.trim_start().starts_with("! project  "), "{file_line}");
    assert!(human.contains(&format!(
        "→ if you trust this project's hooks: elph trust {}",
        env.project.display()
    )));
    assert!(human.contains(&skipped), "{human}");
    assert!(human.contains("  - none configured"), "{human}");

    assert!(!canary.exists(), "doctor ran the untrusted project's hook");
    assert_eq!(
        snapshot(&env.project),
        project_before,
        "doctor wrote into the project"
    );
    assert_eq!(
        snapshot(&env.config_dir),
        config_before,
        "doctor wrote into CONFIG_DIR"
    );
    assert!(!env.data_dir.exists(), "doctor created DATA_DIR");
}

#[test]
fn a_corrupt_trust_json_is_reported_and_left_alone() {
    let env = TestEnv::new();
    let trust_file = env.config_dir.join("trust.json");
    std::fs::write(&trust_file, "{\"directories\": {").unwrap();
    env.write_project_hooks(&json!({"hooks": [{"id": "p", "event": "stop", "command": "/bin/true"}]}));

    let report = doctor_json(&env);
    let trust = &report["trust"];
    assert_eq!(trust["trusted"], false);
    assert_eq!(trust["source"]["kind"], "error");
    assert_eq!(trust["trustFileExists"], true);
    let error = trust["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("{} is corrupt", trust_file.display())),
        "{error}"
    );
    assert_eq!(trust["finding"]["level"], "error");
    assert!(
        trust["finding"]["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("fix the JSON in {}", trust_file.display()))
    );
    assert_eq!(report["files"][1]["state"], "skippedUntrusted");
    assert_eq!(
        report["files"][1]["finding"]["fix"],
        "fix trust.json first (see Trust above)"
    );
    assert!(
        report["diagnostics"].as_array().unwrap().iter().any(|d| {
            d["file"] == s(&trust_file)
                && d["message"]
                    .as_str()
                    .unwrap()
                    .contains("project trust cannot be decided")
        }),
        "{report:#}"
    );
    assert_eq!(report["problems"][0]["subject"], "trust");
    assert_eq!(
        (&report["summary"]["errors"], &report["summary"]["warnings"]),
        (&json!(1), &json!(1))
    );

    let human = doctor(&env);
    let line = line_with(&human, "trust cannot be decided");
    assert!(line.trim_start().starts_with("✗"), "{human}");
    assert!(line.contains("is corrupt"), "{line}");
    assert!(
        human.contains(&format!("→ fix the JSON in {}", trust_file.display())),
        "{human}"
    );
    assert!(human.contains(&format!("trust file: {}", trust_file.display())));
    assert_eq!(
        std::fs::read_to_string(&trust_file).unwrap(),
        "{\"directories\": {",
        "never overwritten"
    );
}

#[test]
fn doctor_fails_only_when_it_cannot_run() {
    let env = TestEnv::new();
    let output = assert_cmd::Command::new(ELPH)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&env.project)
        .arg("doctor")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("cannot find a home folder"),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());

    // With --cwd naming the project, and paths from XDG variables.
    let xdg_config = env.root.path().join("xdg-config");
    let output = assert_cmd::Command::new(ELPH)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", &xdg_config)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(env.root.path())
        .args(["doctor", "--json", "--cwd"])
        .arg(&env.project)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["paths"]["configDir"]["path"], s(&xdg_config.join("elph")));
    assert_eq!(report["paths"]["configDir"]["from"], "$XDG_CONFIG_HOME/elph");
    assert_eq!(report["paths"]["configDir"]["exists"], false);
    assert_eq!(report["paths"]["dataDir"]["from"], "$HOME/.local/share/elph");
    assert_eq!(report["paths"]["projectDir"]["from"], "--cwd");
    assert_eq!(report["files"][0]["state"], "missing");
    assert!(
        !xdg_config.exists() && !env.home.join(".local").exists(),
        "doctor created nothing"
    );
}

#[test]
fn mcp_servers_are_listed_with_their_state_and_untrusted_ones_are_skipped() {
    let env = TestEnv::new();
    std::fs::write(
        env.config_dir.join("mcp.json"),
        json!({"servers": {
            "files": {"command": "/bin/cat", "args": ["-"], "env": {"TOKEN": "secret-value"}},
            "off": {"command": "/bin/cat", "enabled": false},
            "remote": {"url": "http://127.0.0.1:9/mcp"}
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(env.project.join(".elph")).unwrap();
    std::fs::write(
        env.project.join(".elph/mcp.json"),
        json!({"servers": {"repo": {"command": "./server"}}}).to_string(),
    )
    .unwrap();

    let report = doctor_json(&env);
    let servers = report["mcp"]["servers"].as_array().unwrap();
    let states: BTreeMap<&str, &str> = servers
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        BTreeMap::from([
            ("files", "configured"),
            ("off", "disabled"),
            ("remote", "configured")
        ])
    );
    assert!(
        !report.to_string().contains("secret-value"),
        "env values are never shown"
    );
    let project_file = report["mcp"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scope"] == "project")
        .unwrap();
    assert_eq!(project_file["state"], "skippedUntrusted");

    let human = doctor(&env);
    assert!(human.contains("MCP servers: 3"), "{human}");
    assert!(human.contains("files") && human.contains("/bin/cat -"), "{human}");
}
