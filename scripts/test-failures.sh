#!/usr/bin/env bash
# Prints what failed in a `swift test` log, so the end of `make test`'s output names it: a CI that keeps
# only the last lines of a long run otherwise shows just "failed … with 1 issue".
# Usage: scripts/test-failures.sh LOG
log=${1:?usage: test-failures.sh LOG}
echo
echo "==== make test: what failed (from $log) ===="
# Swift Testing: an issue line starts with ✘ and names the test, file and line; the lines after it up to
# the next test event (◇ ✔ ✘ ↳ or a log line) are its message. Suites' summaries repeat the count.
awk '
  /^✘ Test / && !/^✘ Test run / { print; inissue = 1; next }
  /^(◇|✔|✘|↳|[0-9]{4}-[0-9]{2}-[0-9]{2}T)/ { inissue = 0 }
  inissue && NF { print "    " $0 }
' "$log" | head -200
# A build error or a crash leaves no ✘ line: its last lines say what happened.
if ! grep -q '^✘ Test ' "$log"; then
  grep -E 'error:|Fatal error|Crash|signal [0-9]+|exited with' "$log" | tail -40
fi
grep -E '^✘ Test run |Test run with .* failed' "$log" | tail -1
