//! A misbehaving HTTP server on 127.0.0.1 for the provider stream limits: every connection reads
//! one request and then plays the same script of raw bytes and pauses — slow headers, a trickle,
//! a huge event, a stream that never ends. The bytes are exactly what the script says; nothing is
//! framed for the client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One step of a connection's script.
#[derive(Clone, Debug)]
pub enum Step {
    /// Write these bytes.
    Send(Vec<u8>),
    /// Write these bytes `times` times in a row (a huge body without holding it in the script).
    Repeat { bytes: Vec<u8>, times: usize },
    /// Wait this long.
    Wait(Duration),
    /// Write these bytes, wait, and again, until the client goes away.
    Forever { bytes: Vec<u8>, every: Duration },
}

/// The status line and headers of a streamed 200 reply whose body ends when the connection closes.
pub fn sse_head() -> Step {
    Step::Send(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
            .to_vec(),
    )
}

/// `data: {json}\n\n`.
pub fn sse_event(json: &serde_json::Value) -> Step {
    Step::Send(format!("data: {json}\n\n").into_bytes())
}

/// The server; dropping it stops it and every connection.
pub struct RawHttpServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
    connections: Arc<AtomicUsize>,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
}

impl RawHttpServer {
    /// Listens on 127.0.0.1 (a free port) and plays `script` on every connection.
    pub async fn start(script: Vec<Step>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let script = Arc::new(script);
        let accept = tokio::spawn({
            let connections = connections.clone();
            let requests = requests.clone();
            async move {
                let mut tasks = Vec::new();
                while let Ok((stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    tasks.push(AbortOnDrop(tokio::spawn(play(
                        stream,
                        script.clone(),
                        requests.clone(),
                    ))));
                }
            }
        });
        RawHttpServer {
            addr,
            accept,
            connections,
            requests,
        }
    }

    /// `http://127.0.0.1:PORT` (add `/v1` for an OpenAI-compatible base URL).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far (each attempt of a retried call is one).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The head (request line and headers) of every request read so far.
    pub fn request_heads(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

impl Drop for RawHttpServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Aborts the connection's task when the accept loop (hence the server) goes.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn play(mut stream: TcpStream, script: Arc<Vec<Step>>, requests: Arc<std::sync::Mutex<Vec<String>>>) {
    let Some(head) = read_request(&mut stream).await else {
        return;
    };
    requests
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(head);
    for step in script.iter() {
        let written = match step {
            Step::Send(bytes) => stream.write_all(bytes).await,
            Step::Repeat { bytes, times } => {
                let mut result = Ok(());
                for _ in 0..*times {
                    result = stream.write_all(bytes).await;
                    if result.is_err() {
                        break;
                    }
                }
                result
            }
            Step::Wait(duration) => {
                tokio::time::sleep(*duration).await;
                Ok(())
            }
            Step::Forever { bytes, every } => loop {
                if let Err(error) = stream.write_all(bytes).await {
                    break Err(error);
                }
                tokio::time::sleep(*every).await;
            },
        };
        if written.is_err() {
            return;
        }
    }
    let _ = stream.shutdown().await;
}

/// Reads the request head and its `Content-Length` body; returns the head.
async fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some(head)
}
