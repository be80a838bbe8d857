//! An HTTP endpoint on 127.0.0.1 for url hooks: it records every request (path, headers, JSON
//! body) and answers each with the same status and body.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request the server read.
#[derive(Clone, Debug)]
pub struct HookRequest {
    pub method: String,
    pub path: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl HookRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The server; dropping it stops it.
pub struct HookServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
    requests: Arc<Mutex<Vec<HookRequest>>>,
}

impl HookServer {
    /// Listens on 127.0.0.1 (a free port) and answers every request with `status` and `body`.
    pub async fn start(status: u16, body: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            if status < 300 { "OK" } else { "Error" },
            body.len()
        ));
        let accept = tokio::spawn({
            let requests = requests.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(answer_one(stream, answer.clone(), requests.clone()));
                }
            }
        });
        HookServer {
            addr,
            accept,
            requests,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request read so far.
    pub fn requests(&self) -> Vec<HookRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for HookServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn answer_one(mut stream: TcpStream, answer: Arc<String>, requests: Arc<Mutex<Vec<HookRequest>>>) {
    let read = tokio::time::timeout(Duration::from_secs(30), read_request(&mut stream)).await;
    let Ok(Some(request)) = read else {
        return;
    };
    requests.lock().unwrap().push(request);
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn read_request(stream: &mut TcpStream) -> Option<HookRequest> {
    let request = crate::fake_model::read_request(stream).await?;
    Some(HookRequest {
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body,
    })
}
