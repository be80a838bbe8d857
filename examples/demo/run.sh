#!/bin/sh
# The offline demo: a scripted model works in a copy of examples/demo/project, whose hooks audit,
# block, rewrite, add context and redact. Nothing outside a temporary folder is touched.
# Arguments are passed on to `elph run` (for example --allow-weaker-sandbox on a system without
# user namespaces).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# Which elph: $ELPH_BIN, else the one on PATH (the README installs it), else the checkout's debug build.
if [ -n "${ELPH_BIN:-}" ]; then
  elph=$ELPH_BIN
elif command -v elph >/dev/null 2>&1; then
  elph=$(command -v elph)
else
  elph=$root/target/debug/elph
fi
if [ ! -x "$elph" ]; then
  echo "no elph found (not on PATH, not at $elph)." >&2
  echo "install it: cargo install --locked --path crates/coding-agent" >&2
  echo "  (then make sure ~/.cargo/bin is on your PATH: . \"\$HOME/.cargo/env\")" >&2
  echo "or build it here: cargo build" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/elph-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp -R "$here/project" "$work/project"
ELPH_HOME="$work/config"
ELPH_DATA_DIR="$work/data"
export ELPH_HOME ELPH_DATA_DIR
unset ELPH_PROJECT_DIR ELPH_MODEL

echo "== Using $elph ($("$elph" --version))"
echo
echo "== Trusting the demo project (a temporary copy), so its .elph/hooks.json loads"
"$elph" trust "$work/project"
echo
echo "== The hooks it declares"
# The temporary folder is cut from the paths (every SOURCE starts with it), and as many blanks from
# the header after SOURCE, so the COMMAND column stays aligned.
pad=$(printf '%*s' "$(printf '%s/' "$work" | wc -c)" '')
"$elph" hooks list --cwd "$work/project" | sed -e "s#SOURCE$pad#SOURCE#" -e "s#$work/##g"
echo
echo "== Running one turn with the scripted model (offline)"
echo "   The session's events (elph run --output-format stream-json), shown turn by turn by show.py:"
echo "   each model turn, its tool calls (→), what the model received back (← result, ✗ refused),"
echo "   and each hook's effect (•) next to what it changed; problems are marked !"
echo
status=0
"$elph" run --cwd "$work/project" --model "scripted/$here/script.json" --output-format stream-json "$@" \
  "Tidy up the build output and write down what you did." > "$work/events.jsonl" || status=$?
python3 "$here/show.py" "$work/project" "$work/" < "$work/events.jsonl" || [ "$status" -ne 0 ] || status=1
if [ "$status" -ne 0 ]; then
  echo "the demo's turn failed (exit $status)" >&2
  exit "$status"
fi
echo
echo "== What the hooks left behind"
echo "-- build/ still exists (rm -rf was blocked):"
ls "$work/project/build"
echo "-- the notes landed in docs/ (write_file was rewritten):"
cat "$work/project/docs/notes.txt"
echo "-- audit.log has one line per tool call, the blocked one included:"
python3 -c 'import json, sys; print(", ".join(json.loads(line)["toolName"] for line in sys.stdin))' \
  < "$work/project/audit.log"
wc -l < "$work/project/audit.log" | tr -d ' '
