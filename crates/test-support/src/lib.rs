//! Helpers for Elph's tests.

pub mod env;
pub mod fake_model;
pub mod hook_scripts;
