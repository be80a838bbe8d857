//! What the client sends as a prompt, in Elph's terms: the prompt's text, and the slash commands
//! `/reload`, `/trust`, `/untrust` and `/compact [instructions]`, which Elph handles itself instead of
//! sending them to the model.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock, EmbeddedResourceResource, UnstructuredCommandInput,
};

use crate::trust::TrustDecision;

/// A slash command Elph handles without the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlashCommand {
    Reload,
    Trust,
    Untrust,
    Compact(Option<String>),
}

impl SlashCommand {
    /// The command at the start of `prompt`, if it is one of Elph's; other prompts (including other
    /// slash words) go to the model.
    pub fn parse(prompt: &str) -> Option<SlashCommand> {
        let rest = prompt.trim_start().strip_prefix('/')?;
        let (name, args) = match rest.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (rest.trim_end(), ""),
        };
        let no_args = args.is_empty();
        match name {
            "reload" if no_args => Some(SlashCommand::Reload),
            "trust" if no_args => Some(SlashCommand::Trust),
            "untrust" if no_args => Some(SlashCommand::Untrust),
            "compact" => Some(SlashCommand::Compact((!no_args).then(|| args.to_string()))),
            _ => None,
        }
    }
}

/// The commands to advertise for a project: `/reload`, exactly one of `/trust` and `/untrust`
/// (SPEC.md §3), and `/compact`.
pub fn available(trust: &TrustDecision) -> Vec<AvailableCommand> {
    let offered = trust.offered_command();
    vec![
        AvailableCommand::new(
            "reload",
            "Reload hooks: re-read trust.json and both hooks.json files",
        ),
        AvailableCommand::new(offered.name(), offered.description()),
        AvailableCommand::new(
            "compact",
            "Summarize the earlier conversation to free context (optional instructions)",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("what the summary should keep"),
        )),
    ]
}

/// The message an untrusted project gets: there is no terminal to ask, so say how to trust it.
pub fn untrusted_message(project: &Path) -> String {
    let dir = project.display();
    format!(
        "Project hooks are off: {dir} is not trusted. Trust it with `elph trust {dir}` or the /trust command."
    )
}

/// The prompt as the model sees it: text blocks as they are, embedded text resources and resource
/// links as references. Images and audio are not advertised and are left out.
pub fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{} ({})", link.name, link.uri)),
            ContentBlock::Resource(resource) => {
                if let EmbeddedResourceResource::TextResourceContents(contents) = &resource.resource {
                    parts.push(format!(
                        "<file uri=\"{}\">\n{}\n</file>",
                        contents.uri, contents.text
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_elph_commands_only() {
        assert_eq!(SlashCommand::parse("/reload"), Some(SlashCommand::Reload));
        assert_eq!(SlashCommand::parse("  /trust \n"), Some(SlashCommand::Trust));
        assert_eq!(SlashCommand::parse("/untrust"), Some(SlashCommand::Untrust));
        assert_eq!(SlashCommand::parse("/compact"), Some(SlashCommand::Compact(None)));
        assert_eq!(
            SlashCommand::parse("/compact keep the plan\nand the paths"),
            Some(SlashCommand::Compact(Some("keep the plan\nand the paths".into())))
        );
        assert_eq!(SlashCommand::parse("/reloading"), None);
        assert_eq!(SlashCommand::parse("/trust me"), None);
        assert_eq!(SlashCommand::parse("/help"), None);
        assert_eq!(SlashCommand::parse("please /reload"), None);
    }

    #[test]
    fn prompt_text_joins_text_and_references() {
        let blocks = vec![ContentBlock::from("look at"), ContentBlock::from("this")];
        assert_eq!(prompt_text(&blocks), "look at\nthis");
    }
}
