#!/bin/sh
# Runs .clusterfuzzlite/build.sh the way OSS-Fuzz's `compile` would, without Docker: the engine's
# variables set by hand, a fresh $OUT, and $WORK (with $SRC inside, as the build dir remembers its
# source path) kept between runs so rebuilds are incremental. Then checks that the target, its seed
# corpus, dictionary and options reached $OUT, and that the target replays its seed corpus from
# the zip.
#
# To stay cheap next to the fuzz preset's build, it builds one target (POSENC_FUZZ_TARGETS), at
# -O0 and for Highway's static target only (HWY_COMPILE_ONLY_STATIC): what it tests is build.sh's
# plumbing, not the kernels, which the fuzz preset's targets fuzz under every Highway target.
# Usage: clusterfuzzlite_test.sh <source dir> <work dir> [target, default rope_fuzz]
set -eu
source_dir=$1
export WORK="$2"
export POSENC_FUZZ_TARGETS="${3:-rope_fuzz}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export OUT="$scratch/out" SRC="$WORK/src"
mkdir -p "$OUT" "$SRC"
ln -sfn "$source_dir" "$SRC/posenc"
export CC=clang-14 CXX=clang++-14
export CFLAGS="-O0 -gline-tables-only -fsanitize=address,fuzzer-no-link -DHWY_COMPILE_ONLY_STATIC"
export CXXFLAGS="$CFLAGS -stdlib=libc++"  # as OSS-Fuzz sets it; build.sh must drop it
export LIB_FUZZING_ENGINE=-fsanitize=fuzzer
bash "$source_dir/.clusterfuzzlite/build.sh"

for target in $POSENC_FUZZ_TARGETS; do
  for file in "$target" "${target}_seed_corpus.zip" "$target.dict" "$target.options"; do
    [ -s "$OUT/$file" ] || { echo "missing \$OUT/$file"; exit 1; }
  done
  mkdir "$scratch/$target"
  python3 -m zipfile -e "$OUT/${target}_seed_corpus.zip" "$scratch/$target"
  "$OUT/$target" -runs=0 -dict="$OUT/$target.dict" "$scratch/$target"
  echo "ok: $target"
done
