# Makefile - thin wrapper around CMake for the two everyday commands.
#
#   make          build into build/ (programs in build/bin/)
#   make demo     install what is missing, build, run the demo (Ctrl-C stops)
#   make check    install what is missing, build with -Werror, run every test,
#                 then again under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz     build the libFuzzer targets with clang into build-fuzz/
#   make fuzz-long  ... and run each for FUZZ_RUNS (10 million) executions
#                 (not part of make check; tests/fuzz/fuzz-long.sh says more)

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
CTEST ?= ctest

.PHONY: all build deps demo check check-plain check-sanitize fuzz fuzz-long bench clean

all: build

deps:
	@./packaging/install-deps.sh

build:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

demo: deps build
	@./packaging/demo.sh

check: deps check-plain check-sanitize

check-plain:
	$(CMAKE) -S . -B build-check -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEADROOM_WERROR=ON >/dev/null
	$(CMAKE) --build build-check -j $(JOBS)
	cd build-check && $(CTEST) --output-on-failure -j $(JOBS)

check-sanitize:
	$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEADROOM_WERROR=ON -DHEADROOM_SANITIZE=ON >/dev/null
	$(CMAKE) --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(CTEST) --output-on-failure -j $(JOBS)

fuzz:
	CC=clang $(CMAKE) -S . -B build-fuzz -DHEADROOM_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	$(CMAKE) --build build-fuzz -j $(JOBS)

FUZZ_RUNS ?= 10000000
fuzz-long: fuzz
	FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/fuzz-long.sh build-fuzz

clean:
	rm -rf build build-check build-asan build-fuzz
