# tensorkit: `make demo` and `make test` work from a clean clone on Debian 12.
# Each installs what is missing (scripts/install-deps.sh), configures and builds, then runs.
# The binaries are portable (x86-64-v2; the vector kernels are chosen at run time from the
# processor); NATIVE=1 compiles everything for the build machine instead.

BUILD    ?= build
NATIVE   ?= 0
JOBS     ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=

native_flag := $(if $(filter 1 yes on ON,$(NATIVE)),-DTK_NATIVE=ON,-DTK_NATIVE=OFF)

.PHONY: all deps bench-deps build wheel test test-unit test-latest-refs demo test-asan fuzz bench-io crash-test crash-test-mpi clean

all: build

# What scripts/install-deps.sh adds to the system packages: by default .venv with the
# reference packages without torch; the targets that run the tests of label torch ask
# for it (--torch), `make test-unit` for nothing but the system packages (--system-only).
DEPS_FLAGS ?=

deps:
	@bash scripts/install-deps.sh $(DEPS_FLAGS)

# The peers the benchmark scripts compare against (zipnn, which brings torch).
bench-deps:
	@bash scripts/install-deps.sh --bench

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(native_flag) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j$(JOBS)

# The wheel (pyproject.toml): the tools and the Python package for `pip install` by users
# without root, with the shared libraries they load (auditwheel), in build-wheel/dist/:
# a CPU build of its own in build-wheel/ (no CUDA, no MPI). `make test WHEEL=1` (.ci/run)
# builds it first for the ctest wheel.install; a plain `make test` leaves that second
# build out, and the test reports itself skipped.
WHEEL ?= 0
wheel: deps
	@bash scripts/build-wheel.sh

# The whole suite, every label (CI: .ci/run).
test: DEPS_FLAGS = --torch
test: build $(if $(filter 1 yes on ON,$(WHEEL)),wheel)
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# The unit tests alone (label unit): the C++ build, no Python, no .venv. The other layers
# run alone the same way, e.g. ctest --test-dir build -L cli (see README).
test-unit: DEPS_FLAGS = --system-only
test-unit: deps $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j$(JOBS) --target tk_unit_tests
	ctest --test-dir $(BUILD) -L unit --output-on-failure -j$(JOBS)

# The reference tests against the newest Python reference packages instead of the pinned
# ones (a separate .venv-latest): reports each package that moved and each test that fails.
test-latest-refs: build
	@bash scripts/test-latest-refs.sh $(BUILD)

demo: build
	@bash scripts/demo.sh $(BUILD)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: DEPS_FLAGS = --torch
test-asan: deps
	@[ -f build-asan/CMakeCache.txt ] || cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTK_SANITIZE=ON
	@cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:suppressions=$(CURDIR)/tests/asan.supp \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:fast_unwind_on_malloc=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j$(JOBS)

# Every libFuzzer target (tests/fuzz/fuzz_NAME.cpp) for FUZZ_SECONDS each (clang), each
# from its committed seeds (tests/fuzz/corpus/NAME) and regressions (tests/fuzz/regressions/NAME)
# in a working corpus under fuzz-corpus/NAME; what crashes lands in fuzz-corpus/artifacts/. Every
# target runs even when one finds something; the run then fails, naming them.
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
fuzz: deps
	@[ -f build-fuzz/CMakeCache.txt ] || CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTK_FUZZ=ON
	@cmake --build build-fuzz -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@mkdir -p fuzz-corpus/safetensors fuzz-corpus/artifacts && cp -n testdata/*.safetensors testdata/malformed/*.safetensors fuzz-corpus/safetensors/ 2>/dev/null || true
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz-corpus/$$t; cp -n tests/fuzz/corpus/$$t/* tests/fuzz/regressions/$$t/* fuzz-corpus/$$t/ 2>/dev/null || true; \
	  echo "== fuzz_$$t ($(FUZZ_SECONDS) s)"; \
	  ASAN_OPTIONS=allocator_may_return_null=1:suppressions=tests/asan.supp \
	  LSAN_OPTIONS=suppressions=tests/lsan.supp:fast_unwind_on_malloc=0 \
	  ./build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
	    -artifact_prefix=fuzz-corpus/artifacts/$$t- fuzz-corpus/$$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: found inputs that fail (fuzz-corpus/artifacts/):$$failed"; exit 1; fi; \
	echo "fuzz: $(words $(FUZZ_TARGETS)) targets, $(FUZZ_SECONDS) s each, nothing found"

# Crash-consistency proof of the checkpoint engine: 200 SIGKILLs at random points of a
# saving writer, then faults injected into every write, fsync and rename of a save.
crash-test: build
	python3 tests/crash/ckpt_crash.py --writer $(BUILD)/tests/crash/tk_ckpt_crash_writer \
	  --work $(BUILD)/test-tmp/ckpt-crash --kills 200

# The same for distributed checkpoints under mpirun -np 4 (needs TK_MPI): 100 kills of
# one rank or the whole job, each followed by restores onto 1, 2 and 4 ranks.
crash-test-mpi: build
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 python3 tests/crash/dckpt_crash.py \
	  --train $(BUILD)/mpi_train --tckpt $(BUILD)/tckpt --mpirun mpirun \
	  --work $(BUILD)/test-tmp/dckpt-crash --kills 100

bench-io: build
	bash scripts/bench/io.sh

# Install the tools, libtkckpt, the headers and the CMake and pkg-config packages into
# PREFIX, e.g. make install PREFIX=/apps/tensorkit/0.1.0 for an environment module (DESTDIR
# stages the tree elsewhere). `package` makes a .deb of the same tree under /usr, in
# $(BUILD)/packages.
PREFIX ?= /usr/local
.PHONY: install package

install: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(native_flag) $(CMAKE_FLAGS) -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	@cmake --build $(BUILD) -j$(JOBS)
	cmake --install $(BUILD)

package: build
	cpack --config $(BUILD)/CPackConfig.cmake

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-wheel
