//! The ACP connection's lines, read with bounds: a line is at most [`MAX_LINE`] bytes and must be
//! UTF-8. A line that breaks either rule is not read whole and does not end the connection: it is
//! handed on as a short note that is not JSON, which the protocol layer answers with a JSON-RPC
//! parse error (-32700, the note in its `data.line`); the next line is served as usual.

use std::io;

use futures::Stream;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line accepted: 16 MiB (a prompt with large embedded files fits).
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

struct State<R> {
    reader: R,
    max: usize,
    number: u64,
}

/// The lines of `reader` without their line ends, each at most `max` bytes and valid UTF-8, or a
/// note (not JSON) standing in for a line that was not.
pub(crate) fn bounded_lines<R: AsyncBufRead + Unpin + Send + 'static>(
    reader: R,
    max: usize,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::unfold(
        State {
            reader,
            max,
            number: 0,
        },
        |mut state| async move {
            let line = next_line(&mut state).await.transpose()?;
            Some((line, state))
        },
    )
}

async fn next_line<R: AsyncBufRead + Unpin>(state: &mut State<R>) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = state.reader.fill_buf().await?;
        if available.is_empty() {
            if !read_any {
                return Ok(None);
            }
            break;
        }
        read_any = true;
        let (chunk, found_end) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        if !too_long {
            if line.len() + chunk.len() > state.max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(found_end);
        state.reader.consume(used);
        if found_end {
            break;
        }
    }
    state.number += 1;
    if too_long {
        tracing::warn!(
            line = state.number,
            "an ACP line over the size limit was discarded"
        );
        return Ok(Some(format!(
            "elph: line {} is longer than {} bytes; it was discarded",
            state.number, state.max
        )));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    match String::from_utf8(line) {
        Ok(text) => Ok(Some(text)),
        Err(error) => {
            tracing::warn!(line = state.number, "an ACP line that is not UTF-8 was discarded");
            Ok(Some(format!(
                "elph: line {} is not valid UTF-8 (byte {} is not); it was discarded",
                state.number,
                error.utf8_error().valid_up_to()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let reader = tokio::io::BufReader::with_capacity(4, std::io::Cursor::new(input.to_vec()));
        bounded_lines(reader, max)
            .map(|line| line.unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn good_lines_pass_and_bad_ones_become_notes() {
        let input = b"{\"a\":1}\r\n\xff\xfe\n0123456789abcdef\n{\"b\":2}";
        let out = lines(input, 10).await;
        assert_eq!(out[0], "{\"a\":1}");
        assert_eq!(
            out[1],
            "elph: line 2 is not valid UTF-8 (byte 0 is not); it was discarded"
        );
        assert_eq!(out[2], "elph: line 3 is longer than 10 bytes; it was discarded");
        assert_eq!(out[3], "{\"b\":2}", "the last line needs no newline");
        assert_eq!(out.len(), 4);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, failure_persistence: None, ..Default::default() })]

        /// Any bytes, any buffer size: every item is a line within the cap (or a note standing
        /// for one), one per line end (plus an unended last line), never a panic.
        #[test]
        fn any_bytes_become_bounded_lines_or_notes(
            input in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just(b'\n'),
                    proptest::prelude::Just(b'\r'),
                    proptest::prelude::any::<u8>(),
                ],
                0..512,
            ),
            max in 1usize..40,
            capacity in 1usize..16,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let out: Vec<String> = runtime.block_on(async {
                let reader = tokio::io::BufReader::with_capacity(capacity, std::io::Cursor::new(input.clone()));
                bounded_lines(reader, max).map(|line| line.unwrap()).collect().await
            });
            let ends = input.iter().filter(|&&b| b == b'\n').count();
            let unended = usize::from(!input.is_empty() && input.last() != Some(&b'\n'));
            proptest::prop_assert_eq!(out.len(), ends + unended);
            for line in &out {
                proptest::prop_assert!(line.len() <= max || line.starts_with("elph: line "), "{line:?}");
            }
        }
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_kept() {
        assert_eq!(lines(b"0123456789\n", 10).await, ["0123456789"]);
        assert!(lines(b"", 10).await.is_empty());
    }
}
