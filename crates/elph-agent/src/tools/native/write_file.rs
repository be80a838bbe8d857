//! `write_file`: create or overwrite a file with the given text, creating its parent folders.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{beneath, paths};
use crate::policy::ReadAccess;
use crate::tools::{Overwrites, PathAccess, ProposedChange, ToolContext, ToolKind, ToolOutput, TypedTool};

/// The largest file whose text a review shows as what a write replaces.
const MAX_REVIEWED_BYTES: usize = 1024 * 1024;

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
            overwrites: Overwrites::Unknown,
        })
    }

    async fn review(&self, args: &Args, ctx: &ToolContext) -> Option<ProposedChange> {
        Some(ProposedChange::Write {
            path: args.path.clone(),
            content: args.content.clone(),
            overwrites: overwritten(ctx, &args.path).await,
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

/// What a write to `shown` would replace, read from the source the write goes to: the editor's
/// buffer when the editor reads files, else the disk. Only what the model could read without
/// approval is read (the file policy's free reads): anything else is `Unknown`, as is a file that
/// is not UTF-8 text of at most [`MAX_REVIEWED_BYTES`]. A file missing on disk is `Nothing`, as
/// the write itself counts it (it says "Created").
async fn overwritten(ctx: &ToolContext, shown: &str) -> Overwrites {
    let Ok(place) = paths::place_for_read(ctx, "write_file", shown) else {
        return Overwrites::Unknown;
    };
    if ctx.policy.read_access(place.real()) != ReadAccess::Free {
        return Overwrites::Unknown;
    }
    match std::fs::symlink_metadata(place.real()) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Overwrites::Nothing,
        Ok(metadata) if metadata.is_file() && metadata.len() <= MAX_REVIEWED_BYTES as u64 => {}
        Ok(_) | Err(_) => return Overwrites::Unknown,
    }
    let text = match ctx.editor.as_ref().filter(|editor| editor.reads()) {
        Some(editor) => editor.read_text(place.real()).await.ok(),
        None => tokio::task::spawn_blocking(move || super::edit_file::read_all(&place))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|bytes| String::from_utf8(bytes).ok()),
    };
    match text {
        Some(text) if text.len() <= MAX_REVIEWED_BYTES => Overwrites::Text(text),
        Some(_) | None => Overwrites::Unknown,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_review_reads_what_the_write_replaces_only_where_the_model_may_read() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("old.txt"), "before\n").unwrap();
        std::fs::write(project.join("bytes.bin"), [0xff, 0xfe, 0x00]).unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "not the project's\n").unwrap();
        let ctx = ToolContext::new(project.canonicalize().unwrap());
        assert_eq!(
            overwritten(&ctx, "old.txt").await,
            Overwrites::Text("before\n".into())
        );
        assert_eq!(overwritten(&ctx, "new/file.txt").await, Overwrites::Nothing);
        assert_eq!(overwritten(&ctx, "bytes.bin").await, Overwrites::Unknown);
        assert_eq!(
            overwritten(&ctx, &outside.display().to_string()).await,
            Overwrites::Unknown,
            "outside the free reads: not read"
        );
        assert_eq!(overwritten(&ctx, ".").await, Overwrites::Unknown);
    }
}
