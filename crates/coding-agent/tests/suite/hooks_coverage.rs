//! `elph hooks coverage`: the real binary runs every tool path with a probe hook on every event
//! (its hooks and its MCP server are the binary itself) and reports, as JSON, per path which
//! events fired and whether the guard's block held. The comparison that fails a path is unit-tested
//! beside it (cli/hooks_coverage.rs) on reports missing an event or with a block that did not hold.

use std::time::Duration;

use elph_agent::tools::ToolCatalog;
use serde_json::Value;
use test_support::env::TestEnv;

use super::run_e2e::elph;

/// Fourteen sessions of a debug build, two at a time, on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(600);

fn names(events: &Value) -> Vec<&str> {
    events
        .as_array()
        .unwrap_or_else(|| panic!("not a list of events: {events}"))
        .iter()
        .map(|event| event.as_str().unwrap())
        .collect()
}

fn path<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|path| path["id"] == id)
        .unwrap_or_else(|| panic!("no path {id} in {report:#}"))
}

/// Every path: fired everything it expected (and the expected set is the lifecycle of a tool call),
/// and its block held.
fn assert_covered(path: &Value) {
    let fired = names(&path["fired"]);
    for event in names(&path["expected"]) {
        assert!(
            fired.contains(&event),
            "{} did not fire {event}: {path:#}",
            path["id"]
        );
    }
    for event in [
        "sessionStart",
        "userPromptSubmit",
        "beforeAgent",
        "context",
        "preToolUse",
        "postToolUse",
        "stop",
        "notification",
        "sessionEnd",
    ] {
        assert!(
            names(&path["expected"]).contains(&event),
            "{} expects {event}",
            path["id"]
        );
    }
    assert_eq!(path["missing"], serde_json::json!([]), "{path:#}");
    assert_eq!(path["blockHeld"], true, "{path:#}");
    assert_eq!(path["ok"], true, "{path:#}");
    let calls = path["calls"].as_array().unwrap();
    let blocked = calls
        .iter()
        .find(|call| call["intent"] == "blocked")
        .unwrap_or_else(|| panic!("{} has no blocked call", path["id"]));
    assert_eq!(names(&blocked["events"]), ["preToolUse"], "{path:#}");
    let runs = calls.iter().find(|call| call["intent"] == "runs").unwrap();
    let expected: &[&str] = if path["frontEnd"] == "acp" {
        &["preToolUse", "permissionRequest", "postToolUse"]
    } else {
        &["preToolUse", "postToolUse"]
    };
    assert_eq!(names(&runs["events"]), expected, "{path:#}");
    assert_eq!(runs["ran"], true, "{path:#}");
}

#[test]
fn coverage_json_lists_every_tool_path_with_its_events_and_leaves_nothing_behind() {
    let env = TestEnv::new();
    let tmp = env.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let output = assert_cmd::Command::from_std(env.command(&elph()))
        .env("TMPDIR", &tmp)
        .args(["hooks", "coverage", "--json"])
        .timeout(DEADLINE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "not JSON ({err}): {}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    assert_eq!(output.status.code(), Some(0), "{report:#}\n{stderr}");
    assert_eq!(report["ok"], true);
    assert_eq!(
        report["events"].as_array().unwrap().len(),
        13,
        "a probe on every event"
    );
    let count = report["paths"].as_array().unwrap().len();
    assert!(
        stderr.contains(&format!("[{count}/{count}]")),
        "progress on stderr: {stderr}"
    );

    for name in ToolCatalog::native().names() {
        let path = path(&report, name);
        assert_eq!(path["kind"], "nativeTool");
        assert_eq!(
            path["frontEnd"], "headless",
            "the native tools run through elph run"
        );
        assert_eq!(path["tool"], name);
        assert_covered(path);
    }
    assert_eq!(
        names(&path(&report, "read_file")["fired"]),
        [
            "sessionStart",
            "userPromptSubmit",
            "beforeAgent",
            "context",
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "stop",
            "notification",
            "sessionEnd"
        ],
        "read_file also reads a file that is not there"
    );

    let shell = path(&report, "sandboxed-shell");
    assert_eq!(shell["sandbox"], "workspace-write");
    assert_eq!(shell["sandboxHeld"], true);
    assert_covered(shell);

    let mcp = path(&report, "mcp");
    assert_eq!(mcp["kind"], "mcpTool");
    assert_eq!(mcp["tool"], "mcp_coverage__touch");
    assert_covered(mcp);

    let acp = path(&report, "acp");
    assert_eq!(acp["frontEnd"], "acp");
    assert_eq!(
        acp["permissionRequests"], 1,
        "the call that runs was approved by the client"
    );
    assert!(names(&acp["fired"]).contains(&"permissionRequest"));
    assert_covered(acp);

    let rewritten = path(&report, "rewritten");
    assert_eq!(rewritten["guardSawRewrite"], true);
    assert_covered(rewritten);

    // The two ways a session compacts: `/compact` typed in an editor, and `elph run --continue`
    // of a session that fills the model's window.
    for (id, front_end, trigger) in [("compact", "acp", "manual"), ("auto-compact", "headless", "auto")] {
        let compaction = path(&report, id);
        assert_eq!(compaction["kind"], "compaction", "{compaction:#}");
        assert_eq!(compaction["frontEnd"], front_end, "{compaction:#}");
        assert_eq!(compaction["compaction"], trigger, "{compaction:#}");
        for event in ["preCompact", "postCompact"] {
            assert!(
                names(&compaction["expected"]).contains(&event),
                "{id} expects {event}: {compaction:#}"
            );
        }
        assert_covered(compaction);
    }
    // Now every event is part of some path.
    for event in names(&report["events"]) {
        assert!(
            report["paths"]
                .as_array()
                .unwrap()
                .iter()
                .any(|path| names(&path["fired"]).contains(&event)
                    && names(&path["expected"]).contains(&event)),
            "no path expects and fires {event}"
        );
    }

    // Scratch folders of its own: nothing of this HOME, CONFIG_DIR or DATA_DIR was touched, and
    // nothing is left in TMPDIR.
    for dir in [&env.home, &env.config_dir] {
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            0,
            "{} was touched",
            dir.display()
        );
    }
    assert!(!env.data_dir.exists(), "DATA_DIR was made");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn coverage_says_what_it_does_in_its_help() {
    let env = TestEnv::new();
    let output = assert_cmd::Command::from_std(env.command(&elph()))
        .args(["hooks", "coverage", "--help"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for words in [
        "every tool path",
        "block",
        "--json",
        "Exits 0",
        "sandboxed-shell",
        "rewritten",
        "auto-compact",
        "/compact",
    ] {
        assert!(help.contains(words), "{words:?} not in:\n{help}");
    }
}
