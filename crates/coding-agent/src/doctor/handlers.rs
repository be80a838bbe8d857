//! What doctor checks of a hook that runs no command: a url hook's URL against the rules for
//! project hooks (https, `hooks.allowedUrls`), a prompt hook's model, an mcpTool hook's server.
//! Nothing is sent and nothing is started.

use super::checks::{Finding, Level};
use crate::hooks::HookDefinition;
use crate::hooks::handler::{Handler, http};

/// What the checks need to know besides the hook.
pub(super) struct HandlerContext<'a> {
    /// `hooks.allowedUrls` of settings.json.
    pub allowed_urls: Option<&'a [String]>,
    /// The enabled MCP servers of mcp.json, by name.
    pub mcp_servers: Vec<&'a str>,
}

pub(super) fn check_handler(hook: &HookDefinition, context: &HandlerContext<'_>) -> Vec<Finding> {
    let source = hook.source.display();
    let mut findings = Vec::new();
    match &hook.handler {
        Handler::Command(_) => {}
        Handler::Url(url) => {
            if let Some(refusal) = http::refusal(&url.url, hook.scope, context.allowed_urls) {
                findings.push(
                    Finding::new(Level::Error, format!("never runs: {refusal}")).fix(format!(
                        "post to an allowed https URL in {source}, or allow it in hooks.allowedUrls of \
                         settings.json"
                    )),
                );
            }
            for name in url
                .allowed_env_vars
                .iter()
                .filter(|name| std::env::var_os(name).is_none())
            {
                findings.push(
                    Finding::new(
                        Level::Warning,
                        format!("its headers take ${{{name}}}, which is not set here: the hook is not run"),
                    )
                    .fix(format!("set {name} in the environment elph starts with")),
                );
            }
        }
        Handler::Prompt(prompt) => {
            if let Some(model) = &prompt.model
                && let Err(error) = elph_ai::ModelSelection::parse(model, &elph_ai::ModelOrigin::Command)
            {
                findings.push(
                    Finding::new(Level::Error, format!("its model cannot be used: {error}"))
                        .fix(format!("name the model as PROVIDER/MODEL in {source}")),
                );
            }
        }
        Handler::McpTool(tool) => {
            if !context.mcp_servers.contains(&tool.server.as_str()) {
                findings.push(
                    Finding::new(
                        Level::Error,
                        format!(
                            "it calls MCP server '{}', which no mcp.json defines (or it is disabled): the \
                             hook is not run",
                            tool.server
                        ),
                    )
                    .fix(format!(
                        "add the server to mcp.json, or fix \"mcpTool\" in {source} (`elph doctor` lists \
                         the servers)"
                    )),
                );
            }
        }
    }
    findings
}
