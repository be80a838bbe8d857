#!/usr/bin/env python3
"""preToolUse hook for shell_exec: caps how long one shell command may run.

    "args": ["60000"]

The argument is the cap in milliseconds (default 60000). A call that sets no timeout_ms, or a larger
one, is rewritten to use the cap; other calls are left alone (the hook prints nothing).

toolInput replaces the whole argument object, so the hook returns every field, not only the one it
changed. Elph checks the rewritten arguments against the tool's schema again before the call runs.
"""

import json
import sys

payload = json.load(sys.stdin)
cap = int(sys.argv[1]) if len(sys.argv) > 1 else 60000

tool_input = payload["toolInput"]
if tool_input.get("timeout_ms", cap + 1) > cap:
    tool_input["timeout_ms"] = cap
    print(json.dumps({"toolInput": tool_input}))
