//! What the client sends as a prompt, in Elph's terms: the prompt's text, and the slash commands
//! offered to editors (from the session's table), which Elph handles itself instead of sending them
//! to the model.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock, EmbeddedResourceResource, UnstructuredCommandInput,
};

use crate::session::commands::{FrontEnd, offered};
use crate::trust::TrustDecision;
use crate::workflows::WorkflowCommand;

/// The commands to advertise for a project, from the session's table: those offered to editors,
/// with exactly one of `/trust` and `/untrust` (docs/trust.md), then the prompt templates and the
/// skills (`skill:NAME`), which the session expands when the client sends them.
pub(super) fn available(trust: &TrustDecision, workflows: &[WorkflowCommand]) -> Vec<AvailableCommand> {
    let workflows = workflows.iter().map(|command| {
        let available = AvailableCommand::new(command.name.clone(), command.description.clone());
        match &command.hint {
            Some(hint) => available.input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new(hint.clone()),
            )),
            None => available,
        }
    });
    offered(trust.offered_command(), FrontEnd::Editor)
        .into_iter()
        .map(|command| {
            let spec = command.spec();
            let available = AvailableCommand::new(spec.name, spec.description);
            match spec.argument {
                Some(argument) => available.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(argument.hint),
                )),
                None => available,
            }
        })
        .chain(workflows)
        .collect()
}

/// The message an untrusted project gets: there is no terminal to ask, so say how to trust it.
pub(crate) fn untrusted_message(project: &Path) -> String {
    let dir = project.display();
    format!(
        "Project hooks are off: {dir} is not trusted. Trust it with `elph trust {dir}` or the /trust command."
    )
}

/// The message a project that changed since it was trusted gets: what changed, and how to trust
/// the new content.
pub(super) fn changed_message(project: &Path, changes: &str) -> String {
    let dir = project.display();
    format!(
        "Project hooks and MCP servers are off: {dir} changed since you trusted it ({changes}). \
         Review the change, then trust the new content with `elph trust {dir}` or the /trust command."
    )
}

/// The prompt as the model sees it: text blocks as they are, embedded text resources and resource
/// links as references. Images and audio are not advertised (`promptCapabilities`), and a prompt
/// holding one is refused with a message that says so, rather than sent without it.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> Result<String, String> {
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
            ContentBlock::Image(_) | ContentBlock::Audio(_) => {
                let kind = if matches!(block, ContentBlock::Image(_)) {
                    "an image"
                } else {
                    "audio"
                };
                return Err(format!(
                    "the prompt holds {kind}, which Elph cannot pass to the model from an editor yet (promptCapabilities.image and .audio are false); attach the file as a resource link or describe it in text"
                ));
            }
            _ => {}
        }
    }
    Ok(parts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_text_joins_text_and_references() {
        let blocks = vec![ContentBlock::from("look at"), ContentBlock::from("this")];
        assert_eq!(prompt_text(&blocks).unwrap(), "look at\nthis");
    }

    #[test]
    fn an_image_is_refused_clearly() {
        use agent_client_protocol::v1::schema::ImageContent;
        let blocks = vec![
            ContentBlock::from("what is this?"),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
        ];
        let refusal = prompt_text(&blocks).unwrap_err();
        assert!(
            refusal.contains("an image") && refusal.contains("promptCapabilities"),
            "{refusal}"
        );
    }
}
