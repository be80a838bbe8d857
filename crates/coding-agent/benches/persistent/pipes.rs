//! A program started once and talked to over a pipe, without Elph: blocking std pipes (the floor
//! for any persistent hook), and tokio's on the host's runtime.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::Fixture;

/// A program started once, talked to over blocking pipes.
pub struct Bare {
    pub child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    answer: Vec<u8>,
    next: u64,
}

impl Bare {
    pub fn start(program: &Path) -> Self {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Bare {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            answer: Vec::new(),
            next: 0,
        }
    }

    pub fn round_trip(&mut self, fixture: &Fixture) {
        self.next += 1;
        self.stdin.write_all(&fixture.line(self.next)).unwrap();
        self.stdin.flush().unwrap();
        self.answer.clear();
        self.stdout.read_until(b'\n', &mut self.answer).unwrap();
        assert!(
            self.answer.ends_with(b"}\n"),
            "{:?}",
            String::from_utf8_lossy(&self.answer)
        );
    }
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same program over tokio's pipes, on the runtime the host runs on.
pub struct Tokio {
    pub child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    answer: Vec<u8>,
    next: u64,
}

impl Tokio {
    pub fn start(runtime: &tokio::runtime::Runtime, program: &Path) -> Self {
        let _entered = runtime.enter();
        let mut child = tokio::process::Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Tokio {
            stdin: child.stdin.take().unwrap(),
            stdout: tokio::io::BufReader::new(child.stdout.take().unwrap()),
            child,
            answer: Vec::new(),
            next: 0,
        }
    }

    pub fn round_trip(&mut self, runtime: &tokio::runtime::Runtime, fixture: &Fixture) {
        self.next += 1;
        let line = fixture.line(self.next);
        runtime.block_on(async {
            self.stdin.write_all(&line).await.unwrap();
            self.stdin.flush().await.unwrap();
            self.answer.clear();
            self.stdout.read_until(b'\n', &mut self.answer).await.unwrap();
        });
        assert!(self.answer.ends_with(b"}\n"));
        let _ = self.child.id();
    }

    /// The same round trip under a deadline, as the host bounds each one: what the timer adds.
    pub fn round_trip_with_deadline(&mut self, runtime: &tokio::runtime::Runtime, fixture: &Fixture) {
        self.next += 1;
        let line = fixture.line(self.next);
        runtime.block_on(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            tokio::time::timeout_at(deadline, async {
                self.stdin.write_all(&line).await.unwrap();
                self.stdin.flush().await.unwrap();
                self.answer.clear();
                self.stdout.read_until(b'\n', &mut self.answer).await.unwrap();
            })
            .await
            .unwrap();
        });
        assert!(self.answer.ends_with(b"}\n"));
    }
}
