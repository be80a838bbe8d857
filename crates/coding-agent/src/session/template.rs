//! A prompt template's `` !`command` `` and `@path` filled in before its turn: each command runs
//! through the session's `shell_exec` (hooks, approval, sandbox) and its output takes its place;
//! each file inside the project is read through `read_file` and goes with the prompt. Commands run
//! only in a trusted project and unless settings.json says `disableTemplateShell`.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::Session;
use crate::workflows::ExpandedPrompt;
use crate::workflows::prompts::Part;

impl Session {
    /// The text the template's turn sends.
    pub(super) async fn fill_template(
        &mut self,
        expanded: &ExpandedPrompt,
        cancel: &CancellationToken,
    ) -> String {
        let name = expanded.template.as_deref().unwrap_or_default();
        if let Some(tools) = &expanded.allowed_tools {
            self.runtime.notice(format!(
                "template /{name}: allowed-tools ({tools}) grants nothing in Elph; its calls are approved \
                 by the mode and approval policy like any other"
            ));
        }
        if expanded.parts.is_empty() {
            return expanded.text.clone();
        }
        let project_dir = self.runtime.paths().project_dir.clone();
        let refusal = self.runtime.template_shell_refusal();
        let mut text = String::new();
        let mut files = String::new();
        for (index, part) in expanded.parts.iter().enumerate() {
            match part {
                Part::Text(piece) => text.push_str(piece),
                Part::Shell(command) => {
                    if let Some(why) = refusal {
                        self.runtime.notice(format!(
                            "template /{name}: `{command}` was not run ({why}); it reaches the model as written"
                        ));
                        text.push_str(&format!("!`{command}`"));
                        continue;
                    }
                    let output = self
                        .channels
                        .pump(self.runtime.harness_mut().template_shell(index, command, cancel))
                        .await;
                    text.push_str(output.text.trim_end());
                }
                Part::File(path) => {
                    if !inside_project(&project_dir, path) {
                        // Not a file of the project (a mention, a missing file): left as typed.
                        text.push_str(&format!("@{path}"));
                        continue;
                    }
                    let output = self
                        .channels
                        .pump(self.runtime.harness_mut().template_read(index, path, cancel))
                        .await;
                    if output.is_error {
                        self.runtime
                            .notice(format!("template /{name}: @{path} was not read: {}", output.text));
                        text.push_str(&format!("@{path}"));
                        continue;
                    }
                    text.push_str(path);
                    files.push_str(&format!(
                        "\n\n<file path=\"{path}\">\n{}\n</file>",
                        output.text.trim_end()
                    ));
                }
            }
        }
        text.push_str(&files);
        text
    }
}

/// Whether `path` names a regular file inside the project, once symlinks are resolved.
fn inside_project(project_dir: &Path, path: &str) -> bool {
    let Ok(project) = project_dir.canonicalize() else {
        return false;
    };
    project
        .join(path)
        .canonicalize()
        .is_ok_and(|real| real.starts_with(&project) && real.is_file())
}
