//! The one integration-test binary of elph-agent (see DESIGN.md: one binary per crate).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::string_slice,
    reason = "test code: a failure should stop loudly"
)]

mod suite;
