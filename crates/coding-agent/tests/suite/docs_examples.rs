//! The user documentation, run for real.
//!
//! - Every recipe in `docs/examples/` is installed the way `docs/hooks.md` says (its `hooks.json`
//!   and `hooks/` folder copied into CONFIG_DIR) and run through the real `elph hooks test`, and the
//!   effect the docs promise is checked: the block and its reason, the rewritten input, the added
//!   context, the patched tool result, the audit line.
//! - Every JSON example in `docs/hooks.md` is checked against the code: each hooks.json block
//!   (a ```json block whose object has a top-level "hooks") passes `elph hooks validate`; each
//!   payload block (one with "event" and "sessionId") is accepted by `elph hooks test --payload`
//!   and has exactly the fields of the real payload; each outcome block (marked
//!   `<!-- outcome: EVENT -->` on the line before its fence) is printed by a hook and accepted
//!   without a note. Together they cover every event and every outcome field an event honours.
//! - The tables of `docs/hooks.md` name every native tool, every limit and every variable a hook
//!   inherits, as the code has them.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use coding_agent::hooks::process::{ENV_ALLOWLIST, HERDR_VARS};
use elph_agent::hooks::limits::{
    DEFAULT_TIMEOUT_MS, MAX_INPUT_BYTES, MAX_RETURNED_CONTEXT_BYTES, MAX_STDERR_BYTES, MAX_STDOUT_BYTES,
    MAX_TIMEOUT_MS,
};
use elph_agent::hooks::{HookEvent, honoured_fields};
use elph_agent::tools::ToolCatalog;
use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::hook_scripts::write_script;

const ELPH: &str = env!("CARGO_BIN_EXE_elph");
const DEADLINE: Duration = Duration::from_secs(60);

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn examples_dir() -> PathBuf {
    docs_dir().join("examples")
}

pub(super) fn read_doc(name: &str) -> String {
    let path = docs_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// What one `elph` invocation did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }
}

