//! The `elph` binary's library: paths, hook discovery, trust, the hook host, and the front ends.

pub mod cli;
pub mod diagnostics;
pub mod hooks;
pub mod paths;
pub mod trust;
