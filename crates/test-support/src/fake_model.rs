//! A fake model server on 127.0.0.1 that speaks the real wire formats — OpenAI Chat Completions and
//! Anthropic Messages, both as server-sent events — plays a queue of scripted replies, and records
//! every request it receives.
//!
//! ```text
//! let server = FakeModelServer::start(Wire::OpenAi).await;
//! server.enqueue(FakeReply::text("Let me look.").and_tool_call("shell_exec", json!({"command": "ls"})));
//! server.enqueue(FakeReply::status(429, Some(1)));
//! // point OPENAI_BASE_URL at server.base_url(), run, then:
//! assert_eq!(server.requests()[0]["messages"][0]["role"], "system");
//! ```
//!
//! With an empty queue it answers a plain text "done" turn, so runs always end. Replies stream in
//! small chunks (text word by word, tool arguments a few characters at a time), over chunked
//! transfer encoding, one connection per request (`Connection: close`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// The wire format the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
}

/// A latch tests open to let a held reply finish. Clones share the latch.
#[derive(Clone, Debug)]
pub struct Gate(Arc<watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(watch::channel(false).0))
    }
}

impl Gate {
    pub fn new() -> Self {
        Gate::default()
    }

    /// Lets every reply held on this gate continue.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn wait(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|open| *open).await;
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Turn {
        text: String,
        tool_calls: Vec<(String, Value)>,
    },
    Status {
        status: u16,
        retry_after: Option<u64>,
        message: String,
    },
    DropConnection,
}

/// One scripted reply.
#[derive(Clone, Debug)]
pub struct FakeReply {
    kind: Kind,
    usage: Option<(u64, u64)>,
    stop_reason: Option<String>,
    refusal: Option<String>,
    chunk_delay: Duration,
    hold: Option<Gate>,
    drop_after: Option<usize>,
}

impl FakeReply {
    fn new(kind: Kind) -> Self {
        FakeReply {
            kind,
            usage: None,
            stop_reason: None,
            refusal: None,
            chunk_delay: Duration::ZERO,
            hold: None,
            drop_after: None,
        }
    }

    /// A text-only turn.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(Kind::Turn {
            text: text.into(),
            tool_calls: Vec::new(),
        })
    }

    /// A turn with one tool call and no text.
    pub fn tool_call(name: impl Into<String>, input: Value) -> Self {
        Self::new(Kind::Turn {
            text: String::new(),
            tool_calls: vec![(name.into(), input)],
        })
    }

    /// A refusal: OpenAI streams it as `delta.refusal` (finishing with `stop`); Anthropic streams it
    /// as text and stops with `refusal`.
    pub fn refusal(text: impl Into<String>) -> Self {
        let mut reply = Self::text("");
        reply.refusal = Some(text.into());
        reply
    }

    /// Adds a tool call to a turn (after its text and earlier calls).
    pub fn and_tool_call(mut self, name: impl Into<String>, input: Value) -> Self {
        if let Kind::Turn { tool_calls, .. } = &mut self.kind {
            tool_calls.push((name.into(), input));
        }
        self
    }

    /// An HTTP error status with a generic message; `retry_after` in seconds.
    pub fn status(status: u16, retry_after: Option<u64>) -> Self {
        Self::new(Kind::Status {
            status,
            retry_after,
            message: format!("fake status {status}"),
        })
    }

    /// An HTTP error status whose body carries `message` in the wire's error format.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self::new(Kind::Status {
            status,
            retry_after: None,
            message: message.into(),
        })
    }

    /// Reads the request, then closes the connection without answering.
    pub fn drop_connection() -> Self {
        Self::new(Kind::DropConnection)
    }

    /// Reports these token counts instead of the estimate (~4 characters a token).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some((input_tokens, output_tokens));
        self
    }

    /// The wire's own stop reason (`"length"`, `"max_tokens"`, …) instead of the natural one.
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// Waits this long before each event: a slow stream.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Streams the content (text and tool calls), then waits for `gate` before finishing the turn.
    pub fn hold(mut self, gate: &Gate) -> Self {
        self.hold = Some(gate.clone());
        self
    }

    /// Streams the content and then never finishes (until the client goes away).
    pub fn hang(self) -> Self {
        self.hold(&Gate::new())
    }

    /// Sends the first `events` events, then drops the connection mid-stream.
    pub fn drop_after(mut self, events: usize) -> Self {
        self.drop_after = Some(events);
        self
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    wire: Wire,
    queue: Mutex<VecDeque<FakeReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    request_count: watch::Sender<usize>,
    disconnects: AtomicUsize,
    completed: AtomicUsize,
    next_id: AtomicU64,
    tasks: Mutex<Vec<AbortHandle>>,
    /// Refuse, as OpenAI does, a request whose assistant tool calls are not each answered by a
    /// tool message right after it.
    enforce_pairing: std::sync::atomic::AtomicBool,
}