/// Runs the real binary in `env`'s hermetic world, with `stdin` and extra variables.
fn elph_with(env: &TestEnv, args: &[&str], stdin: Option<&str>, vars: &[(&str, OsString)]) -> Run {
    let mut command = env.command(Path::new(ELPH));
    command.env("NO_COLOR", "1");
    for (name, value) in vars {
        command.env(name, value);
    }
    let mut command = assert_cmd::Command::from_std(command);
    command.args(args).timeout(DEADLINE);
    if let Some(stdin) = stdin {
        command.write_stdin(stdin.to_string());
    }
    let output = command.output().expect("elph runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

fn elph(env: &TestEnv, args: &[&str]) -> Run {
    elph_with(env, args, None, &[])
}

/// `elph hooks test ... --json`, which must exit 0.
fn hooks_test(env: &TestEnv, args: &[&str], vars: &[(&str, OsString)]) -> Value {
    let mut all = vec!["hooks", "test"];
    all.extend_from_slice(args);
    all.push("--json");
    let run = elph_with(env, &all, None, vars);
    assert_eq!(run.code, 0, "elph {all:?}\n{}\n{}", run.stdout, run.stderr);
    run.json()
}

/// `elph hooks test ...` in text mode, which must exit 0.
fn hooks_test_text(env: &TestEnv, args: &[&str]) -> String {
    let mut all = vec!["hooks", "test"];
    all.extend_from_slice(args);
    let run = elph(env, &all);
    assert_eq!(run.code, 0, "elph {all:?}\n{}\n{}", run.stdout, run.stderr);
    run.stdout
}

/// Installs a recipe the way hooks.md tells people to: `cp -R docs/examples/NAME/. CONFIG_DIR/`.
pub(super) fn install(env: &TestEnv, recipe: &str) {
    copy_tree(&examples_dir().join(recipe), &env.config_dir);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            // Keeps the mode: the scripts stay executable.
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn recipes() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(examples_dir())
        .expect("docs/examples exists")
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// The only run of a chain with one configured hook.
fn only_run(report: &Value) -> &Value {
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "one run expected: {report:#}");
    &runs[0]
}

fn assert_ok_run(report: &Value) -> &Value {
    let run = only_run(report);
    assert_eq!(run["status"], "ok", "{report:#}");
    assert_eq!(run["notes"], json!([]), "{report:#}");
    run
}

/// The docs show this exact line, and the binary prints it.
fn assert_shown_and_real(hooks_md: &str, real: &str, line: &str) {
    assert!(
        real.contains(line),
        "elph no longer prints {line:?}; it printed:\n{real}"
    );
    assert!(
        hooks_md.contains(line),
        "docs/hooks.md should show {line:?}, as elph prints it"
    );
}

// ---------------------------------------------------------------------------------------------
// The recipes
// ---------------------------------------------------------------------------------------------

#[test]
fn every_recipe_is_a_valid_hooks_json_with_executable_scripts_and_is_linked_from_the_docs() {
    let env = TestEnv::new();
    let hooks_md = read_doc("hooks.md");
    let names = recipes();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        let folder = examples_dir().join(&name);
        let file = folder.join("hooks.json");
        let run = elph(&env, &["hooks", "validate", file.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{name}: {}\n{}", run.stdout, run.stderr);

        let config: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let mut used = BTreeSet::new();
        for hook in config["hooks"].as_array().unwrap() {
            let command = hook["command"].as_str().unwrap();
            assert!(
                command.starts_with("hooks/"),
                "{name}: commands live in the recipe's hooks/ folder, as CONFIG_DIR/hooks/: {command}"
            );
            let script = folder.join(command);
            let text = std::fs::read_to_string(&script)
                .unwrap_or_else(|err| panic!("{name}: {}: {err}", script.display()));
            assert!(text.starts_with("#!"), "{name}: {command} needs a #! line");
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&script).unwrap().permissions().mode();
            assert!(
                mode & 0o111 != 0,
                "{name}: {command} must be executable (chmod +x)"
            );
            used.insert(command.to_string());
        }
        for entry in std::fs::read_dir(folder.join("hooks")).unwrap() {
            let script = format!("hooks/{}", entry.unwrap().file_name().to_str().unwrap());
            assert!(
                used.contains(&script),
                "{name}: {script} is not used by its hooks.json"
            );
        }

        // hooks.md shows the recipe's hooks.json as it is, and links the folder.
        let shown = json_blocks(&hooks_md)
            .into_iter()
            .filter_map(|block| block.value)
            .any(|value| value == config);
        assert!(
            shown,
            "docs/hooks.md does not show docs/examples/{name}/hooks.json as it is"
        );
        assert!(
            hooks_md.contains(&format!("examples/{name}/")),
            "docs/hooks.md does not link docs/examples/{name}/"
        );
    }
}

#[test]
fn block_command_blocks_with_the_reason_and_lets_the_rest_through() {
    let env = TestEnv::new();
    install(&env, "block-command");
    let hooks_md = read_doc("hooks.md");

    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--tool",
            "shell_exec",
            "--input",
            r#"{"command": "rm -rf build"}"#,
        ],
        &[],
    );
    assert_ok_run(&report);
    assert_eq!(
        report["reduced"]["blocked"],
        json!({"hookId": "block-command", "reason": "commands containing 'rm -rf' are not allowed in this project"})
    );

    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--input",
            r#"{"command": "git push --force origin main"}"#,
        ],
        &[],
    );
    assert_eq!(
        report["reduced"]["blocked"]["reason"],
        "commands containing 'git push --force' are not allowed in this project"
    );

    // Anything else: the hook runs, prints nothing, and the call goes on.
    let report = hooks_test(&env, &["preToolUse", "--input", r#"{"command": "ls -la"}"#], &[]);
    let run = assert_ok_run(&report);
    assert_eq!(run["outcome"], Value::Null);
    assert_eq!(report["reduced"]["blocked"], Value::Null);

    // The matcher keeps it to shell_exec.
    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--tool",
            "read_file",
            "--input",
            r#"{"path": "rm -rf"}"#,
        ],
        &[],
    );
    assert_eq!(report["runs"], json!([]));

    // The text the docs show is the text elph prints.
    let text = hooks_test_text(
        &env,
        &[
            "preToolUse",
            "--tool",
            "shell_exec",
            "--input",
            r#"{"command": "rm -rf build"}"#,
        ],
    );
    assert_shown_and_real(
        &hooks_md,
        &text,
        r#"    outcome: {"block":true,"reason":"commands containing 'rm -rf' are not allowed in this project"}"#,
    );
    assert_shown_and_real(
        &hooks_md,
        &text,
        "  BLOCKED: blocked by hook 'block-command': commands containing 'rm -rf' are not allowed in this project. The tool does not run; the model receives that reason as an error result.",
    );
}

