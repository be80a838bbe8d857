#!/bin/sh
# Appends the sessionStart payload Elph sends on stdin to .elph-hook-audit.log, one JSON line per
# session. (Not inside .elph/: trust pins every file there, so a log in it would make the project
# "changed since trusted".) Prints nothing, so Elph sees "no change".
set -u
log="${ELPH_PROJECT_DIR:-.}/.elph-hook-audit.log"
cat >> "$log"
exit 0
