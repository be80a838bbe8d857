#!/bin/sh
# herdr-agent-state.sh: report Elph's agent state to Herdr from lifecycle hooks.
#
# Install: copy this file to CONFIG_DIR/hooks/herdr-agent-state.sh, chmod +x it, and add to
# CONFIG_DIR/hooks.json (CONFIG_DIR is $ELPH_HOME, or ~/.config/elph):
#
#   { "$schema": "https://elph.space/hooks-schema.json",
#     "hooks": [
#       { "id": "herdr-start",  "event": "sessionStart",     "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-prompt", "event": "userPromptSubmit", "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-before", "event": "beforeAgent",      "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-tool",   "event": "preToolUse",       "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-ask",    "event": "permissionRequest", "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-ran",    "event": "postToolUse",      "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-failed", "event": "postToolUseFailure", "command": "hooks/herdr-agent-state.sh" },
#       { "id": "herdr-stop",   "event": "stop",             "command": "hooks/herdr-agent-state.sh" } ] }
#
# What it does:
#   - Nothing at all unless HERDR_ENV=1 and HERDR_PANE_ID is set (Herdr sets both in its panes, and
#     Elph forwards them, with HERDR_SOCKET_PATH and HERDR_BIN_PATH, to hooks).
#   - Reads the hook payload (one line of JSON) from stdin and takes the event and the session id
#     from it with sed (no jq needed); ELPH_SESSION_ID, which Elph also sets, wins for the session.
#   - userPromptSubmit, beforeAgent, preToolUse  -> state "working"
#     postToolUse, postToolUseFailure            -> state "working" (an approval was answered)
#     permissionRequest                          -> state "blocked" (an approval waits for you)
#     notification of kind approvalNeeded        -> state "blocked" (the same, for a setup that
#                                                   listens to notification instead)
#     sessionStart, stop                         -> state "idle"
#     sessionStart also binds the native session (report-agent-session), so Herdr can restore it.
#     Other events are ignored.
#   - Always exits 0 and prints nothing: Elph reads a hook's stdout as its outcome, and a Herdr
#     that is down must never get in the agent's way. Herdr's own output and errors are discarded.
#
# The calls (Herdr's CLI: the pane id is the first argument after the subcommand):
#   "${HERDR_BIN_PATH:-herdr}" pane report-agent "$HERDR_PANE_ID" \
#       --source "elph-hooks-SESSION" --agent elph --state working|blocked|idle --seq SEQ
#   "${HERDR_BIN_PATH:-herdr}" pane report-agent-session "$HERDR_PANE_ID" \
#       --source "elph-hooks-SESSION" --agent elph --agent-session-id "$ELPH_SESSION_ID"
#
# Sequence numbers: Herdr ignores a report whose --seq is not newer than the last one it accepted
# from the same source. The source is per session (elph-hooks-SESSION), so every session starts a
# fresh sequence space, and --seq is strictly increasing within it:
#   - where `date +%s%N` gives nanoseconds (GNU date): that;
#   - where it does not (BusyBox and BSD date print "%N", "N" or nothing): seconds * 10^9, raised to
#     one more than the last value used for this session, which is kept in
#     ${TMPDIR:-/tmp}/elph-herdr.<uid>/seq.<session> (a folder of mode 700), so reports within the same second still
#     increase. The file outlives the session on purpose: `elph run -c` may resume the session
#     within the same second, and its reports must still be newer.
#
# Environment: HERDR_ENV, HERDR_PANE_ID (required), HERDR_BIN_PATH (default: herdr on PATH),
# ELPH_SESSION_ID (set by Elph; the payload's sessionId otherwise), TMPDIR.

# Everything below runs with stdout and stderr discarded: nothing this script or Herdr prints can
# reach Elph.
exec >/dev/null 2>&1

[ "${HERDR_ENV:-}" = 1 ] || exit 0
[ -n "${HERDR_PANE_ID:-}" ] || exit 0

payload=$(head -n 1) || payload=

# The value of a top-level string field of the payload. Elph writes `event` and `sessionId` first,
# as plain strings, so the pattern only walks over leading "key":"string" pairs: a key of the same
# name nested deeper (in a tool's input, say) or inside a string never matches.
field() {
    printf '%s\n' "$payload" | sed -n 's/^[[:space:]]*{\([[:space:]]*"[A-Za-z]*"[[:space:]]*:[[:space:]]*"[^"\\]*"[[:space:]]*,\)*[[:space:]]*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"\\]*\)".*/\2/p'
}

event=$(field event)
session_id=${ELPH_SESSION_ID:-$(field sessionId)}
# The session id in the source and the state file's name: only characters safe in both.
session=$(printf '%s' "${session_id:-unknown}" | tr -c 'A-Za-z0-9._-' '_')

herdr=${HERDR_BIN_PATH:-herdr}
agent=elph
source_name="elph-hooks-$session"
state_dir="${TMPDIR:-/tmp}/elph-herdr.$(id -u 2>/dev/null || echo 0)"
state_file="$state_dir/seq.$session"

next_seq() {
    now=$(date +%s%N 2>/dev/null)
    case $now in
        *[!0-9]* | '') now= ;;
    esac
    # GNU date gives 19 digits (seconds and nanoseconds); anything shorter is seconds alone.
    if [ "${#now}" -ge 19 ]; then
        printf '%s\n' "$now"
        return
    fi
    seconds=$(date +%s 2>/dev/null)
    case $seconds in
        *[!0-9]* | '') seconds=0 ;;
    esac
    seq=$((seconds * 1000000000))
    # The state lives in a folder only this user can write to (and that is not someone's symlink).
    (umask 077 && mkdir -p "$state_dir")
    if [ -d "$state_dir" ] && [ ! -L "$state_dir" ] && [ -O "$state_dir" ]; then
        last=$(cat "$state_file" 2>/dev/null)
        case $last in
            *[!0-9]* | '') last=0 ;;
        esac
        if [ "$seq" -le "$last" ]; then
            seq=$((last + 1))
        fi
        printf '%s\n' "$seq" > "$state_file.$$" && mv -f "$state_file.$$" "$state_file"
    fi
    printf '%s\n' "$seq"
}

report() {
    "$herdr" pane report-agent "$HERDR_PANE_ID" --source "$source_name" --agent "$agent" \
        --state "$1" --seq "$(next_seq)" </dev/null
}

case $event in
    sessionStart)
        if [ -n "$session_id" ]; then
            "$herdr" pane report-agent-session "$HERDR_PANE_ID" --source "$source_name" --agent "$agent" \
                --agent-session-id "$session_id" </dev/null
        fi
        report idle
        ;;
    userPromptSubmit | beforeAgent | preToolUse | postToolUse | postToolUseFailure)
        report working
        ;;
    permissionRequest)
        report blocked
        ;;
    notification)
        if [ "$(field kind)" = approvalNeeded ]; then
            report blocked
        fi
        ;;
    stop)
        report idle
        ;;
esac
exit 0
