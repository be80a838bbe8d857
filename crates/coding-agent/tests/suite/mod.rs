mod common;
mod config_corpus;
mod schema;
