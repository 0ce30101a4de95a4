#!/bin/sh
# Runs .clusterfuzzlite/build.sh the way OSS-Fuzz's `compile` would, without Docker: the engine's
# variables set by hand, a fresh $OUT, and $WORK (with $SRC inside, as the build dir remembers its
# source path) kept between runs so rebuilds are incremental. Then checks every family's target, seed corpus, dictionary and options reached
# $OUT, and that each target replays its seed corpus from the zip.
# Usage: clusterfuzzlite_test.sh <source dir> <work dir>
set -eu
source_dir=$1
export WORK=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OUT="$scratch/out" SRC="$WORK/src"
mkdir -p "$OUT" "$SRC"
ln -sfn "$source_dir" "$SRC/posenc"
export CC=clang-14 CXX=clang++-14
export CFLAGS="-O1 -gline-tables-only -fsanitize=address,fuzzer-no-link"
export CXXFLAGS="$CFLAGS -stdlib=libc++"  # as OSS-Fuzz sets it; build.sh must drop it
export LIB_FUZZING_ENGINE=-fsanitize=fuzzer
bash "$source_dir/.clusterfuzzlite/build.sh"

for target_source in "$source_dir"/fuzz/*_fuzz.cc; do
  target=$(basename "$target_source" .cc)
  for file in "$target" "${target}_seed_corpus.zip" "$target.dict" "$target.options"; do
    [ -s "$OUT/$file" ] || { echo "missing \$OUT/$file"; exit 1; }
  done
  mkdir "$scratch/$target"
  python3 -m zipfile -e "$OUT/${target}_seed_corpus.zip" "$scratch/$target"
  "$OUT/$target" -runs=0 -dict="$OUT/$target.dict" "$scratch/$target"
  echo "ok: $target"
done
