#!/usr/bin/env python3
"""postToolUse hook for write_file and edit_file: runs a formatter on the file that was written.

    "args": [".rs", "rustfmt", "--edition", "2024"]

The first argument is the file extension to format; the rest is the formatter command, which gets
the file's path as its last argument and must format the file in place.

When the formatter changes the file, the hook adds a line to the tool result, so that the model
reads the file again before its next edit (edit_file needs the exact text). When the formatter
fails, the hook adds the formatter's error output instead. Otherwise it prints nothing.
"""

import json
import os
import subprocess
import sys


def main() -> None:
    payload = json.load(sys.stdin)
    if len(sys.argv) < 3:
        sys.exit("usage: format-after-write.py EXTENSION FORMATTER [ARG...]")
    extension, formatter = sys.argv[1], sys.argv[2:]

    written = payload.get("toolInput", {}).get("path", "")
    if not written.endswith(extension):
        return
    # Relative paths are relative to the project folder; an absolute path stays as it is.
    path = os.path.join(payload["projectDir"], written)
    try:
        with open(path, "rb") as file:
            before = file.read()
    except OSError:
        return

    try:
        result = subprocess.run(formatter + [path], capture_output=True, text=True)
    except OSError as error:
        # Exit non-zero: Elph reports this in its diagnostics and leaves the result alone.
        sys.exit(f"cannot run {formatter[0]}: {error}")

    name = os.path.basename(formatter[0])
    if result.returncode != 0:
        errors = (result.stderr or result.stdout).strip()[:2000]
        note = f"{name} could not format {written}:\n{errors}"
    else:
        with open(path, "rb") as file:
            if file.read() == before:
                return
        note = f"{name} reformatted {written}. Read it again before you edit it."

    content = payload.get("content", []) + [{"type": "text", "text": note}]
    print(json.dumps({"content": content}))


main()
