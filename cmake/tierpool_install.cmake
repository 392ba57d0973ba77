# Install rules and the CMake package: find_package(tierpool CONFIG REQUIRED) + tierpool::tierpool.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TIERPOOL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tierpool)

get_property(_tierpool_layers GLOBAL PROPERTY TIERPOOL_LAYER_TARGETS)
install(TARGETS tierpool ${_tierpool_layers} tierpool_policies
  EXPORT tierpoolTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tierpool DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/tierpool DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")
if(TARGET tierpool_cli)
  install(TARGETS tierpool_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT tierpoolTargets NAMESPACE tierpool:: DESTINATION ${TIERPOOL_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/tierpoolConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tierpoolConfig.cmake
  INSTALL_DESTINATION ${TIERPOOL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tierpoolConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/tierpoolConfig.cmake
  ${PROJECT_BINARY_DIR}/tierpoolConfigVersion.cmake
  cmake/Findhwloc.cmake
  DESTINATION ${TIERPOOL_INSTALL_CMAKEDIR})