#[test]
fn block_command_escapes_quotes_and_backslashes_in_its_reason() {
    let env = TestEnv::new();
    install(&env, "block-command");
    // As the script's header says: a quote is written as it appears inside a JSON string.
    env.write_home_hooks(&json!({
        "hooks": [{
            "id": "block-command",
            "event": "preToolUse",
            "matcher": {"toolNames": ["shell_exec"]},
            "command": "hooks/block-command.sh",
            "args": [r#"echo \"hi\""#]
        }]
    }));
    let report = hooks_test(
        &env,
        &["preToolUse", "--input", r#"{"command": "echo \"hi\""}"#],
        &[],
    );
    assert_ok_run(&report);
    assert_eq!(
        report["reduced"]["blocked"]["reason"],
        r#"commands containing 'echo \"hi\"' are not allowed in this project"#
    );
}

#[test]
fn rewrite_input_caps_the_shell_timeout_and_leaves_shorter_ones_alone() {
    let env = TestEnv::new();
    install(&env, "rewrite-input");
    let hooks_md = read_doc("hooks.md");

    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--tool",
            "shell_exec",
            "--input",
            r#"{"command": "cargo test"}"#,
        ],
        &[],
    );
    assert_ok_run(&report);
    assert_eq!(report["reduced"]["inputChanged"], true);
    assert_eq!(
        report["reduced"]["toolInput"],
        json!({"command": "cargo test", "timeout_ms": 60000})
    );
    assert_eq!(report["reduced"]["blocked"], Value::Null);

    for input in [
        r#"{"command": "cargo test", "timeout_ms": 5000}"#,
        r#"{"command": "cargo test", "timeout_ms": 60000}"#,
    ] {
        let report = hooks_test(&env, &["preToolUse", "--input", input], &[]);
        assert_eq!(assert_ok_run(&report)["outcome"], Value::Null, "{input}");
        assert_eq!(report["reduced"]["inputChanged"], false, "{input}");
    }

    let text = hooks_test_text(&env, &["preToolUse", "--input", r#"{"command": "cargo test"}"#]);
    assert_shown_and_real(
        &hooks_md,
        &text,
        r#"  toolInput rewritten to: {"command":"cargo test","timeout_ms":60000}"#,
    );
}

/// A stand-in `rustfmt` first on PATH: it records its arguments, fails on an unclosed `(`, and
/// otherwise writes a fixed, formatted file. The recipe's hooks.json stays exactly as documented.
fn fake_rustfmt(env: &TestEnv) -> (OsString, PathBuf) {
    let bin = env.root.path().join("bin");
    let calls = env.evidence("rustfmt-calls.txt");
    write_script(
        &bin,
        "rustfmt",
        &format!(
            r#"echo "$*" >> '{calls}'
for file; do :; done
case "$(cat "$file")" in
  *'( {{'*) echo "error: this file contains an unclosed delimiter" >&2; exit 1 ;;
esac
printf 'fn main() {{\n    println!("hi");\n}}\n' > "$file""#,
            calls = calls.display()
        ),
    );
    let mut path = OsString::from(&bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    (path, calls)
}

#[test]
fn format_after_write_formats_the_file_and_tells_the_model() {
    let env = TestEnv::new();
    install(&env, "format-after-write");
    let (path, calls) = fake_rustfmt(&env);
    let vars = [("PATH", path)];
    let src = env.project.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("main.rs"), "fn main( ) {println!(\"hi\") ;}\n").unwrap();
    let main_rs = json!({"path": "src/main.rs", "content": "…"}).to_string();
    let write_main = ["postToolUse", "--tool", "write_file", "--input", main_rs.as_str()];

    // An unformatted file: formatted on disk, and the model is told to read it again.
    let report = hooks_test(&env, &write_main, &vars);
    assert_ok_run(&report);
    assert_eq!(report["reduced"]["changed"], true);
    assert_eq!(
        report["reduced"]["content"],
        json!([
            {"type": "text", "text": "ok (synthetic result from elph hooks test)"},
            {"type": "text", "text": "rustfmt reformatted src/main.rs. Read it again before you edit it."}
        ])
    );
    assert_eq!(
        std::fs::read_to_string(src.join("main.rs")).unwrap(),
        "fn main() {\n    println!(\"hi\");\n}\n"
    );
    let recorded = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        recorded.trim(),
        format!("--edition 2024 {}", src.join("main.rs").display()),
        "the args of hooks.json, then the file"
    );

    // Already formatted: nothing to say.
    let report = hooks_test(&env, &write_main, &vars);
    assert_eq!(assert_ok_run(&report)["outcome"], Value::Null);
    assert_eq!(report["reduced"]["changed"], false);

    // The formatter fails: the model gets its error.
    std::fs::write(src.join("bad.rs"), "fn main( {\n").unwrap();
    let report = hooks_test(
        &env,
        &[
            "postToolUse",
            "--tool",
            "edit_file",
            "--input",
            r#"{"path": "src/bad.rs", "old_text": "a", "new_text": "b"}"#,
        ],
        &vars,
    );
    assert_ok_run(&report);
    assert_eq!(
        report["reduced"]["content"][1]["text"],
        "rustfmt could not format src/bad.rs:\nerror: this file contains an unclosed delimiter"
    );

    // Another extension: the formatter is not called at all.
    std::fs::write(env.project.join("notes.md"), "x").unwrap();
    let before = std::fs::read_to_string(&calls).unwrap();
    let notes = json!({"path": "notes.md", "content": "x"}).to_string();
    let report = hooks_test(
        &env,
        &["postToolUse", "--tool", "write_file", "--input", &notes],
        &vars,
    );
    assert_eq!(assert_ok_run(&report)["outcome"], Value::Null);
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), before);

    // The matcher: read_file is not a write.
    let report = hooks_test(
        &env,
        &[
            "postToolUse",
            "--tool",
            "read_file",
            "--input",
            r#"{"path": "src/main.rs"}"#,
        ],
        &vars,
    );
    assert_eq!(report["runs"], json!([]));
}

