mod harness;
mod policy;
mod tools;
