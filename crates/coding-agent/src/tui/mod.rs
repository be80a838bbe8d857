//! The terminal UI (`elph` with no subcommand, after the trust gate).
//!
//! - `app`: the state and `update(msg)`; `view`: drawing; `transcript`, `markdown`, `wrap`: the
//!   transcript's rows; `composer`: the multi-line input; `commands`: slash commands and the
//!   palette; `hookview`: the hook set, recent runs and the `/hooks` panel.
//! - `farewell`: the transcript and the resume hint, printed after the screen is restored.
//! - `worker`: the app's side of its [`Session`]: session events as the app's messages.
//! - `input`: the terminal's events, read by a thread of their own with the moment each came.
//!
//! This module sets up the terminal (raw mode, alternate screen, bracketed paste), restores it on
//! every way out (a panic too), and runs the event loop: terminal input, the agent's messages, and
//! a 100 ms tick for the spinner. Logs go to `DATA_DIR/logs/elph.log`, never to the screen.

pub mod app;
pub(crate) mod commands;
pub(crate) mod composer;
pub(crate) mod elicitation;
pub(crate) mod farewell;
pub mod hookview;
mod input;
pub(crate) mod items;
pub(crate) mod markdown;
pub(crate) mod mcp_inputs;
pub(crate) mod transcript;
pub mod view;
pub mod worker;
pub(crate) mod wrap;

use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::cli::exit;
use crate::paths::Paths;
use crate::session::{Approvals, Session, SessionOptions};
use crate::trust::TrustDecision;
use app::{App, Msg};

