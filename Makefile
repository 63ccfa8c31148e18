# Short commands for mprof. CMake does the building; see README.md.
#   make demo   - install what is needed, build with profiling on, profile the sample engine
#   make test   - install what is needed (Debian packages, cargo, npm ci), build, run every test;
#                 the run fails when a test skips for anything but missing hardware
#                 (scripts/test.sh names each skip and why)
#   make asan / make tsan - the tests under AddressSanitizer+UBSan / ThreadSanitizer (clang; the
#                 asan build also compiles bench/, so every target is built -Werror with clang too)
#   make bench  - the benchmarks (figures on stdout, one JSON object per line)
#   make proof  - the checks whose outcome depends on timing and load (the gate's proof on noise
#                 with the sample engine and the sub-millisecond timedemo under a CPU hog,
#                 mprof ci --self-test): bench/proof.sh
#   make matrix - build every standard configuration (Debug, Release, RelWithDebInfo, MinSizeRel
#                 with gcc and clang, and a packager's build), warnings as errors
#   make package - the Debian package (CPack DEB) in $(BUILD)/: mprof_<version>_<arch>.deb
#   make fuzz   - every libFuzzer target for FUZZ_SECONDS (30) on its corpus in fuzz/corpus/
#                 (the merger on the reader's), JOBS at a time (new inputs go to
#                 build-fuzz/corpus/, so the checkout is left as it was)
# No test in `make test` asserts a timing outcome (those are in `make proof`). A failed test is
# still run once more before the run counts as failed: a few end-to-end tests (live capture,
# the engine) wait on deadlines of seconds that a machine at load 15+ can overrun. A real
# failure fails twice; ctest prints both tries.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=

.PHONY: all deps build test demo asan tsan bench proof fuzz matrix package clean

all: build

deps:
	@sh scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPROF_WERROR=ON $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	sh scripts/test.sh $(BUILD) --output-on-failure -j $(JOBS) --repeat until-pass:2

demo: build
	sh scripts/demo.sh $(BUILD)

asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMPROF_SANITIZE=address,undefined -DMPROF_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	MPROF_TEST_SCALE=0.1 sh scripts/test.sh build-asan --output-on-failure -j $(JOBS) --repeat until-pass:2

tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMPROF_SANITIZE=thread -DMPROF_WERROR=ON
	cmake --build build-tsan -j $(JOBS)
	MPROF_TEST_SCALE=0.05 TSAN_OPTIONS=halt_on_error=1 sh scripts/test.sh build-tsan --output-on-failure -j $(JOBS) --repeat until-pass:2

bench: build
	sh scripts/bench.sh $(BUILD)

proof: build
	sh bench/proof.sh $(BUILD)

fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMPROF_BUILD_FUZZ=ON -DMPROF_BUILD_TESTS=OFF -DMPROF_BUILD_BENCH=OFF -DMPROF_BUILD_EXAMPLES=OFF -DMPROF_WERROR=ON
	cmake --build build-fuzz -j $(JOBS)
	printf '%s\n' reader merge wire timeline passes report_gpu gate_json frames_export perfetto query store view_query view_answers view_index kv escape env_number doctor | \
	    xargs -P $(JOBS) -I{} sh -c 't={}; seed=fuzz/corpus/$$t; [ $$t = merge ] && seed=fuzz/corpus/reader; \
	        mkdir -p build-fuzz/corpus/$$t && ./build-fuzz/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) build-fuzz/corpus/$$t $$seed'

matrix: deps
	sh scripts/build-matrix.sh

package: build
	cd $(BUILD) && cpack -G DEB

clean:
	rm -rf build build-asan build-tsan build-fuzz build-matrix
