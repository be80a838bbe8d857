//! OpenTelemetry traces of a session (docs/hooks.md, "Telemetry"): every hook run and every tool
//! call becomes a span, all under one span for the session, exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. Off otherwise.
//!
//! The spans are made from the session's own event stream (`AgentEvent`), the one every front end
//! reads, so a run is traced the same in the TUI, `elph run` and ACP. Hook runs of one chain ran
//! one after another: each starts where the one before it ended, from the chain's start. Async hook
//! runs are told apart ([`Telemetry::observe_async`]) with their own start and end, when they end.

pub(crate) mod otlp;

use std::collections::HashMap;
use std::time::Duration;

use elph_agent::harness::AgentEvent;
use elph_agent::hooks::{HookRun, RunStatus};

use crate::hooks::background::AsyncRun;
use tokio::sync::{mpsc, oneshot};

use otlp::{Attribute, Endpoint, Message, Span, now_ns};

/// How long the end of a session waits for its spans to be sent.
const FLUSH_LIMIT: Duration = Duration::from_secs(3);

/// Turns a session's events into spans and hands them to the exporting task.
pub(crate) struct Telemetry {
    to_exporter: mpsc::UnboundedSender<Message>,
    trace_id: [u8; 16],
    /// The session's span: its id, when it started, the session's id.
    session: Option<([u8; 8], u64, String)>,
    /// Tool calls under way: when each started.
    tools: HashMap<String, u64>,
    /// The span id of each tool call of the session, given when it starts: an async hook run
    /// queued by one of its events links to it, also after it ended.
    tool_spans: HashMap<String, [u8; 8]>,
    /// When the hook chain under way started.
    chain_started: Option<u64>,
}

impl Telemetry {
    /// Starts exporting when the environment names an endpoint; `None` (off) otherwise. Call
    /// inside a tokio runtime: the exporting task is spawned on it.
    pub(crate) fn from_env() -> Option<Telemetry> {
        let endpoint = Endpoint::from_env(&|name| std::env::var(name).ok())?;
        tracing::info!(url = %endpoint.url, "exporting hook and tool spans over OTLP/HTTP");
        let (to_exporter, messages) = mpsc::unbounded_channel();
        tokio::spawn(otlp::export(endpoint, messages));
        Some(Telemetry {
            to_exporter,
            trace_id: random_id(),
            session: None,
            tools: HashMap::new(),
            tool_spans: HashMap::new(),
            chain_started: None,
        })
    }

    /// Notes what `event` means for the spans; a span that ends is sent.
    pub(crate) fn observe(&mut self, event: &AgentEvent) {
        let now = now_ns();
        match event {
            AgentEvent::SessionStarted { session_id } => {
                // A new session in the same process (`/new`, `/resume`) is a trace of its own.
                if self.session.is_some() {
                    self.trace_id = random_id();
                }
                self.tool_spans.clear();
                self.session = Some((span_id(), now, session_id.clone()));
            }
            AgentEvent::ToolCallStarted { tool_call_id, .. } => {
                self.tools.insert(tool_call_id.clone(), now);
                self.tool_span(tool_call_id);
            }
            AgentEvent::ToolCallFinished {
                tool_call_id,
                tool_name,
                is_error,
                ran,
                ..
            } => {
                let start = self.tools.remove(tool_call_id).unwrap_or(now);
                let attributes = vec![
                    ("elph.tool.name", Attribute::from(tool_name.as_str())),
                    ("elph.tool.call_id", tool_call_id.as_str().into()),
                    ("elph.tool.ran", (*ran).into()),
                    ("elph.tool.is_error", (*is_error).into()),
                ];
                let error = is_error.then(|| format!("tool {tool_name} returned an error"));
                let id = self.tool_span(tool_call_id);
                self.export(self.span(id, format!("tool {tool_name}"), start, now, attributes, error));
            }
            AgentEvent::HooksStarted { .. } => self.chain_started = Some(now),
            AgentEvent::Hooks { dispatch } => {
                let took: u64 = dispatch.runs.iter().map(|run| run.duration_ms).sum();
                let mut start = self
                    .chain_started
                    .take()
                    .unwrap_or_else(|| now.saturating_sub(took.saturating_mul(1_000_000)));
                for run in &dispatch.runs {
                    let end = start.saturating_add(run.duration_ms.saturating_mul(1_000_000));
                    self.send(
                        format!("hook {}", run.hook_id),
                        start,
                        end,
                        hook_attributes(run),
                        (run.status == RunStatus::Failed)
                            .then(|| run.cause.clone().unwrap_or_else(|| "the hook failed".to_string())),
                    );
                    start = end;
                }
            }
            AgentEvent::SessionEnded { reason } => {
                if let Some((id, start, session_id)) = self.session.take() {
                    let span = Span {
                        trace_id: self.trace_id,
                        span_id: id,
                        parent: None,
                        name: "elph session".to_string(),
                        start_ns: start,
                        end_ns: now,
                        attributes: vec![
                            ("elph.session.id", session_id.into()),
                            ("elph.session.end_reason", reason.as_str().into()),
                        ],
                        error: None,
                        links: Vec::new(),
                    };
                    let _ = self.to_exporter.send(Message::Span(span));
                }
            }
            _ => {}
        }
    }

