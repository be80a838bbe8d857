//! The smallest persistent hook: answers every payload line on stdin with `{}` on one line, until
//! stdin closes. The hook benchmarks measure a persistent round trip with it.

#![forbid(unsafe_code)]
use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        if line.is_err() || stdout.write_all(b"{}\n").and_then(|()| stdout.flush()).is_err() {
            break;
        }
    }
}
