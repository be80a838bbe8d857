#!/usr/bin/env python3
"""Replaces anything that looks like an API key in a tool result before the model sees it."""
import json
import re
import sys

payload = json.load(sys.stdin)
pattern = re.compile(r"sk-[A-Za-z0-9_-]{8,}")
changed = False
content = []
for block in payload.get("content", []):
    if block.get("type") == "text" and pattern.search(block["text"]):
        block = {"type": "text", "text": pattern.sub("[REDACTED]", block["text"])}
        changed = True
    content.append(block)
if changed:
    print(json.dumps({"content": content, "details": {"redactedBy": "redact-secrets"}}))
