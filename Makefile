# Convenience targets; each installs what it needs first, so both work on a fresh Debian 12 clone.
#   make demo   build the program only (not the tests) and run `gpudoctor demo`: simulated GPUs
#               with known problems, no GPU needed. About 280 CPU-seconds of compiling (src/ in
#               unity groups, docs/architecture.md "Building"): under 3 minutes on 2 idle cores
#   make test   build release and sanitizer (ASan+UBSan) configurations and run every test in both
PRESET ?= release
DEMO_CAPTURE ?= tests/data/captures/demo-4gpu.json
JOBS ?= $(shell nproc)

.PHONY: deps build demo package image capture-demo watch-demo test test-release test-asan bench format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS)

# The quickest first run: the build packages only, then the one target the demo needs (every room
# of src/ and the program; no tests, benchmarks or stand-ins).
demo:
	@bash scripts/install-deps.sh build
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS) --target gpudoctor
	@./build/$(PRESET)/src/gpudoctor demo

# `gpudoctor status` on a bundled capture, replayed through the stand-in NVML library.
capture-demo: build
	@GPUDOCTOR_NVML_LIB=$(CURDIR)/build/$(PRESET)/tests/fake_nvml/libnvidia-ml.so.1 \
	  GPUDOCTOR_FAKE_NVML_CAPTURE=$(CURDIR)/$(DEMO_CAPTURE) \
	  ./build/$(PRESET)/src/gpudoctor status

watch-demo: build
	@GPUDOCTOR_NVML_LIB=$(CURDIR)/build/$(PRESET)/tests/fake_nvml/libnvidia-ml.so.1 \
	  GPUDOCTOR_FAKE_NVML_CAPTURE=$(CURDIR)/$(DEMO_CAPTURE) \
	  ./build/$(PRESET)/src/gpudoctor watch -i 1s -c 10

test-release: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@ctest --preset release -j $(JOBS)

# The sanitizer build: clang with ASan + UBSan (the `clang-asan` preset, whose objects the fuzz
# targets share); the g++ -O0 `asan` preset is there for debugging by hand.
test-asan: deps
	@cmake --preset clang-asan >/dev/null
	@cmake --build --preset clang-asan -j $(JOBS)
	@ctest --preset clang-asan -j $(JOBS)

test: test-release test-asan

bench: PRESET=release
bench: build
	@./build/release/bench/gpudoctor_bench

# The Debian package (build/$(PRESET)/package/gpudoctor_<version>_amd64.deb) and the container
# image (gpudoctor:<version>, buildah): docs/install.md.
package: build
	@cd build/$(PRESET) && cpack --config CPackConfig.cmake

image: build
	@bash scripts/build-image.sh build/$(PRESET)/src/gpudoctor

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	@rm -rf build
