#!/bin/sh
# Audit hook: appends one JSON line per event it receives to a log file, and prints nothing.
#
#   {"time": "2025-06-01T12:00:00Z", "hook": "audit-tool-calls", "payload": {...}}
#
# The log is the first argument (relative paths are relative to the project folder), else
# $HOME/.local/state/elph/audit.jsonl. The default keeps the log out of the project: a hook in your
# own CONFIG_DIR/hooks.json also runs in projects you have not trusted.
#
# Elph sends the payload as one line of JSON, so each event becomes exactly one line.

log=${1:-"$HOME/.local/state/elph/audit.jsonl"}
mkdir -p "$(dirname "$log")" || exit 1
payload=$(cat)
printf '{"time": "%s", "hook": "%s", "payload": %s}\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$ELPH_HOOK_ID" "$payload" >> "$log"
