# The two commands of the README: `make demo` and `make test`. Each sets up what it needs first.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2

# ccache (setup installs it): a fresh clone then compiles only what no earlier build did. Paths
# are taken relative to the checkout, so a clone in another folder hits the same cache entries.
LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

.PHONY: all setup setup-gpu setup-ort-versions build demo wheel test test-fast bench fuzz sanitize clean

all: build

setup:
	scripts/setup.sh

# Opt-in, never part of build or test: ONNX Runtime with the CUDA and TensorRT providers in
# .deps/onnxruntime-gpu, selected at run time by ONNXPROOF_ONNXRUNTIME (docs/providers.md).
setup-gpu: setup
	scripts/fetch-onnxruntime-gpu.sh

# ONNX Runtime releases for proofs per release (--target ort-cpu@VERSION, docs/cli.md), into the
# release cache: make setup-ort-versions ORT_VERSIONS="1.18 1.20 1.22"
ORT_VERSIONS ?= 1.14 1.15 1.16 1.17 1.18 1.19 1.20 1.21 1.22 1.23 1.24 1.25 1.26 1.27 1.28 1.29 1.30 1.31
setup-ort-versions: setup
	scripts/fetch-onnxruntime-versions.sh $(ORT_VERSIONS)

# The Makefile too: a build folder configured before a flag here (the ccache launcher) gets it.
$(BUILD)/build.ninja: CMakeLists.txt Makefile | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(LAUNCHER)
	touch $@

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/bin/onnxproof demo

# The wheel of the engine `make build` compiled (nothing compiled again): dist/onnxproof-*.whl.
wheel: build
	scripts/build-wheel.sh --engine $(BUILD)/bin/onnxproof

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@cat $(BUILD)/backend-suite-summary.txt

# Everything but the tests labelled slow (the wheel, the fuzz smoke, the backend suite, the
# cross-version lane: docs/testing.md); CI runs `make test`, all of them.
test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE slow

bench: build
	bench/run.sh $(BUILD)

# A longer fuzzing run (seconds per target): make fuzz FUZZ_SECONDS=600
FUZZ_SECONDS ?= 300
fuzz: setup
	scripts/fuzz.sh long $(FUZZ_SECONDS)

# The whole test suite with AddressSanitizer and UndefinedBehaviorSanitizer (gcc), in build-asan/.
sanitize: setup
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXPROOF_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS) -LE fuzz

clean:
	rm -rf $(BUILD) build-asan build-fuzz
