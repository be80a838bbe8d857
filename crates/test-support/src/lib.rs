//! Helpers for Elph's tests.

pub mod fake_model;
pub mod hook_scripts;
pub mod env;
