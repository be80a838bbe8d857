//! `elph acp`: an Agent Client Protocol agent on stdio, so that editors such as Zed can drive Elph.
//!
//! One connection serves any number of sessions. Each session has its own project folder (the
//! client's `cwd`), hence its own trust decision, hook set and hook working directory: a
//! [`crate::session::Session`] whose events one task turns into the client's messages ([`session`],
//! [`forward`]). The connection's handlers only route messages to those tasks, so
//! the dispatch loop stays free and `session/cancel` is handled while a prompt runs.
//!
//! stdout carries protocol frames only; problems go to stderr, hook runs to `DATA_DIR/logs/`.

mod approval;
mod commands;
mod config;
mod elicitation;
mod files;
mod forward;
mod framing;
mod handshake;
mod mcp;
mod plan;
mod session;
mod stored;
mod updates;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, DeleteSessionRequest, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, LoadSessionRequest, McpCapabilities,
    NewSessionRequest, PromptCapabilities, PromptRequest, ResumeSessionRequest, SessionCapabilities,
    SessionCloseCapabilities, SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, ConnectTo, Lines};
use anyhow::Context;
use clap::Args;
use elph_agent::harness::ApprovalPolicy;

use crate::cli::exit;
use crate::paths::Paths;
use session::Sessions;

/// `elph acp` arguments.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// PROVIDER/MODEL, e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5, or scripted/PATH (offline).
    /// Default: $ELPH_MODEL, then "model" in CONFIG_DIR/settings.json.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Native approval for tools that change files or run commands. `ask` sends the editor a
    /// permission request for each.
    #[arg(long, value_enum, default_value = "ask")]
    pub approval: crate::cli::ApprovalArg,
    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxArgs,
    /// The agent mode new sessions start in: build (the default) or plan (read-only). Editors
    /// switch it per session with `session/set_mode`.
    #[arg(long = "mode", value_name = "MODE", default_value = "build")]
    pub(crate) agent_mode: elph_agent::harness::AgentMode,
}

/// What every session of one connection shares.
#[derive(Clone, Debug)]
pub struct AcpConfig {
    /// CONFIG_DIR and DATA_DIR; each session replaces the project folder with its client's `cwd`.
    pub paths: Paths,
    /// `--model`; `None` falls back to `$ELPH_MODEL`, then settings.json.
    pub model: Option<String>,
    pub approval: ApprovalPolicy,
    /// `--sandbox` and `--sandbox-network` for every session of the connection.
    pub sandbox: crate::sandbox::SandboxArgs,
    /// `--mode`: the mode new sessions start in.
    pub mode: elph_agent::harness::AgentMode,
    /// The process's signals: the first ends every session as a closed connection would
    /// (reason `interrupted`). `None` in tests that serve in-process.
    pub shutdown: Option<crate::shutdown::Shutdown>,
}

impl AcpConfig {
    pub fn new(paths: Paths) -> Self {
        AcpConfig {
            paths,
            model: None,
            approval: ApprovalPolicy::Ask,
            sandbox: crate::sandbox::SandboxArgs::default(),
            mode: elph_agent::harness::AgentMode::Build,
            shutdown: None,
        }
    }
}

/// `elph acp`: serves one client on stdin/stdout until stdin closes.
pub fn run(cwd: Option<&Path>, args: AcpArgs) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    crate::logging::to_file(&paths);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let shutdown = runtime
        .block_on(async { crate::shutdown::Shutdown::install(true) })
        .context("cannot watch for signals")?;
    let config = AcpConfig {
        paths,
        model: args.model,
        approval: args.approval.into(),
        sandbox: args.sandbox,
        mode: args.agent_mode,
        shutdown: Some(shutdown.clone()),
    };
    let result = runtime.block_on(serve_stdio(config));
    // A blocked read of stdin must not hold the process once the connection is over. After a
    // signal every session has ended and every frame is written: nothing is left to wait for.
    let linger = if shutdown.signal().is_some() {
        Duration::from_millis(50)
    } else {
        Duration::from_secs(1)
    };
    runtime.shutdown_timeout(linger);
    if let Some(code) = shutdown.exit_code() {
        return Ok(code);
    }
    match result {
        Ok(()) => Ok(exit::SUCCESS),
        Err(err) => {
            tracing::error!(%err, "the ACP connection failed");
            eprintln!("elph acp: the connection failed: {err}");
            Ok(exit::ERROR)
        }
    }
}

