//! `grep` and `find_path` leave out exactly what ripgrep leaves out: a project with a `.gitignore`
//! (`.venv/`, `build/`, `*.log` and a `!keep.log` exception), a nested `.ignore`, a
//! `.git/info/exclude`, hidden files, a binary file and a `node_modules` that nothing ignores.
//!
//! Each answer is checked twice: against the lists ripgrep 13 gave for this project (written out
//! below, so the test says what it expects), and against the `rg` on this machine, run on the same
//! folder. CI installs ripgrep and sets `ELPH_REQUIRE_RIPGREP=1`, so there a missing `rg` fails the
//! test instead of leaving out the live comparison.

use std::path::Path;
use std::time::Duration;

use elph_agent::messages::ContentBlock;
use elph_agent::tools::{ToolCatalog, ToolContext, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// Every file holds the word "needle", except `docs/other.md`; `data.bin` is binary.
fn project() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |relative: &str, content: &[u8]| {
        let path = dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    write(".gitignore", b".venv/\nbuild/\n*.log\n!keep.log\n");
    write(".git/info/exclude", b"scratch/\n");
    write("src/.ignore", b"generated.rs\ngen/\n");
    for file in [
        "README.md",
        "src/main.rs",
        "src/generated.rs",
        "src/gen/a.rs",
        "src/lib/util.rs",
        "src/lib/generated.rs",
        ".venv/lib/site.py",
        "build/out.txt",
        "app.log",
        "keep.log",
        "src/debug.log",
        "scratch/notes.txt",
        ".hidden/config.txt",
        ".env",
        "node_modules/pkg/index.js",
        "docs/guide.md",
    ] {
        write(file, b"the needle is here\n");
    }
    write("docs/other.md", b"no match here\n");
    write("data.bin", b"needle\0binary");
    dir
}

/// `rg -l needle` (and the same with `-u`, and `-uu` without `.git`).
const MATCHING: &[&str] = &[
    "README.md",
    "docs/guide.md",
    "keep.log",
    "node_modules/pkg/index.js",
    "src/lib/util.rs",
    "src/main.rs",
];
const MATCHING_WITH_IGNORED: &[&str] = &[
    "README.md",
    "app.log",
    "build/out.txt",
    "docs/guide.md",
    "keep.log",
    "node_modules/pkg/index.js",
    "scratch/notes.txt",
    "src/debug.log",
    "src/gen/a.rs",
    "src/generated.rs",
    "src/lib/generated.rs",
    "src/lib/util.rs",
    "src/main.rs",
];
const MATCHING_WITH_HIDDEN: &[&str] = &[
    ".env",
    ".hidden/config.txt",
    "README.md",
    "docs/guide.md",
    "keep.log",
    "node_modules/pkg/index.js",
    "src/lib/util.rs",
    "src/main.rs",
];
const MATCHING_WITH_BOTH: &[&str] = &[
    ".env",
    ".hidden/config.txt",
    ".venv/lib/site.py",
    "README.md",
    "app.log",
    "build/out.txt",
    "docs/guide.md",
    "keep.log",
    "node_modules/pkg/index.js",
    "scratch/notes.txt",
    "src/debug.log",
    "src/gen/a.rs",
    "src/generated.rs",
    "src/lib/generated.rs",
    "src/lib/util.rs",
    "src/main.rs",
];
/// `rg --files`.
const FILES: &[&str] = &[
    "README.md",
    "data.bin",
    "docs/guide.md",
    "docs/other.md",
    "keep.log",
    "node_modules/pkg/index.js",
    "src/lib/util.rs",
    "src/main.rs",
];

async fn call(project: &Path, name: &str, input: Value) -> ToolOutput {
    let catalog = ToolCatalog::native();
    catalog.validate(name, &input).unwrap();
    let tool = catalog.get(name).unwrap().clone();
    let output = tokio::time::timeout(CALL_DEADLINE, tool.execute(input, &ToolContext::new(project)))
        .await
        .expect("the tool finishes");
    assert!(!output.is_error, "{output:?}");
    output
}

fn text(output: &ToolOutput) -> &str {
    match output.content.as_slice() {
        [ContentBlock::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

/// The files grep reports matches in, sorted.
async fn grep_files(project: &Path, flags: Value) -> Vec<String> {
    let mut input = json!({"pattern": "needle"});
    input
        .as_object_mut()
        .unwrap()
        .extend(flags.as_object().unwrap().clone());
    let output = call(project, "grep", input).await;
    let mut files: Vec<String> = text(&output)
        .lines()
        .filter_map(|line| line.split_once(':').map(|(path, _)| path.to_string()))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The files (not folders) find_path lists for `*`, sorted.
async fn found_files(project: &Path, flags: Value) -> (Vec<String>, Vec<String>) {
    let mut input = json!({"glob": "*"});
    input
        .as_object_mut()
        .unwrap()
        .extend(flags.as_object().unwrap().clone());
    let output = call(project, "find_path", input).await;
    let (mut folders, mut files): (Vec<String>, Vec<String>) = text(&output)
        .lines()
        .filter(|line| !line.starts_with('['))
        .map(str::to_string)
        .partition(|line| line.ends_with('/'));
    files.sort();
    folders.sort();
    (files, folders)
}

/// What the `rg` on this machine lists with `args`, run in `project`; `None` when there is no `rg`
/// (a failure when `ELPH_REQUIRE_RIPGREP` is set).
async fn rg(project: &Path, args: &[&str]) -> Option<Vec<String>> {
    let spawned = tokio::process::Command::new("rg")
        .args(args)
        .current_dir(project)
        // A user's ripgrep config file would change what it lists.
        .env_remove("RIPGREP_CONFIG_PATH")
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(CALL_DEADLINE, spawned)
        .await
        .expect("rg finishes")
    {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var_os("ELPH_REQUIRE_RIPGREP").is_none(),
                "ELPH_REQUIRE_RIPGREP is set but there is no rg on PATH; install ripgrep"
            );
            eprintln!("no rg on PATH: compared with the recorded lists only");
            return None;
        }
        Err(error) => panic!("rg: {error}"),
    };
    let mut listed: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    listed.sort();
    Some(listed)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|path| path.to_string()).collect()
}

#[tokio::test]
async fn grep_searches_exactly_what_ripgrep_searches() {
    let dir = project();
    let project = dir.path();
    let cases: [(Value, &[&str], &[&str]); 4] = [
        (json!({}), MATCHING, &["-l", "needle"]),
        (
            json!({"include_ignored": true}),
            MATCHING_WITH_IGNORED,
            &["-l", "-u", "needle"],
        ),
        (
            json!({"include_hidden": true}),
            MATCHING_WITH_HIDDEN,
            &["-l", "--hidden", "needle"],
        ),
        (
            json!({"include_ignored": true, "include_hidden": true}),
            MATCHING_WITH_BOTH,
            &["-l", "-uu", "-g", "!.git", "needle"],
        ),
    ];
    for (flags, recorded, rg_args) in cases {
        let searched = grep_files(project, flags.clone()).await;
        assert_eq!(searched, strings(recorded), "grep {flags}");
        if let Some(live) = rg(project, rg_args).await {
            assert_eq!(searched, live, "grep {flags} vs rg {rg_args:?}");
        }
    }
}

#[tokio::test]
async fn find_path_lists_exactly_what_ripgrep_lists() {
    let dir = project();
    let project = dir.path();
    let (files, folders) = found_files(project, json!({})).await;
    assert_eq!(files, strings(FILES));
    if let Some(live) = rg(project, &["--files"]).await {
        assert_eq!(files, live, "find_path vs rg --files");
    }
    // Folders are listed too, but never an ignored or hidden one.
    assert_eq!(
        folders,
        ["docs/", "node_modules/", "node_modules/pkg/", "src/", "src/lib/"]
    );
    let (files, _) = found_files(project, json!({"include_ignored": true, "include_hidden": true})).await;
    if let Some(live) = rg(project, &["--files", "-uu", "-g", "!.git"]).await {
        assert_eq!(files, live, "find_path with both vs rg --files -uu");
    }
    // The ignore files themselves are hidden files like any other; .git's contents never show.
    assert!(files.contains(&".gitignore".to_string()), "{files:?}");
    assert!(files.contains(&".venv/lib/site.py".to_string()), "{files:?}");
    assert!(!files.iter().any(|file| file.starts_with(".git/")), "{files:?}");
}

#[tokio::test]
async fn a_search_below_the_root_still_honours_the_root_ignore_files() {
    let dir = project();
    let project = dir.path();
    let output = call(project, "grep", json!({"pattern": "needle", "path": "src"})).await;
    assert_eq!(
        text(&output),
        "src/lib/util.rs:1:the needle is here\nsrc/main.rs:1:the needle is here"
    );
    if let Some(live) = rg(project, &["-l", "needle", "src"]).await {
        assert_eq!(live, ["src/lib/util.rs", "src/main.rs"]);
    }
}
