#!/bin/sh
# preToolUse hook: blocks a shell command that contains one of the patterns given as arguments.
#
#   "args": ["rm -rf", "git push --force"]
#
# Patterns are literal text, not regular expressions. With no arguments, the hook blocks "rm -rf".
# It looks at the raw JSON payload, so a pattern with a quote or a backslash must be written as it
# appears inside a JSON string (\" and \\). Use it with "matcher": {"toolNames": ["shell_exec"]}.
#
# Blocking is an outcome printed on stdout with exit code 0. An exit code never blocks in Elph.

payload=$(cat)
[ "$#" -gt 0 ] || set -- "rm -rf"

for pattern in "$@"; do
  case "$payload" in
    *"$pattern"*)
      # Escape the pattern for a JSON string: backslashes first, then double quotes.
      shown=$(printf '%s' "$pattern" | sed 's/\\/\\\\/g; s/"/\\"/g')
      printf '{"block": true, "reason": "commands containing '\''%s'\'' are not allowed in this project"}\n' "$shown"
      exit 0
      ;;
  esac
done

# Not matched: print nothing, which means "no change".
exit 0
