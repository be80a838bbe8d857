//! What the host needs to run url, prompt and mcpTool hooks, held once per session: the HTTP
//! client, where project hooks may post, the session's model, and its MCP servers.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use elph_agent::hooks::limits::MAX_TIMEOUT;
use elph_agent::hooks::{HookEvent, HookPayload, HookRun};
use elph_ai::Provider;

use super::mcp_tool::McpConnections;
use super::{Answer, Handler, http, mcp_tool, prompt, record};
use crate::hooks::claude_code;
use crate::hooks::discovery::HookDefinition;
use crate::hooks::process::ProcessOutput;

/// The parts of a session that url, prompt and mcpTool hooks use. Set after the host is made
/// (the model and the MCP servers come later in a session's start, and `/model` changes the
/// model), so each part sits behind its own lock.
#[derive(Default)]
pub(crate) struct Handlers {
    http: OnceLock<Result<reqwest::Client, String>>,
    /// `hooks.allowedUrls` of settings.json; `None`: not set.
    allowed_urls: Option<Vec<String>>,
    /// Where provider files are, for a prompt hook's own `model`.
    config_dir: Option<PathBuf>,
    model: RwLock<Option<Arc<dyn Provider>>>,
    mcp: RwLock<Option<McpConnections>>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("allowed_urls", &self.allowed_urls)
            .field("mcp", &self.mcp)
            .finish_non_exhaustive()
    }
}

impl Handlers {
    pub(crate) fn new(allowed_urls: Option<Vec<String>>, config_dir: PathBuf) -> Self {
        Handlers {
            allowed_urls,
            config_dir: Some(config_dir),
            ..Handlers::default()
        }
    }

    /// The session's model, which prompt hooks without a `model` of their own ask.
    pub(crate) fn set_model(&self, provider: Arc<dyn Provider>) {
        *self.model.write().unwrap_or_else(|p| p.into_inner()) = Some(provider);
    }

    /// The session's MCP servers, which mcpTool hooks call.
    pub(crate) fn set_mcp(&self, connections: Option<McpConnections>) {
        *self.mcp.write().unwrap_or_else(|p| p.into_inner()) = connections;
    }

    /// Runs a url, prompt or mcpTool hook on `payload`, sent as `stdin` (the bytes a command would
    /// read, in the hook's protocol). `lookup` reads Elph's environment (header variables, a prompt
    /// model's API key). With the context a Claude Code answer adds at the next request.
    pub(crate) async fn run(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        stdin: &[u8],
        payload: &HookPayload,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> (HookRun, Option<String>) {
        // Worked out when the run starts: after a signal, it shares the shutdown's deadline.
        let timeout =
            crate::shutdown::bound_hook_timeout(hook.timeout.clamp(Duration::from_millis(1), MAX_TIMEOUT));
        let answer = self.answer(hook, event, stdin, timeout, lookup).await;
        let Some(dialect) = hook.protocol.dialect() else {
            return (record(hook, event, answer), None);
        };
        // Claude Code's (and Gemini CLI's) url and mcp_tool hooks answer as their command hooks
        // print after exit 0.
        let Ok(body) = answer.result else {
            return (record(hook, event, answer), None);
        };
        let mut output = ProcessOutput::nothing(answer.duration);
        output.exit_code = Some(0);
        output.stdout_bytes = body.len() as u64;
        output.stdout = body;
        let (mut run, context) = claude_code::record(hook, event, &output, payload, dialect);
        run.process = None;
        run.notes.extend(answer.notes);
        (run, context)
    }

    async fn answer(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        payload: &[u8],
        timeout: Duration,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Answer {
        match &hook.handler {
            Handler::Command(_) => Answer::refused("a command hook is run as a process, not here"),
            Handler::Url(url) => match http::refusal(&url.url, hook.scope, self.allowed_urls.as_deref()) {
                Some(refusal) => Answer::refused(refusal),
                None => match self.http.get_or_init(http::client) {
                    Ok(client) => {
                        http::post(
                            client,
                            url,
                            lookup,
                            payload.to_vec(),
                            timeout,
                            hook.max_output_bytes,
                        )
                        .await
                    }
                    Err(error) => Answer::refused(error.clone()),
                },
            },
            Handler::Prompt(handler) => match self.provider(hook, handler.model.as_deref(), lookup) {
                Ok(provider) => prompt::judge(provider, event, &handler.prompt, payload, timeout).await,
                Err(why) => Answer::refused(why),
            },
            Handler::McpTool(target) => {
                let connections = self.mcp.read().unwrap_or_else(|p| p.into_inner()).clone();
                mcp_tool::call(connections.as_ref(), target, payload, timeout).await
            }
        }
    }

    /// The model a prompt hook asks: its own `model`, else the session's.
    fn provider(
        &self,
        hook: &HookDefinition,
        model: Option<&str>,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Arc<dyn Provider>, String> {
        let Some(model) = model else {
            return self
                .model
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .ok_or_else(|| {
                    "there is no session model to judge with here; give the hook a \"model\"".into()
                });
        };
        let origin = elph_ai::ModelOrigin::Settings(hook.source.clone());
        let selection = elph_ai::ModelSelection::parse(model, &origin).map_err(|error| error.to_string())?;
        let config_dir = self.config_dir.clone().unwrap_or_default();
        elph_ai::build_provider(&selection, &origin, &config_dir, lookup)
            .map(Arc::from)
            .map_err(|error| format!("its model {model} cannot be used: {error}"))
    }
}
