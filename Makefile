# The two commands of the README: `make demo` and `make test`. Each sets up what it needs first.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2

.PHONY: all setup build demo test bench clean

all: build

setup:
	scripts/setup.sh

$(BUILD)/build.ninja: CMakeLists.txt | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/bin/onnxproof demo

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@cat $(BUILD)/backend-suite-summary.txt

bench: build
	bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
