//! The smallest persistent hook: answers every payload line on stdin with "no change" for its
//! request, `{"requestId":N}`, until stdin closes. It finds the id the way a shell hook can,
//! as the payload line's first field, without parsing the rest. The hook benchmarks measure a
//! persistent round trip with it.

#![forbid(unsafe_code)]
use std::io::{BufRead, Write};

const PREFIX: &str = "{\"requestId\":";

fn main() {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let id = line
            .strip_prefix(PREFIX)
            .map(|rest| rest.split([',', '}']).next().unwrap_or_default());
        let answer = match id {
            Some(id) => format!("{PREFIX}{id}}}\n"),
            // A payload without an id (a bare round trip in a benchmark): no change.
            None => "{}\n".to_string(),
        };
        if stdout
            .write_all(answer.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
