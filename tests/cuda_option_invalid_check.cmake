# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# Script mode (cmake -P): a value of TIERPOOL_ENABLE_CUDA that is neither AUTO nor a CMake
# boolean ends the configuration with an error naming it (the test expects that message).
cmake_minimum_required(VERSION 3.24)  # the project's policies (CMP0012, CMP0054)
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/tierpool_cuda_option.cmake)
tierpool_cuda_mode("maybe" _got)
message(STATUS "not reached: 'maybe' gave ${_got}")