    /// An async hook run ended (or was cut off at the end of the session): a `hook ID` span from
    /// when it started to when it ended (a run that never started: at its end), marked async,
    /// with the event that queued it, linked to that event's tool call when it had one.
    pub(crate) fn observe_async(&mut self, ended: &AsyncRun) {
        let mut attributes = hook_attributes(&ended.run);
        let started = ended.started_ns.unwrap_or(ended.ended_ns);
        attributes.extend([
            ("elph.hook.async", Attribute::from(true)),
            (
                "elph.hook.queued_ms",
                (started.saturating_sub(ended.queued_ns) / 1_000_000).into(),
            ),
            ("elph.hook.cut_off", ended.cut_off.into()),
        ]);
        let mut links = Vec::new();
        if let Some(call) = &ended.origin.tool_call_id {
            attributes.push(("elph.tool.call_id", call.as_str().into()));
            links.push(self.tool_span(call));
        }
        let error = (ended.run.status == RunStatus::Failed || ended.cut_off).then(|| {
            ended
                .run
                .cause
                .clone()
                .unwrap_or_else(|| "the hook failed".to_string())
        });
        let mut span = self.span(
            span_id(),
            format!("hook {}", ended.run.hook_id),
            started,
            ended.ended_ns,
            attributes,
            error,
        );
        span.links = links;
        self.export(span);
    }

    /// The span id of tool call `call`, given the first time it is asked for.
    fn tool_span(&mut self, call: &str) -> [u8; 8] {
        *self.tool_spans.entry(call.to_string()).or_insert_with(span_id)
    }

    fn send(
        &self,
        name: String,
        start_ns: u64,
        end_ns: u64,
        attributes: Vec<(&'static str, Attribute)>,
        error: Option<String>,
    ) {
        self.export(self.span(span_id(), name, start_ns, end_ns, attributes, error));
    }

    /// A span of this session's trace, under its span, with the session's id.
    fn span(
        &self,
        id: [u8; 8],
        name: String,
        start_ns: u64,
        end_ns: u64,
        mut attributes: Vec<(&'static str, Attribute)>,
        error: Option<String>,
    ) -> Span {
        if let Some((_, _, session_id)) = &self.session {
            attributes.push(("elph.session.id", session_id.as_str().into()));
        }
        Span {
            trace_id: self.trace_id,
            span_id: id,
            parent: self.session.as_ref().map(|(id, _, _)| *id),
            name,
            start_ns,
            end_ns,
            attributes,
            error,
            links: Vec::new(),
        }
    }

    fn export(&self, span: Span) {
        let _ = self.to_exporter.send(Message::Span(span));
    }

    /// Asks the exporting task to send what is waiting; await the answer with [`wait_flushed`].
    pub(crate) fn flush_request(&self) -> Option<oneshot::Receiver<()>> {
        let (done, sent) = oneshot::channel();
        self.to_exporter.send(Message::Flush(done)).ok().map(|()| sent)
    }
}

/// Waits for a flush, within a few seconds: a collector that does not answer delays the end of a
/// session by at most that.
pub(crate) async fn wait_flushed(sent: oneshot::Receiver<()>) {
    let _ = tokio::time::timeout(FLUSH_LIMIT, sent).await;
}

fn hook_attributes(run: &HookRun) -> Vec<(&'static str, Attribute)> {
    let status = match run.status {
        RunStatus::Ok => "ok",
        RunStatus::Failed => "failed",
        RunStatus::Skipped => "skipped",
    };
    let mut attributes = vec![
        ("elph.hook.id", Attribute::from(run.hook_id.as_str())),
        ("elph.hook.event", run.event.as_str().into()),
        ("elph.hook.status", status.into()),
        ("elph.hook.duration_ms", run.duration_ms.into()),
        ("elph.hook.fail_closed", run.fail_closed.into()),
        ("elph.hook.changed", run.outcome.is_some().into()),
    ];
    if !run.effects.is_empty() {
        attributes.push(("elph.hook.effects", run.effects.join("; ").into()));
    }
    if let Some(cause) = &run.cause {
        attributes.push(("elph.hook.cause", cause.as_str().into()));
    }
    attributes
}

/// A trace id: a v7 UUID's 16 bytes (time and randomness; W3C trace ids need only be unique).
fn random_id() -> [u8; 16] {
    *uuid::Uuid::now_v7().as_bytes()
}

/// 8 random bytes: the random tail of a v7 UUID.
fn span_id() -> [u8; 8] {
    let bytes = uuid::Uuid::now_v7().into_bytes();
    let mut id = [0u8; 8];
    id.copy_from_slice(&bytes[8..]);
    id
}