/// Serves one client on the process's stdin and stdout.
///
/// Incoming lines are bounded ([`framing::MAX_LINE`]) and must be UTF-8; one that is not gets a
/// JSON-RPC error and the connection goes on. The lines after an `initialize` wait for its answer
/// ([`handshake`]), so a client may pipeline. Each outgoing frame is one write of one line.
pub(crate) async fn serve_stdio(config: AcpConfig) -> Result<(), agent_client_protocol::Error> {
    use tokio::io::AsyncWriteExt;
    let handshake = handshake::Handshake::default();
    let incoming = handshake.gate(framing::bounded_lines(
        tokio::io::BufReader::new(tokio::io::stdin()),
        framing::MAX_LINE,
    ));
    let outgoing = futures::sink::unfold(
        (tokio::io::stdout(), handshake),
        |(mut out, handshake), frame: String| async move {
            // The protocol library counts the handshake as done once it hands over the answer, and
            // frames are written in order: the next line may go on now.
            handshake.sent(&frame);
            let mut line = frame.into_bytes();
            line.push(b'\n');
            out.write_all(&line).await?;
            out.flush().await?;
            Ok::<_, std::io::Error>((out, handshake))
        },
    );
    serve(config, Lines::new(Box::pin(outgoing), Box::pin(incoming))).await
}

/// Serves one client over `transport` until it closes its side; then every live session ends
/// (sessionEnd with reason `closed`).
pub async fn serve(
    config: AcpConfig,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let shutdown = config.shutdown.clone();
    let data_dir = config.paths.data_dir.clone();
    let sessions = Arc::new(Sessions::new(config));
    let result = Agent
        .v1()
        .name("elph")
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: InitializeRequest, responder, _cx| {
                    // Sessions opened from now on read and write through the client's file
                    // system if it offers one.
                    sessions.files.set(request.client_capabilities.fs);
                    // MCP servers' questions go to the client if it declares elicitation.
                    sessions.elicitation.set(request.client_capabilities.elicitation);
                    // Notices that come between turns are sent as they happen if it shows them.
                    let notices = request
                        .client_capabilities
                        .session
                        .as_ref()
                        .is_some_and(|session| session.notices.is_some());
                    sessions
                        .notices
                        .store(notices, std::sync::atomic::Ordering::Relaxed);
                    responder.respond(initialize_response())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: NewSessionRequest, responder, cx| {
                    sessions.open_new(request, responder, cx);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: LoadSessionRequest, responder, cx| {
                    sessions.open_load(request, responder, cx);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: PromptRequest, responder, _cx| {
                    sessions.prompt(request, responder);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: SetSessionModeRequest, responder, _cx| {
                    sessions.set_mode(request, responder);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: ResumeSessionRequest, responder, cx| {
                    sessions.open_resume(request, responder, cx);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: CloseSessionRequest, responder, _cx| {
                    sessions.close(request, responder);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                    sessions.set_config_option(request, responder);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let data_dir = data_dir.clone();
                async move |request: ListSessionsRequest, responder, _cx| {
                    // SQLite off the dispatch loop.
                    let data_dir = data_dir.clone();
                    let answer = tokio::task::spawn_blocking(move || stored::list(&data_dir, &request))
                        .await
                        .unwrap_or_else(|err| Err(joined(&err)));
                    responder.respond_with_result(answer)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let sessions = sessions.clone();
                let data_dir = data_dir.clone();
                async move |request: DeleteSessionRequest, responder, _cx| {
                    let open_here = sessions.is_open(&request.session_id.0);
                    let data_dir = data_dir.clone();
                    let answer =
                        tokio::task::spawn_blocking(move || stored::delete(&data_dir, &request, open_here))
                            .await
                            .unwrap_or_else(|err| Err(joined(&err)));
                    responder.respond_with_result(answer)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let sessions = sessions.clone();
                async move |notification: CancelNotification, _cx| {
                    sessions.cancel(&notification.session_id.0);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, {
            let sessions = sessions.clone();
            async move |cx| {
                let signalled = async {
                    match &shutdown {
                        Some(shutdown) => shutdown.requested().await,
                        None => std::future::pending().await,
                    }
                };
                let reason = tokio::select! {
                    () = cx.incoming_closed() => "closed",
                    () = signalled => "interrupted",
                };
                sessions.close_all(reason).await;
                Ok(())
            }
        })
        .await;
    // After a transport error the close above never ran: end the sessions anyway.
    sessions.close_all("closed").await;
    result
}

/// A blocking task that did not finish (it panicked or was cancelled) as a JSON-RPC error.
fn joined(err: &tokio::task::JoinError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(
        agent_client_protocol::ErrorCode::INTERNAL_ERROR,
        format!("the request did not finish: {err}"),
    )
}

fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .delete(SessionDeleteCapabilities::new()),
                )
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                .mcp_capabilities(
                    McpCapabilities::new()
                        .http(mcp::SUPPORTS_HTTP)
                        .sse(mcp::SUPPORTS_SSE),
                ),
        )
        .agent_info(Implementation::new("elph", env!("CARGO_PKG_VERSION")).title("Elph"))
}
