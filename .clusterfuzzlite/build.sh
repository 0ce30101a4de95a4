#!/bin/bash
# ClusterFuzzLite / OSS-Fuzz build: the posenc libraries and one libFuzzer target per family,
# compiled with the engine's $CC/$CXX/$CFLAGS/$CXXFLAGS and linked with $LIB_FUZZING_ENGINE.
# Writes to $OUT each <family>_fuzz, its <target>_seed_corpus.zip, <target>.dict and
# <target>.options. Builds in $WORK/build, so running it again is incremental.
# POSENC_FUZZ_TARGETS (e.g. "rope_fuzz t5_fuzz") narrows the build to those targets; unset, it
# builds every one, as OSS-Fuzz runs it.
set -eu
src="$SRC/posenc"
targets=${POSENC_FUZZ_TARGETS:-$(for f in "$src"/fuzz/*_fuzz.cc; do basename "$f" .cc; done)}

# Debian/Ubuntu's fmt and Highway are built against libstdc++; OSS-Fuzz's default libc++ would
# not link with them.
CXXFLAGS="${CXXFLAGS//-stdlib=libc++/}"

cmake -S "$src" -B "$WORK/build" -G Ninja \
  -DCMAKE_BUILD_TYPE= \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DPOSENC_FUZZ=ON -DPOSENC_FUZZ_ENGINE="$LIB_FUZZING_ENGINE"
# shellcheck disable=SC2086  # one argument per target
cmake --build "$WORK/build" -j "$(nproc)" --target $targets

for name in $targets; do
  family=${name%_fuzz}
  cp "$WORK/build/fuzz/$name" "$OUT/"
  rm -f "$OUT/${name}_seed_corpus.zip"
  python3 -m zipfile -c "$OUT/${name}_seed_corpus.zip" "$src/fuzz/corpus/$family"/*
  cp "$src/fuzz/$family.dict" "$OUT/$name.dict"
  printf '[libfuzzer]\nmax_len = 512\ntimeout = 10\n' > "$OUT/$name.options"
done
