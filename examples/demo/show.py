#!/usr/bin/env python3
"""Shows one `elph run --output-format stream-json` session turn by turn, for the demo.

Reads the JSON lines on stdin. Prints what you asked, each of the model's turns, each tool call
with what the model got back, and each hook's effect next to what it changed: the context added
to the system prompt, a tool input before and after a rewrite, a file's lines as they are on disk
and as the model received them after a redaction. Problems (diagnostics, notices) are shown with
`!`. Exits 1 if the turn did not complete.

usage: show.py PROJECT_DIR [PREFIX_TO_HIDE] < events.jsonl
"""
import difflib
import json
import os
import sys

project = sys.argv[1]
hide = sys.argv[2] if len(sys.argv) > 2 else None


def out(line=""):
    if hide:
        line = line.replace(hide, "")
    print(line)


def compact(value):
    return json.dumps(value, ensure_ascii=False)


def text_of(content):
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


def show_input_change(before, after):
    """Each field the rewrite changed: what the model asked for, then what runs."""
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out(f"      the model asked for:  {compact(key)}: {compact(before.get(key))}")
            out(f"      what runs:            {compact(key)}: {compact(after.get(key))}")


def show_replaced_file(path, received):
    """The lines of a file read that a hook changed: as on disk, and as the model received them."""
    try:
        with open(os.path.join(project, path), encoding="utf-8") as file:
            on_disk = file.read()
    except OSError as error:
        out(f"      (cannot read {path} to compare: {error.strerror})")
        return
    label = f"{path} on disk:"
    width = max(len(label), len("the model received:")) + 2
    for line in difflib.ndiff(on_disk.splitlines(), received.splitlines()):
        if line.startswith("- "):
            out(f"      {label:<{width}}{line[2:]}")
        elif line.startswith("+ "):
            out(f"      {'the model received:':<{width}}{line[2:]}")


def show_result(mark, text, shown=4):
    """What the model received for a call: its first few lines, each cut at 110 characters."""
    lines = text.splitlines() or [""]
    for index, line in enumerate(lines[:shown]):
        line = line if len(line) <= 110 else line[:110] + "…"
        out(f"    {mark if index == 0 else ' '} {line}")
    if len(lines) > shown:
        out(f"      (+{len(lines) - shown} more lines)")


calls = {}  # toolCallId -> {"name", "input"}
rewriters = []  # ids of the preToolUse hooks that returned a toolInput, for the next rewrite
replacers = []  # ids of the postToolUse hooks that replaced the result, for the next finished call
status = None
error = None

for raw in sys.stdin:
    event = json.loads(raw)
    kind = event["type"]
    if kind == "turnStarted":
        out(f"you: {event['prompt']}")
    elif kind == "hooks":
        dispatch = event["dispatch"]
        runs = [run for run in dispatch["runs"] if run.get("outcome")]
        if dispatch["event"] == "beforeAgent":
            # What the model receives is the reduced list (a cap may drop additions), so show
            # that, naming the hook each addition came from.
            for added in dispatch["reduced"].get("systemPromptAdditions", []):
                hooks = [run["hookId"] for run in runs if run["outcome"].get("additionalContext") == added]
                names = ", ".join(f"'{hook}'" for hook in hooks) or "a hook"
                out(f"  • hook {names} added to the system prompt for this turn;")
                out("    the model receives it at the end of its system prompt:")
                for line in added.splitlines():
                    out(f"      {line}")
        elif dispatch["event"] == "preToolUse":
            for run in runs:
                if run["outcome"].get("block"):
                    out(f"    • hook '{run['hookId']}' blocked the tool call: {run['outcome'].get('reason')}")
            rewriters = [run["hookId"] for run in runs if run["outcome"].get("toolInput") is not None]
        elif dispatch["event"] in ("postToolUse", "postToolUseFailure"):
            replacers = [run["hookId"] for run in runs if run["outcome"].get("content") is not None]
    elif kind == "assistantMessage":
        out()
        out(f"model: {event['text']}")
    elif kind == "toolCallStarted":
        calls[event["toolCallId"]] = {"name": event["toolName"], "input": event["input"]}
        out(f"    → {event['toolName']} {compact(event['input'])}")
    elif kind == "toolInputRewritten":
        call = calls[event["toolCallId"]]
        names = ", ".join(f"'{hook}'" for hook in rewriters) or "a hook"
        out(f"    • hook {names} rewrote the tool input:")
        show_input_change(call["input"], event["input"])
        call["input"] = event["input"]
    elif kind == "toolCallFinished":
        call = calls.get(event["toolCallId"], {"name": event["toolName"], "input": {}})
        received = text_of(event["content"])
        if replacers:
            names = ", ".join(f"'{hook}'" for hook in replacers)
            out(f"    • hook {names} replaced the tool result before the model saw it:")
            if call["name"] == "read_file" and "path" in call["input"]:
                show_replaced_file(call["input"]["path"], received)
            else:
                show_result(" ", received)
            replacers = []
        show_result("✗" if event["isError"] or not event["ran"] else "←", received)
    elif kind in ("diagnostic", "notice"):
        out(f"  ! {event['message']}")
    elif kind == "turnEnded":
        status, error = event["status"], event.get("error")

if status is None:
    out()
    out("the turn never started: elph stopped before it (its message is above)")
    sys.exit(1)
if status != "completed":
    out()
    out(f"the turn did not complete: {status} {error or ''}".rstrip())
    sys.exit(1)
