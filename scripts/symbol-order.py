#!/usr/bin/env python3
"""Regenerates crates/coding-agent/symbol-order.txt: the functions a one-tool `elph run` executes.

build.rs hands the file to the linker (LLD's --symbol-ordering-file) for optimised builds, which
then lays those functions out together at the start of .text, so a run maps ~3 MB of code instead
of ~11 (see docs/building.md). Run it after a toolchain or dependency upgrade, or when the run's
path changed; `elph run`'s peak RSS in the startup bench says when it is due.

    python3 scripts/symbol-order.py                  # release: symbol-order.txt, ~5 minutes
    python3 scripts/symbol-order.py --profile dist   # dist: symbol-order-dist.txt; every link
                                                     # is a fat LTO link, so fewer perf rounds:
    python3 scripts/symbol-order.py --profile dist --rounds 2

Needs: valgrind (callgrind), perf (software page-fault events: root, or
kernel.perf_event_paranoid <= 1), nm (binutils), cargo.

How: an unstripped release `elph` (same code and layout as the shipped one, plus a symbol table)
runs a one-tool `elph run` against a local model server twice (the first run creates the
database) under callgrind, which names every function that executed. Callgrind cannot follow a
few paths (valgrind has no Landlock system calls, so those runs use `--sandbox full-access`, and
it serialises threads), so the binary is then relinked with the list and run natively under
`perf record -e page-faults -d`: every function outside the list whose code took a page fault is
added, and this repeats until none is left. The file lists the names in their address order in
the unordered build (crate by crate), so a regeneration's diff stays readable.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_DIR = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))

TOOL_REPLY = (
    'data: {"id":"r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":'
    '"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":'
    '"list_dir","arguments":"{\\"path\\":\\".\\"}"}}]},"finish_reason":null}]}\n\n'
    'data: {"id":"r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
    '"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)
DONE_REPLY = (
    'data: {"id":"r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":'
    '"assistant","content":"done"},"finish_reason":null}]}\n\n'
    'data: {"id":"r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
    '"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def serve_model(listener):
    """Answers chat-completions requests: a list_dir call, then "done", alternating."""
    next_is_tool = True
    while True:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                body += chunk
            reply = (TOOL_REPLY if next_is_tool else DONE_REPLY).encode()
            next_is_tool = not next_is_tool
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(reply)
                + reply
            )


def run(cmd, **kwargs):
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kwargs)


def link_elph(profile, order_file, names, symbols):
    """Links an unstripped release elph whose .text starts with `names` and returns its path.

    build.rs takes the list from ELPH_SYMBOL_ORDER; touching main.rs makes cargo relink."""
    with open(order_file, "w") as f:
        f.write("".join(f"{name}\n" for name in sorted(names, key=symbols.get)))
    os.utime(os.path.join(REPO, "crates", "coding-agent", "src", "main.rs"))
    run(["cargo", "rustc", "--profile", profile, "-p", "coding-agent", "--bin", "elph", "--",
         "-C", "strip=none"], cwd=REPO, env={**os.environ, "ELPH_SYMBOL_ORDER": order_file})
    return os.path.join(TARGET_DIR, profile, "elph")


def text_symbols(binary):
    """Name -> address of every function in the binary's symbol table."""
    out = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True,
                         text=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            symbols.setdefault(parts[2], int(parts[0], 16))
    return symbols


class Home:
    """A hermetic config/data/project folder set and a model server for `elph run`."""

    def __init__(self, root):
        self.root = root
        for sub in ("home", "config", "data", "project"):
            os.makedirs(os.path.join(root, sub))
        with open(os.path.join(root, "project", "a.txt"), "w") as f:
            f.write("hi\n")
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        threading.Thread(target=serve_model, args=(listener,), daemon=True).start()

    def elph_run(self, wrapper, elph, extra=()):
        env = {
            "HOME": os.path.join(self.root, "home"),
            "ELPH_HOME": os.path.join(self.root, "config"),
            "ELPH_DATA_DIR": os.path.join(self.root, "data"),
            "PATH": os.environ.get("PATH", ""),
            "OPENAI_API_KEY": "sk-order",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{self.port}/v1",
        }
        cmd = [*wrapper, elph, "run", "--model", "openai/gpt-4.1", *extra, "list the files"]
        run(cmd, env=env, cwd=os.path.join(self.root, "project"), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600)


