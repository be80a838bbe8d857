//! Integration tests of elph-ai: real HTTP to a fake model server on 127.0.0.1, real files.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

mod suite;
