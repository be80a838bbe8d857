#!/bin/sh
# Adds the project's house rules to the system prompt of every turn.
cat > /dev/null
printf '%s\n' '{"additionalContext": "House rules: never delete the build folder wholesale; keep notes in docs/."}'
