//! MCP resources for the model: the tool `mcp_read_resource {server, uri}`, offered while a server
//! that declares resources is up, whose description lists the servers' resources (name, URI,
//! description) and resource templates (name, URI template, description), at most [`LISTED`] of
//! each, with a note when there are more. A URI the model builds from a template is read like any
//! other, within the same limits. The list is in the tool's
//! description rather than the system prompt so that it comes and goes with the tool that reads
//! it, and changes with it when a server's list does. `@server:uri` in a prompt is read with the
//! same tool (see `session/mentions.rs`), and a `resource_link` in a tool result says how to read
//! it. Text comes back as it is (bounded); binary data as its type and size, never its bytes.

use std::sync::Arc;
use std::time::Duration;

use elph_agent::tools::{Tool, ToolContext, ToolOutput, TypedTool};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;

use super::catalog::{Shared, Status};
use super::offers::Offers;
use super::server::{CallError, McpServer, human_duration};
use super::tool::OUTPUT_CAP;

pub(crate) const READ_TOOL: &str = "mcp_read_resource";

/// How many resources, and how many templates, the tool's description lists, over all servers.
const LISTED: usize = 50;
/// How much of a resource's description the list shows.
const DESCRIPTION_CHARS: usize = 160;
/// Past a server's startup limit, how long a read waits for a start that has not reported.
const MARGIN: Duration = Duration::from_secs(5);

/// What it takes to read: the servers, what they offer, and the runtime their connections live on.
pub(crate) struct Reader {
    pub(crate) servers: Vec<Arc<McpServer>>,
    pub(crate) offers: Arc<Offers>,
    pub(crate) runtime: tokio::runtime::Handle,
}

impl Reader {
    /// The read tool, while some server that answered declares resources.
    pub(crate) fn tool(self: &Arc<Self>) -> Option<Arc<dyn Tool>> {
        let offers = self.offers.snapshot();
        if !offers.iter().any(|server| server.reads) {
            return None;
        }
        let mut description = String::from(
            "Reads a resource of an MCP server: its text, or for binary data its type and size. \
             Give the server's name and the resource's URI: from the resources listed here, built \
             from a resource template listed here (replace each {name} with a value), or from a \
             resource link in a tool result.",
        );
        let resources: Vec<String> = offers
            .iter()
            .flat_map(|server| {
                server.resources.iter().map(|resource| {
                    entry(
                        &server.server,
                        &resource.name,
                        &resource.uri,
                        resource.description.as_deref(),
                    )
                })
            })
            .collect();
        list(&mut description, "Resources", "resources", &resources);
        let templates: Vec<String> = offers
            .iter()
            .flat_map(|server| {
                server.templates.iter().map(|template| {
                    entry(
                        &server.server,
                        &template.name,
                        &template.uri_template,
                        template.description.as_deref(),
                    )
                })
            })
            .collect();
        list(
            &mut description,
            "Resource templates (URI templates, RFC 6570)",
            "resource templates",
            &templates,
        );
        Some(Arc::new(ReadResourceTool {
            reader: self.clone(),
            description,
        }))
    }

