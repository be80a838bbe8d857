//! The coding-agent integration tests: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::string_slice,
    reason = "test code: a failure should stop loudly"
)]

mod suite;
