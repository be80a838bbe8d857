//! MCP prompts as commands: each prompt `P` of server `S` is the command `/S:P`, offered where
//! the prompt templates are (the TUI's palette, ACP's available commands) and run in every front
//! end by the session. Arguments go in the prompt's declared order or as `key=value`; a missing
//! required argument is refused before anything is sent. The prompt's messages become the user
//! turn: text as it is, embedded resources as their text, the rest described in words.

use rmcp::model::{
    ContentBlock as McpContent, GetPromptRequestParams, GetPromptResult, Prompt, ResourceContents, Role,
};
use serde_json::{Map, Value};

use super::offers::ServerOffers;
use super::resources::{READ_TOOL, blob_size, cut_to, link_hint};
use super::server::CallError;
use crate::workflows::WorkflowCommand;
use crate::workflows::prompts::split_arguments;

/// The most text a prompt puts into the turn; the rest is cut with a note.
const PROMPT_CAP: usize = 256 * 1024;

/// A prompt command carried out: its command (`server:prompt`) and the turn's text.
pub(crate) struct PromptTurn {
    pub(crate) command: String,
    pub(crate) text: String,
}

impl super::McpManager {
    /// The commands of the servers' prompts listed so far.
    pub(crate) fn prompt_commands(&self) -> Vec<WorkflowCommand> {
        commands(&self.offers.snapshot())
    }

    /// Changes whenever a server's prompts do (it answered, or said they changed).
    pub(crate) fn prompts_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.offers.prompts_changed()
    }

    /// Carries out `/server:prompt args` when `server` is one of the session's MCP servers: waits
    /// for the server if it is still starting, checks the arguments, and gets the prompt. `None`
    /// for any other text. The error says what went wrong, in words for the user.
    pub(crate) fn run_prompt(
        &self,
        text: &str,
    ) -> Option<impl std::future::Future<Output = Result<PromptTurn, String>> + Send + 'static> {
        let (server, prompt, rest) = invocation(text)?;
        let command = command_name(server, prompt);
        let disabled = self.disabled.iter().any(|definition| definition.name == server);
        let found = self.servers.iter().find(|s| s.name() == server).cloned();
        if found.is_none() && !disabled {
            return None;
        }
        let handle = self.handle();
        let offers = self.offers.clone();
        let (server, prompt, rest) = (server.to_string(), prompt.to_string(), rest.to_string());
        Some(async move {
            let (Some(found), Some(handle)) = (found, handle) else {
                return Err(format!(
                    "/{command}: the MCP server '{server}' is disabled in its mcp.json"
                ));
            };
            let task = handle.spawn(async move {
                let failed = |reason: String| format!("/{command}: {reason}");
                super::resources::wait_answered(offers.catalog(), &server)
                    .await
                    .map_err(failed)?;
                let peer = found
                    .peer()
                    .await
                    .map_err(|error| failed(super::tool::describe_error(&server, &prompt, &error)))?;
                let limit = found.definition.timeout;
                let mut listed = offers.server(&server).map(|s| s.prompts).unwrap_or_default();
                if !listed.iter().any(|p| p.name == prompt) {
                    // Not listed (yet): the server may have added it without saying so, or its
                    // notice is on its way. One more look before it counts as unknown.
                    if offers
                        .refresh(&server, &peer, super::offers::Which::Prompts, limit)
                        .await
                        .is_none()
                    {
                        listed = offers.server(&server).map(|s| s.prompts).unwrap_or_default();
                    }
                }
                let Some(spec) = listed.iter().find(|p| p.name == prompt) else {
                    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
                    return Err(failed(format!(
                        "the MCP server '{server}' has no prompt '{prompt}' (its prompts: {})",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )));
                };
                let arguments = arguments(&command, spec, &rest)?;
                // Through the server's connection as a call goes: a 2026-07-28 server may ask
                // for roots or the user's input first ("input required"), which is answered
                // before it is asked again.
                let response = match found.get_prompt(request(&prompt, arguments)).await {
                    Ok(response) => response,
                    Err(CallError::Rejected(message)) => {
                        return Err(failed(format!("the MCP server '{server}' refused it: {message}")));
                    }
                    Err(CallError::TimedOut(limit)) => {
                        return Err(failed(format!(
                            "the MCP server '{server}' did not answer within {}",
                            super::server::human_duration(limit)
                        )));
                    }
                    Err(CallError::Died(reason)) => {
                        return Err(failed(format!(
                            "the MCP server '{server}' stopped while it gave the prompt: {reason}"
                        )));
                    }
                    Err(error) => {
                        return Err(failed(super::tool::describe_error(&server, &prompt, &error)));
                    }
                };
                let text = render(&server, response);
                Ok(PromptTurn { command, text })
            });
            let mut task = super::tool::AbortOnDrop(task);
            (&mut task.0)
                .await
                .unwrap_or_else(|_| Err("the session's MCP client has stopped".to_string()))
        })
    }
}

