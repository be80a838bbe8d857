//! The terminal's input: read by a thread of its own and handed to the event loop, each event with
//! the moment it was read.
//!
//! Two things the loop needs that crossterm's `EventStream` did not give:
//! - **No key waits for the next one.** crossterm's default reader waits on an edge-triggered
//!   epoll and returns after the first ready source of a wake-up. When a resize's SIGWINCH and a
//!   key were ready together, the resize was taken and the key stayed unread, with no new edge to
//!   announce it, until another key came (Ctrl+C Ctrl+C during a resize did nothing). Elph builds
//!   crossterm with its `poll(2)` reader (the `use-dev-tty` feature), which asks again each time.
//! - **Moments as typed, not as handled.** A draw on a slow machine can take longer than the
//!   double-press window; each event carries the moment the reader took it from the terminal, so
//!   two presses read together stay a double press however long the draw between them is.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::Event;
use tokio::sync::mpsc;

/// How often the reader looks whether the loop still wants input, when no key comes.
const STOP_CHECK: Duration = Duration::from_millis(200);

/// One event from the terminal and when it was read; an error ends the input.
pub(crate) struct Read {
    pub(crate) at: Instant,
    pub(crate) event: std::io::Result<Event>,
}

/// The reader thread's events. Dropping it stops the thread within [`STOP_CHECK`].
pub(crate) struct Input {
    events: mpsc::UnboundedReceiver<Read>,
    stop: Arc<AtomicBool>,
}

impl Input {
    pub(crate) fn start() -> std::io::Result<Input> {
        let (sender, events) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name("elph-input".into())
            .spawn(move || read_until_stopped(&sender, &stopped))?;
        Ok(Input { events, stop })
    }

    /// The next event; `None` once the terminal cannot be read any more.
    pub(crate) async fn next(&mut self) -> Option<Read> {
        self.events.recv().await
    }

    /// An event already read, without waiting.
    pub(crate) fn ready(&mut self) -> Option<Read> {
        self.events.try_recv().ok()
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn read_until_stopped(sender: &mpsc::UnboundedSender<Read>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let event = match crossterm::event::poll(STOP_CHECK) {
            Ok(false) => continue,
            Ok(true) => crossterm::event::read(),
            Err(error) => Err(error),
        };
        let failed = event.is_err();
        let read = Read {
            at: Instant::now(),
            event,
        };
        if sender.send(read).is_err() || failed {
            return;
        }
    }
}
