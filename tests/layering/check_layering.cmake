# cmake -P script (test layering.upward_include_fails): the include views of
# cmake/tierpool_layers.cmake let a layer include its own and lower folders and nothing
# above. Compiles two one-line files against the `tiers` layer's view: one including a
# lower layer's header must compile; one including core's must fail with "No such file".
# Arguments: -DCXX=... -DVIEW=<build>/layers/tiers -DINCLUDES="<include>;<build>/include" -DWORK=<dir>
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/down.cpp" "#include \"backends/event_pool.hpp\"\n#include \"util/spin_mutex.hpp\"\nint main() { return 0; }\n")
file(WRITE "${WORK}/up.cpp" "#include \"core/detail/pool_impl.hpp\"\nint main() { return 0; }\n")
set(flags -std=c++20 -fsyntax-only -I "${VIEW}")
foreach(inc IN LISTS INCLUDES)
  list(APPEND flags -I "${inc}")
endforeach()
execute_process(COMMAND "${CXX}" ${flags} "${WORK}/down.cpp" RESULT_VARIABLE rc_down ERROR_VARIABLE err_down)
if(NOT rc_down EQUAL 0)
  message(FATAL_ERROR "layering: a downward include does not compile in the tiers view:\n${err_down}")
endif()
execute_process(COMMAND "${CXX}" ${flags} "${WORK}/up.cpp" RESULT_VARIABLE rc_up ERROR_VARIABLE err_up)
if(rc_up EQUAL 0)
  message(FATAL_ERROR "layering: tiers could include core/detail/pool_impl.hpp (an upward include compiled)")
endif()
if(NOT err_up MATCHES "core/detail/pool_impl.hpp: No such file or directory")
  message(FATAL_ERROR "layering: the upward include failed, but not for want of the file:\n${err_up}")
endif()
message(STATUS "layering: downward include compiles, upward include fails: ok")
