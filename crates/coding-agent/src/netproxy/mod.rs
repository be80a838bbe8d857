//! The session's network proxy: the one way out of the sandbox when `sandbox.network` is
//! `"allowlist"`.
//!
//! Sandboxed commands may connect to one TCP port only, this proxy's on 127.0.0.1 (Landlock, see
//! `elph_process::sandbox`), and their environment names it in `HTTP_PROXY`, `HTTPS_PROXY` and
//! `ALL_PROXY`. The proxy speaks HTTP/1: `CONNECT host:port` opens a tunnel (HTTPS, git over
//! HTTPS), and an absolute-form `GET http://host/...` is forwarded. Each request's host is checked
//! against the allow and deny lists (`domains`) in its canonical form, resolved here (never by the
//! command), and the decision is written to the route's journal, so the command's result can name
//! what was refused, and refusals are also said to the session as notices.
//!
//! What it cannot see: inside a tunnel the bytes are TLS, so a client may name an allowed host in
//! CONNECT and another in its TLS SNI or Host header (domain fronting on a CDN that serves both).
//! docs/security.md lists it among the limits.

mod domains;
mod serve;

use std::net::Ipv4Addr;
use std::sync::Arc;

use elph_agent::harness::AgentEvent;
use elph_process::sandbox::ProxyRoute;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub(crate) use domains::DomainPolicy;

/// A running proxy; dropping it stops it and every connection it holds.
pub(crate) struct NetProxy {
    route: ProxyRoute,
    stop: CancellationToken,
}

impl NetProxy {
    /// Starts a proxy on 127.0.0.1 (a port the kernel picks) that lets `domains` through, on the
    /// current tokio runtime. Refused hosts are also said on `notices`, when given.
    pub(crate) fn start(
        domains: DomainPolicy,
        notices: Option<UnboundedSender<AgentEvent>>,
    ) -> std::io::Result<NetProxy> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|error| std::io::Error::other(format!("the proxy needs a runtime: {error}")))?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let route = ProxyRoute::new(port);
        let stop = CancellationToken::new();
        let shared = Arc::new(serve::Shared {
            domains,
            journal: route.journal.clone(),
            port,
            notices,
        });
        runtime.spawn(serve::accept_loop(listener, shared, stop.clone()));
        tracing::info!(port, "sandbox proxy started");
        Ok(NetProxy { route, stop })
    }

    /// What sandboxed processes are given: the port and the journal.
    pub(crate) fn route(&self) -> ProxyRoute {
        self.route.clone()
    }
}

impl Drop for NetProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
