//! https still checks certificates, now that the system's roots load at the first handshake: a
//! server with a self-signed certificate (a real TLS server, `openssl s_server`) is refused.

use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use elph_ai::{OpenAiProvider, ProviderError};

use super::{config, run, simple_request};

/// Kills the server when the test ends, however it ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn self_signed_server(dir: &std::path::Path) -> (Server, u16) {
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext"])
        .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl on PATH (.ci/run installs it)");
    assert!(status.success(), "openssl req failed");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("openssl")
        .args(["s_server", "-quiet", "-www", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_server");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "openssl s_server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, port)
}

#[tokio::test]
async fn a_self_signed_https_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = self_signed_server(dir.path());
    let provider = OpenAiProvider::new(config(
        "openai",
        format!("https://localhost:{port}/v1"),
        "sk-test",
    ))
    .unwrap();
    let (result, events) = run(&provider, &simple_request()).await;
    assert!(events.is_empty());
    match result {
        Err(ProviderError::Connection { message, .. }) => {
            assert!(message.contains("certificate"), "{message}");
        }
        other => panic!("expected a certificate error, got {other:?}"),
    }
}
