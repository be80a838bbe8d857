//! Integration tests of elph-ai: real HTTP to a fake model server on 127.0.0.1, real files.

mod suite;