def callgrind_functions(elph, work):
    """Every function name callgrind saw executing in two one-tool runs (a fresh and a stored
    database)."""
    home = Home(os.path.join(work, "callgrind-home"))
    out = os.path.join(work, "callgrind.%p")
    wrapper = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no",
               f"--callgrind-out-file={out}"]
    for _ in range(2):
        home.elph_run(wrapper, elph, ["--sandbox", "full-access"])
    names = set()
    definition = re.compile(r"^c?fn=\(\d+\) (.*)$")
    for entry in os.listdir(work):
        if entry.startswith("callgrind."):
            with open(os.path.join(work, entry), errors="replace") as f:
                for line in f:
                    match = definition.match(line.rstrip("\n"))
                    if match:
                        names.add(match.group(1))
    return names


def faulting_functions(elph, work, round_no):
    """Functions of `elph` whose code took a page fault in two native one-tool runs."""
    home = Home(os.path.join(work, f"perf-home-{round_no}"))
    names = set()
    line_re = re.compile(r"^\s*([0-9a-f]+)\s+.*?\s+\(.*?\)\s+([0-9a-f]+)\s+(.*?)\s+\((.*?)\)\s*$")
    for i in range(2):
        data = os.path.join(work, f"faults-{round_no}-{i}.data")
        home.elph_run(["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", data],
                      elph)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "addr,ip,sym,dso",
                                 "--no-demangle"], check=True, capture_output=True,
                                text=True).stdout
        for line in script.splitlines():
            match = line_re.match(line)
            if not match or not match.group(4).endswith(os.path.basename(elph)):
                continue
            # An instruction fetch: the fault is on the page of the instruction itself.
            if int(match.group(1), 16) >> 12 == int(match.group(2), 16) >> 12:
                names.add(match.group(3))
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="release", help="release (default) or dist")
    parser.add_argument("--rounds", type=int, default=6, help="perf rounds at most (default 6)")
    args = parser.parse_args()
    suffix = "" if args.profile == "release" else f"-{args.profile}"
    order_out = os.path.join(REPO, "crates", "coding-agent", f"symbol-order{suffix}.txt")
    for tool in ("valgrind", "perf", "nm", "cargo"):
        if shutil.which(tool) is None:
            sys.exit(f"symbol-order: `{tool}` is needed and is not on PATH")
    with tempfile.TemporaryDirectory(prefix="elph-symbol-order-") as work:
        order_file = os.path.join(work, "order.txt")
        # An empty list first: the layout of a build without one, whose addresses sort the file.
        plain = os.path.join(work, "elph")
        shutil.copy(link_elph(args.profile, order_file, [], {}), plain)
        symbols = text_symbols(plain)
        order = {name for name in callgrind_functions(plain, work) if name in symbols}
        print(f"callgrind: {len(order)} functions", file=sys.stderr)
        for round_no in range(args.rounds):
            ordered = os.path.join(work, "elph-ordered")
            shutil.copy(link_elph(args.profile, order_file, order, symbols), ordered)
            missing = {n for n in faulting_functions(ordered, work, round_no) if n in symbols}
            missing -= order
            print(f"perf round {round_no}: {len(missing)} more", file=sys.stderr)
            if not missing:
                break
            order |= missing
        with open(order_out, "w") as f:
            f.write("".join(f"{name}\n" for name in sorted(order, key=symbols.get)))
        print(f"wrote {order_out}: {len(order)} functions", file=sys.stderr)
    # Leave target/PROFILE/elph as a normal build links it (stripped, with the new file).
    run(["cargo", "build", "--profile", args.profile, "-p", "coding-agent", "--bin", "elph"],
        cwd=REPO)


if __name__ == "__main__":
    main()
