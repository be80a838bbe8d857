#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    coding_agent::cli::main()
}
