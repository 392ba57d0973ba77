# The trace library's tests (included from tests/CMakeLists.txt).
tierpool_add_test(NAME trace_test LIBS tierpool::replay SOURCES
  trace/trace_format_tests.cpp
  trace/trace_import_tests.cpp
  trace/trace_load_tests.cpp
  trace/trace_gen_tests.cpp
  trace/trace_recorder_tests.cpp
  trace/trace_regression_tests.cpp
  trace/trace_summary_tests.cpp)
# The real sample trace (shared/traces next to or inside the checkout); tests that need it
# skip, saying so, when it is not found.
find_path(TIERPOOL_SAMPLE_TRACES_DIR cloudphysics.oracleGeneral.bin
  PATHS ${PROJECT_SOURCE_DIR}/shared/traces ${PROJECT_SOURCE_DIR}/../shared/traces
  DOC "Folder holding cloudphysics.oracleGeneral.bin (libCacheSim sample) for the trace tests"
  NO_DEFAULT_PATH)
target_include_directories(trace_test PRIVATE ${PROJECT_SOURCE_DIR}/fuzz)
target_compile_definitions(trace_test PRIVATE
  TIERPOOL_SAMPLE_TRACES_DIR="${TIERPOOL_SAMPLE_TRACES_DIR}"
  TIERPOOL_TRACE_REGRESSIONS_DIR="${CMAKE_CURRENT_SOURCE_DIR}/trace/regressions"
  TIERPOOL_FUZZ_CORPUS_DIR="${PROJECT_SOURCE_DIR}/fuzz/corpus")
