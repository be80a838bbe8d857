mod tools;
mod harness;
