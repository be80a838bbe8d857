//! Elph's side of one MCP connection: what it declares in `initialize`, and what it does when the
//! server asks or tells it something. Made per server, so a message is known to come from that
//! server.
//!
//! - `roots/list`: the project and the sandbox's writable roots, as `file://` URIs (the places
//!   Elph works in; a server may confine itself to them).
//! - `notifications/tools/list_changed`: the server's tools are listed again (see
//!   [`ToolRefresh`]); until that answers, and for good if it fails, the last list stays.
//! - `elicitation/create`: the server asks the user for input (see [`super::elicitation`]).
//! - `notifications/prompts/list_changed`, `notifications/resources/list_changed`: the server's
//!   prompts (commands) or resources are listed again in the session's [`Offers`], the same way.
//!
//! A server of MCP 2026-07-28 sends its list changes only on the stream Elph opens with
//! `subscriptions/listen` (see [`listen_for_changes`]), where they are followed
//! through the same [`ToolRefresh`] and [`Listener`].
// Roots are deprecated by SEP-2577 (MCP 2026-07-28), but the 2025-11-25 revision, which every
// server speaks today, has them.
#![expect(deprecated, reason = "roots are still part of MCP 2025-11-25")]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation, ListRootsResult,
    ProtocolVersion, Root, RootsCapabilities, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient};
use tokio::sync::watch;

use super::elicitation::{Elicitations, ServerDesk};
use super::offers::{Offers, Which};

/// Where a server's prompt and resource list changes go: its entry in the session's [`Offers`].
#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) server: String,
    pub(crate) offers: Arc<Offers>,
    /// The server's `timeoutMs`: a listing takes no longer.
    pub(crate) limit: Duration,
}

impl Listener {
    /// Lists `which` of the server again into the session's [`Offers`] (prompts: the commands;
    /// resources: the read tool's list); a listing that fails keeps the last good list.
    pub(crate) async fn relist(&self, which: Which, peer: &Peer<RoleClient>) {
        let problem = self.offers.refresh(&self.server, peer, which, self.limit).await;
        if let Some(problem) = problem {
            tracing::warn!(server = %self.server, %problem, "mcp list_changed");
        }
    }
}

/// The client of one server's connection.
#[derive(Clone)]
pub(crate) struct ElphClient {
    info: ClientConfig,
    roots: Arc<Vec<Root>>,
    tools_changed: Arc<ToolRefresh>,
    /// The server's name, where its questions go, and its calls and open questions.
    elicitation: Option<(String, Arc<Elicitations>, Arc<ServerDesk>)>,
    listener: Option<Listener>,
}

impl ElphClient {
    pub(crate) fn new(roots: &[PathBuf], tools_changed: Arc<ToolRefresh>) -> Self {
        let mut capabilities = ClientCapabilities::default();
        // The roots are the session's and do not change while it runs.
        let mut roots_capability = RootsCapabilities::default();
        roots_capability.list_changed = Some(false);
        capabilities.roots = Some(roots_capability);
        capabilities.elicitation = Some(super::elicitation::capability());
        ElphClient {
            info: ClientConfig::new(
                capabilities,
                Implementation::new("elph", env!("CARGO_PKG_VERSION")),
            ),
            roots: Arc::new(roots.iter().map(|path| root(path)).collect()),
            tools_changed,
            elicitation: None,
            listener: None,
        }
    }

    /// Offers `version` in `initialize` (by default, the newest revision rmcp knows).
    pub(crate) fn offering(mut self, version: ProtocolVersion) -> Self {
        self.info.protocol_version = version;
        self
    }

    /// Follows the server's prompt and resource list changes into `listener`.
    pub(crate) fn with_listener(mut self, listener: Option<Listener>) -> Self {
        self.listener = listener;
        self
    }

    /// Lists `which` again; rmcp runs each notification's handler in a task of its own, so the
    /// request made here does not hold the connection up.
    async fn relist(&self, which: Which, context: NotificationContext<RoleClient>) {
        if let Some(listener) = &self.listener {
            // Counted from its first step: a tool call that announced the change holds its
            // answer until this listing is in (`ToolRefresh::settled`), so the front end hears
            // of the new prompts before the turn that made them ends.
            let _relisting = self.tools_changed.relisting();
            listener.relist(which, &context.peer).await;
        }
    }

    /// Server `name`'s questions to the user go to `elicitations` (without: they are declined).
    pub(crate) fn with_elicitations(
        mut self,
        name: String,
        elicitations: Arc<Elicitations>,
        desk: Arc<ServerDesk>,
    ) -> Self {
        self.elicitation = Some((name, elicitations, desk));
        self
    }
}

/// A folder as an MCP root: its `file://` URI (percent-encoded) and its name.
fn root(path: &std::path::Path) -> Root {
    let uri = reqwest::Url::from_directory_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", path.display()));
    let mut root = Root::new(uri);
    root.name = path.file_name().map(|name| name.to_string_lossy().into_owned());
    root
}

