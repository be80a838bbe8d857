//! The smallest useful hook: reads its payload from stdin to EOF and prints `{}`.
//! The hook-host benchmark measures its round trip against a bare spawn-and-wait of this binary.
#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::io::{Read, Write};

fn main() {
    let mut payload = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut payload);
    let _ = std::io::stdout().write_all(b"{}\n");
}
