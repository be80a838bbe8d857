//! The bounds every hook run lives within (docs/hooks.md, "Limits").

use std::time::Duration;

/// A payload larger than this is not sent: the hook is skipped with a diagnostic.
pub const MAX_INPUT_BYTES: usize = 128 * 1024;
/// stdout past this many bytes kills the hook's process group.
pub const MAX_STDOUT_BYTES: usize = 64 * 1024;
/// The context all beforeAgent hooks together may add to one request, unless settings say
/// otherwise (`hooks.maxAddedContextBytes`).
pub(crate) const DEFAULT_MAX_ADDED_CONTEXT_BYTES: usize = 128 * 1024;
/// The largest `maxInputBytes` or `maxOutputBytes` a hook may set.
pub const MAX_CONFIGURABLE_BYTES: usize = 16 * 1024 * 1024;
/// The smallest `maxInputBytes` or `maxOutputBytes` a hook may set.
pub const MIN_CONFIGURABLE_BYTES: usize = 1024;
/// stderr past this many bytes kills the hook's process group.
pub const MAX_STDERR_BYTES: usize = 64 * 1024;
/// The largest string a single outcome may put into the model's context.
pub const MAX_RETURNED_CONTEXT_BYTES: usize = 32 * 1024;
/// How much stderr a diagnostic quotes.
pub const MAX_DIAGNOSTIC_STDERR_BYTES: usize = 1024;
/// The largest `timeoutMs` a hook may set.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(60_000);
/// The smallest `timeoutMs` a hook may set.
pub const MIN_TIMEOUT_MS: u64 = 1;
/// Timeout when a hook does not set `timeoutMs`, in milliseconds as written in hooks.json.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// `MAX_TIMEOUT` in milliseconds, as written in hooks.json.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// How many times the fail-closed guards of one chain run again on a payload that later hooks
/// changed, before a payload that keeps changing fails them (docs/hooks.md, "Guards see what runs").
pub const MAX_GUARD_RECHECK_ROUNDS: usize = 4;
