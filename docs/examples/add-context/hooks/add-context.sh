#!/bin/sh
# beforeAgent hook: appends the text of a file to the system prompt of every turn.
#
#   "args": [".elph/context.md"]
#
# The path is relative to the project folder (the hook's working directory); .elph/context.md is
# the default. When the file does not exist, the hook prints nothing and changes nothing.
# At most 32 KiB of text may reach the model from one outcome; a larger file is refused here with a
# message on stderr, which Elph shows in its diagnostics.

cat > /dev/null    # the payload is not needed
file=${1:-.elph/context.md}
[ -f "$file" ] || exit 0

size=$(wc -c < "$file")
if [ "$size" -gt 32768 ]; then
  echo "add-context: $file is $size bytes; at most 32768 bytes fit in one outcome" >&2
  exit 1
fi

# Make the text one JSON string: drop control characters (tabs become spaces), escape backslashes
# and double quotes, and join the lines with \n.
text=$(tr '\t' ' ' < "$file" \
  | tr -d '\000-\010\013-\037' \
  | sed 's/\\/\\\\/g; s/"/\\"/g' \
  | awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')

printf '{"additionalContext": "%s"}\n' "$text"
