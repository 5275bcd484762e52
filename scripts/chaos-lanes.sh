#!/usr/bin/env bash
# The fault campaign in parallel lanes, resumable (docs/reliability.md, "Long campaigns").
#   scripts/chaos-lanes.sh BINDIR JOBS SEEDS
# BINDIR holds a built IMBridgePackageTests.xctest and imbridge (`swift build --build-tests`);
# SEEDS is what IMBRIDGE_CHAOS_SEEDS takes (N for 1…N, A-B, A,B,C). `make chaos SEEDS=… JOBS=…` calls it.
#
# Why a script and not the test runner's own parallelism: swift-testing runs a parameterized test's
# cases all at once or one at a time, with no bound in between, and a seed that crashes its process
# would end the run. Here each seed is its own process, JOBS of them at a time.
#
# The build is copied first into a run directory named after the test binary's hash
# ($CHAOS_DIR, default .build/chaos/<hash>): every seed of the run uses that one build, however the
# tree changes meanwhile. results.txt there gets one line per seed. Run the same command again on the
# same build and the seeds already passed are skipped, so a campaign of hours can be stopped and
# resumed. A failed seed keeps its output (seed-N.log) and is run again on a resume.
set -uo pipefail
bindir=${1:?usage: chaos-lanes.sh BINDIR JOBS SEEDS}
jobs=${2:?usage: chaos-lanes.sh BINDIR JOBS SEEDS}
spec=${3:?usage: chaos-lanes.sh BINDIR JOBS SEEDS}
root=$(cd "$(dirname "$0")/.." && pwd)

expand() {
    local part a b
    if [[ $1 =~ ^[0-9]+$ ]]; then seq 1 "$1"; return; fi
    if [[ $1 =~ ^([0-9]+)-([0-9]+)$ ]]; then seq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"; return; fi
    IFS=, read -ra parts <<< "$1"
    for part in "${parts[@]}"; do
        [[ $part =~ ^[0-9]+$ ]] || { echo "chaos-lanes.sh: SEEDS takes N, A-B or A,B,C (got '$1')" >&2; exit 2; }
        echo "$part"
    done
}
mapfile -t seeds < <(expand "$spec")
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "chaos-lanes.sh: JOBS must be a positive number (got '$jobs')" >&2; exit 2; }

hash=$(sha256sum "$bindir/IMBridgePackageTests.xctest" | cut -c1-12)
dir=${CHAOS_DIR:-$root/.build/chaos/$hash}
mkdir -p "$dir"
if [ ! -x "$dir/bin/IMBridgePackageTests.xctest" ]; then
    mkdir -p "$dir/bin"
    cp -r "$bindir/IMBridgePackageTests.xctest" "$bindir/imbridge" "$dir/bin/"
    cp -r "$bindir"/*.resources "$dir/bin/" 2>/dev/null || true
    echo "build $hash of $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown) copied $(date -u +%FT%TZ)" > "$dir/build.txt"
elif [ "$(sha256sum "$dir/bin/IMBridgePackageTests.xctest" | cut -c1-12)" != "$hash" ]; then
    echo "chaos-lanes.sh: $dir holds another build; set CHAOS_DIR to a new directory" >&2
    exit 2
fi
results=$dir/results.txt
touch "$results"
faults=${IMBRIDGE_CHAOS_FAULTS:-}

todo=()
for seed in "${seeds[@]}"; do
    grep -q "^seed $seed pass " "$results" || todo+=("$seed")
done
echo "chaos: ${#seeds[@]} seeds, ${#todo[@]} to run in $jobs lanes on build $hash ($dir)"

lane() {
    local index=$1 i seed log start status kinds
    for ((i = index; i < ${#todo[@]}; i += jobs)); do
        seed=${todo[$i]}
        log=$dir/seed-$seed.log
        start=$(date +%s)
        IMBRIDGE_CHAOS_SEED=$seed IMBRIDGE_CHAOS_FAULTS=$faults \
            "$dir/bin/IMBridgePackageTests.xctest" --testing-library swift-testing --filter ChaosTests \
            > "$log" 2>&1
        status=$?
        kinds=$(grep -m1 '^kinds staged: ' "$log" | sed 's/^kinds staged: //')
        if [ $status -eq 0 ] && grep -q '^every message once, in source order' "$log"; then
            echo "seed $seed pass $(( $(date +%s) - start ))s load=$(cut -d' ' -f1 /proc/loadavg) kinds: $kinds" >> "$results"
            rm -f "$log"
        else
            echo "seed $seed FAIL(status $status) $(( $(date +%s) - start ))s load=$(cut -d' ' -f1 /proc/loadavg) kinds: $kinds" >> "$results"
            echo "chaos: seed $seed FAILED, output in $log (replay: make chaos SEED=$seed${faults:+ FAULTS=$faults})"
        fi
    done
}
for ((l = 0; l < jobs; l++)); do lane "$l" & done
wait

# The campaign's account: seeds passed and failed among those asked for, and the fault kinds staged.
passed=0; failed=()
for seed in "${seeds[@]}"; do
    if grep -q "^seed $seed pass " "$results"; then passed=$((passed + 1)); else failed+=("$seed"); fi
done
echo "chaos: $passed of ${#seeds[@]} seeds passed on build $hash"
for seed in "${seeds[@]}"; do grep -m1 "^seed $seed pass " "$results"; done \
    | sed 's/.* kinds: //' | tr ',' '\n' | awk 'NF == 2 { count[$1] += $2 } END { for (k in count) printf "  %s %d\n", k, count[k] }' | sort
if [ ${#failed[@]} -gt 0 ]; then
    echo "chaos: not passed: ${failed[*]}"
    exit 1
fi
