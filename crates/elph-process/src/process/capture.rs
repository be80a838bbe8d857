//! What is kept of one output stream of a child: the head and the tail within a cap, with the
//! length of the whole.

use std::collections::VecDeque;

/// How much of one output stream is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    /// Up to this many bytes; past them the stream is closed and the process group killed.
    KillPastCap(usize),
    /// The first and the last so many bytes; the middle is read and discarded.
    HeadTail(usize, usize),
}

/// The first `head` and last `tail` bytes of a stream, and how long it was.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    /// An empty capture that keeps what `mode` says.
    pub fn new(mode: CaptureMode) -> Self {
        let (head_cap, tail_cap) = match mode {
            CaptureMode::KillPastCap(cap) => (cap, 0),
            CaptureMode::HeadTail(head, tail) => (head, tail),
        };
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    /// Takes the next bytes read from the stream, keeping the head and tail `mode` allows.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let into_head = chunk.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        chunk = &chunk[into_head..];
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            chunk = &chunk[chunk.len() - self.tail_cap..];
        } else {
            let over = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..over);
        }
        self.tail.extend(chunk);
    }

    /// Bytes the stream carried in all (read, kept or not).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes read and discarded between the head and the tail.
    pub fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept bytes, head then tail: the whole stream when nothing was omitted.
    pub fn into_kept(self) -> Vec<u8> {
        let mut kept = self.head;
        kept.extend(self.tail);
        kept
    }

    /// The kept text; when the middle was discarded, a line says how much.
    pub fn render(&self) -> String {
        let (tail_front, tail_back) = self.tail.as_slices();
        if self.omitted() == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(tail_front);
            all.extend_from_slice(tail_back);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = &self.head[..complete_prefix(&self.head)];
        let mut tail: Vec<u8> = self.tail.iter().copied().collect();
        let skip = tail
            .iter()
            .take(3)
            .take_while(|&&byte| byte & 0xC0 == 0x80)
            .count();
        tail.drain(..skip);
        format!(
            "{}\n[… {} bytes omitted …]\n{}",
            String::from_utf8_lossy(head),
            self.omitted() + skip as u64 + (self.head.len() - head.len()) as u64,
            String::from_utf8_lossy(&tail)
        )
    }
}

/// The length of `bytes` without a UTF-8 sequence cut off at its end.
fn complete_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        _ => bytes.len(),
    }
}

/// Adds `chunk` to `capture`; false when a `KillPastCap` stream passed its cap.
pub(crate) fn keep(capture: &mut Capture, chunk: &[u8], mode: CaptureMode) -> bool {
    capture.push(chunk);
    !matches!(mode, CaptureMode::KillPastCap(_)) || capture.omitted() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF_CAP: usize = 32 * 1024;

    fn head_tail() -> Capture {
        Capture::new(CaptureMode::HeadTail(HALF_CAP, HALF_CAP))
    }

    #[test]
    fn kill_past_cap_keeps_up_to_the_cap() {
        let mode = CaptureMode::KillPastCap(4);
        let mut capture = Capture::new(mode);
        assert!(keep(&mut capture, b"abc", mode));
        assert!(keep(&mut capture, b"d", mode));
        assert!(!keep(&mut capture, b"ef", mode));
        assert_eq!(capture.total(), 6);
        assert_eq!(capture.into_kept(), b"abcd");
    }

    #[test]
    fn head_tail_never_asks_for_a_kill() {
        let mode = CaptureMode::HeadTail(2, 2);
        let mut capture = Capture::new(mode);
        assert!(keep(&mut capture, b"abcdef", mode));
        assert_eq!(capture.omitted(), 2);
        assert_eq!(capture.into_kept(), b"abef");
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut capture = head_tail();
        capture.push(b"hello ");
        capture.push(b"world");
        assert_eq!(capture.render(), "hello world");
        assert_eq!((capture.total(), capture.omitted()), (11, 0));
    }

    #[test]
    fn output_up_to_both_halves_is_kept_whole() {
        let mut capture = head_tail();
        let data: Vec<u8> = (0..2 * HALF_CAP).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in data.chunks(1000) {
            capture.push(piece);
        }
        assert_eq!(capture.omitted(), 0);
        assert_eq!(capture.render().as_bytes(), &data[..]);
    }

    #[test]
    fn the_middle_is_discarded_and_memory_stays_bounded() {
        let mut capture = head_tail();
        capture.push(b"START");
        for _ in 0..1000 {
            capture.push(&[b'x'; 10_000]);
        }
        capture.push(b"END");
        assert_eq!(capture.total(), 10_000_008);
        assert!(capture.head.len() <= HALF_CAP && capture.tail.len() <= HALF_CAP);
        assert!(capture.tail.capacity() < 4 * HALF_CAP);
        let text = capture.render();
        assert!(text.starts_with("START"));
        assert!(text.ends_with("END"));
        assert!(text.contains(&format!("[… {} bytes omitted …]", 10_000_008 - 2 * HALF_CAP)));
    }

    #[test]
    fn a_huge_single_chunk_keeps_its_end() {
        let mut capture = head_tail();
        let mut chunk = vec![b'a'; 3 * HALF_CAP];
        chunk.extend_from_slice(b"END");
        capture.push(&chunk);
        assert_eq!(capture.tail.len(), HALF_CAP);
        assert!(capture.render().ends_with("aEND"));
    }

    #[test]
    fn cuts_do_not_split_characters() {
        let mut capture = head_tail();
        let text = "é".repeat(3 * HALF_CAP);
        capture.push(text.as_bytes());
        let rendered = capture.render();
        assert!(!rendered.contains('\u{FFFD}'), "no replacement characters");
        let omitted: u64 = rendered
            .split("[… ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let kept = rendered.replace(&format!("\n[… {omitted} bytes omitted …]\n"), "");
        assert_eq!(kept.len() as u64 + omitted, capture.total());
    }
}
