#!/usr/bin/env bash
# A release `elph` for Linux distributions older than the build machine: linked against the symbol
# versions of glibc 2.28 (Debian 10, RHEL 8, Ubuntu 18.10) instead of the build machine's own.
#
#   scripts/build-old-glibc.sh            # glibc 2.28 -> target/x86_64-unknown-linux-gnu/release/elph
#   ELPH_GLIBC=2.17 scripts/build-old-glibc.sh
#
# cargo-zigbuild (crates.io) links with `zig cc`, which carries stub libraries for each glibc
# version; zig comes from PyPI's `ziglang` package. Both are installed when missing. The C parts
# (SQLite's bundled source, ring's) are compiled by zig cc against the same glibc headers.
# scripts/check-debian.sh runs the result inside a Debian 11 root filesystem.
set -euo pipefail
cd "$(dirname "$0")/.."
glibc=${ELPH_GLIBC:-2.28}
target=x86_64-unknown-linux-gnu

if ! python3 -m ziglang version >/dev/null 2>&1 && ! command -v zig >/dev/null; then
  echo "== installing zig (PyPI: ziglang)"
  python3 -m pip install --quiet ziglang
fi
if ! command -v cargo-zigbuild >/dev/null; then
  echo "== installing cargo-zigbuild (crates.io)"
  cargo install --locked cargo-zigbuild
fi

echo "== building elph for glibc $glibc"
cargo zigbuild --release --locked -p coding-agent --bin elph --target "$target.$glibc"
bin=${CARGO_TARGET_DIR:-target}/$target/release/elph

# The proof on the file itself: the newest glibc symbol version it asks the loader for.
newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -1)
echo "== $bin needs $newest at most"
if objdump -p "$bin" | grep -q GLIBC_ABI_DT_RELR; then
  echo "error: $bin needs GLIBC_ABI_DT_RELR (glibc 2.36)" >&2
  exit 1
fi
if [ "$(printf '%s\n' "GLIBC_$glibc" "$newest" | sort -V | tail -1)" != "GLIBC_$glibc" ]; then
  echo "error: $bin needs $newest, newer than glibc $glibc" >&2
  exit 1
fi
