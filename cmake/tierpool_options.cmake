# Every TIERPOOL_* option in one place, each with a sentence saying what the default is and why.

set(TIERPOOL_ENABLE_CUDA "AUTO" CACHE STRING
  "Build the CUDA backend: AUTO (default) turns it on when find_package(CUDAToolkit) succeeds, so the same tree builds on machines with and without a toolkit; ON (or any CMake true value: 1, YES, TRUE, any case) requires it; OFF (or 0, NO, FALSE, any case) never builds it")
set_property(CACHE TIERPOOL_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)

option(TIERPOOL_BUILD_TESTS
  "Build the test suite (default: on when tierpool is the top-level project, off when it is a subproject)"
  ${PROJECT_IS_TOP_LEVEL})
option(TIERPOOL_BUILD_BENCH
  "Build the Google Benchmark micro-benchmarks (default: on at top level; the tierpool CLI's bench commands are always built)"
  ${PROJECT_IS_TOP_LEVEL})
option(TIERPOOL_BUILD_EXAMPLES
  "Build the examples, the oversubscription demo among them (default: on at top level)"
  ${PROJECT_IS_TOP_LEVEL})
option(TIERPOOL_BUILD_TOOLS
  "Build the tierpool command-line tool (default: on at top level)"
  ${PROJECT_IS_TOP_LEVEL})
option(TIERPOOL_ENABLE_INSTALL
  "Generate install rules and the tierpool CMake package (default: on at top level)"
  ${PROJECT_IS_TOP_LEVEL})
option(TIERPOOL_BUILD_PYTHON
  "Build the Python extension tierpool._tierpool in python/ (default: off; pyproject.toml turns it on for pip, and with it position-independent code for the static libraries)"
  OFF)
option(TIERPOOL_DEBUG_FULL
  "Compile expensive invariant checks (TIERPOOL_ASSERT_EXPENSIVE); off by default because they change complexity"
  OFF)
option(TIERPOOL_BUILD_FUZZERS
  "Build the libFuzzer targets of the trace readers in fuzz/ (default: off; needs clang, see scripts/run-fuzzers.sh)"
  OFF)
option(TIERPOOL_ENABLE_MPI
  "Build `tierpool suite run --mpi` (one rank per device across nodes, bundles gathered to rank 0) against MPI (Open MPI: libopenmpi-dev); off by default"
  OFF)
option(TIERPOOL_BUILD_DOCS
  "Add the 'docs' target: the API reference and the book (docs/) with Doxygen, which fails on an undocumented public entity (default: off; needs doxygen)"
  OFF)
option(TIERPOOL_WARNINGS_AS_ERRORS
  "Treat compiler warnings in tierpool's own targets as errors (default: on, the code base is warning-free)"
  ON)

option(TIERPOOL_TEST_PCH
  "Compile the test executables with one precompiled header (gtest, the pool's header, the standard ones they share): about half a test file's compile time on a cold build (CI). Off by default: ccache does not cache compiles that use a precompiled header unless configured for it"
  OFF)

option(TIERPOOL_LINE_TABLES_ONLY
  "Debug information of line tables only (-g1 for -g) in the C++ compiles of Debug and RelWithDebInfo builds (the .cu sources keep their flags): a test file at -O2 compiles in 13.4 s against 20.8 s with -g (11.3 s with none); backtraces, perf and callgrind keep file, function and line, a debugger loses variables and types. Off by default; CI's cold builds turn it on"
  OFF)

set(TIERPOOL_PYTHON_PREFIX "" CACHE PATH
  "With TIERPOOL_BUILD_PYTHON: an installed tierpool (cmake --install of a build with position-independent static libraries, the default) that the Python extension links against instead of building the library again; empty (default): build it")

set(TIERPOOL_SANITIZE "" CACHE STRING
  "Sanitizers for tierpool's own targets: empty (default, none), 'address+undefined' or 'thread'; every choice but 'thread' also defines _GLIBCXX_ASSERTIONS (bounds-checked operator[])")
set_property(CACHE TIERPOOL_SANITIZE PROPERTY STRINGS "" "address+undefined" "address" "undefined" "thread")

set(TIERPOOL_CUDA_ARCHITECTURES "75;80;90" CACHE STRING
  "CUDA architectures for GPU tests and examples that compile kernels (default covers Turing to Hopper; 'native' needs a GPU at configure time)")