/// Runs the TUI for the project in `paths` until the person quits. `decision` is the startup
/// gate's; the runtime reads trust again when it loads the hooks (and on every reload).
pub fn run(paths: Paths, mut options: SessionOptions, decision: TrustDecision) -> anyhow::Result<u8> {
    if !crate::gate::has_terminal() {
        eprintln!("elph: the terminal UI needs a terminal on stdin and stdout; use `elph run` in scripts");
        return Ok(exit::USAGE);
    }
    // The MCP files' inputs, once for the session, before the screen opens.
    match mcp_inputs::ask(&paths, decision.trusted).context("cannot ask the MCP servers' inputs")? {
        mcp_inputs::Asked::Answered(inputs) => options.mcp_inputs = inputs,
        mcp_inputs::Asked::Interrupted => return Ok(exit::INTERRUPTED),
    }
    crate::logging::to_file(&paths);
    tracing::info!(
        project = %paths.project_dir.display(),
        trusted = decision.trusted,
        "starting the terminal UI"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(main_loop(paths, options));
    // Whatever still runs (an interrupted sessionEnd hook) is dropped, which kills its process group.
    runtime.shutdown_timeout(Duration::from_secs(2));
    result
}

async fn main_loop(paths: Paths, options: SessionOptions) -> anyhow::Result<u8> {
    let project = paths.project_dir.display().to_string();
    // Errors here (no model set, an unreadable store) print before the screen changes.
    let (session, mut events) = Session::open(paths, options, Approvals::Asked)?;
    let (session, session_task) = session.spawn();

    let mut screen = Screen::enter().context("cannot set up the terminal")?;
    let mut app = App::new(Instant::now());
    app.status.project_dir = project;
    let mut input = input::Input::start().context("cannot read the terminal")?;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // SIGTERM, SIGHUP, SIGQUIT (and SIGINT sent with `kill`; Ctrl+C is a key here) end the session
    // as /quit does, with the shutdown's 2 s hook deadline; a second one exits at once, with the
    // terminal restored.
    let shutdown = crate::shutdown::Shutdown::install(true).context("cannot watch for signals")?;
    crate::shutdown::before_forced_exit(restore_terminal);
    let mut signalled = false;
    let mut dirty = true;
    let no_color = view::no_color();
    let mut screen_ok = true;
    let mut worker_gone = false;
    let mut input_done = false;

    loop {
        if dirty && screen_ok {
            let draw = |frame: &mut ratatui::Frame<'_>| {
                view::draw(frame, &app);
                if no_color {
                    view::strip_colors(frame.buffer_mut());
                }
            };
            if let Err(error) = screen.terminal.draw(draw) {
                tracing::error!(%error, "cannot draw; ending the session");
                screen_ok = false;
                if !app.quitting {
                    app.quit();
                }
            }
            dirty = false;
        }
        tokio::select! {
            read = input.next(), if !input_done => {
                input_done = !take_input(&mut app, read);
                // Every event already read is handled before the next draw.
                while !input_done && let Some(read) = input.ready() {
                    input_done = !take_input(&mut app, Some(read));
                }
                dirty = true;
            }
            event = events.recv(), if !worker_gone => {
                match event {
                    Some(event) => {
                        app.update_all(worker::ui_messages(event));
                        // Take what else is waiting before drawing again (a fast stream).
                        while let Ok(event) = events.try_recv() {
                            app.update_all(worker::ui_messages(event));
                        }
                    }
                    None => {
                        worker_gone = true;
                        app.exit = true;
                    }
                }
                dirty = true;
            }
            _ = tick.tick() => {
                app.update(Msg::Tick(Instant::now()));
                dirty |= app.busy.is_some() || app.hint.is_some();
            }
            // Told to stop: end the session (sessionEnd hooks run), then exit.
            () = shutdown.requested(), if !signalled => {
                signalled = true;
                app.interrupted();
            }
        }
        // No terminal to read: end the session, then exit.
        if input_done && !app.quitting {
            app.quit();
        }
        for op in app.take_commands() {
            session.submit(op);
        }
        if app.exit {
            break;
        }
    }
    let width = screen.terminal.size().map_or(80, |size| size.width as usize);
    screen.restore();
    // The alternate screen kept nothing: leave the conversation in the scrollback. Errors are
    // ignored (after SIGHUP there is no terminal to write to).
    let farewell = farewell::text(&app.items, width, &app.status.session_id);
    if !farewell.is_empty() {
        let mut out = std::io::stdout();
        let _ = out.write_all(farewell.as_bytes());
        let _ = out.flush();
    }
    drop(session);
    if !session_task.is_finished() {
        // Ended without waiting for sessionEnd (Ctrl+C while quitting): give it a moment.
        let _ = tokio::time::timeout(Duration::from_millis(200), session_task).await;
    }
    if let Some(code) = shutdown.exit_code() {
        return Ok(code);
    }
    if worker_gone && !app.quitting {
        anyhow::bail!("the agent stopped unexpectedly; see {}", "DATA_DIR/logs/elph.log");
    }
    Ok(exit::SUCCESS)
}

/// Gives the app one event read from the terminal, at the moment it was read (a double press is
/// judged by when the keys came, not by when a busy loop got to them); false once the terminal
/// cannot be read.
fn take_input(app: &mut App, read: Option<input::Read>) -> bool {
    let Some(read) = read else {
        return false;
    };
    app.now = read.at;
    match read.event {
        Ok(Event::Key(key)) => app.update(Msg::Key(key)),
        Ok(Event::Paste(text)) => app.update(Msg::Paste(text)),
        Ok(_) => {} // resizes redraw below; the terminal resizes itself
        Err(error) => {
            tracing::error!(%error, "cannot read the terminal");
            return false;
        }
    }
    true
}

/// Whether the terminal is in the TUI's mode, for the panic hook.
static ACTIVE: AtomicBool = AtomicBool::new(false);

fn restore_terminal() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// The terminal in raw mode on the alternate screen; restored on drop and on panic.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> anyhow::Result<Screen> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        crossterm::execute!(
            out,
            EnterAlternateScreen,
            crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
            EnableBracketedPaste,
            // Lets terminals that support it report Shift+Enter; the others ignore it.
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        // Never `Terminal::clear`: it asks the terminal for the cursor position and waits.
        let terminal = Terminal::new(CrosstermBackend::new(out))?;
        Ok(Screen { terminal })
    }

    fn restore(&mut self) {
        let _ = self.terminal.show_cursor();
        restore_terminal();
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.restore();
    }
}
