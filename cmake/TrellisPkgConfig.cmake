# trellis.pc: one pkg-config package for all trellis libraries, installed in
# <libdir>/pkgconfig beside the CMake package, for builds that do not use CMake:
#   c++ -std=c++20 app.cpp $(pkg-config --cflags --libs trellis)
# Included by TrellisInstall.cmake with the module list in _trellis_modules.
include_guard(GLOBAL)

# Libraries, each before the ones it depends on: a module only depends on modules declared
# before it (the add_subdirectory order of the top-level CMakeLists.txt), so reverse that order.
set(_pc_modules ${_trellis_modules})
list(REVERSE _pc_modules)
set(_pc_libs "")
foreach(_target IN LISTS _pc_modules)
  list(APPEND _pc_libs "-l${_target}")
endforeach()
list(APPEND _pc_libs -pthread)

# trellis::pipeline links spdlog (which requires fmt) and trellis::ssl links OpenSSL 3 in their
# public interfaces; trellis::codec links zlib, brotli and zstd privately, which a static library
# still hands on to the final link.
set(TRELLIS_PC_REQUIRES "spdlog, openssl >= 3")
set(_pc_codec_deps "zlib, libbrotlienc, libbrotlidec, libzstd")
get_target_property(_pc_codec_type trellis_codec TYPE)
if(_pc_codec_type STREQUAL "STATIC_LIBRARY")
  string(APPEND TRELLIS_PC_REQUIRES ", ${_pc_codec_deps}")
  set(TRELLIS_PC_REQUIRES_PRIVATE "")
else()
  set(TRELLIS_PC_REQUIRES_PRIVATE "${_pc_codec_deps}")
endif()

# trellis::transport's usage requirements: the standalone Asio headers (header-only, no .pc file
# of their own) and its compile definitions.
set(_pc_cflags "")
if(NOT TRELLIS_ASIO_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
  list(APPEND _pc_cflags "-isystem ${TRELLIS_ASIO_INCLUDE_DIR}")
endif()
get_target_property(_pc_definitions trellis_transport INTERFACE_COMPILE_DEFINITIONS)
foreach(_definition IN LISTS _pc_definitions)
  if(_definition MATCHES "[$<>]")
    message(FATAL_ERROR "TrellisPkgConfig: cannot write the definition '${_definition}' to trellis.pc")
  endif()
  list(APPEND _pc_cflags "-D${_definition}")
endforeach()
list(APPEND _pc_cflags -pthread)
# A sanitized build installs instrumented libraries (see TrellisInstall.cmake).
if(TRELLIS_SANITIZE)
  get_target_property(_pc_san_copts trellis_sanitize INTERFACE_COMPILE_OPTIONS)
  get_target_property(_pc_san_lopts trellis_sanitize INTERFACE_LINK_OPTIONS)
  list(APPEND _pc_cflags ${_pc_san_copts})
  list(APPEND _pc_libs ${_pc_san_lopts})
endif()
list(JOIN _pc_cflags " " TRELLIS_PC_CFLAGS)
list(JOIN _pc_libs " " TRELLIS_PC_LIBS)

if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "TrellisPkgConfig: CMAKE_INSTALL_LIBDIR must be relative to the prefix")
endif()
file(RELATIVE_PATH TRELLIS_PC_PREFIX_FROM_PCFILEDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" TRELLIS_PC_PREFIX_FROM_PCFILEDIR "${TRELLIS_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/trellis.pc.in ${PROJECT_BINARY_DIR}/trellis.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/trellis.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT trellis_development)
