//! Serving the proxy: accept, judge each request's host, then tunnel (CONNECT) or forward
//! (absolute-form HTTP). HTTP parsing is hyper's; this module only decides and connects.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use elph_agent::harness::AgentEvent;
use elph_process::sandbox::{HostDecision, HostJournal};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::DomainPolicy;

/// How long the proxy tries to reach one address of a host.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// What every connection of one proxy shares.
pub(super) struct Shared {
    pub(super) domains: DomainPolicy,
    pub(super) journal: Arc<HostJournal>,
    /// The proxy's own port: a request for it is a loop.
    pub(super) port: u16,
    pub(super) notices: Option<UnboundedSender<AgentEvent>>,
}

impl Shared {
    /// Records a decision (journal, log, and a notice for a refusal).
    fn record(&self, host: &str, port: u16, allowed: bool, reason: &str) {
        tracing::info!(host, port, allowed, reason, "sandbox proxy");
        if !allowed && let Some(notices) = &self.notices {
            let _ = notices.send(AgentEvent::Notice {
                message: format!("sandbox proxy refused {host}:{port}: {reason}"),
            });
        }
        self.journal.record(HostDecision {
            host: host.to_string(),
            port,
            allowed,
            reason: reason.to_string(),
        });
    }
}

/// Accepts connections until `stop`; each is served on its own task, which `stop` ends too.
pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors, most likely: wait rather than spin.
                tracing::warn!(%error, "sandbox proxy: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| handle(request, shared.clone()));
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .preserve_header_case(true)
                .title_case_headers(true)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = connection => {}
            }
        });
    }
}

async fn handle(request: Request<Incoming>, shared: Arc<Shared>) -> Result<Response<ProxyBody>, Infallible> {
    Ok(if request.method() == Method::CONNECT {
        tunnel(request, &shared).await
    } else {
        forward(request, &shared).await
    })
}

/// A response with a short text body, for refusals and failures.
fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The refusal a client shows its user: what was refused and which setting allows it.
fn refused(host: &str, reason: &str) -> Response<ProxyBody> {
    text(
        StatusCode::FORBIDDEN,
        format!(
            "Elph's sandbox refused {host}: {reason}. Allow it with sandbox.allowedDomains in \
             settings.json.\n"
        ),
    )
}

/// Judges `host:port` and, when allowed, resolves it and connects. `Err` is the response to send.
async fn open(host: &str, port: u16, shared: &Shared) -> Result<TcpStream, Response<ProxyBody>> {
    let verdict = shared.domains.judge(host);
    if !verdict.allowed {
        // Never log a host with control bytes as it came.
        let shown: String = host.chars().filter(|c| !c.is_control()).collect();
        shared.record(&shown, port, false, &verdict.reason);
        return Err(refused(&shown, &verdict.reason));
    }
    let name = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match tokio::net::lookup_host((name, port)).await {
        Ok(addresses) => addresses.collect(),
        Err(error) => {
            shared.record(host, port, false, &format!("cannot be resolved: {error}"));
            return Err(text(
                StatusCode::BAD_GATEWAY,
                format!("Elph's sandbox proxy cannot resolve {host}: {error}\n"),
            ));
        }
    };
    if addresses
        .iter()
        .any(|address| address.ip().is_loopback() && address.port() == shared.port)
    {
        let reason = "that is the proxy itself";
        shared.record(host, port, false, reason);
        return Err(refused(host, reason));
    }
    let mut last_error = None;
    for address in &addresses {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                shared.record(host, port, true, &verdict.reason);
                return Ok(stream);
            }
            Ok(Err(error)) => last_error = Some(error.to_string()),
            Err(_) => last_error = Some("timed out".into()),
        }
    }
    let error = last_error.unwrap_or_else(|| "no address".into());
    shared.record(
        host,
        port,
        true,
        &format!("{}; but cannot connect: {error}", verdict.reason),
    );
    Err(text(
        StatusCode::BAD_GATEWAY,
        format!("Elph's sandbox proxy cannot connect to {host}:{port}: {error}\n"),
    ))
}

/// `CONNECT host:port`: a tunnel once the host is allowed.
async fn tunnel(mut request: Request<Incoming>, shared: &Shared) -> Response<ProxyBody> {
    let Some(authority) = request.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port\n".into());
    };
    let Some(port) = authority.port_u16() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port\n".into());
    };
    let mut upstream = match open(authority.host(), port, shared).await {
        Ok(stream) => stream,
        Err(response) => return response,
    };
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        if let Ok(upgraded) = upgrade.await {
            let mut client = TokioIo::new(upgraded);
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
    });
    Response::new(
        http_body_util::Empty::new()
            .map_err(|never: Infallible| match never {})
            .boxed(),
    )
}

/// `GET http://host/path`: forwarded in origin form once the host is allowed.
async fn forward(mut request: Request<Incoming>, shared: &Shared) -> Response<ProxyBody> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "Elph's sandbox proxy takes absolute http:// requests and CONNECT (for https)\n".into(),
        );
    }
    let Some(authority) = uri.authority() else {
        return text(StatusCode::BAD_REQUEST, "the request names no host\n".into());
    };
    let port = authority.port_u16().unwrap_or(80);
    let upstream = match open(authority.host(), port, shared).await {
        Ok(stream) => stream,
        Err(response) => return response,
    };
    let path = uri.path_and_query().map_or("/", |path| path.as_str());
    match path.parse() {
        Ok(origin) => *request.uri_mut() = origin,
        Err(_) => return text(StatusCode::BAD_REQUEST, "bad request path\n".into()),
    }
    let headers = request.headers_mut();
    for hop in [
        "proxy-connection",
        "proxy-authorization",
        "connection",
        "keep-alive",
    ] {
        headers.remove(hop);
    }
    if !headers.contains_key(HOST)
        && let Ok(value) = HeaderValue::from_str(authority.as_str())
    {
        headers.insert(HOST, value);
    }
    let handshake = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(true)
        .handshake(TokioIo::new(upstream))
        .await;
    let (mut sender, connection) = match handshake {
        Ok(pair) => pair,
        Err(error) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("Elph's sandbox proxy: {error}\n"),
            );
        }
    };
    tokio::spawn(connection);
    match sender.send_request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(error) => text(
            StatusCode::BAD_GATEWAY,
            format!("Elph's sandbox proxy: the server failed: {error}\n"),
        ),
    }
}
