//! Logs for the front ends that own stdout (the TUI's screen, ACP's protocol frames): they go to
//! `DATA_DIR/logs/elph.log`, at the level `ELPH_LOG` sets (default `info`), never to stdout. The file
//! rotates by size (see `logrotate`).

use crate::paths::Paths;

/// Sends `tracing` output to `DATA_DIR/logs/elph.log`. Logging is best effort: a folder or file that
/// cannot be created leaves logging off rather than stopping Elph.
pub(crate) fn to_file(paths: &Paths) {
    let dir = paths.logs_dir();
    // Owner-only whatever the umask: the log can quote prompts and tool output.
    if elph_config::private::create_private_dir_all(&dir).is_err() {
        return;
    }
    let Ok(file) = crate::logrotate::RotatingFile::open(&dir.join("elph.log"), crate::logrotate::max_bytes())
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ELPH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}
