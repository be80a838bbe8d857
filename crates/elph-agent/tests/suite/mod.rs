mod bounded_reads;
mod harness;
mod policy;
mod tools;
