#!/bin/bash
# profile.sh OUT CMD [ARGS…]: runs CMD under QEMU's user-mode emulator with profile.c, which writes OUT:
# the process's memory map and how many instructions each translated block ran, all threads (not child
# processes). `profile.py OUT` (or `profile.py SMALL LARGE N`) attributes them to functions, modules and
# libraries (docs/performance.md, "Where the instructions go"). Needs qemu-user and a C compiler.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v qemu-x86_64 >/dev/null || { echo "profile.sh: qemu-x86_64 is missing (apt-get install qemu-user)" >&2; exit 2; }
[ $# -gt 1 ] || { echo "usage: profile.sh OUT CMD [ARGS…]" >&2; exit 2; }
out=$(realpath -m "$1"); shift
plugin=${TMPDIR:-/tmp}/imbridge-instruction-profile-$(id -u).so
[ -f "$plugin" ] && [ "$plugin" -nt "$here/profile.c" ] || cc -shared -fPIC -O2 -o "$plugin" "$here/profile.c"
qemu-x86_64 -plugin "$plugin,out=$out" "$@"