    /// Reads `uri` of `server`: the text the model gets, or why not.
    pub(crate) async fn read(&self, server: &str, uri: &str) -> Result<String, String> {
        let Some(found) = self.servers.iter().find(|s| s.name() == server).cloned() else {
            let readers: Vec<String> = self
                .offers
                .snapshot()
                .into_iter()
                .filter(|s| s.reads)
                .map(|s| s.server)
                .collect();
            return Err(format!(
                "no MCP server named '{server}' in this session (servers with resources: {})",
                if readers.is_empty() {
                    "none".to_string()
                } else {
                    readers.join(", ")
                }
            ));
        };
        wait_answered(self.offers.catalog(), server).await?;
        if !self.offers.server(server).is_some_and(|offers| offers.reads) {
            return Err(format!("MCP server '{server}' offers no resources"));
        }
        // Through the server's connection as a call goes: a 2026-07-28 server may ask for its
        // roots or the user's input first ("input required"), which is answered before it is
        // asked again; the time the user takes does not count against the server's timeout.
        let result = match found.read_resource(ReadResourceRequestParams::new(uri)).await {
            Ok(result) => result,
            Err(CallError::Rejected(message)) => {
                return Err(format!("MCP server '{server}' could not read {uri}: {message}"));
            }
            Err(CallError::TimedOut(limit)) => {
                return Err(format!(
                    "MCP server '{server}' did not answer the read of {uri} within {}",
                    human_duration(limit)
                ));
            }
            Err(CallError::Down(reason)) => {
                return Err(format!("MCP server '{server}' is not available: {reason}"));
            }
            Err(CallError::Died(reason)) => {
                return Err(format!(
                    "MCP server '{server}' stopped during the read of {uri}: {reason}"
                ));
            }
        };
        let single = result.contents.len() == 1;
        let pieces: Vec<String> = result
            .contents
            .into_iter()
            .map(|contents| match contents {
                ResourceContents::TextResourceContents { uri, text, .. } if !single => {
                    format!("[{uri}]\n{text}")
                }
                ResourceContents::TextResourceContents { text, .. } => text,
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => format!(
                    "[resource {uri}: {} of {} bytes, not shown]",
                    mime_type.as_deref().unwrap_or("binary data"),
                    blob_size(&blob)
                ),
                _ => "[a resource of a kind Elph does not show]".to_string(),
            })
            .collect();
        Ok(cap(pieces.join("\n\n")))
    }
}

impl super::McpManager {
    /// Whether `name` is one of the session's (enabled) MCP servers.
    pub(crate) fn has_server(&self, name: &str) -> bool {
        self.servers.iter().any(|server| server.name() == name)
    }

    /// Resolves when `server` has answered (then its resources can be read), or with why not.
    pub(crate) fn wait_for_server(
        &self,
        server: &str,
    ) -> impl std::future::Future<Output = Result<(), String>> + Send + 'static {
        let offers = self.offers.clone();
        let server = server.to_string();
        let handle = self.handle();
        async move {
            let Some(handle) = handle else {
                return Err(format!("no MCP server named '{server}' in this session"));
            };
            let task = handle.spawn(async move { wait_answered(offers.catalog(), &server).await });
            let mut task = super::tool::AbortOnDrop(task);
            (&mut task.0)
                .await
                .unwrap_or_else(|_| Err("the session's MCP client has stopped".to_string()))
        }
    }
}

/// Waits until `server` has answered (at once if it has), within its startup limit; an error if
/// it failed, did not answer, or is no server of the session.
pub(crate) async fn wait_answered(shared: &Shared, server: &str) -> Result<(), String> {
    let mut changes = shared.generation.subscribe();
    let limit = {
        let servers = shared.servers();
        let entry = servers
            .iter()
            .find(|entry| entry.name == server)
            .ok_or_else(|| format!("no MCP server named '{server}' in this session"))?;
        entry.startup_timeout
    };
    let deadline = tokio::time::Instant::now() + limit + MARGIN;
    loop {
        let status = shared
            .servers()
            .iter()
            .find(|entry| entry.name == server)
            .map(|entry| entry.status.clone());
        match status {
            Some(Status::Ready) => return Ok(()),
            Some(Status::Failed(reason)) => {
                return Err(format!("MCP server '{server}' is not available: {reason}"));
            }
            _ => {}
        }
        match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => {
                return Err(format!(
                    "MCP server '{server}' has not answered within its startup limit of {}",
                    human_duration(limit)
                ));
            }
        }
    }
}

/// `line` with the first [`DESCRIPTION_CHARS`] of `description`, if there is one.
/// One listed resource or template: its server, name and URI (or URI template), described.
fn entry(server: &str, name: &str, uri: &str, description: Option<&str>) -> String {
    described(format!("\n- server '{server}': {name} <{uri}>"), description)
}

fn described(mut line: String, description: Option<&str>) -> String {
    if let Some(text) = description.filter(|text| !text.is_empty()) {
        let short: String = text.chars().take(DESCRIPTION_CHARS).collect();
        let more = if short.len() < text.len() { "…" } else { "" };
        line.push_str(&format!(": {}{more}", short.replace('\n', " ")));
    }
    line
}

