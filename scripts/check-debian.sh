#!/usr/bin/env bash
# Runs an `elph` where an older Linux would: `elph --version`, `elph doctor` and the offline demo
# inside a Debian 11 (bullseye, glibc 2.31) root filesystem made with debootstrap from Debian's
# packages, entered with chroot. Needs root, debootstrap, and the network to Debian's mirror once.
#
#   sudo scripts/check-debian.sh [ELPH]   # default: the glibc 2.28 build of scripts/build-old-glibc.sh
#
# The root filesystem is made once and kept (ELPH_ROOTFS, default /var/tmp/elph-debian11);
# `rm -rf` it to start over. Not run by CI: it downloads a distribution.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release/elph}
rootfs=${ELPH_ROOTFS:-/var/tmp/elph-debian11}
mirror=${ELPH_DEBIAN_MIRROR:-http://deb.debian.org/debian}

[ "$(id -u)" -eq 0 ] || { echo "run as root: chroot and debootstrap need it" >&2; exit 1; }
[ -x "$bin" ] || { echo "no elph at $bin (build it: scripts/build-old-glibc.sh)" >&2; exit 1; }
if [ ! -x "$rootfs/usr/bin/python3" ]; then
  command -v debootstrap >/dev/null || { echo "needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
  echo "== debootstrap bullseye into $rootfs"
  debootstrap --variant=minbase --include=python3 bullseye "$rootfs" "$mirror"
fi

# What the test runs, copied in: the binary and the demo (its hooks are shell and python3).
rm -rf "$rootfs/opt/elph"
mkdir -p "$rootfs/opt/elph/bin" "$rootfs/opt/elph/examples"
cp "$bin" "$rootfs/opt/elph/bin/elph"
cp -R examples/demo "$rootfs/opt/elph/examples/demo"

# /proc and /dev for the child processes and the sandbox probe; unmounted however the run ends.
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" || true; done
}
trap cleanup EXIT
for dir in proc dev; do
  if ! mountpoint -q "$rootfs/$dir"; then
    if [ "$dir" = proc ]; then mount -t proc proc "$rootfs/proc"; else mount --bind /dev "$rootfs/dev"; fi
    mounted+=("$rootfs/$dir")
  fi
done

chroot "$rootfs" /usr/bin/env -i HOME=/root PATH=/opt/elph/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 \
  /bin/sh -euc '
    echo "== $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
    echo "== elph --version"
    elph --version
    echo "== elph doctor"
    mkdir -p /root/project && cd /root/project
    elph doctor
    echo "== the offline demo"
    # The kernel refuses a user namespace to a process in a chroot, so the sandbox here cannot hold
    # .elph/ read-only nor hide other root processes: elph says which protections are off and
    # refuses to start unless that is accepted, as it is here (the demo'"'"'s hooks do not need them).
    /opt/elph/examples/demo/run.sh --allow-weaker-sandbox
  '
