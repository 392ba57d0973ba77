# Findhwloc: locates hwloc (Debian: libhwloc-dev) and defines the imported target hwloc::hwloc.
# Installed next to tierpoolConfig.cmake so that consumers of a static tierpool find it the same way.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_HWLOC QUIET hwloc)
endif()
find_path(hwloc_INCLUDE_DIR hwloc.h HINTS ${PC_HWLOC_INCLUDE_DIRS})
find_library(hwloc_LIBRARY NAMES hwloc HINTS ${PC_HWLOC_LIBRARY_DIRS})
set(hwloc_VERSION ${PC_HWLOC_VERSION})

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(hwloc
  REQUIRED_VARS hwloc_LIBRARY hwloc_INCLUDE_DIR
  VERSION_VAR hwloc_VERSION)

if(hwloc_FOUND AND NOT TARGET hwloc::hwloc)
  add_library(hwloc::hwloc UNKNOWN IMPORTED)
  set_target_properties(hwloc::hwloc PROPERTIES
    IMPORTED_LOCATION "${hwloc_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${hwloc_INCLUDE_DIR}")
endif()
mark_as_advanced(hwloc_INCLUDE_DIR hwloc_LIBRARY)
