# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# Script mode (cmake -P): configure tierpool itself (library only: about a second) with
# -DTIERPOOL_ENABLE_CUDA=${VALUE} into ${WORK} and check that the generated config.hpp says
# TIERPOOL_HAS_CUDA ${EXPECT}. Arguments: SOURCE, WORK, GENERATOR, VALUE, EXPECT.
cmake_minimum_required(VERSION 3.24)
file(REMOVE_RECURSE "${WORK}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}" -G "${GENERATOR}" "-DTIERPOOL_ENABLE_CUDA=${VALUE}"
          -DTIERPOOL_BUILD_TESTS=OFF -DTIERPOOL_BUILD_BENCH=OFF -DTIERPOOL_BUILD_EXAMPLES=OFF
          -DTIERPOOL_BUILD_TOOLS=OFF -DTIERPOOL_ENABLE_INSTALL=OFF
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring with TIERPOOL_ENABLE_CUDA=${VALUE} failed:\n${_out}\n${_err}")
endif()
file(READ "${WORK}/include/tierpool/config.hpp" _config)
if(NOT _config MATCHES "#define TIERPOOL_HAS_CUDA ${EXPECT}\n")
  message(FATAL_ERROR "TIERPOOL_ENABLE_CUDA=${VALUE}: config.hpp does not say TIERPOOL_HAS_CUDA ${EXPECT}:\n${_config}")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "TIERPOOL_ENABLE_CUDA=${VALUE}: TIERPOOL_HAS_CUDA ${EXPECT}")
