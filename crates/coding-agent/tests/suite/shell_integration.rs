//! `elph completions SHELL` and `elph man`, through the real binary and the real programs that read
//! them: bash sources the completion script and completes commands and options; `man` renders the
//! pages (where man is installed; the roff structure is checked everywhere).

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::run_e2e::elph;

/// Runs `program ARGS` with a cleared environment (PATH, an empty HOME, `extra`), `stdin` on its
/// standard input, under a deadline.
async fn run(program: &Path, args: &[&str], stdin: &[u8], extra: &[(&str, &Path)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in extra {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).await.unwrap();
    drop(input);
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the command finishes")
        .unwrap()
}

async fn elph_ok(args: &[&str]) -> String {
    let output = run(&elph(), args, b"", &[]).await;
    assert!(output.status.success(), "elph {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The commands `elph ARGS --help` lists (its "Commands:" section), without `help`.
async fn commands(args: &[&str]) -> Vec<String> {
    let mut with_help = args.to_vec();
    with_help.push("--help");
    let help = elph_ok(&with_help).await;
    let names: Vec<String> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect();
    assert!(!names.is_empty(), "no commands in:\n{help}");
    names
}

fn bash() -> &'static Path {
    Path::new("/bin/bash")
}

/// Sources the bash completion script and prints, for each `words` line, what `_elph` completes
/// for its last word (one line per candidate, then `--`).
async fn bash_complete(script: &Path, lines: &[&str]) -> String {
    let mut program = format!("set -u\nsource '{}'\ncomplete -p elph\n", script.display());
    program.push_str(
        r#"complete_words() {
  COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
  _elph elph "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}"; echo --
}
"#,
    );
    for line in lines {
        program.push_str(&format!("complete_words {line}\n"));
    }
    let output = run(bash(), &["--norc", "--noprofile", "-s"], program.as_bytes(), &[]).await;
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The candidates of the `index`th completion in `bash_complete`'s output.
fn candidates(completed: &str, index: usize) -> Vec<&str> {
    completed
        .split("--\n")
        .nth(index)
        .unwrap_or_default()
        .lines()
        .collect()
}

#[tokio::test]
async fn the_bash_completion_script_is_valid_and_completes_commands_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("elph.bash");
    std::fs::write(&script, elph_ok(&["completions", "bash"]).await).unwrap();

    let syntax = run(bash(), &["-n", script.to_str().unwrap()], b"", &[]).await;
    assert!(syntax.status.success(), "bash -n: {syntax:?}");

    let completed = bash_complete(
        &script,
        &[
            "elph ''",
            "elph hoo",
            "elph hooks va",
            "elph run --max",
            "elph completions ''",
        ],
    )
    .await;
    let (registered, completed) = completed.split_once('\n').unwrap();
    assert!(
        registered.starts_with("complete ") && registered.ends_with(" -F _elph elph"),
        "sourcing the script registers _elph for elph: {registered}"
    );
    let top = candidates(completed, 0);
    for command in commands(&[]).await {
        assert!(top.contains(&command.as_str()), "{command} not among {top:?}");
    }
    assert_eq!(candidates(completed, 1), ["hooks"]);
    assert_eq!(candidates(completed, 2), ["validate"]);
    assert_eq!(candidates(completed, 3), ["--max-turns"]);
    let shells = candidates(completed, 4);
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        assert!(shells.contains(&shell), "{shell} not among {shells:?}");
    }
}

#[tokio::test]
async fn every_shell_gets_its_own_script_naming_every_command() {
    let top = commands(&[]).await;
    let hooks = commands(&["hooks"]).await;
    for (shell, marker) in [
        ("zsh", "#compdef elph"),
        ("fish", "complete -c elph"),
        ("elvish", "edit:completion:arg-completer[elph]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = elph_ok(&["completions", shell]).await;
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for command in top.iter().chain(&hooks) {
            assert!(script.contains(command.as_str()), "{shell}: no {command}");
        }
    }
}

#[tokio::test]
async fn an_unknown_shell_is_a_usage_error_that_lists_the_shells() {
    let output = run(&elph(), &["completions", "tcsh"], b"", &[]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "no script: {output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{stderr}"
    );
}

/// `man` is optional on a build machine; where it is installed, the pages must render cleanly.
fn man() -> Option<&'static Path> {
    ["/usr/bin/man", "/bin/man"]
        .into_iter()
        .map(Path::new)
        .find(|path| path.exists())
}

