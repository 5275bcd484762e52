#!/bin/bash
# per-message.sh BENCH [N] [SCENARIO]: instructions per relayed message of `imbridge-bench SCENARIO
# --only PHASE` (relay by default) for the bridge, the HTTP floor and the baseline, each counted at N
# and 2N messages (500 by default): (count(2N) − count(N)) ÷ N, start-up and warm-up left out. The bridge
# above the floor is the bridge's own cost (docs/performance.md, "Current figures").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:?usage: per-message.sh path/to/imbridge-bench [N] [SCENARIO]}
n=${2:-500}
scenario=${3:-relay}
count() {   # phase, messages → instructions
    "$here/count.sh" "$bench" "$scenario" --only "$1" --messages "$2" 2>&1 >/dev/null | sed -n 's/^instructions: //p' | tail -1
}
declare -A per
for phase in bridge floor baseline; do
    small=$(count "$phase" "$n"); large=$(count "$phase" $((2 * n)))
    per[$phase]=$(( (large - small) / n ))
    echo "$phase: $small at $n, $large at $((2 * n)): ${per[$phase]} per message"
done
echo "bridge above the floor: $(( ${per[bridge]} - ${per[floor]} )) per message"
