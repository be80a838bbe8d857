//! Helpers for Elph's tests.
#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::string_slice,
    reason = "test code: a failure should stop loudly"
)]

pub mod env;
pub mod fake_model;
pub mod hook_scripts;
pub mod hook_server;
pub mod raw_http;
