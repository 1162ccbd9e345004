# The Asio version trellis needs and a reader of the version of an Asio header tree. Used when
# trellis is configured (TrellisPlatform.cmake) and, installed beside the CMake package, when a
# consumer runs find_package(trellis) (trellisConfig.cmake.in).

# The oldest standalone Asio trellis is built and tested with. The transport reaches into Asio's
# scheduler and epoll reactor internals (transport/src), so older releases are not supported.
# (Set before the include guard: every scope that includes this file sees it.)
set(TRELLIS_ASIO_MIN_VERSION 1.22.0)
include_guard(GLOBAL)

# trellis_asio_version(INCLUDE_DIR OUT_VAR): sets OUT_VAR to "MAJOR.MINOR.PATCH" read from
# INCLUDE_DIR/asio/version.hpp (ASIO_VERSION is MAJOR * 100000 + MINOR * 100 + PATCH), or to ""
# when the file or the macro is missing.
function(trellis_asio_version include_dir out_var)
  set(${out_var} "" PARENT_SCOPE)
  set(_file "${include_dir}/asio/version.hpp")
  if(NOT EXISTS "${_file}")
    return()
  endif()
  file(STRINGS "${_file}" _line REGEX "^#[ \t]*define[ \t]+ASIO_VERSION[ \t]+[0-9]+")
  if(NOT _line MATCHES "ASIO_VERSION[ \t]+([0-9]+)")
    return()
  endif()
  set(_number ${CMAKE_MATCH_1})
  math(EXPR _major "${_number} / 100000")
  math(EXPR _minor "${_number} / 100 % 1000")
  math(EXPR _patch "${_number} % 100")
  set(${out_var} "${_major}.${_minor}.${_patch}" PARENT_SCOPE)
endfunction()