/// The command of `prompt` of `server`: `server:prompt`.
pub(crate) fn command_name(server: &str, prompt: &str) -> String {
    format!("{server}:{prompt}")
}

/// The commands of every listed prompt, server by server.
pub(crate) fn commands(offers: &[ServerOffers]) -> Vec<WorkflowCommand> {
    offers
        .iter()
        .flat_map(|server| {
            server.prompts.iter().map(|prompt| WorkflowCommand {
                name: command_name(&server.server, &prompt.name),
                description: prompt
                    .description
                    .clone()
                    .or_else(|| prompt.title.clone())
                    .unwrap_or_else(|| {
                        format!(
                            "the prompt '{}' of the MCP server '{}'",
                            prompt.name, server.server
                        )
                    }),
                hint: usage(prompt),
            })
        })
        .collect()
}

/// `<required> [optional]`, in the declared order; `None` without arguments.
fn usage(prompt: &Prompt) -> Option<String> {
    let arguments = prompt.arguments.as_deref().unwrap_or_default();
    if arguments.is_empty() {
        return None;
    }
    Some(
        arguments
            .iter()
            .map(|argument| {
                if argument.required == Some(true) {
                    format!("<{}>", argument.name)
                } else {
                    format!("[{}]", argument.name)
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// `/server:prompt rest` split into its server, prompt and the rest; `None` for any other text.
pub(crate) fn invocation(text: &str) -> Option<(&str, &str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (word, arguments) = match rest.split_once(char::is_whitespace) {
        Some((word, arguments)) => (word, arguments.trim()),
        None => (rest, ""),
    };
    let (server, prompt) = word.split_once(':')?;
    if server.is_empty() || prompt.is_empty() {
        return None;
    }
    Some((server, prompt, arguments))
}

/// The arguments of `prompt` from what follows its command: `key=value` for a declared argument,
/// other words fill the declared arguments in order (the last one takes the rest of the words).
/// A missing required argument is an error that names it.
pub(crate) fn arguments(command: &str, prompt: &Prompt, text: &str) -> Result<Map<String, Value>, String> {
    let declared = prompt.arguments.as_deref().unwrap_or_default();
    let mut named = Map::new();
    let mut positional = Vec::new();
    for word in split_arguments(text) {
        match word.split_once('=') {
            Some((key, value)) if declared.iter().any(|argument| argument.name == key) => {
                named.insert(key.to_string(), Value::String(value.to_string()));
            }
            _ => positional.push(word),
        }
    }
    let open: Vec<&str> = declared
        .iter()
        .map(|argument| argument.name.as_str())
        .filter(|name| !named.contains_key(*name))
        .collect();
    if !positional.is_empty() && open.is_empty() {
        return Err(if declared.is_empty() {
            format!("/{command} takes no arguments; got '{}'", positional.join(" "))
        } else {
            format!(
                "/{command}: every argument is given already; '{}' is left over (usage: /{command} {})",
                positional.join(" "),
                usage(prompt).unwrap_or_default()
            )
        });
    }
    let mut words = positional.into_iter();
    for (index, name) in open.iter().enumerate() {
        let value = if index + 1 == open.len() {
            words.by_ref().collect::<Vec<_>>().join(" ")
        } else {
            words.next().unwrap_or_default()
        };
        if !value.is_empty() {
            named.insert((*name).to_string(), Value::String(value));
        }
    }
    let missing: Vec<&str> = declared
        .iter()
        .filter(|argument| argument.required == Some(true) && !named.contains_key(&argument.name))
        .map(|argument| argument.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "/{command} needs the argument{} {} (usage: /{command} {}); nothing was sent",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(|name| format!("'{name}'"))
                .collect::<Vec<_>>()
                .join(", "),
            usage(prompt).unwrap_or_default()
        ));
    }
    Ok(named)
}

/// The request for `prompt` with `arguments`.
pub(crate) fn request(prompt: &str, arguments: Map<String, Value>) -> GetPromptRequestParams {
    let mut params = GetPromptRequestParams::new(prompt);
    if !arguments.is_empty() {
        params = params.with_arguments(arguments);
    }
    params
}

/// The messages as one text: each message's content, in order; when the server's messages are
/// not all the user's, each says whose it is.
pub(crate) fn render(server: &str, result: GetPromptResult) -> String {
    let mixed = result.messages.iter().any(|message| message.role != Role::User);
    let mut pieces = Vec::new();
    for message in result.messages {
        let text = content_text(server, message.content);
        pieces.push(if mixed {
            let who = if message.role == Role::User {
                "User"
            } else {
                "Assistant"
            };
            format!("{who}: {text}")
        } else {
            text
        });
    }
    cut_to(pieces.join("\n\n"), PROMPT_CAP, "an MCP prompt")
}

fn content_text(server: &str, content: McpContent) -> String {
    match content {
        McpContent::Text(text) => text.text,
        McpContent::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("<resource uri=\"{uri}\">\n{text}\n</resource>")
            }
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => format!(
                "[resource {uri}: {} of {} bytes, not shown]",
                mime_type.as_deref().unwrap_or("binary data"),
                blob_size(&blob)
            ),
            _ => "[a resource of a kind Elph does not show]".to_string(),
        },
        McpContent::ResourceLink(link) => link_hint(server, &link.uri, &link.name),
        McpContent::Image(image) => format!(
            "[an image ({}) of {} bytes, not shown]",
            image.mime_type,
            blob_size(&image.data)
        ),
        McpContent::Audio(audio) => format!(
            "[audio ({}) of {} bytes, not shown]",
            audio.mime_type,
            blob_size(&audio.data)
        ),
        _ => format!("[content of a kind Elph does not show; {READ_TOOL} may read what it refers to]"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn greet() -> Prompt {
        serde_json::from_value(json!({"name": "greet", "arguments": [
            {"name": "name", "required": true}, {"name": "style"}
        ]}))
        .unwrap()
    }

    fn args(text: &str) -> Result<Value, String> {
        arguments("t:greet", &greet(), text).map(Value::Object)
    }

    #[test]
    fn positional_and_named_arguments() {
        assert_eq!(args("Ada formal"), Ok(json!({"name": "Ada", "style": "formal"})));
        assert_eq!(
            args("style=formal Ada"),
            Ok(json!({"name": "Ada", "style": "formal"}))
        );
        assert_eq!(
            args("Ada very formal indeed"),
            Ok(json!({"name": "Ada", "style": "very formal indeed"})),
            "the last argument takes the rest"
        );
        assert_eq!(
            args(r#"name="Ada Lovelace" x=1"#),
            Ok(json!({"name": "Ada Lovelace", "style": "x=1"})),
            "an undeclared key is a value"
        );
        assert_eq!(args("Ada"), Ok(json!({"name": "Ada"})));
    }

    #[test]
    fn a_missing_required_argument_is_named() {
        assert_eq!(
            args("style=formal"),
            Err(
                "/t:greet needs the argument 'name' (usage: /t:greet <name> [style]); nothing was sent"
                    .into()
            )
        );
        let none: Prompt = serde_json::from_value(json!({"name": "p"})).unwrap();
        assert_eq!(arguments("t:p", &none, ""), Ok(Map::new()));
        assert!(
            arguments("t:p", &none, "x")
                .unwrap_err()
                .contains("takes no arguments")
        );
    }

    #[test]
    fn invocations_and_commands() {
        assert_eq!(invocation("/test:greet Ada"), Some(("test", "greet", "Ada")));
        assert_eq!(invocation("  /s:p"), Some(("s", "p", "")));
        assert_eq!(invocation("/review x"), None);
        assert_eq!(invocation("/:p"), None);
        assert_eq!(invocation("hello /s:p"), None);
        let offers = [ServerOffers {
            server: "test".into(),
            prompts: vec![greet()],
            ..ServerOffers::default()
        }];
        let commands = commands(&offers);
        assert_eq!(commands[0].name, "test:greet");
        assert_eq!(commands[0].hint.as_deref(), Some("<name> [style]"));
    }

    #[test]
    fn messages_become_the_turn() {
        let result: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Summarize:"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "a://b", "text": "body"}}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "a://c", "blob": "AAEC"}}}
        ]}))
        .unwrap();
        assert_eq!(
            render("s", result),
            "Summarize:\n\n<resource uri=\"a://b\">\nbody\n</resource>\n\n[resource a://c: binary data of 3 bytes, not shown]"
        );
        let mixed: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Q"}},
            {"role": "assistant", "content": {"type": "text", "text": "A"}}
        ]}))
        .unwrap();
        assert_eq!(render("s", mixed), "User: Q\n\nAssistant: A");
    }
}