#[test]
fn add_context_appends_the_file_to_the_system_prompt() {
    let env = TestEnv::new();
    install(&env, "add-context");
    let hooks_md = read_doc("hooks.md");

    // No file: no change.
    let report = hooks_test(&env, &["beforeAgent"], &[]);
    assert_eq!(assert_ok_run(&report)["outcome"], Value::Null);
    assert_eq!(report["reduced"]["systemPromptAdditions"], json!([]));

    // Quotes, backslashes, a tab, Windows line ends and a trailing newline survive as the docs say:
    // the tab becomes a space, carriage returns go, lines are joined with \n.
    let dot_elph = env.project.join(".elph");
    std::fs::create_dir_all(&dot_elph).unwrap();
    std::fs::write(
        dot_elph.join("context.md"),
        "Run tests with \"cargo test -p shop\".\r\n\tPaths use C:\\\\ on Windows.\nNever edit vendor/.\n",
    )
    .unwrap();
    let report = hooks_test(&env, &["beforeAgent"], &[]);
    assert_ok_run(&report);
    assert_eq!(
        report["reduced"]["systemPromptAdditions"],
        json!(["Run tests with \"cargo test -p shop\".\n Paths use C:\\\\ on Windows.\nNever edit vendor/."])
    );

    // The example in the docs.
    std::fs::write(
        dot_elph.join("context.md"),
        "Run tests with \"cargo test -p shop\".\nNever edit vendor/.\n",
    )
    .unwrap();
    let text = hooks_test_text(&env, &["beforeAgent"]);
    assert_shown_and_real(
        &hooks_md,
        &text,
        r#"  appended to the system prompt: "Run tests with \"cargo test -p shop\".\nNever edit vendor/.""#,
    );

    // Over 32 KiB: refused by the hook, with its reason in the diagnostic.
    std::fs::write(dot_elph.join("context.md"), "x".repeat(40_000)).unwrap();
    let report = hooks_test(&env, &["beforeAgent"], &[]);
    let run = only_run(&report);
    assert_eq!(run["status"], "failed");
    assert_eq!(run["exitCode"], 1);
    assert!(
        report["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 32768 bytes fit in one outcome"),
        "{report:#}"
    );
    assert_eq!(report["reduced"]["systemPromptAdditions"], json!([]));
}

