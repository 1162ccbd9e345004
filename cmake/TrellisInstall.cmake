# Install rules, the exported CMake package and trellis.pc: after `cmake --install`, a consumer
# writes
#   find_package(trellis 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE trellis::transport)
# or compiles with `pkg-config --cflags --libs trellis` (TrellisPkgConfig.cmake).
# Included last by the top-level CMakeLists.txt, because the module list (GLOBAL property
# TRELLIS_MODULES, appended by trellis_module()) is complete only after every add_subdirectory.
include_guard(GLOBAL)

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_trellis_modules GLOBAL PROPERTY TRELLIS_MODULES)
if(NOT _trellis_modules)
  message(FATAL_ERROR "TrellisInstall: no module was declared with trellis_module()")
endif()

set(TRELLIS_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/trellis"
    CACHE STRING "Where the trellis CMake package files are installed, relative to the prefix")
mark_as_advanced(TRELLIS_INSTALL_CMAKEDIR)

# Public headers: each module's include/ tree lands as it is in <prefix>/include. The path is
# `include` (not CMAKE_INSTALL_INCLUDEDIR) to match $<INSTALL_INTERFACE:include> in trellis_module().
set(_trellis_components "")
foreach(_target IN LISTS _trellis_modules)
  get_target_property(_dir ${_target} SOURCE_DIR)
  if(IS_DIRECTORY "${_dir}/include")
    install(DIRECTORY "${_dir}/include/" DESTINATION include COMPONENT trellis_development)
  endif()
  get_target_property(_export_name ${_target} EXPORT_NAME)
  list(APPEND _trellis_components ${_export_name})

  # trellis_sanitize is linked as $<BUILD_INTERFACE:...>, so it is not exported. A sanitized build
  # installs instrumented static libraries, which only link into a binary that links the sanitizer
  # runtime too: hand the same flags to consumers through the installed interface.
  if(TRELLIS_SANITIZE)
    get_target_property(_san_copts trellis_sanitize INTERFACE_COMPILE_OPTIONS)
    get_target_property(_san_lopts trellis_sanitize INTERFACE_LINK_OPTIONS)
    foreach(_opt IN LISTS _san_copts)
      target_compile_options(${_target} INTERFACE "$<INSTALL_INTERFACE:${_opt}>")
    endforeach()
    foreach(_opt IN LISTS _san_lopts)
      target_link_options(${_target} INTERFACE "$<INSTALL_INTERFACE:${_opt}>")
    endforeach()
  endif()
endforeach()

# The generated <trellis/version.hpp> (top-level CMakeLists.txt).
install(FILES "${TRELLIS_GENERATED_INCLUDE_DIR}/trellis/version.hpp" DESTINATION include/trellis
        COMPONENT trellis_development)

install(TARGETS ${_trellis_modules}
  EXPORT trellisTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT trellis_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT trellis_runtime
          NAMELINK_COMPONENT trellis_development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT trellis_runtime)

install(EXPORT trellisTargets
  NAMESPACE trellis::
  FILE trellisTargets.cmake
  DESTINATION ${TRELLIS_INSTALL_CMAKEDIR}
  COMPONENT trellis_development)

# Read by trellisConfig.cmake.in.
set(TRELLIS_PACKAGE_COMPONENTS "${_trellis_components}")
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/trellisConfig.cmake.in
  ${PROJECT_BINARY_DIR}/trellisConfig.cmake
  INSTALL_DESTINATION ${TRELLIS_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API, so only the same minor version is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/trellisConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
# TrellisAsioVersion.cmake: the Asio version check, run again by trellisConfig.cmake.
install(FILES ${PROJECT_BINARY_DIR}/trellisConfig.cmake ${PROJECT_BINARY_DIR}/trellisConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/TrellisAsioVersion.cmake
  DESTINATION ${TRELLIS_INSTALL_CMAKEDIR}
  COMPONENT trellis_development)

include(${CMAKE_CURRENT_LIST_DIR}/TrellisPkgConfig.cmake)

foreach(_doc LICENSE README.md)
  if(EXISTS "${PROJECT_SOURCE_DIR}/${_doc}")
    install(FILES "${PROJECT_SOURCE_DIR}/${_doc}" DESTINATION ${CMAKE_INSTALL_DOCDIR}
            COMPONENT trellis_development)
  endif()
endforeach()

unset(_trellis_modules)
unset(_trellis_components)