impl ClientHandler for ElphClient {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, McpError> {
        Ok(ListRootsResult::new(self.roots.as_ref().clone()))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.request();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        match &self.elicitation {
            Some((server, elicitations, desk)) => {
                elicitations.ask(server, desk, request, context.ct.clone()).await
            }
            None => Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline)),
        }
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relist(Which::Prompts, context).await;
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relist(Which::Resources, context).await;
    }
}

/// On MCP 2026-07-28 a server's list changes come only to a client that listens for them
/// (`subscriptions/listen`); on earlier revisions the server sends them unasked, to
/// [`ElphClient`]. Either way they are followed alike: tools through the same [`ToolRefresh`],
/// prompts and resources through the same [`Listener`]. Listens on `peer` (server `server`, whose
/// `timeoutMs` is `limit`) for the lists it says can change; nothing on an earlier revision.
pub(crate) async fn listen_for_changes(
    server: &str,
    peer: &Peer<RoleClient>,
    refresh: Arc<ToolRefresh>,
    listener: Option<Listener>,
    limit: Duration,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    if info.protocol_version.has_initialize() {
        return;
    }
    let capabilities = &info.capabilities;
    let tools = capabilities
        .tools
        .as_ref()
        .is_some_and(|tools| tools.list_changed == Some(true));
    // Prompts and resources are followed only where they are offered to the session.
    let prompts = listener.is_some()
        && capabilities
            .prompts
            .as_ref()
            .is_some_and(|prompts| prompts.list_changed == Some(true));
    let resources = listener.is_some()
        && capabilities
            .resources
            .as_ref()
            .is_some_and(|resources| resources.list_changed == Some(true));
    if !(tools || prompts || resources) {
        return;
    }
    let mut filter = SubscriptionFilter::builder();
    if tools {
        filter = filter.tools_list_changed();
    }
    if prompts {
        filter = filter.prompts_list_changed();
    }
    if resources {
        filter = filter.resources_list_changed();
    }
    let mut subscription = match tokio::time::timeout(limit, peer.listen(filter.build())).await {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(error)) => {
            tracing::warn!(%server, %error, "mcp subscriptions/listen");
            return;
        }
        Err(_) => {
            tracing::warn!(%server, "mcp subscriptions/listen: no answer");
            return;
        }
    };
    let peer = peer.clone();
    tokio::spawn(async move {
        while let Ok(Some(notification)) = subscription.next().await {
            let which = match notification {
                ServerNotification::ToolListChangedNotification(_) => {
                    refresh.request();
                    continue;
                }
                ServerNotification::PromptListChangedNotification(_) => Which::Prompts,
                ServerNotification::ResourceListChangedNotification(_) => Which::Resources,
                _ => continue,
            };
            if let Some(listener) = &listener {
                // Counted before the listing starts (not in its task), so that a call that
                // announced the change and returns now waits for it.
                let relisting = refresh.relisting();
                let (listener, peer) = (listener.clone(), peer.clone());
                tokio::spawn(async move {
                    listener.relist(which, &peer).await;
                    drop(relisting);
                });
            }
        }
    });
}

/// The server said its tools changed: how many times it did, and up to which of those its tools
/// have been listed again. A call that returns while a listing is owed waits for it, so a tool
/// that changes the list has the new list in the model's next request.
/// Prompt and resource listings under way are counted too ([`Self::relisting`]).
pub(crate) struct ToolRefresh {
    requested: watch::Sender<u64>,
    done: watch::Sender<u64>,
    relisting: Arc<watch::Sender<u64>>,
}

impl Default for ToolRefresh {
    fn default() -> Self {
        ToolRefresh {
            requested: watch::channel(0).0,
            done: watch::channel(0).0,
            relisting: Arc::new(watch::channel(0).0),
        }
    }
}

/// A prompt or resource listing under way; ends when dropped.
pub(crate) struct Relisting(Arc<watch::Sender<u64>>);

impl Drop for Relisting {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl ToolRefresh {
    pub(crate) fn request(&self) {
        self.requested.send_modify(|count| *count += 1);
    }

    /// Waits for the next change the server announces; the count to report to [`Self::done`].
    pub(crate) async fn next_request(&self, seen: &mut watch::Receiver<u64>) -> Option<u64> {
        seen.changed().await.ok()?;
        Some(*seen.borrow_and_update())
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.requested.subscribe()
    }

    /// The tools were listed again (or that failed) after the `count`th change.
    pub(crate) fn done(&self, count: u64) {
        self.done.send_modify(|done| *done = (*done).max(count));
    }

    /// Counts a prompt or resource listing until the returned guard is dropped.
    pub(crate) fn relisting(&self) -> Relisting {
        self.relisting.send_modify(|count| *count += 1);
        Relisting(Arc::clone(&self.relisting))
    }

    /// Returns once every change announced so far has been listed again, tools, prompts and
    /// resources (at once if none is owed); the caller bounds the wait.
    pub(crate) async fn settled(&self) {
        let wanted = *self.requested.borrow();
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|done| *done >= wanted).await;
        let mut relisting = self.relisting.subscribe();
        let _ = relisting.wait_for(|count| *count == 0).await;
    }
}
