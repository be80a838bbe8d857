//! Reading Elph's configuration files so that a file cannot trick the reader.
//!
//! Every config file (hooks.json, trust.json, mcp.json, settings.json, provider catalogs) goes through
//! [`read_config`] and [`parse_json`]: a FIFO or a device cannot hang or exhaust the reader, a huge file
//! is refused, and a duplicate key is an error instead of a silent "last one wins". [`private`] creates
//! CONFIG_DIR and DATA_DIR owner-only whatever the umask.

#![forbid(unsafe_code)]
pub mod json;
pub mod private;
pub mod read;

pub use json::{JsonError, parse_json};
pub use read::{MAX_CONFIG_BYTES, ReadError, read_config};
