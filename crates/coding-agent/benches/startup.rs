//! Start-up and footprint of the real `elph` binary, each against a baseline measured in the same run:
//!
//! - spawn → first byte of the model request reaching a local TCP server, for `elph run` (plain
//!   `http://` base URL, a stored session, no hooks) and for `curl` posting the same body with the
//!   same headers (target: elph ≤ 0.75× curl); the summary adds the same `elph run` with
//!   `--sandbox full-access` as a diagnostic row (no namespace probes: what the sandbox's start
//!   costs on the way to the first request);
//! - the peak resident set (getrusage of the child, via test-support's `peak-rss`) of an `elph run`
//!   that makes one tool call, against `elph --version` (the binary's floor) and `curl`'s POST
//!   (target: ≤ 20 MB), each binary run from a fresh copy so that page-cache state does not
//!   favour one of them.
//!
//! `cargo bench -p coding-agent --bench startup`. divan prints each benchmark; then an interleaved
//! measurement prints the ratios. Needs `curl` on PATH.
//!
//! Other builds of `elph` (e.g. the `dist` profile, or an experiment) can be measured without
//! rebuilding the bench:
//! - `ELPH_BENCH_BIN=/path/to/elph` measures that binary instead of the one cargo built;
//! - `ELPH_BENCH_OTHER_BIN=/path/to/elph` adds a second binary to the summary: it gets its own
//!   home and data folder and runs in the same interleaved rounds (elph, other, curl), and the
//!   summary prints its ratios against curl and against the first binary, and its peak RSS.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const FIRST_BYTE_TARGET: f64 = 0.75;
const PEAK_RSS_TARGET_KIB: u64 = 20 * 1024;

fn main() {
    divan::main();
    if std::env::args().any(|arg| arg == "--bench") {
        summary();
    }
}

/// One chat-completions reply that ends the turn, as server-sent events.
const DONE_REPLY: &str = concat!(
    "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":",
    "{\"role\":\"assistant\",\"content\":\"done\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},",
    "\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

/// A model reply that calls `list_dir` once.
const TOOL_REPLY: &str = concat!(
    "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":",
    "{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",",
    "\"function\":{\"name\":\"list_dir\",\"arguments\":\"{\\\"path\\\":\\\".\\\"}\"}}]},",
    "\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},",
    "\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: [DONE]\n\n",
);

/// A local model server: notes the instant the first byte of each request arrives, reads the
/// whole request, keeps its body, and answers it (a tool call first when asked to, then "done").
struct Server {
    port: u16,
    first_bytes: mpsc::Receiver<Instant>,
    bodies: mpsc::Receiver<Vec<u8>>,
}

impl Server {
    fn start(tool_call_first: bool) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (first_tx, first_bytes) = mpsc::channel();
        let (body_tx, bodies) = mpsc::channel();
        std::thread::spawn(move || {
            // Requests alternate: a tool call, then "done" (when asked), so every run makes one call.
            let mut next_is_tool = tool_call_first;
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some((at, body)) = read_request(&mut stream) else {
                    continue;
                };
                let _ = first_tx.send(at);
                let _ = body_tx.send(body);
                let reply = if next_is_tool { TOOL_REPLY } else { DONE_REPLY };
                if tool_call_first {
                    next_is_tool = !next_is_tool;
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        Server {
            port,
            first_bytes,
            bodies,
        }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn next_first_byte(&self) -> Instant {
        self.first_bytes
            .recv_timeout(Duration::from_secs(30))
            .expect("a request within 30 s")
    }
}

/// The instant the first byte arrived, and the body.
fn read_request(stream: &mut TcpStream) -> Option<(Instant, Vec<u8>)> {
    let mut buffer = vec![0u8; 64 * 1024];
    let n = stream.read(&mut buffer).ok().filter(|n| *n > 0)?;
    let at = Instant::now();
    let mut data = buffer[..n].to_vec();
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let n = stream.read(&mut buffer).ok().filter(|n| *n > 0)?;
                data.extend_from_slice(&buffer[..n]);
            }
            return Some((at, data[end + 4..end + 4 + length].to_vec()));
        }
        let n = stream.read(&mut buffer).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buffer[..n]);
    }
}

