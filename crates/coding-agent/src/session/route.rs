//! How a submitted line is taken, decided once for every front end: a built-in command the front
//! end carries out, a workflow command (prompt template, skill, MCP prompt) the session carries
//! out, text for the model, or refused with a message. The terminal UI routes before it sends (so
//! a refused line stays in its input box); the session routes every prompt again with what it
//! knows (`elph run`, ACP, and the terminal UI's lines that are not built-ins). The rules are
//! docs/cli.md's "What a line starting with / does".

use super::commands::{FrontEnd, IN_EDITORS, SlashCommand};
use crate::workflows::{SKILL_COMMAND_PREFIX, WorkflowCommand};

/// What a front end and its session know of commands now.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Known<'a> {
    pub front_end: FrontEnd,
    /// Templates, skills (`skill:NAME`) and the MCP prompts listed so far (`server:prompt`).
    pub workflows: &'a [WorkflowCommand],
    /// The session's MCP servers, disabled ones too: `/server:name` goes to its server, which
    /// may not have listed its prompts yet (and says so when it has no such prompt).
    pub servers: &'a [String],
}

impl Known<'static> {
    /// Only `front_end`'s built-in commands: enough to tell them from everything else, which
    /// goes to the session.
    pub(crate) fn builtins_of(front_end: FrontEnd) -> Known<'static> {
        Known {
            front_end,
            workflows: &[],
            servers: &[],
        }
    }
}

/// Where a line goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// Text for the model, as it is sent: an escaped line (`//word …`) without its first `/`.
    Text(&'a str),
    /// A built-in command this front end carries out, with its argument text.
    Builtin(SlashCommand, Option<String>),
    /// A template, a skill or an MCP prompt: the session carries it out.
    Workflow,
    /// Neither run nor sent; the message says why and how to send the line as text.
    Refused(String),
}

/// How a line is taken; see the module's comment.
pub(crate) fn route<'a>(line: &'a str, known: &Known<'_>) -> Route<'a> {
    let Some(rest) = line.trim_start().strip_prefix('/') else {
        return Route::Text(line);
    };
    if let Some(escaped) = rest.strip_prefix('/') {
        // Only what would otherwise be taken as a command loses its `/`: a code comment
        // (`// note`, `///`) or a protocol-relative URL is sent as written.
        let word = escaped.split(char::is_whitespace).next().unwrap_or_default();
        return Route::Text(if command_shaped(word) { rest } else { line });
    }
    let (word, argument) = match rest.split_once(char::is_whitespace) {
        Some((word, argument)) => (word, Some(argument.trim()).filter(|a| !a.is_empty())),
        None => (rest, None),
    };
    if let Some(command) = SlashCommand::from_name(word) {
        return builtin(command, word, argument.map(str::to_string), known.front_end);
    }
    if known.workflows.iter().any(|command| command.name == word) {
        return Route::Workflow;
    }
    if let Some((server, prompt)) = word.split_once(':')
        && !prompt.is_empty()
        && known.servers.iter().any(|known| known == server)
    {
        return Route::Workflow;
    }
    if !command_shaped(word) {
        // A path (`/etc/hosts`), a lone `/`, or other text that only starts with a slash.
        return Route::Text(line);
    }
    if let Some(name) = word.strip_prefix(SKILL_COMMAND_PREFIX) {
        return Route::Refused(unknown_skill(name, known));
    }
    let nearest = crate::suggest::nearest(word, candidates(known))
        .map(str::to_string)
        .or_else(|| nearest_server(word, known));
    Route::Refused(refusal(
        format!("unknown command /{word}{}", did_you_mean(nearest.as_deref())),
        known.front_end,
    ))
}

/// For `/namespace:name` whose namespace is close to one of the session's MCP servers, that
/// server's command: its prompts may not be listed yet, but the server is known.
fn nearest_server(word: &str, known: &Known<'_>) -> Option<String> {
    let (namespace, name) = word.split_once(':')?;
    let server = crate::suggest::nearest(namespace, known.servers.iter().map(String::as_str))?;
    (!name.is_empty()).then(|| format!("{server}:{name}"))
}

