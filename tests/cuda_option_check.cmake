# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# Script mode (cmake -P): every spelling of TIERPOOL_ENABLE_CUDA resolves by CMake's boolean
# rules (cmake/tierpool_cuda_option.cmake). An invalid value is checked by its own test
# (cuda_option_invalid_check.cmake), since it ends the script with FATAL_ERROR.
cmake_minimum_required(VERSION 3.24)  # the project's policies (CMP0012, CMP0054)
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/tierpool_cuda_option.cmake)
set(_cases
  "AUTO=AUTO" "auto=AUTO" "Auto=AUTO" "=AUTO"
  "ON=ON" "on=ON" "On=ON" "1=ON" "YES=ON" "yes=ON" "TRUE=ON" "true=ON" "Y=ON" "2=ON"
  "OFF=OFF" "off=OFF" "Off=OFF" "0=OFF" "NO=OFF" "no=OFF" "FALSE=OFF" "false=OFF" "N=OFF"
  "IGNORE=OFF" "NOTFOUND=OFF" "CUDA-NOTFOUND=OFF")
set(_failed "")
foreach(_case IN LISTS _cases)
  string(FIND "${_case}" "=" _eq REVERSE)
  string(SUBSTRING "${_case}" 0 ${_eq} _value)
  math(EXPR _from "${_eq} + 1")
  string(SUBSTRING "${_case}" ${_from} -1 _want)
  tierpool_cuda_mode("${_value}" _got)
  if(NOT _got STREQUAL _want)
    string(APPEND _failed " '${_value}' gave ${_got}, expected ${_want};")
  endif()
endforeach()
if(_failed)
  message(FATAL_ERROR "TIERPOOL_ENABLE_CUDA resolution:${_failed}")
endif()
message(STATUS "TIERPOOL_ENABLE_CUDA: every spelling resolves as CMake's boolean rules say")
