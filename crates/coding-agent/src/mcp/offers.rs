//! What each server offers besides tools: its prompts (the commands `/server:prompt`, see
//! `prompts.rs`) and its resources and resource templates (listed for the model and read with
//! `mcp_read_resource`, see `resources.rs`). Listed when the server answers, and again when it
//! says a list changed (`notifications/prompts/list_changed`,
//! `notifications/resources/list_changed`, which lists the templates again too); a listing that
//! fails keeps the last good list.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ErrorCode, Prompt, Resource, ResourceTemplate};
use rmcp::service::ServiceError;
use rmcp::service::{Peer, RoleClient};
use tokio::sync::watch;

use super::catalog::Shared;
use super::server::human_duration;

/// Which of a server's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Prompts,
    Resources,
}

/// One server's prompts and resources, as last listed.
#[derive(Clone, Debug, Default)]
pub(crate) struct ServerOffers {
    pub(crate) server: String,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    /// The URI templates of the resources it builds on demand (RFC 6570).
    pub(crate) templates: Vec<ResourceTemplate>,
    /// The server declared the `resources` capability: it can be read from.
    pub(crate) reads: bool,
}

/// The session's servers' prompts and resources.
pub(crate) struct Offers {
    servers: Mutex<Vec<ServerOffers>>,
    /// Bumped when a prompt list changes: the front ends' commands follow it.
    prompts: watch::Sender<u64>,
    /// The tool catalog's state: bumped when a resource list changes, because the read tool's
    /// description lists the resources (the harness rebuilds its tools on a new generation).
    catalog: Arc<Shared>,
}

impl Offers {
    pub(crate) fn new(catalog: Arc<Shared>) -> Self {
        Offers {
            servers: Mutex::new(Vec::new()),
            prompts: watch::channel(0).0,
            catalog,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ServerOffers>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every server that answered, with what it offers.
    pub(crate) fn snapshot(&self) -> Vec<ServerOffers> {
        self.lock().clone()
    }

    pub(crate) fn server(&self, name: &str) -> Option<ServerOffers> {
        self.lock().iter().find(|s| s.server == name).cloned()
    }

    /// Changes whenever a server's prompts do.
    pub(crate) fn prompts_changed(&self) -> watch::Receiver<u64> {
        self.prompts.subscribe()
    }

    /// The catalog's state, for waiting on a server's start.
    pub(crate) fn catalog(&self) -> &Arc<Shared> {
        &self.catalog
    }

    fn update(&self, server: &str, change: impl FnOnce(&mut ServerOffers)) {
        let mut servers = self.lock();
        let index = match servers.iter().position(|s| s.server == server) {
            Some(index) => index,
            None => {
                servers.push(ServerOffers {
                    server: server.to_string(),
                    ..ServerOffers::default()
                });
                servers.len() - 1
            }
        };
        change(&mut servers[index]);
    }

    /// The server is gone: its prompts stop being commands and its resources leave the read
    /// tool's list.
    pub(crate) fn forget(&self, server: &str) {
        self.lock().retain(|entry| entry.server != server);
        self.prompts.send_modify(|generation| *generation += 1);
        self.catalog.generation.send_modify(|generation| *generation += 1);
    }

    /// Lists what a server that just answered offers, as its capabilities say it does. The
    /// problems, one line each (the lists that could not be read stay empty).
    pub(crate) async fn on_ready(
        &self,
        server: &str,
        peer: &Peer<RoleClient>,
        limit: Duration,
    ) -> Vec<String> {
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
        let prompts = capabilities.as_ref().is_some_and(|c| c.prompts.is_some());
        let reads = capabilities.as_ref().is_some_and(|c| c.resources.is_some());
        self.update(server, |entry| entry.reads = reads);
        let mut problems = Vec::new();
        if prompts {
            problems.extend(self.refresh(server, peer, Which::Prompts, limit).await);
        }
        if reads {
            problems.extend(self.refresh(server, peer, Which::Resources, limit).await);
        }
        problems
    }

    /// Lists `which` of `server` again; on failure the last good list stays, and the problem is
    /// returned.
    pub(crate) async fn refresh(
        &self,
        server: &str,
        peer: &Peer<RoleClient>,
        which: Which,
        limit: Duration,
    ) -> Option<String> {
        let what = match which {
            Which::Prompts => "prompts",
            Which::Resources => "resources",
        };
        let failed = |cause: String| {
            Some(format!(
                "MCP server '{server}': its {what} could not be listed: {cause}"
            ))
        };
        match which {
            Which::Prompts => match tokio::time::timeout(limit, peer.list_all_prompts()).await {
                Ok(Ok(prompts)) => {
                    self.update(server, |entry| entry.prompts = prompts);
                    self.prompts.send_modify(|generation| *generation += 1);
                }
                Ok(Err(error)) => return failed(error.to_string()),
                Err(_) => return failed(format!("no answer within {}", human_duration(limit))),
            },
            Which::Resources => {
                let listed = tokio::time::timeout(limit, peer.list_all_resources()).await;
                // The templates' own listing: a server that has none may not know the method.
                let templates = match tokio::time::timeout(limit, peer.list_all_resource_templates()).await {
                    Ok(Ok(templates)) => Ok(Some(templates)),
                    Ok(Err(ServiceError::McpError(error))) if error.code == ErrorCode::METHOD_NOT_FOUND => {
                        Ok(Some(Vec::new()))
                    }
                    Ok(Err(error)) => Err(format!(
                        "MCP server '{server}': its resource templates could not be listed: {error}"
                    )),
                    Err(_) => Err(format!(
                        "MCP server '{server}': its resource templates could not be listed: no answer \
                         within {}",
                        human_duration(limit)
                    )),
                };
                let (templates, template_problem) = match templates {
                    Ok(templates) => (templates, None),
                    Err(problem) => (None, Some(problem)),
                };
                let resources = match listed {
                    Ok(Ok(resources)) => Ok(resources),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => Err(format!("no answer within {}", human_duration(limit))),
                };
                let resource_problem = resources.as_ref().err().cloned();
                self.update(server, |entry| {
                    if let Ok(resources) = resources {
                        entry.resources = resources;
                    }
                    if let Some(templates) = templates {
                        entry.templates = templates;
                    }
                });
                self.catalog.generation.send_modify(|generation| *generation += 1);
                let problems: Vec<String> = [resource_problem.and_then(failed), template_problem]
                    .into_iter()
                    .flatten()
                    .collect();
                return (!problems.is_empty()).then(|| problems.join("; "));
            }
        }
        None
    }
}