#[test]
fn audit_log_writes_one_line_per_call_outside_the_project() {
    let env = TestEnv::new();
    install(&env, "audit-log");
    let inputs = [
        ("shell_exec", json!({"command": "cargo test"})),
        (
            "write_file",
            json!({"path": "a \"quoted\" name.txt", "content": "line 1\nline 2\n"}),
        ),
    ];
    for (tool, input) in &inputs {
        let report = hooks_test(
            &env,
            &["preToolUse", "--tool", tool, "--input", &input.to_string()],
            &[],
        );
        assert_eq!(
            assert_ok_run(&report)["outcome"],
            Value::Null,
            "an audit changes nothing"
        );
    }
    let log = env.home.join(".local/state/elph/audit.jsonl");
    let lines = json_lines(&log);
    assert_eq!(lines.len(), 2, "one line per call: {lines:#?}");
    for (line, (tool, input)) in lines.iter().zip(&inputs) {
        assert_eq!(line["hook"], "audit-tool-calls");
        assert_eq!(line["payload"]["event"], "preToolUse");
        assert_eq!(line["payload"]["toolName"], *tool);
        assert_eq!(line["payload"]["toolInput"], *input);
        let time = line["time"].as_str().unwrap();
        assert!(
            time.len() == 20 && time.ends_with('Z') && &time[10..11] == "T",
            "{time}"
        );
    }
    assert!(
        !env.project.join(".elph").exists(),
        "nothing is written into the (untrusted) project"
    );

    // The line the docs show has the fields of a real line.
    let shown = json_blocks(&read_doc("hooks.md"))
        .into_iter()
        .filter_map(|block| block.value)
        .find(|value| value.get("hook").is_some() && value.get("payload").is_some())
        .expect("docs/hooks.md shows an audit line");
    assert_eq!(keys(&shown), keys(&lines[0]));
    assert_eq!(keys(&shown["payload"]), keys(&lines[0]["payload"]));
}

// ---------------------------------------------------------------------------------------------
// The JSON examples of hooks.md
// ---------------------------------------------------------------------------------------------

/// A fenced code block of a markdown file.
pub(super) struct Block {
    /// The info string: `json`, `sh`, `console`...
    pub(super) info: String,
    pub(super) text: String,
    /// The line before the fence, trimmed.
    pub(super) before: String,
    /// 1-based line of the fence, for messages.
    line: usize,
    /// The block parsed as JSON, for ```json blocks.
    pub(super) value: Option<Value>,
}