/// The built-in commands `front_end` carries out itself.
fn handled(front_end: FrontEnd) -> &'static [SlashCommand] {
    match front_end {
        FrontEnd::Terminal => &SlashCommand::ALL,
        FrontEnd::Editor => &IN_EDITORS,
        FrontEnd::Headless => &[],
    }
}

fn builtin(
    command: SlashCommand,
    typed: &str,
    argument: Option<String>,
    front_end: FrontEnd,
) -> Route<'static> {
    if !handled(front_end).contains(&command) {
        let works_in = if IN_EDITORS.contains(&command) {
            "the terminal UI and in editors"
        } else {
            "the terminal UI only"
        };
        let here = match front_end {
            FrontEnd::Editor => "an editor",
            FrontEnd::Headless | FrontEnd::Terminal => "`elph run`",
        };
        return Route::Refused(refusal(
            format!("/{typed} works in {works_in}, not in {here}"),
            front_end,
        ));
    }
    if argument.is_some() && command.spec().argument.is_none() {
        return Route::Refused(refusal(
            format!("/{} takes no argument", command.name()),
            front_end,
        ));
    }
    Route::Builtin(command, argument)
}

fn unknown_skill(name: &str, known: &Known<'_>) -> String {
    let skills: Vec<&str> = known
        .workflows
        .iter()
        .filter_map(|command| command.name.strip_prefix(SKILL_COMMAND_PREFIX))
        .collect();
    let what = match crate::suggest::nearest(name, skills.iter().copied()) {
        Some(nearest) => format!("no skill named '{name}' (did you mean /{SKILL_COMMAND_PREFIX}{nearest}?)"),
        None if skills.is_empty() => {
            format!("no skill named '{name}': no skills are loaded (see `elph skills list`)")
        }
        None => format!("no skill named '{name}' (skills: {})", skills.join(", ")),
    };
    refusal(what, known.front_end)
}

/// Every name a command of this front end answers to: its built-ins and their aliases, then the
/// workflow commands.
fn candidates<'k>(known: &Known<'k>) -> Vec<&'k str> {
    handled(known.front_end)
        .iter()
        .flat_map(|command| std::iter::once(command.name()).chain(command.aliases().iter().copied()))
        .chain(known.workflows.iter().map(|command| command.name.as_str()))
        .collect()
}

fn did_you_mean(nearest: Option<&str>) -> String {
    nearest
        .map(|name| format!(" (did you mean /{name}?)"))
        .unwrap_or_default()
}

/// `what`, and what to do instead.
fn refusal(what: String, front_end: FrontEnd) -> String {
    let list = match front_end {
        FrontEnd::Terminal => "; /help lists the commands",
        FrontEnd::Editor | FrontEnd::Headless => "",
    };
    format!("{what}{list}. Nothing was sent; to send the line to the model as text, start it with //")
}

