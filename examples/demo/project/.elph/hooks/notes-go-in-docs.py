#!/usr/bin/env python3
"""Rewrites write_file calls for notes so they land in docs/: notes.txt -> docs/notes.txt."""
import json
import sys

payload = json.load(sys.stdin)
tool_input = payload["toolInput"]
path = tool_input.get("path", "")
if path.startswith("notes") and "/" not in path:
    tool_input["path"] = "docs/" + path
    print(json.dumps({"toolInput": tool_input}))
