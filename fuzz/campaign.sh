#!/bin/sh
# campaign.sh <work dir> <fuzz target> <corpus dir or -> <dict> <libFuzzer flags...>: one of CI's
# fixed campaigns. New inputs go to <work dir>/new (emptied first), crashes to <work dir>.
#
# Everything known to make two runs of one commit differ is pinned, so that they print the same
# execs, coverage, features and corpus (fuzz.determinism checks it). Besides what is pinned here,
# the targets themselves keep libhwy's timer measurement from shifting the heap
# (hwy_timer_resolution.cc):
# - no address space randomisation (setarch -R), and the same argv and environment on every run
#   and in every clone (relative names from inside <work dir>, `env -i` with the few variables
#   below). Addresses reach libFuzzer through the comparisons it traces (an overlap check, a
#   null check) and steer its mutations; with the stack's start fixed, they are the same;
# - the clock-driven actions of libFuzzer (purging the allocator every second once RSS passes half
#   the RSS limit, which moves later buffers; re-reading the output corpus) and of the sanitizer
#   allocator (returning free pages to the OS every 5 s, which turns their stale bytes to zeros):
#   memory the allocator hands out is filled with ASan's 0xbe byte however large, so whatever a
#   kernel reads before writing is the same on every run.
# Another CPU runs another Highway target's code, so coverage is comparable on one machine kind.
# Where personality(ADDR_NO_RANDOMIZE) is forbidden (some container profiles) the campaign still
# runs, with a warning that its coverage may differ between runs.
set -eu
work=$1
target=$(readlink -f "$2")
corpus=$3
dict=$(readlink -f "$4")
shift 4
rm -rf "$work"
mkdir -p "$work/new"
ln -s "$target" "$work/target"
ln -s "$dict" "$work/dict"
dirs=new
if [ "$corpus" != - ]; then
  ln -s "$(readlink -f "$corpus")" "$work/corpus"
  dirs="new corpus"
fi
cd "$work"
set -- ./target -dict=dict "$@" -purge_allocator_interval=-1 -reload=0 -artifact_prefix=./ $dirs
for name in UBSAN_OPTIONS LSAN_OPTIONS POSENC_FUZZ_SERIAL POSENC_FUZZ_BROKEN POSENC_NUM_THREADS; do
  if eval "[ -n \"\${$name+set}\" ]"; then
    eval "set -- \"$name=\${$name}\" \"\$@\""
  fi
done
set -- env -i \
  "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_release_to_os_interval_ms=-1:max_malloc_fill_size=2147483647" \
  "$@"
if setarch -R true 2>/dev/null; then
  exec setarch -R "$@"
fi
echo "campaign.sh: setarch -R is not permitted here; addresses are randomised" >&2
exec "$@"