pub(super) fn code_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines().enumerate();
    let mut previous = String::new();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            if !line.trim().is_empty() {
                previous = line.trim().to_string();
            }
            continue;
        };
        let mut text = String::new();
        for (_, inner) in lines.by_ref() {
            if inner.trim_start() == "```" {
                break;
            }
            text.push_str(inner);
            text.push('\n');
        }
        let info = info.trim().to_string();
        let value = (info == "json")
            .then(|| serde_json::from_str(&text).ok())
            .flatten();
        blocks.push(Block {
            info,
            text,
            before: std::mem::take(&mut previous),
            line: index + 1,
            value,
        });
    }
    blocks
}

fn json_blocks(markdown: &str) -> Vec<Block> {
    code_blocks(markdown)
        .into_iter()
        .filter(|block| block.info == "json")
        .collect()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|object| object.keys().cloned().collect())
        .unwrap_or_default()
}

fn is_hooks_file(value: &Value) -> bool {
    // settings.json's `"hooks": {…}` block is not a hooks.json.
    value.get("hooks").is_some_and(Value::is_array)
}

fn is_payload(value: &Value) -> bool {
    value.get("event").is_some() && value.get("sessionId").is_some()
}

fn outcome_event(block: &Block) -> Option<HookEvent> {
    let name = block
        .before
        .strip_prefix("<!-- outcome:")?
        .strip_suffix("-->")?
        .trim();
    Some(
        name.parse()
            .unwrap_or_else(|err| panic!("hooks.md line {}: {err}", block.line)),
    )
}

#[test]
fn every_json_block_in_the_docs_is_valid_json() {
    for doc in [
        "hooks.md",
        "trust.md",
        "cli.md",
        "architecture.md",
        "claude-code.md",
        "mcp.md",
        "security.md",
        "contract.md",
    ] {
        for block in json_blocks(&read_doc(doc)) {
            assert!(
                block.value.is_some(),
                "docs/{doc} line {}: a ```json block must be valid JSON (use ```text otherwise):\n{}",
                block.line,
                block.text
            );
        }
    }
}