/// Appends the `lines` under `heading` to `description`: at most [`LISTED`], with a note when
/// there are more; nothing when there are none.
fn list(description: &mut String, heading: &str, what: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    description.push_str(&format!("\n{heading}:"));
    for line in lines.iter().take(LISTED) {
        description.push_str(line);
    }
    if lines.len() > LISTED {
        description.push_str(&format!(
            "\n({} more {what} are not listed; a URI you know can still be read)",
            lines.len() - LISTED
        ));
    }
}

/// The size in bytes of base64 `data`.
pub(crate) fn blob_size(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

/// What a `resource_link` becomes for the model: where it points and how to read it.
pub(crate) fn link_hint(server: &str, uri: &str, name: &str) -> String {
    format!(
        "[resource link {uri} ({name}); read it with {READ_TOOL} {}]",
        json!({"server": server, "uri": uri})
    )
}

/// `text` within [`OUTPUT_CAP`], cut on a character boundary with a note.
fn cap(text: String) -> String {
    cut_to(text, OUTPUT_CAP, "a resource")
}

/// `text` within `limit` bytes, cut on a character boundary with a note saying what was cut and
/// that `what` is limited to `limit` bytes.
pub(super) fn cut_to(mut text: String, limit: usize, what: &str) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    text.truncate(end);
    text.push_str(&format!(
        "\n[… {cut} more bytes cut: {what} is limited to {limit} bytes]"
    ));
    text
}

/// `@server:uri` mentions in a prompt, each once, for servers `known` says are the session's.
/// A mention starts a word; a trailing `.`, `,`, `;`, `!` or `?` ends the sentence, not the URI.
pub(crate) fn mentions(text: &str, known: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for word in text.split_whitespace() {
        let Some(mention) = word.strip_prefix('@') else {
            continue;
        };
        let mention = mention.trim_end_matches(['.', ',', ';', '!', '?']);
        let Some((server, uri)) = mention.split_once(':') else {
            continue;
        };
        if uri.is_empty() || !known(server) {
            continue;
        }
        let pair = (server.to_string(), uri.to_string());
        if !found.contains(&pair) {
            found.push(pair);
        }
    }
    found
}

/// The server and URI to read.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    /// The MCP server's name, as in mcp.json.
    server: String,
    /// The resource's URI.
    uri: String,
}

pub(crate) struct ReadResourceTool {
    reader: Arc<Reader>,
    description: String,
}

#[async_trait::async_trait]
impl TypedTool for ReadResourceTool {
    type Args = ReadArgs;

    fn name(&self) -> &str {
        READ_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn mutates(&self) -> bool {
        false
    }

    async fn run(&self, args: ReadArgs, _ctx: &ToolContext) -> ToolOutput {
        let reader = self.reader.clone();
        let details = json!({"mcpServer": args.server, "uri": args.uri});
        // On the MCP runtime, where the connections live; dropped (cancelled turn) with the call.
        let task = self
            .reader
            .runtime
            .spawn(async move { reader.read(&args.server, &args.uri).await });
        let mut guard = super::tool::AbortOnDrop(task);
        let output = match (&mut guard.0).await {
            Ok(Ok(text)) => ToolOutput::text(text),
            Ok(Err(message)) => ToolOutput::error(message),
            Err(_) => ToolOutput::error("the session's MCP client has stopped".to_string()),
        };
        output.with_details(details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_name_known_servers_only() {
        let known = |name: &str| name == "docs";
        assert_eq!(
            mentions(
                "see @docs:test://a/b. and @docs:test://a/b, @x:y me@docs:z @docs:",
                &known
            ),
            vec![("docs".to_string(), "test://a/b".to_string())]
        );
    }

    #[test]
    fn blob_sizes() {
        assert_eq!(blob_size("AAEC"), 3);
        assert_eq!(blob_size(&"AAEC".repeat(100)), 300);
        assert_eq!(blob_size("AA=="), 1);
        assert_eq!(blob_size("AAA="), 2);
        assert_eq!(blob_size(""), 0);
    }

    #[test]
    fn long_text_is_cut() {
        let text = cap("é".repeat(OUTPUT_CAP));
        assert!(text.len() < OUTPUT_CAP + 100);
        assert!(text.ends_with("a resource is limited to 65536 bytes]"));
    }
}
