# The two commands in README: `make validate` and `make test`. Both install missing Debian
# packages first, then configure and build incrementally.
SHELL := /bin/bash
JOBS ?= $(shell nproc)

# Debian 12 packages the build needs; `make deps` installs whichever are missing.
PACKAGES := cmake ninja-build g++ pkg-config python3 \
  librapidcheck-dev libgtest-dev libbenchmark-dev libeigen3-dev libhwy-dev \
  libcli11-dev libfmt-dev libdlpack-dev libseccomp-dev nlohmann-json3-dev clang-14 libclang-rt-14-dev ccache \
  pybind11-dev python3-pybind11 python3-numpy python3-torch python3-pytest python3-dev python3-yaml

# A compiler cache where one is installed: a new clone on a machine that built posenc before
# recompiles only what differs. Paths are taken relative to the clone (CCACHE_BASEDIR, and the
# working directory left out of the hash), so one clone reuses another's objects. The launcher is
# exported for every command (the ClusterFuzzLite test configures its own tree), and asked for
# again when a build tree is configured, after `deps`: on a fresh machine the first `make`
# installs ccache after this file was read, and that tree would otherwise be built without it.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
ifneq ($(shell command -v ccache),)
export CMAKE_C_COMPILER_LAUNCHER ?= ccache
export CMAKE_CXX_COMPILER_LAUNCHER ?= ccache
endif

.PHONY: all deps release asan fuzz validate test test-release test-asan test-fuzz bench format clean

all: release

deps:
	@missing=$$(for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done | xargs); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "posenc needs these Debian packages; run as root:"; \
	    echo "  apt-get update && apt-get install -y --no-install-recommends $$missing"; \
	    exit 1; \
	  fi; \
	  echo "installing: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Configure once per preset, then let ninja rebuild only what changed.
build/%/build.ninja: | deps
	@if [ -z "$${CMAKE_CXX_COMPILER_LAUNCHER+set}" ] && command -v ccache >/dev/null; then \
	  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache; \
	fi; \
	set -x; cmake --preset $*

release asan fuzz: %: deps build/%/build.ninja
	cmake --build --preset $* -j $(JOBS)

validate: release
	./build/release/tools/posenc validate

test-release: release
	ctest --preset release -j $(JOBS)

test-asan: asan
	ctest --preset asan -j $(JOBS) -L unit

# libFuzzer: replay every corpus, fuzz each target for a fixed number of runs from a fixed seed,
# self-check, and build one target with the ClusterFuzzLite script (label fuzz, about 5 minutes).
test-fuzz: fuzz
	ctest --preset fuzz -j $(JOBS) -L fuzz

test: test-release test-asan test-fuzz

# Every benchmark, then the markdown table (README's Benchmarks section). Narrow it with e.g.
# BENCH_FLAGS=--benchmark_filter=rope/.
BENCH_FLAGS ?=
bench: release
	./build/release/bench/posenc_bench --benchmark_min_time=0.1 $(BENCH_FLAGS) \
	  --benchmark_out=build/bench.json --benchmark_out_format=json
	python3 bench/report.py build/bench.json > build/bench.md
	@echo "wrote build/bench.json and build/bench.md"

format:
	git ls-files '*.cc' '*.h' | xargs clang-format-14 -i

clean:
	rm -rf build
