//! `write_file`: create or overwrite a file with the given text, creating its parent folders.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{beneath, paths};
use crate::tools::{PathAccess, ProposedChange, ToolContext, ToolKind, ToolOutput, TypedTool};

pub struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to write: relative to the project folder, or absolute.
    #[schemars(length(min = 1))]
    path: String,
    /// The complete new contents of the file.
    content: String,
}

#[async_trait::async_trait]
impl TypedTool for WriteFile {
    type Args = Args;

    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Write text to a file, replacing everything it contained; missing parent folders are \
         created. Use it to create new files or to rewrite small files completely; to change part \
         of an existing file, prefer edit_file."
    }

    fn mutates(&self) -> bool {
        true
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, args: &Args) -> String {
        format!("Write {}", args.path)
    }

    fn accesses(&self, args: &Args) -> Vec<PathAccess> {
        vec![PathAccess::write(&args.path)]
    }

    fn change(&self, args: &Args) -> Option<ProposedChange> {
        Some(ProposedChange::Write {
            path: args.path.clone(),
            content: args.content.clone(),
        })
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        let place = match paths::place_for_write(ctx, self.name(), &args.path) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        if let Some(editor) = ctx.editor.as_ref().filter(|editor| editor.writes()) {
            let existed = std::fs::symlink_metadata(place.real()).is_ok();
            if let Err(error) = editor.write_text(place.real(), &args.content).await {
                return ToolOutput::error(format!("cannot write {}: the editor says: {error}", args.path));
            }
            return wrote(&args, existed);
        }
        let content = args.content.clone();
        let written =
            tokio::task::spawn_blocking(move || beneath::replace_file(&place, content.as_bytes(), true))
                .await;
        let existed = match written {
            Ok(Ok(existed)) => existed,
            Ok(Err(error)) if error.kind() == std::io::ErrorKind::IsADirectory => {
                return ToolOutput::error(format!("cannot write {}: it is a directory", args.path));
            }
            Ok(Err(error)) => return ToolOutput::error(paths::describe_io("write", &args.path, &error)),
            Err(error) => return ToolOutput::error(format!("writing {} failed: {error}", args.path)),
        };
        wrote(&args, existed)
    }
}

/// What the model and the front end are told once the file is written.
fn wrote(args: &Args, existed: bool) -> ToolOutput {
    let bytes = args.content.len();
    let verb = if existed { "Overwrote" } else { "Created" };
    ToolOutput::text(format!("{verb} {} ({bytes} bytes)", args.path)).with_details(json!({
        "path": args.path,
        "bytes": bytes,
        "created": !existed,
    }))
}