#[test]
fn every_hooks_json_block_in_hooks_md_validates() {
    let env = TestEnv::new();
    let mut checked = 0;
    for (index, block) in json_blocks(&read_doc("hooks.md")).into_iter().enumerate() {
        let Some(value) = block.value.filter(is_hooks_file) else {
            continue;
        };
        let file = env.root.path().join(format!("block-{index}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(&value).unwrap()).unwrap();
        let run = elph(&env, &["hooks", "validate", file.to_str().unwrap()]);
        assert_eq!(
            run.code, 0,
            "docs/hooks.md line {}: this hooks.json does not validate:\n{}\n{}{}",
            block.line, block.text, run.stdout, run.stderr
        );
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} hooks.json blocks found");
}

#[test]
fn every_payload_example_has_exactly_the_fields_of_the_real_payload() {
    let env = TestEnv::new();
    let hooks_md = read_doc("hooks.md");
    let mut seen = BTreeSet::new();
    for block in json_blocks(&hooks_md) {
        let Some(value) = block.value.filter(is_payload) else {
            continue;
        };
        let event: HookEvent = value["event"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap_or_else(|err| panic!("hooks.md line {}: {err}", block.line));
        let run = elph_with(
            &env,
            &["hooks", "test", event.as_str(), "--payload", "-", "--json"],
            Some(&block.text),
            &[],
        );
        assert_eq!(
            run.code, 0,
            "docs/hooks.md line {}: elph does not accept this {event} payload:\n{}\n{}",
            block.line, block.text, run.stderr
        );
        let real = &run.json()["payload"];
        assert_eq!(
            keys(&value),
            keys(real),
            "docs/hooks.md line {}: the {event} example must show every field of the payload, and no other",
            block.line
        );
        seen.insert(event);
    }
    for event in HookEvent::ALL {
        assert!(
            seen.contains(&event),
            "docs/hooks.md has no payload example for {event}"
        );
        assert!(
            hooks_md.contains(&format!("### `{event}`")),
            "docs/hooks.md has no section for {event}"
        );
    }
}

#[test]
fn every_outcome_example_is_accepted_and_together_they_cover_every_honoured_field() {
    let hooks_md = read_doc("hooks.md");
    let mut covered: BTreeMap<HookEvent, BTreeSet<String>> = BTreeMap::new();
    for block in json_blocks(&hooks_md) {
        let Some(event) = outcome_event(&block) else {
            continue;
        };
        let value = block
            .value
            .as_ref()
            .unwrap_or_else(|| panic!("hooks.md line {}: not JSON", block.line));

        // A hook that prints the example as its outcome.
        let env = TestEnv::new();
        let outcome = env.evidence("outcome.json");
        std::fs::write(&outcome, &block.text).unwrap();
        write_script(
            &env.config_dir.join("hooks"),
            "print-outcome.sh",
            "cat > /dev/null\ncat \"$1\"",
        );
        env.write_home_hooks(&json!({"hooks": [{
            "id": "example",
            "event": event.as_str(),
            "command": "hooks/print-outcome.sh",
            "args": [outcome.to_str().unwrap()]
        }]}));
        let report = hooks_test(&env, &[event.as_str()], &[]);
        let run = only_run(&report);
        assert_eq!(
            (&run["status"], &run["notes"]),
            (&json!("ok"), &json!([])),
            "docs/hooks.md line {}: elph does not take this {event} outcome as it is:\n{}\n{report:#}",
            block.line,
            block.text
        );
        assert_ne!(run["outcome"], Value::Null, "line {}", block.line);
        covered.entry(event).or_default().extend(keys(value));
    }
    for event in HookEvent::ALL {
        let honoured: BTreeSet<String> = honoured_fields(event).iter().map(|f| f.to_string()).collect();
        let shown = covered.remove(&event).unwrap_or_default();
        assert_eq!(
            shown, honoured,
            "docs/hooks.md: the outcome examples of {event} should use every field it honours, and only those"
        );
    }
}

#[test]
fn hooks_md_names_every_native_tool_limit_and_inherited_variable() {
    let hooks_md = read_doc("hooks.md");
    for name in ToolCatalog::native().names() {
        assert!(
            hooks_md.contains(&format!("| `{name}` |")),
            "the tool table of docs/hooks.md lacks {name}"
        );
    }
    for (what, text) in [
        ("input", format!("{} KiB", MAX_INPUT_BYTES / 1024)),
        ("stdout", format!("{} KiB", MAX_STDOUT_BYTES / 1024)),
        ("stderr", format!("{} KiB", MAX_STDERR_BYTES / 1024)),
        (
            "returned context",
            format!("{} KiB", MAX_RETURNED_CONTEXT_BYTES / 1024),
        ),
        (
            "default timeout",
            format!("{} s by default", DEFAULT_TIMEOUT_MS / 1000),
        ),
        ("largest timeout", format!("at most {} s", MAX_TIMEOUT_MS / 1000)),
        ("timeoutMs default", format!("`{DEFAULT_TIMEOUT_MS}`")),
        ("timeoutMs range", format!("From 1 to {MAX_TIMEOUT_MS}")),
    ] {
        assert!(
            hooks_md.contains(&text),
            "docs/hooks.md should say the {what} limit: {text}"
        );
    }
    for name in ENV_ALLOWLIST
        .iter()
        .chain(HERDR_VARS)
        .chain(&elph_process::shell_env::CA_AND_PROXY_VARS)
    {
        assert!(
            hooks_md.contains(&format!("`{name}`")),
            "docs/hooks.md should list {name} among the variables a hook gets"
        );
    }
    for name in ["ELPH_HOOK_ID", "ELPH_SESSION_ID", "ELPH_PROJECT_DIR"] {
        assert!(hooks_md.contains(&format!("`{name}`")), "{name}");
    }
}

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut anchors = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            anchors.insert(slug(line.trim_start_matches('#')));
        }
    }
    anchors
}

