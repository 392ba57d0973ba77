# The runtime's layers: one static library per folder of runtime/, linked in layer order.
#
#   tierpool_add_layer(NAME <name> [DIR <folder under runtime/>] SOURCES <files...>
#                      [DEPENDS <lower layers...>] [PUBLIC_LIBS <libs...>] [PRIVATE_LIBS <libs...>]
#                      [EXPORT_NAME <name>] [OUTPUT_NAME <name>])
#
# Makes the target tierpool_<name> (alias tierpool::<name>) from runtime/<DIR>/<SOURCES>
# (DIR defaults to NAME), links it PUBLIC to the tierpool_<dep> of each DEPENDS, and gives it an
# include view instead of the whole runtime/ folder: ${PROJECT_BINARY_DIR}/layers/<name>/
# holds one symbolic link per folder the layer may include from, its own and those of its
# dependencies (transitively), so that `#include "tiers/tier.hpp"` works in core but an
# include that reaches up, such as `#include "core/detail/pool_impl.hpp"` in tiers/, fails
# to compile ("No such file or directory"). See docs/chapters/architecture.md.
#
# Every layer sees the public headers (include/, and the generated ones in the build tree).
# Folders outside runtime/ (policies/) register their own include view with
# tierpool_layer_view(NAME <name> DEPENDS <layers...>).
include_guard(GLOBAL)

function(_tierpool_layer_folders out)
  set(_folders "")
  foreach(_d IN LISTS ARGN)
    get_property(_known GLOBAL PROPERTY TIERPOOL_LAYERS)
    if(NOT _d IN_LIST _known)
      message(FATAL_ERROR "tierpool layers: '${_d}' is not a layer defined before this one (layers are added bottom-up)")
    endif()
    get_property(_f GLOBAL PROPERTY TIERPOOL_LAYER_FOLDERS_${_d})
    list(APPEND _folders ${_f})
  endforeach()
  list(REMOVE_DUPLICATES _folders)
  set(${out} ${_folders} PARENT_SCOPE)
endfunction()

# tierpool_layer_view(NAME <name> [DIR <own folder>] DEPENDS <layers...>): make the include
# view of a layer and return its path in TIERPOOL_LAYER_VIEW.
function(tierpool_layer_view)
  cmake_parse_arguments(V "" "NAME;DIR" "DEPENDS" ${ARGN})
  _tierpool_layer_folders(_folders ${V_DEPENDS})
  if(V_DIR)
    list(PREPEND _folders ${V_DIR})
  endif()
  list(REMOVE_DUPLICATES _folders)
  set(_view "${PROJECT_BINARY_DIR}/layers/${V_NAME}")
  file(REMOVE_RECURSE "${_view}")
  file(MAKE_DIRECTORY "${_view}")
  foreach(_f IN LISTS _folders)
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/runtime/${_f}" "${_view}/${_f}" SYMBOLIC)
  endforeach()
  set_property(GLOBAL PROPERTY TIERPOOL_LAYER_FOLDERS_${V_NAME} ${_folders})
  set_property(GLOBAL APPEND PROPERTY TIERPOOL_LAYERS ${V_NAME})
  set(TIERPOOL_LAYER_VIEW "${_view}" PARENT_SCOPE)
endfunction()

function(tierpool_add_layer)
  cmake_parse_arguments(L "" "NAME;DIR;EXPORT_NAME;OUTPUT_NAME" "SOURCES;DEPENDS;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  if(NOT L_DIR)
    set(L_DIR ${L_NAME})
  endif()
  if(NOT L_EXPORT_NAME)
    set(L_EXPORT_NAME ${L_NAME})
  endif()
  if(NOT L_OUTPUT_NAME)
    set(L_OUTPUT_NAME tierpool_${L_NAME})
  endif()
  set(_target tierpool_${L_NAME})
  list(TRANSFORM L_SOURCES PREPEND "${PROJECT_SOURCE_DIR}/runtime/${L_DIR}/")
  add_library(${_target} ${L_SOURCES})
  add_library(tierpool::${L_NAME} ALIAS ${_target})
  tierpool_layer_view(NAME ${L_NAME} DIR ${L_DIR} DEPENDS ${L_DEPENDS})
  target_compile_features(${_target} PUBLIC cxx_std_20)
  target_include_directories(${_target}
    PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE
      ${TIERPOOL_LAYER_VIEW})
  set_target_properties(${_target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    EXPORT_NAME ${L_EXPORT_NAME}
    OUTPUT_NAME ${L_OUTPUT_NAME})
  set(_deps "")
  foreach(_d IN LISTS L_DEPENDS)
    list(APPEND _deps tierpool_${_d})
  endforeach()
  target_link_libraries(${_target} PUBLIC ${_deps} ${L_PUBLIC_LIBS} PRIVATE ${L_PRIVATE_LIBS})
  tierpool_set_warnings(${_target})
  tierpool_set_sanitizers(${_target})
  set_property(GLOBAL APPEND PROPERTY TIERPOOL_LAYER_TARGETS ${_target})
endfunction()