/// The running server; stops when dropped.
pub struct FakeModelServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: AbortHandle,
}

impl FakeModelServer {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub async fn start(wire: Wire) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            wire,
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            request_count: watch::channel(0).0,
            disconnects: AtomicUsize::new(0),
            completed: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            tasks: Mutex::new(Vec::new()),
            enforce_pairing: std::sync::atomic::AtomicBool::new(false),
        });
        let accept_shared = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let task = tokio::spawn(serve(accept_shared.clone(), stream));
                let mut tasks = lock(&accept_shared.tasks);
                tasks.retain(|t| !t.is_finished());
                tasks.push(task.abort_handle());
            }
        })
        .abort_handle();
        FakeModelServer { shared, addr, accept }
    }

    /// What to put in `OPENAI_BASE_URL` (`http://127.0.0.1:PORT/v1`) or `ANTHROPIC_BASE_URL`
    /// (`http://127.0.0.1:PORT`).
    pub fn base_url(&self) -> String {
        match self.shared.wire {
            Wire::OpenAi => format!("http://{}/v1", self.addr),
            Wire::Anthropic => format!("http://{}", self.addr),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn wire(&self) -> Wire {
        self.shared.wire
    }

    /// From now on, answers HTTP 400 (without taking a queued reply), as OpenAI does, to a request
    /// in which an assistant message's tool calls are not all answered by the tool messages right
    /// after it.
    pub fn enforce_tool_pairing(&self) -> &Self {
        self.shared.enforce_pairing.store(true, Ordering::SeqCst);
        self
    }

    /// Queues a reply for the next request.
    pub fn enqueue(&self, reply: FakeReply) -> &Self {
        lock(&self.shared.queue).push_back(reply);
        self
    }

    pub fn enqueue_all(&self, replies: impl IntoIterator<Item = FakeReply>) -> &Self {
        lock(&self.shared.queue).extend(replies);
        self
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// Every request received, with method, path and headers.
    pub fn recorded(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Waits until at least `count` requests have arrived; panics after `timeout`.
    pub async fn wait_for_requests(&self, count: usize, timeout: Duration) {
        let mut rx = self.shared.request_count.subscribe();
        let reached = tokio::time::timeout(timeout, rx.wait_for(|n| *n >= count))
            .await
            .is_ok();
        if !reached {
            panic!(
                "fake model server: waited {timeout:?} for {count} requests, got {}",
                *rx.borrow()
            );
        }
    }

    /// Replies the client walked away from before they were complete.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::SeqCst)
    }

    /// Replies sent in full (error statuses included).
    pub fn completed(&self) -> usize {
        self.shared.completed.load(Ordering::SeqCst)
    }
}

impl Drop for FakeModelServer {
    fn drop(&mut self) {
        self.accept.abort();
        for task in lock(&self.shared.tasks).drain(..) {
            task.abort();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Serves one connection: one request, one reply, close.
async fn serve(shared: Arc<Shared>, stream: TcpStream) {
    let (mut reader, mut writer) = stream.into_split();
    let Some(request) = read_request(&mut reader).await else {
        return;
    };
    let unpaired = if shared.enforce_pairing.load(Ordering::SeqCst) && shared.wire == Wire::OpenAi {
        unanswered_tool_calls(&request.body)
    } else {
        Vec::new()
    };
    let reply = if unpaired.is_empty() {
        lock(&shared.queue)
            .pop_front()
            .unwrap_or_else(|| FakeReply::text("done"))
    } else {
        FakeReply::error(
            400,
            format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each \
                 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                unpaired.join(", ")
            ),
        )
    };
    let body_len = request.body.to_string().len() as u64;
    let model = request
        .body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    lock(&shared.requests).push(request);
    shared.request_count.send_modify(|n| *n += 1);

    let (text, tool_calls) = match reply.kind {
        Kind::DropConnection => return,
        Kind::Status {
            status,
            retry_after,
            message,
        } => {
            let body = match shared.wire {
                Wire::OpenAi => json!({"error": {"message": message, "type": "fake_error", "code": null}}),
                Wire::Anthropic => {
                    json!({"type": "error", "error": {"type": "fake_error", "message": message}})
                }
            }
            .to_string();
            let retry = retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\n{retry}Content-Length: {}\r\nConnection: close\r\n\r\n",
                reason(status),
                body.len()
            );
            if writer.write_all(format!("{head}{body}").as_bytes()).await.is_ok() {
                shared.completed.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
        Kind::Turn { text, tool_calls } => (text, tool_calls),
    };

    let calls: Vec<(String, String, String)> = tool_calls
        .into_iter()
        .map(|(name, input)| {
            let n = shared.next_id.fetch_add(1, Ordering::SeqCst);
            let id = match shared.wire {
                Wire::OpenAi => format!("call_{n}"),
                Wire::Anthropic => format!("toolu_{n}"),
            };
            (id, name, input.to_string())
        })
        .collect();
    let output_chars = text.len()
        + calls
            .iter()
            .map(|(_, name, args)| name.len() + args.len())
            .sum::<usize>();
    let usage = reply
        .usage
        .unwrap_or((body_len.div_ceil(4), (output_chars as u64).div_ceil(4) + 1));
    let stop = reply.stop_reason.clone();
    let (frames, content_end) = match (shared.wire, &reply.refusal) {
        (Wire::OpenAi, refusal) => openai_frames(&model, &text, refusal.as_deref(), &calls, usage, stop),
        (Wire::Anthropic, Some(refusal)) => {
            let stop = stop.or_else(|| Some("refusal".into()));
            anthropic_frames(&model, refusal, &calls, usage, stop)
        }
        (Wire::Anthropic, None) => anthropic_frames(&model, &text, &calls, usage, stop),
    };

    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    if writer.write_all(head.as_bytes()).await.is_err() {
        shared.disconnects.fetch_add(1, Ordering::SeqCst);
        return;
    }
    for (i, frame) in frames.iter().enumerate() {
        if reply.drop_after == Some(i) {
            return; // the connection closes without the terminating chunk
        }
        if i == content_end
            && let Some(gate) = &reply.hold
            && !wait_unless_disconnected(&mut reader, gate.wait()).await
        {
            shared.disconnects.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if !reply.chunk_delay.is_zero()
            && !wait_unless_disconnected(&mut reader, tokio::time::sleep(reply.chunk_delay)).await
        {
            shared.disconnects.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if write_chunk(&mut writer, frame).await.is_err() {
            shared.disconnects.fetch_add(1, Ordering::SeqCst);
            return;
        }
    }
    if writer.write_all(b"0\r\n\r\n").await.is_ok() && writer.flush().await.is_ok() {
        shared.completed.fetch_add(1, Ordering::SeqCst);
    } else {
        shared.disconnects.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs `wait` to its end, unless the client closes the connection first (then `false`).
async fn wait_unless_disconnected(reader: &mut OwnedReadHalf, wait: impl Future<Output = ()>) -> bool {
    tokio::pin!(wait);
    let mut buf = [0u8; 256];
    loop {
        tokio::select! {
            _ = &mut wait => return true,
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            },
        }
    }
}

async fn write_chunk(writer: &mut OwnedWriteHalf, data: &str) -> std::io::Result<()> {
    writer
        .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
        .await?;
    writer.flush().await
}

/// Reads one HTTP/1.1 request with a `Content-Length` body (the hook server reads its requests
/// with it too).
pub(crate) async fn read_request<R: tokio::io::AsyncRead + Unpin>(reader: &mut R) -> Option<RecordedRequest> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > 1 << 20 {
            return None;
        }
        let n = reader.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = reader.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&body).to_string();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

/// The tool call ids of an OpenAI request's assistant messages that the messages right after them
/// do not answer.
pub fn unanswered_tool_calls(body: &Value) -> Vec<String> {
    let Some(messages) = body["messages"].as_array() else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        let Some(calls) = message["tool_calls"].as_array() else {
            continue;
        };
        let answered: Vec<&str> = messages[at + 1..]
            .iter()
            .take_while(|next| next["role"] == "tool")
            .filter_map(|next| next["tool_call_id"].as_str())
            .collect();
        for call in calls {
            if let Some(id) = call["id"].as_str()
                && !answered.contains(&id)
            {
                missing.push(id.to_string());
            }
        }
    }
    missing
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Error",
    }
}

/// Splits text after each run of whitespace, keeping it: "a b" → "a ", "b".
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if !c.is_whitespace() && current.ends_with(char::is_whitespace) && !current.trim().is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Splits a string into pieces of at most `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// OpenAI frames, and the index of the first frame that finishes the turn.
fn openai_frames(
    model: &str,
    text: &str,
    refusal: Option<&str>,
    calls: &[(String, String, String)],
    (input, output): (u64, u64),
    stop: Option<String>,
) -> (Vec<String>, usize) {
    let chunk = |delta: Value, finish: Value| {
        let frame = json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {frame}\n\n")
    };
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    frames.extend(
        words(text)
            .into_iter()
            .map(|w| chunk(json!({"content": w}), Value::Null)),
    );
    frames.extend(
        words(refusal.unwrap_or(""))
            .into_iter()
            .map(|w| chunk(json!({"content": null, "refusal": w}), Value::Null)),
    );
    for (index, (id, name, args)) in calls.iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(args, 7) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let content_end = frames.len();
    let natural = if calls.is_empty() { "stop" } else { "tool_calls" };
    frames.push(chunk(json!({}), json!(stop.as_deref().unwrap_or(natural))));
    let usage = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input.saturating_add(output)},
    });
    frames.push(format!("data: {usage}\n\n"));
    frames.push("data: [DONE]\n\n".to_string());
    (frames, content_end)
}

/// Anthropic frames, and the index of the first frame that finishes the turn.
fn anthropic_frames(
    model: &str,
    text: &str,
    calls: &[(String, String, String)],
    (input, output): (u64, u64),
    stop: Option<String>,
) -> (Vec<String>, usize) {
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or("unknown")
        )
    };
    let mut frames = vec![
        event(json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": model,
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": input, "output_tokens": 1}}})),
        event(json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !text.is_empty() {
        frames.push(event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for word in words(text) {
            frames.push(event(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": word}}),
            ));
        }
        frames.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (id, name, args) in calls {
        frames.push(event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        for piece in pieces(args, 7) {
            frames.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        frames.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let content_end = frames.len();
    let natural = if calls.is_empty() { "end_turn" } else { "tool_use" };
    frames.push(event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop.as_deref().unwrap_or(natural), "stop_sequence": null},
        "usage": {"output_tokens": output}})));
    frames.push(event(json!({"type": "message_stop"})));
    (frames, content_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing_finds_calls_without_results_right_after_them() {
        let body = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "user", "content": "again"},
            {"role": "tool", "tool_call_id": "b", "content": "late"},
        ]});
        assert_eq!(unanswered_tool_calls(&body), ["b"]);
        let whole = json!({"messages": [
            {"role": "assistant", "tool_calls": [{"id": "a"}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
        ]});
        assert!(unanswered_tool_calls(&whole).is_empty());
    }

    #[test]
    fn words_keep_spaces() {
        assert_eq!(words("a b  c\n"), vec!["a ", "b  ", "c\n"]);
        assert_eq!(words(" lead"), vec![" lead"]);
    }

    #[test]
    fn pieces_respect_char_boundaries() {
        assert_eq!(pieces("héllo wörld", 4), vec!["héll", "o wö", "rld"]);
    }
}