#[test]
fn links_between_the_docs_resolve() {
    let docs = [
        "hooks.md",
        "trust.md",
        "cli.md",
        "architecture.md",
        "claude-code.md",
        "mcp.md",
        "security.md",
        "contract.md",
        "editors.md",
        "skills.md",
        "building.md",
    ];
    for doc in docs {
        let text = read_doc(doc);
        let mut rest = text.as_str();
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let target = &rest[..rest.find(')').expect("a closed link")];
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file_text = if file.is_empty() {
                text.clone()
            } else {
                let path = docs_dir().join(file);
                assert!(path.exists(), "docs/{doc}: the link {target} points at nothing");
                if !file.ends_with(".md") {
                    continue;
                }
                std::fs::read_to_string(path).unwrap()
            };
            if !anchor.is_empty() {
                assert!(
                    anchors(&file_text).contains(anchor),
                    "docs/{doc}: the link {target} names no heading of {}",
                    if file.is_empty() { doc } else { file }
                );
            }
        }
    }
}

/// claude-code.md: its hooks.json validates, and its `.claude/settings.json` imports into exactly
/// the hooks and the left-out lines the page describes.
#[test]
fn the_claude_code_page_examples_validate_and_import_as_described() {
    let env = TestEnv::new();
    let blocks = json_blocks(&read_doc("claude-code.md"));
    let hooks = blocks
        .iter()
        .filter_map(|b| b.value.clone())
        .find(is_hooks_file)
        .expect("a hooks.json example");
    let file = env.root.path().join("hooks.json");
    std::fs::write(&file, hooks.to_string()).unwrap();
    let run = elph(&env, &["hooks", "validate", file.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let settings = blocks
        .iter()
        .filter_map(|b| b.value.clone())
        .find(|v| v["hooks"].is_object())
        .expect("a settings example");
    let claude = env.project.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), settings.to_string()).unwrap();
    let run = elph(&env, &["hooks", "import"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let imported = run.json();
    let summary: Vec<(String, Value, u64)> = imported["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_string(),
                h["matcher"]["toolNames"].clone(),
                h["timeoutMs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("claude-pre-tool-use-1".to_string(), json!(["shell_exec"]), 30_000),
            (
                "claude-pre-tool-use-2".to_string(),
                json!(["write_file", "edit_file"]),
                60_000
            ),
            ("claude-notification-1".to_string(), Value::Null, 60_000),
        ]
    );
    assert_eq!(
        imported["hooks"][2]["async"], true,
        "Claude Code's async carries over"
    );
    // The commands are written in the pin-friendly form the page shows.
    let forms = blocks
        .iter()
        .filter_map(|b| b.value.clone())
        .find(Value::is_array)
        .expect("the imported commands' example");
    let written: Vec<Value> = imported["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let mut form = json!({"command": h["command"]});
            if !h["args"].is_null() {
                form["args"] = h["args"].clone();
            }
            form
        })
        .collect();
    assert_eq!(Value::Array(written), forms);
    let page = read_doc("claude-code.md");
    for line in run.stderr.lines().filter(|l| l.starts_with('!')) {
        let shown = line.replace(
            &claude.join("settings.json").display().to_string(),
            ".claude/settings.json",
        );
        assert!(
            page.contains(&shown),
            "claude-code.md does not show the line:\n{shown}"
        );
    }
    assert_eq!(
        run.stderr.lines().filter(|l| l.starts_with('!')).count(),
        4,
        "{}",
        run.stderr
    );
}
