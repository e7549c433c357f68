# Makefile - thin wrapper around CMake for the two everyday commands.
#
#   make          build into build/ (programs in build/bin/)
#   make demo     install what is missing, build, run the demo (Ctrl-C stops)
#   make check    install what is missing, build with -Werror, run every test,
#                 then again under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz     build the libFuzzer targets with clang into build-fuzz/
#   make fuzz-long  ... and run each for FUZZ_RUNS (10 million) executions
#                 (not part of make check; tests/fuzz/fuzz-long.sh says more)
#   make deb      build build-deb/ with Debian's hardening flags and pack the
#                 Debian package (packaging/build-deb.sh; build-deb/deb/*.deb)
#   make check-packaging  pack build-check/'s programs and test the package
#                 (tests/packaging/test_package.py; part of make check-plain)

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
CTEST ?= ctest

.PHONY: all build deps demo check check-plain check-sanitize check-packaging deb fuzz fuzz-long \
	bench clean

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
	$(MAKE) --no-print-directory check-packaging

# The package of build-check's programs (already built and tested above):
# its contents, lintian, the programs run from an extracted tree, the unit;
# then the Dockerfile through two linters from npm.
# PKG_BUILD names another (configured) build directory.
PKG_BUILD ?= build-check
check-packaging:
	$(CMAKE) --build $(PKG_BUILD) -j $(JOBS) --target headroomd headroom-worker headroom-mock headroom headroom-agent
	/usr/bin/python3 tests/packaging/test_package.py $(PKG_BUILD)
	./packaging/lint-dockerfile.sh

# Debian's build flags (hardening: stack protector, fortify, relro, bindnow,
# PIE) as a package build uses them, in a build directory of its own.
# DEB_BUILD names another build directory.
DEB_FLAGS = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
DEB_BUILD ?= build-deb
deb: deps
	$(CMAKE) -S . -B $(DEB_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_FLAGS="$$($(DEB_FLAGS) CFLAGS) $$($(DEB_FLAGS) CPPFLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="$$($(DEB_FLAGS) LDFLAGS)" >/dev/null
	$(CMAKE) --build $(DEB_BUILD) -j $(JOBS) --target headroomd headroom-worker headroom-mock headroom headroom-agent
	./packaging/build-deb.sh $(DEB_BUILD)

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
	rm -rf build build-check build-asan build-fuzz build-deb
