//! `write_file`: create or overwrite a file with the given text, creating its parent folders.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{beneath, parse_args, paths};
use crate::tools::{PathAccess, Tool, ToolContext, ToolKind, ToolOutput};

pub struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file to write: relative to the project folder, or absolute.
    #[schemars(length(min = 1))]
    path: String,
    /// The complete new contents of the file.
    content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Write text to a file, replacing everything it contained; missing parent folders are \
         created. Use it to create new files or to rewrite small files completely; to change part \
         of an existing file, prefer edit_file."
    }

    fn input_schema(&self) -> Value {
        crate::tools::schema::input_schema::<Args>()
    }

    fn mutates(&self) -> bool {
        true
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, input: &Value) -> String {
        match input.get("path").and_then(Value::as_str) {
            Some(path) => format!("Write {path}"),
            None => self.name().to_string(),
        }
    }

    fn accesses(&self, input: &Value) -> Vec<PathAccess> {
        input["path"]
            .as_str()
            .map(PathAccess::write)
            .into_iter()
            .collect()
    }

    async fn execute(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let args: Args = match parse_args(self.name(), input) {
            Ok(args) => args,
            Err(error) => return error,
        };
        let place = match paths::place_for_write(ctx, self.name(), &args.path) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
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
        let bytes = args.content.len();
        let verb = if existed { "Overwrote" } else { "Created" };
        ToolOutput::text(format!("{verb} {} ({bytes} bytes)", args.path)).with_details(json!({
            "path": args.path,
            "bytes": bytes,
            "created": !existed,
        }))
    }
}