/// Whether `word` (what follows the `/`) has the shape of a command's name: `NAME` or
/// `NAMESPACE:NAME` (the name may still be empty: `/github:`), each part a letter or digit and then
/// letters, digits, `-`, `_` and `.`. A second `/` makes it a path, never a command.
fn command_shaped(word: &str) -> bool {
    fn part(text: &str) -> bool {
        let mut chars = text.chars();
        chars.next().is_some_and(char::is_alphanumeric)
            && chars.all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    }
    match word.split_once(':') {
        Some((namespace, name)) => part(namespace) && (name.is_empty() || part(name)),
        None => part(word),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn workflow(name: &str) -> WorkflowCommand {
        WorkflowCommand {
            name: name.to_string(),
            description: String::new(),
            hint: None,
        }
    }

    struct Fixture {
        workflows: Vec<WorkflowCommand>,
        servers: Vec<String>,
    }

    impl Fixture {
        fn new() -> Fixture {
            Fixture {
                workflows: ["review", "skill:pdf", "github:triage"].map(workflow).to_vec(),
                servers: vec!["github".to_string(), "slow".to_string()],
            }
        }

        fn known(&self, front_end: FrontEnd) -> Known<'_> {
            Known {
                front_end,
                workflows: &self.workflows,
                servers: &self.servers,
            }
        }

        fn route<'a>(&self, line: &'a str, front_end: FrontEnd) -> Route<'a> {
            route(line, &self.known(front_end))
        }
    }

    fn refused(route: Route<'_>) -> String {
        match route {
            Route::Refused(message) => message,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn built_ins_run_where_their_front_end_carries_them_out() {
        let fixture = Fixture::new();
        let terminal = FrontEnd::Terminal;
        assert_eq!(
            fixture.route("/compact keep the plan", terminal),
            Route::Builtin(SlashCommand::Compact, Some("keep the plan".into()))
        );
        assert_eq!(
            fixture.route(" /quit ", terminal),
            Route::Builtin(SlashCommand::Quit, None)
        );
        assert_eq!(
            fixture.route("/exit", terminal),
            Route::Builtin(SlashCommand::Quit, None)
        );
        assert_eq!(
            fixture.route("/Clear", terminal),
            Route::Builtin(SlashCommand::New, None)
        );
        assert_eq!(
            fixture.route("/model openai/gpt-4.1", terminal),
            Route::Builtin(SlashCommand::Model, Some("openai/gpt-4.1".into()))
        );
        let editor = FrontEnd::Editor;
        assert_eq!(
            fixture.route("  /trust \n", editor),
            Route::Builtin(SlashCommand::Trust, None)
        );
        assert_eq!(
            fixture.route("/compact keep the plan\nand the paths", editor),
            Route::Builtin(SlashCommand::Compact, Some("keep the plan\nand the paths".into()))
        );
        assert!(
            refused(fixture.route("/help", editor))
                .starts_with("/help works in the terminal UI only, not in an editor")
        );
        assert!(
            refused(fixture.route("/compact", FrontEnd::Headless))
                .starts_with("/compact works in the terminal UI and in editors, not in `elph run`")
        );
        let message = refused(fixture.route("/trust me", editor));
        assert!(message.starts_with("/trust takes no argument."), "{message}");
        assert!(message.ends_with("start it with //"), "{message}");
    }

    #[test]
    fn workflows_and_the_servers_prompts_go_to_the_session() {
        let fixture = Fixture::new();
        for front_end in [FrontEnd::Terminal, FrontEnd::Editor, FrontEnd::Headless] {
            for line in [
                "/review src/lib.rs",
                "/skill:pdf read it",
                "/github:triage 42",
                // Not listed yet: the server is asked.
                "/slow:later",
                "/github:a/b",
            ] {
                assert_eq!(fixture.route(line, front_end), Route::Workflow, "{line}");
            }
        }
    }

    #[test]
    fn unknown_commands_are_refused_with_the_nearest_name() {
        let fixture = Fixture::new();
        let message = refused(fixture.route("/reveiw src/lib.rs", FrontEnd::Headless));
        assert_eq!(
            message,
            "unknown command /reveiw (did you mean /review?). Nothing was sent; to send the line to the model as text, start it with //"
        );
        let message = refused(fixture.route("/relaod", FrontEnd::Terminal));
        assert!(
            message.starts_with("unknown command /relaod (did you mean /reload?); /help lists the commands."),
            "{message}"
        );
        // An editor's own commands are suggested there; `elph run` has none of them.
        assert!(refused(fixture.route("/relaod", FrontEnd::Editor)).contains("did you mean /reload?"));
        assert!(!refused(fixture.route("/relaod", FrontEnd::Headless)).contains("did you mean"));
        let message = refused(fixture.route("/githb:triage", FrontEnd::Editor));
        assert!(
            message.starts_with("unknown command /githb:triage (did you mean /github:triage?)"),
            "{message}"
        );
        assert!(refused(fixture.route("/a:b", FrontEnd::Terminal)).starts_with("unknown command /a:b;"));
        // A server whose prompts are not listed yet is still suggested by its name.
        let message = refused(fixture.route("/slwo:later", FrontEnd::Headless));
        assert!(
            message.starts_with("unknown command /slwo:later (did you mean /slow:later?)"),
            "{message}"
        );
        assert!(
            refused(fixture.route("/github:", FrontEnd::Terminal)).starts_with("unknown command /github:")
        );
        assert!(
            refused(fixture.route("/tmp is full", FrontEnd::Terminal)).starts_with("unknown command /tmp;")
        );
        assert!(refused(fixture.route("/Review", FrontEnd::Terminal)).contains("did you mean /review?"));
        let message = refused(fixture.route("/skill:pfd x", FrontEnd::Terminal));
        assert!(
            message.starts_with("no skill named 'pfd' (did you mean /skill:pdf?)"),
            "{message}"
        );
        let message = refused(fixture.route("/skill:zzzzzz", FrontEnd::Editor));
        assert!(
            message.starts_with("no skill named 'zzzzzz' (skills: pdf)."),
            "{message}"
        );
    }

    #[test]
    fn paths_and_ordinary_text_go_to_the_model_as_written() {
        let fixture = Fixture::new();
        for line in [
            "hello /quit",
            "/etc/hosts looks odd",
            "  /usr/bin/env: bad interpreter",
            "/",
            "/ is the root",
            "/.env is committed",
            "/c:/x",
            "/help? what is this",
            "/~/notes",
            "// a code comment",
            "/// a doc comment",
            "//cdn.example.com/lib.js is blocked",
            "",
        ] {
            for front_end in [FrontEnd::Terminal, FrontEnd::Editor, FrontEnd::Headless] {
                assert_eq!(fixture.route(line, front_end), Route::Text(line), "{line:?}");
            }
        }
    }

    #[test]
    fn a_double_slash_sends_what_would_be_a_command_as_text() {
        let fixture = Fixture::new();
        assert_eq!(
            fixture.route("//reveiw this", FrontEnd::Headless),
            Route::Text("/reveiw this")
        );
        assert_eq!(
            fixture.route("  //tmp is full", FrontEnd::Terminal),
            Route::Text("/tmp is full")
        );
        assert_eq!(fixture.route("//help", FrontEnd::Terminal), Route::Text("/help"));
        assert_eq!(fixture.route("//a:b", FrontEnd::Editor), Route::Text("/a:b"));
    }

    proptest! {
        /// Every line goes exactly one way, and text is always what was typed: as written, or
        /// with the first `/` of an escape removed and nothing else.
        #[test]
        fn text_is_never_changed_but_for_an_escape(line in "[ \t]{0,2}/{0,3}[a-z0-9:./~ _-]{0,12}( [a-z/]{0,6})?") {
            let fixture = Fixture::new();
            for front_end in [FrontEnd::Terminal, FrontEnd::Editor, FrontEnd::Headless] {
                match fixture.route(&line, front_end) {
                    Route::Text(text) if text == line => {}
                    Route::Text(text) => {
                        let start = line.trim_start().strip_prefix('/');
                        prop_assert!(start.is_some_and(|start| start.starts_with('/')));
                        prop_assert_eq!(Some(text), start);
                    }
                    Route::Refused(message) => {
                        prop_assert!(line.trim_start().starts_with('/') && !line.trim_start().starts_with("//"));
                        prop_assert!(message.ends_with("start it with //"));
                        // The escape of a refused line is the line as text.
                        let escaped = format!("/{}", line.trim_start());
                        prop_assert_eq!(fixture.route(&escaped, front_end), Route::Text(line.trim_start()));
                    }
                    Route::Builtin(..) | Route::Workflow => {
                        prop_assert!(line.trim_start().starts_with('/'));
                    }
                }
            }
        }

        /// A first word with a second `/` is a path: text, never a command.
        #[test]
        fn a_path_is_never_a_command(first in "[a-z]{1,8}", second in "[a-z.]{0,8}", tail in "( [a-z]{1,5}){0,3}") {
            let fixture = Fixture::new();
            let line = format!("/{first}/{second}{tail}");
            for front_end in [FrontEnd::Terminal, FrontEnd::Editor, FrontEnd::Headless] {
                prop_assert_eq!(fixture.route(&line, front_end), Route::Text(&line));
            }
        }
    }
}
