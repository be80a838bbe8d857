//! Shared helpers for the coding-agent tests.
