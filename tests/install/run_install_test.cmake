# cmake -P script run by the install test; see install_test.cmake. With -DNO_CUDA=ON (CI's
# build without CUDA), the consumer is configured with CUDA hidden from CMake: a package built
# without CUDA must not need the toolkit.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(no_cuda_args "")
if(NO_CUDA)
  set(no_cuda_args -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DOVERSUBSCRIBE_CUDA_KERNELS=OFF)
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/lib/cmake/tierpool/tierpoolConfig.cmake)
  message(FATAL_ERROR "install test: no package config installed under ${prefix}/lib/cmake/tierpool")
endif()
if(NOT EXISTS ${prefix}/include/tierpool/config.hpp)
  message(FATAL_ERROR "install test: the generated config.hpp was not installed")
endif()
run_step("configure consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK_DIR}/build
  -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix}
  -DTIERPOOL_SOURCE_DIR=${SOURCE_DIR} ${no_cuda_args})
run_step("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step("run consumer" ${WORK_DIR}/build/consumer)
message(STATUS "consumer said: ${step_output}")
run_step("run basic_pool example" ${WORK_DIR}/build/basic_pool/basic_pool)
run_step("run the oversubscription demo" ${WORK_DIR}/build/oversubscribe/oversubscribe
  --backend sim --iterations 1 --layers 8 --width 256 --batch 32)
if(NOT step_output MATCHES "verified: ")
  message(FATAL_ERROR "install test: the demo built against the installed package did not verify:\n${step_output}")
endif()
message(STATUS "install test: ok")
