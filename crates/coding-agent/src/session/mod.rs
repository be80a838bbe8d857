//! One agent session for every front end.

pub mod commands;
