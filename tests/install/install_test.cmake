# Install test: install the build tree into a scratch prefix, then configure and build an
# out-of-tree consumer with find_package(tierpool CONFIG REQUIRED) and run it.
# Skipped under sanitizers: the installed static library would need the consumer to link them too.
if(TIERPOOL_SANITIZE STREQUAL "")
  add_test(NAME install.consumer_builds_against_installed_tree
    COMMAND ${CMAKE_COMMAND}
      -DBUILD_DIR=${PROJECT_BINARY_DIR}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DWORK_DIR=${PROJECT_BINARY_DIR}/install-test
      -DGENERATOR=${CMAKE_GENERATOR}
      -DCXX=${CMAKE_CXX_COMPILER}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/install/run_install_test.cmake)
  set_tests_properties(install.consumer_builds_against_installed_tree PROPERTIES
    LABELS "cpu;install" TIMEOUT 600 RUN_SERIAL TRUE)
endif()
