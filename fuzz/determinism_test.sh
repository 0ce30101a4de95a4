#!/bin/sh
# determinism_test.sh <scratch dir> <fuzz target> <corpus dir> <dict> <libFuzzer flags...>: runs
# one of CI's campaigns twice (campaign.sh, in <scratch dir>/1 and /2) and fails unless both print
# the same final execs, coverage, features and corpus. Exits 77 (skipped) where setarch -R is not
# permitted, since addresses then differ by design.
set -eu
scratch=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
if ! setarch -R true 2>/dev/null; then
  echo "setarch -R is not permitted here: campaigns cannot be compared" >&2
  exit 77
fi
rm -rf "$scratch"
mkdir -p "$scratch"
for run in 1 2; do
  sh "$here/campaign.sh" "$scratch/$run" "$@" >"$scratch/$run.log" 2>&1 || {
    cat "$scratch/$run.log"
    exit 1
  }
  grep -E '^#[0-9]+[[:space:]]+DONE' "$scratch/$run.log" | sed -E 's/[[:space:]]+exec\/s:.*//' \
    >"$scratch/$run.done"
  echo "run $run: $(cat "$scratch/$run.done")"
done
if ! cmp -s "$scratch/1.done" "$scratch/2.done" || [ ! -s "$scratch/1.done" ]; then
  echo "the two runs differ (or printed no DONE line)" >&2
  exit 1
fi
