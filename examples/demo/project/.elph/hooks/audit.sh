#!/bin/sh
# Appends every tool call Elph is about to make to .elph/audit.log (one JSON line each).
# Prints nothing: an audit hook observes, it changes nothing.
cat >> "$ELPH_PROJECT_DIR/.elph/audit.log"
exit 0
