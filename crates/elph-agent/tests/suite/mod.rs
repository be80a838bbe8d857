mod harness;
mod tools;
