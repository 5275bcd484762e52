#!/bin/bash
# count.sh CMD [ARGS…]: runs CMD under QEMU's user-mode emulator with counter.c, which prints
# "instructions: N" on stderr when the process exits: every guest instruction of the process, all its
# threads (not its child processes). Unlike CPU time the count does not move with the machine's load
# (±0.3 % between runs of the bench). Needs qemu-user (apt-get install qemu-user) and a C compiler.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v qemu-x86_64 >/dev/null || { echo "count.sh: qemu-x86_64 is missing (apt-get install qemu-user)" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: count.sh CMD [ARGS…]" >&2; exit 2; }
plugin=${TMPDIR:-/tmp}/imbridge-instruction-counter-$(id -u).so
[ -f "$plugin" ] && [ "$plugin" -nt "$here/counter.c" ] || cc -shared -fPIC -O2 -o "$plugin" "$here/counter.c"
# The plugin's line goes to QEMU's log, a file here: written to stderr it can be lost at exit.
log=$(mktemp "${TMPDIR:-/tmp}/imbridge-instructions.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
qemu-x86_64 -plugin "$plugin" -d plugin -D "$log" "$@" || status=$?
cat "$log" >&2
exit $status
