mod bounded_reads;
mod harness;
mod policy;
mod ripgrep_parity;
mod tool_schemas;
mod tools;
