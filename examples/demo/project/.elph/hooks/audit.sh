#!/bin/sh
# Appends every tool call Elph is about to make to audit.log (one JSON line each); not
# inside .elph/, whose every file trust pins.
# Prints nothing: an audit hook observes, it changes nothing.
cat >> "$ELPH_PROJECT_DIR/audit.log"
exit 0
