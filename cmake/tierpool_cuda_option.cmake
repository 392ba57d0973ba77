# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# tierpool_cuda_mode(<value> <out-var>): what TIERPOOL_ENABLE_CUDA asks for, as AUTO, ON or
# OFF. AUTO (any case; empty means the default, AUTO) builds the CUDA backend when
# find_package(CUDAToolkit) succeeds. Every other value follows CMake's boolean rules,
# case-insensitive: 1, ON, YES, TRUE, Y or a non-zero number is ON (the toolkit is
# required); 0, OFF, NO, FALSE, N, IGNORE, NOTFOUND or a name ending in -NOTFOUND is OFF.
# Anything else is an error naming the value (a typo must not pick a mode silently).
# Used by the top-level CMakeLists.txt; tests/cuda_option_check.cmake checks it in script mode.
function(tierpool_cuda_mode value out_var)
  string(STRIP "${value}" _v)
  string(TOUPPER "${_v}" _upper)
  if(_upper STREQUAL "" OR _upper STREQUAL "AUTO")
    set(_mode AUTO)
  elseif("${_v}")  # quoted: true only for CMake's true constants (and non-zero numbers)
    set(_mode ON)
  elseif(_upper MATCHES "^(0|OFF|NO|FALSE|N|IGNORE|NOTFOUND)$" OR _upper MATCHES "-NOTFOUND$"
         OR _v MATCHES "^[+-]?0*(\\.0*)?$")
    set(_mode OFF)
  else()
    message(FATAL_ERROR "TIERPOOL_ENABLE_CUDA: '${value}' is neither AUTO nor a CMake boolean "
                        "(ON/OFF, YES/NO, TRUE/FALSE, 1/0, ...)")
  endif()
  set(${out_var} ${_mode} PARENT_SCOPE)
endfunction()
