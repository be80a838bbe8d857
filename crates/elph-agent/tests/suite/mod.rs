mod bounded_reads;
mod harness;
mod policy;
mod tool_schemas;
mod tools;
