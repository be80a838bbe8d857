//! A server-sent events parser (the WHATWG `text/event-stream` format) that reads each byte once and
//! holds at most one event.
//!
//! Written here rather than taken from `eventsource-stream`, which scans its whole buffer again for
//! every chunk and copies the rest after every line (a 4 MiB delta in small chunks took seconds) and
//! has no bound on an event's size. Here a chunk is scanned from where the last one ended, a line is
//! cut out once, and the event being assembled may not grow past `max_event_bytes`.

use std::fmt;

/// One dispatched event: its type (`message` when the server named none) and its data lines joined
/// by `\n`. `id` and `retry` fields are read and dropped: a model stream is never reconnected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Why the stream cannot be read on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SseError {
    /// One event (its pending line and the data read so far) passed the cap.
    EventTooLarge { limit: usize },
    /// A line is not UTF-8; `line` counts from 1.
    InvalidUtf8 { line: u64 },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => write!(f, "one event is larger than {limit} bytes"),
            SseError::InvalidUtf8 { line } => write!(f, "line {line} of the stream is not valid UTF-8"),
        }
    }
}

/// Incremental parser: feed it the body's chunks in order with [`SseParser::push`].
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Bytes of the line not yet ended.
    pending: Vec<u8>,
    /// The event type and data of the event being assembled.
    event: String,
    data: String,
    /// The previous chunk ended in CR: a LF at the start of this one ends nothing new.
    after_cr: bool,
    /// Whether the byte-order mark check at the very start is still due.
    at_start: bool,
    lines: u64,
    max_event_bytes: usize,
}

impl SseParser {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseParser {
            pending: Vec::new(),
            event: String::new(),
            data: String::new(),
            after_cr: false,
            at_start: true,
            lines: 0,
            max_event_bytes,
        }
    }

    /// Reads one chunk; every event it completes is passed to `on_event` in order. Returns how many
    /// lines that are not empty (fields and comments) the chunk completed: the server's sign of
    /// life. After an error the parser must not be fed again.
    pub(crate) fn push(
        &mut self,
        mut chunk: &[u8],
        on_event: &mut dyn FnMut(SseEvent),
    ) -> Result<usize, SseError> {
        if self.at_start {
            // The BOM may arrive split over the first chunks: wait until three bytes are there.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let seen = self.pending.len() + chunk.len();
            if seen < BOM.len() && BOM.starts_with(&[self.pending.as_slice(), chunk].concat()) {
                self.pending.extend_from_slice(chunk);
                return Ok(0);
            }
            self.at_start = false;
            let mut head = std::mem::take(&mut self.pending);
            head.extend_from_slice(chunk);
            let body = head.strip_prefix(BOM).unwrap_or(&head);
            return self.push_body(body, on_event);
        }
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = chunk.get(1..).unwrap_or_default();
        }
        self.after_cr = false;
        self.push_body(chunk, on_event)
    }

    fn push_body(&mut self, chunk: &[u8], on_event: &mut dyn FnMut(SseEvent)) -> Result<usize, SseError> {
        let mut rest = chunk;
        let mut lines = 0;
        while let Some(at) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, tail) = rest.split_at(at);
            let ending = tail.first().copied();
            rest = tail.get(1..).unwrap_or_default();
            if ending == Some(b'\r') {
                match rest.first() {
                    Some(b'\n') => rest = rest.get(1..).unwrap_or_default(),
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.check_size(line.len())?;
            if !(line.is_empty() && self.pending.is_empty()) {
                lines += 1;
            }
            if self.pending.is_empty() {
                self.line(line, on_event)?;
            } else {
                let mut whole = std::mem::take(&mut self.pending);
                whole.extend_from_slice(line);
                self.line(&whole, on_event)?;
            }
        }
        self.check_size(rest.len())?;
        self.pending.extend_from_slice(rest);
        Ok(lines)
    }

    /// An event may hold `max_event_bytes` in all: its data so far, its type and the line not yet
    /// ended (`extra` more bytes of which are about to be added).
    fn check_size(&self, extra: usize) -> Result<(), SseError> {
        let size = self.data.len() + self.event.len() + self.pending.len() + extra;
        if size > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    fn line(&mut self, line: &[u8], on_event: &mut dyn FnMut(SseEvent)) -> Result<(), SseError> {
        self.lines += 1;
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line.first() == Some(&b':') {
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8 { line: self.lines })?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            // `id` and `retry` matter only for reconnecting, which a model call never does.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(SseEvent)) {
        let event = std::mem::take(&mut self.event);
        let mut data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return;
        }
        if data.ends_with('\n') {
            data.pop();
        }
        on_event(SseEvent {
            event: if event.is_empty() { "message".into() } else { event },
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], size: usize) -> Result<Vec<SseEvent>, SseError> {
        let mut parser = SseParser::new(1024);
        let mut events = Vec::new();
        for chunk in input.chunks(size.max(1)) {
            parser.push(chunk, &mut |e| events.push(e))?;
        }
        Ok(events)
    }

    fn event(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn every_line_ending_and_every_chunking_give_the_same_events() {
        let input = b"\xEF\xBB\xBF: comment\r\nevent: delta\rdata: one\ndata:two\r\n\r\nid: 7\nretry: 10\ndata\n\n\ndata: last\r\n\r";
        let expected = vec![
            event("delta", "one\ntwo"),
            event("message", ""),
            event("message", "last"),
        ];
        // `data` with no colon is an empty data line: that event's data is "" (one empty line).
        for size in 1..input.len() {
            assert_eq!(
                parse_in_chunks(input, size).unwrap(),
                expected,
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_an_unended_one_is_dropped() {
        assert_eq!(parse_in_chunks(b"event: x\n\ndata: half", 3).unwrap(), vec![]);
    }

    #[test]
    fn the_cap_counts_the_data_and_the_line_being_read() {
        let mut events = Vec::new();
        let mut parser = SseParser::new(16);
        parser.push(b"data: 12345\n", &mut |e| events.push(e)).unwrap();
        assert_eq!(
            parser.push(b"data: 678901", &mut |e| events.push(e)),
            Err(SseError::EventTooLarge { limit: 16 })
        );
        let mut parser = SseParser::new(16);
        assert_eq!(
            parser.push(&[b'x'; 17], &mut |e| events.push(e)),
            Err(SseError::EventTooLarge { limit: 16 })
        );
        // Dispatching frees the room.
        let mut parser = SseParser::new(16);
        for _ in 0..5 {
            parser.push(b"data: 12345\n\n", &mut |e| events.push(e)).unwrap();
        }
        assert_eq!(events.len(), 5);
    }

    #[test]
    fn only_completed_lines_that_say_something_count_as_progress() {
        let mut parser = SseParser::new(1024);
        let mut sink = |_| {};
        assert_eq!(parser.push(b"data: par", &mut sink).unwrap(), 0);
        assert_eq!(
            parser
                .push(
                    b"tial


", &mut sink
                )
                .unwrap(),
            1
        );
        assert_eq!(
            parser
                .push(
                    b": ping
", &mut sink
                )
                .unwrap(),
            1
        );
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        assert_eq!(
            parse_in_chunks(b"data: ok\n\ndata: \xff\n\n", 4),
            Err(SseError::InvalidUtf8 { line: 3 })
        );
    }
}