/// A hermetic home for elph: config, data and project folders in one temp dir.
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for sub in ["home", "config", "data", "project"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        Home { _dir: dir, root }
    }

    fn elph_run(&self, program: &Path, elph_args: &[&str], server: &Server) -> Command {
        let mut command = Command::new(program);
        command
            .args(elph_args)
            .env_clear()
            .env("HOME", self.root.join("home"))
            .env("ELPH_HOME", self.root.join("config"))
            .env("ELPH_DATA_DIR", self.root.join("data"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("OPENAI_API_KEY", "sk-bench")
            .env("OPENAI_BASE_URL", server.base_url())
            .current_dir(self.root.join("project"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }
}

/// The `elph` under test: `ELPH_BENCH_BIN`, or the one cargo built for this bench.
fn elph() -> PathBuf {
    std::env::var_os("ELPH_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_elph")))
}

/// A second `elph` for the summary to compare with (`ELPH_BENCH_OTHER_BIN`), when set.
fn other_elph() -> Option<PathBuf> {
    std::env::var_os("ELPH_BENCH_OTHER_BIN").map(PathBuf::from)
}
const RUN_ARGS: [&str; 4] = ["run", "--model", "openai/gpt-4.1", "hello"];
/// The same run with no sandbox: no namespace probes, no namespaces. A diagnostic row of the
/// summary (what the sandbox's start costs on the way to the first request), not a target.
const FULL_ACCESS_ARGS: [&str; 6] = [
    "run",
    "--model",
    "openai/gpt-4.1",
    "--sandbox",
    "full-access",
    "hello",
];

/// Starting elph and curl, with a server and curl's copy of elph's request body.
struct Startup {
    elph: PathBuf,
    home: Home,
    server: Server,
    body_file: PathBuf,
}

impl Startup {
    fn new(elph: PathBuf) -> Startup {
        let home = Home::new();
        let server = Server::start(false);
        // One run first: it creates the database (as on a user's machine) and shows the body.
        let status = home.elph_run(&elph, &RUN_ARGS, &server).status().unwrap();
        assert!(status.success(), "elph run failed");
        server.next_first_byte();
        let body = server.bodies.recv().unwrap();
        let body_file = home.root.join("body.json");
        std::fs::write(&body_file, body).unwrap();
        Startup {
            elph,
            home,
            server,
            body_file,
        }
    }

    fn spawn_elph(&self) -> Child {
        self.home
            .elph_run(&self.elph, &RUN_ARGS, &self.server)
            .spawn()
            .unwrap()
    }

    fn spawn_elph_full_access(&self) -> Child {
        self.home
            .elph_run(&self.elph, &FULL_ACCESS_ARGS, &self.server)
            .spawn()
            .unwrap()
    }

    fn spawn_curl(&self) -> Child {
        let mut command = Command::new("curl");
        command
            .args(["-sS", "-o", "/dev/null", "-X", "POST"])
            .args(["-H", "content-type: application/json"])
            .args(["-H", "authorization: Bearer sk-bench"])
            .arg("--data-binary")
            .arg(format!("@{}", self.body_file.display()))
            .arg(format!("{}/chat/completions", self.server.base_url()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command.spawn().expect("curl on PATH")
    }

    /// Spawn → first request byte, then waits for the process (outside the figure).
    fn first_byte(&self, spawn: impl Fn(&Self) -> Child) -> Duration {
        let started = Instant::now();
        let mut child = spawn(self);
        let at = self.server.next_first_byte();
        let elapsed = at - started;
        let status = child.wait().unwrap();
        assert!(status.success());
        let _ = self.server.bodies.recv();
        elapsed
    }
}

/// Waits for the child when dropped, so divan's timing stops at the first byte.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.wait();
    }
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn elph_run_spawn_to_first_request_byte(bencher: divan::Bencher) {
    let startup = Startup::new(elph());
    bencher.bench_local(|| {
        let child = Reap(startup.spawn_elph());
        startup.server.next_first_byte();
        let _ = startup.server.bodies.recv();
        child
    });
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn curl_post_spawn_to_first_request_byte(bencher: divan::Bencher) {
    let startup = Startup::new(elph());
    bencher.bench_local(|| {
        let child = Reap(startup.spawn_curl());
        startup.server.next_first_byte();
        let _ = startup.server.bodies.recv();
        child
    });
}

/// `binary` copied to `to` (executable), so its whole file is in the page cache.
fn fresh_copy(binary: &Path, to: &Path) -> PathBuf {
    std::fs::copy(binary, to).unwrap_or_else(|err| panic!("copy {}: {err}", binary.display()));
    to.to_path_buf()
}

/// Peak resident set of one command in KiB, measured by test-support's `peak-rss`.
fn peak_rss_kib(command: Command, out: &Path) -> u64 {
    let program = command.get_program().to_owned();
    let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
    let envs: Vec<_> = command
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let mut wrapped = Command::new(test_support::hook_scripts::test_support_binary("peak-rss"));
    wrapped
        .arg(out)
        .arg(program)
        .args(args)
        .env_clear()
        .envs(envs)
        .current_dir(command.get_current_dir().unwrap_or(Path::new(".")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = wrapped.status().unwrap();
    assert!(status.success(), "{wrapped:?} failed");
    std::fs::read_to_string(out).unwrap().trim().parse().unwrap()
}

fn one_tool_run(elph: &Path, home: &Home, server: &Server) -> Command {
    home.elph_run(
        elph,
        &["run", "--model", "openai/gpt-4.1", "list the files"],
        server,
    )
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn elph_run_one_tool_call(bencher: divan::Bencher) {
    let (elph, home) = (elph(), Home::new());
    let server = Server::start(true);
    bencher.bench_local(|| {
        let status = one_tool_run(&elph, &home, &server).status().unwrap();
        assert!(status.success());
    });
}

fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * q).round() as usize]
}

fn median_u64(samples: &mut [u64]) -> u64 {
    samples.sort();
    samples[samples.len() / 2]
}

/// Interleaved rounds, so drift in machine load hits both alike; prints ratios of medians.
fn summary() {
    let startup = Startup::new(elph());
    let other = other_elph().map(Startup::new);
    let rounds = 60;
    let (mut elph_times, mut other_times, mut curl) = (Vec::new(), Vec::new(), Vec::new());
    let mut full_access = Vec::new();
    for round in 0..5 + rounds {
        // The two elphs take turns going first, so neither always follows curl's exit.
        let (e, o) = if round % 2 == 0 {
            let e = startup.first_byte(Startup::spawn_elph);
            (e, other.as_ref().map(|o| o.first_byte(Startup::spawn_elph)))
        } else {
            let o = other.as_ref().map(|o| o.first_byte(Startup::spawn_elph));
            (startup.first_byte(Startup::spawn_elph), o)
        };
        let c = startup.first_byte(Startup::spawn_curl);
        let f = startup.first_byte(Startup::spawn_elph_full_access);
        if round >= 5 {
            full_access.push(f);
            elph_times.push(e);
            other_times.extend(o);
            curl.push(c);
        }
    }
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    println!();
    if std::env::var_os("ELPH_BENCH_BIN").is_none() {
        // docs/building.md, "Measuring": the dev-dependencies' features make some dependencies
        // other builds than the ones `cargo install` links.
        println!(
            "note: this measures the elph `cargo bench` built, whose dependencies carry the \
             dev-dependencies' features; for the shipped layout set ELPH_BENCH_BIN to a \
             `cargo build --release` elph (docs/building.md)"
        );
    }
    println!(
        "spawn -> first request byte, interleaved ({rounds} rounds), elph = {}:",
        startup.elph.display()
    );
    for (label, q) in [("median", 0.5), ("p10", 0.1), ("fastest", 0.0)] {
        let (e, c) = (quantile(&mut elph_times, q), quantile(&mut curl, q));
        let ratio = e.as_secs_f64() / c.as_secs_f64();
        println!(
            "  {label}: elph run {e:>9.2?}  curl {c:>9.2?}  {ratio:.3}x curl  (target <= {FIRST_BYTE_TARGET}x: {})",
            verdict(ratio <= FIRST_BYTE_TARGET)
        );
    }
    println!("  diagnostic, the same elph with --sandbox full-access (no namespace probes):");
    for (label, q) in [("median", 0.5), ("fastest", 0.0)] {
        let (f, e, c) = (
            quantile(&mut full_access, q),
            quantile(&mut elph_times, q),
            quantile(&mut curl, q),
        );
        println!(
            "  {label}: full-access {f:>9.2?}  {:.3}x curl  {:.3}x elph run",
            f.as_secs_f64() / c.as_secs_f64(),
            f.as_secs_f64() / e.as_secs_f64()
        );
    }
    if let Some(other) = &other {
        println!("  other = {}:", other.elph.display());
        for (label, q) in [("median", 0.5), ("p10", 0.1), ("fastest", 0.0)] {
            let (o, e, c) = (
                quantile(&mut other_times, q),
                quantile(&mut elph_times, q),
                quantile(&mut curl, q),
            );
            println!(
                "  {label}: other {o:>9.2?}  {:.3}x curl  {:.3}x elph",
                o.as_secs_f64() / c.as_secs_f64(),
                o.as_secs_f64() / e.as_secs_f64()
            );
        }
    }

    let home = Home::new();
    let other_home = Home::new();
    let tools = Server::start(true);
    let plain = Server::start(false);
    let out = home.root.join("peak-rss.txt");
    // Each binary is measured from a fresh copy: the kernel maps cached neighbours around each
    // code page fault, so a binary whose file is only partly in the page cache (an older build,
    // say) would show less resident code than the same binary freshly written.
    let elph = fresh_copy(&startup.elph, &home.root.join("elph-under-test"));
    let other_elph = other
        .as_ref()
        .map(|other| fresh_copy(&other.elph, &other_home.root.join("elph-other")));
    let (mut run, mut version, mut curl_rss) = (Vec::new(), Vec::new(), Vec::new());
    let (mut other_run, mut other_version) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        run.push(peak_rss_kib(one_tool_run(&elph, &home, &tools), &out));
        let mut v = home.elph_run(&elph, &["--version"], &plain);
        v.stdout(Stdio::null());
        version.push(peak_rss_kib(v, &out));
        if let Some(other_elph) = &other_elph {
            other_run.push(peak_rss_kib(one_tool_run(other_elph, &other_home, &tools), &out));
            let mut v = other_home.elph_run(other_elph, &["--version"], &plain);
            v.stdout(Stdio::null());
            other_version.push(peak_rss_kib(v, &out));
        }
        let mut c = Command::new("curl");
        c.args(["-sS", "-o", "/dev/null", "--data-binary"])
            .arg(format!("@{}", startup.body_file.display()))
            .arg(format!("{}/chat/completions", plain.base_url()));
        curl_rss.push(peak_rss_kib(c, &out));
        while plain.bodies.try_recv().is_ok() {}
        while tools.bodies.try_recv().is_ok() {}
        while plain.first_bytes.try_recv().is_ok() {}
        while tools.first_bytes.try_recv().is_ok() {}
    }
    let (r, v, c) = (
        median_u64(&mut run),
        median_u64(&mut version),
        median_u64(&mut curl_rss),
    );
    println!("peak resident set, medians of 9:");
    println!(
        "  elph run, one tool call  {r:>6} KiB  {:.2}x `elph --version`  {:.2}x curl  (target <= {PEAK_RSS_TARGET_KIB} KiB: {})",
        r as f64 / v as f64,
        r as f64 / c as f64,
        verdict(r <= PEAK_RSS_TARGET_KIB)
    );
    println!("  elph --version           {v:>6} KiB");
    if other.is_some() {
        let (or, ov) = (median_u64(&mut other_run), median_u64(&mut other_version));
        println!(
            "  other run, one tool call {or:>6} KiB  {:.3}x elph's  {:.2}x curl",
            or as f64 / r as f64,
            or as f64 / c as f64
        );
        println!(
            "  other --version          {ov:>6} KiB  {:.3}x elph's",
            ov as f64 / v as f64
        );
    }
    println!("  curl POST                {c:>6} KiB");
}