/// Renders `page` with `man -l` (warnings on): the text, with no complaint on stderr.
async fn render(man: &Path, page: &[u8]) -> String {
    let output = run(man, &["--warnings", "-l", "-"], page, &[]).await;
    assert!(output.status.success(), "{output:?}");
    assert!(output.stderr.is_empty(), "man warns: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn the_manual_page_is_roff_that_names_every_command_and_renders() {
    let page = elph_ok(&["man"]).await;
    let title = page
        .lines()
        .find(|line| line.starts_with(".TH "))
        .expect("a .TH title line");
    assert!(title.starts_with(".TH elph 1 "), "{title}");
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH DESCRIPTION",
        ".SH OPTIONS",
        ".SH SUBCOMMANDS",
    ] {
        assert!(page.lines().any(|line| line == section), "no {section}");
    }
    let commands = commands(&[]).await;
    for command in &commands {
        let reference = format!("elph\\-{}(1)", command.replace('-', "\\-"));
        assert!(page.contains(&reference), "no {reference}");
    }
    assert!(!page.contains("elph\\-help(1)"), "no page for `elph help`");
    if let Some(man) = man() {
        let text = render(man, page.as_bytes()).await;
        for heading in ["NAME", "SYNOPSIS", "OPTIONS", "SUBCOMMANDS"] {
            assert!(
                text.lines().any(|line| line == heading),
                "no {heading} in:\n{text}"
            );
        }
        for command in &commands {
            assert!(
                text.contains(&format!("elph-{command}(1)")),
                "{command} in:\n{text}"
            );
        }
    }
}

#[tokio::test]
async fn man_dir_writes_a_page_per_command_that_man_finds() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("share/man/man1");
    let output = run(&elph(), &["man", "--dir", dir.to_str().unwrap()], b"", &[]).await;
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains(dir.to_str().unwrap()));

    let mut expected = vec!["elph.1".to_owned()];
    for command in commands(&[]).await {
        expected.push(format!("elph-{command}.1"));
    }
    for command in commands(&["hooks"]).await {
        expected.push(format!("elph-hooks-{command}.1"));
    }
    for name in &expected {
        let page = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        let title = format!(".TH {} 1 ", name.trim_end_matches(".1"));
        assert!(
            page.lines().any(|line| line.starts_with(&title)),
            "{name} has no {title:?}"
        );
        assert!(
            page.contains(&format!("\"elph {}\"", env!("CARGO_PKG_VERSION"))),
            "{name} names the version"
        );
    }
    let run_page = std::fs::read_to_string(dir.join("elph-run.1")).unwrap();
    assert!(
        run_page.contains("\\-\\-max\\-turns"),
        "elph-run.1 documents --max-turns"
    );

    if let Some(man) = man() {
        // What docs/cli.md tells people to do: put the folder's parent on MANPATH (with the trailing
        // colon that keeps the system's pages), then `man elph-run`.
        let mut manpath = root.path().join("share/man").into_os_string();
        manpath.push(":");
        let manpath = std::path::PathBuf::from(manpath);
        let output = run(man, &["elph-run"], b"", &[("MANPATH", &manpath)]).await;
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(text.contains("--max-turns"), "{text}");
    }
}

#[tokio::test]
async fn man_dir_on_a_file_is_a_clear_error_and_leaves_the_file_alone() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("man1");
    std::fs::write(&file, "mine\n").unwrap();
    let output = run(&elph(), &["man", "--dir", file.to_str().unwrap()], b"", &[]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("cannot create the folder {}", file.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
}
