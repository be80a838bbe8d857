#!/bin/sh
# Blocks shell commands that run `rm -rf`. Blocking is an outcome on stdout, never an exit code.
payload=$(cat)
case "$payload" in
  *'rm -rf'*|*'rm -fr'*)
    printf '%s\n' '{"block": true, "reason": "rm -rf is not allowed in this project; delete files one by one"}'
    ;;
esac
exit 0
