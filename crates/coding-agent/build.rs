//! Link flags for the `elph` binary.
//!
//! On Linux with glibc, relative relocations are packed (`-z pack-relative-relocs`, DT_RELR): the
//! binary's ~39,000 R_X86_64_RELATIVE entries become a bitmap of a few KiB. The dynamic loader
//! applied them one by one at every start — about a quarter of the instructions of a whole
//! `elph run` — and the table itself was ~1 MB of the file. The binary then needs glibc 2.36 or
//! later (the loader says so by name on an older one). Only the final link of `elph` changes:
//! dependencies are not rebuilt.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=elph=-Wl,-z,pack-relative-relocs");
    }
}
