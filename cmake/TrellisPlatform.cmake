# Configure-time checks of what trellis can only be built for: Linux (the transport drives Asio's
# epoll reactor directly, see transport/src/reactor_descriptor.cpp), a standalone Asio at least
# as new as TRELLIS_ASIO_MIN_VERSION, and that Asio configured to use its epoll reactor. Each failure stops the configure step with a message that
# says what to install or set, rather than failing deep inside a compile.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/TrellisAsioVersion.cmake)

if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
  message(FATAL_ERROR "trellis builds for Linux only: its transport runs on Asio's epoll reactor "
                      "(this build targets CMAKE_SYSTEM_NAME=${CMAKE_SYSTEM_NAME}).")
endif()
include(CheckIncludeFileCXX)
check_include_file_cxx(sys/epoll.h TRELLIS_HAVE_SYS_EPOLL_H)
if(NOT TRELLIS_HAVE_SYS_EPOLL_H)
  message(FATAL_ERROR "trellis needs epoll: <sys/epoll.h> was not found by ${CMAKE_CXX_COMPILER}.")
endif()

find_path(TRELLIS_ASIO_INCLUDE_DIR asio.hpp
          DOC "Directory holding the standalone Asio headers (asio.hpp, asio/version.hpp)")
if(NOT TRELLIS_ASIO_INCLUDE_DIR)
  message(FATAL_ERROR "trellis needs the standalone Asio headers (asio.hpp), version "
                      "${TRELLIS_ASIO_MIN_VERSION} or newer: on Debian `apt-get install libasio-dev`; "
                      "elsewhere pass -DTRELLIS_ASIO_INCLUDE_DIR=<directory holding asio.hpp>.")
endif()
trellis_asio_version("${TRELLIS_ASIO_INCLUDE_DIR}" TRELLIS_ASIO_VERSION)
if(NOT TRELLIS_ASIO_VERSION)
  message(FATAL_ERROR "trellis: cannot read ASIO_VERSION from "
                      "${TRELLIS_ASIO_INCLUDE_DIR}/asio/version.hpp (is it the standalone Asio, "
                      "not Boost.Asio?). Set TRELLIS_ASIO_INCLUDE_DIR to the standalone Asio headers.")
endif()
if(TRELLIS_ASIO_VERSION VERSION_LESS TRELLIS_ASIO_MIN_VERSION)
  message(FATAL_ERROR "trellis needs standalone Asio ${TRELLIS_ASIO_MIN_VERSION} or newer; "
                      "${TRELLIS_ASIO_INCLUDE_DIR} has Asio ${TRELLIS_ASIO_VERSION}. Install a newer "
                      "Asio and point -DTRELLIS_ASIO_INCLUDE_DIR at it.")
endif()
message(STATUS "trellis: standalone Asio ${TRELLIS_ASIO_VERSION} in ${TRELLIS_ASIO_INCLUDE_DIR}")

# The compiler flags (ASIO_DISABLE_EPOLL, for one) could still make Asio pick another reactor. In a
# function, so that its settings stay out of the including scope; the result is cached.
include(CheckCXXSourceCompiles)
function(_trellis_check_asio_epoll)
  set(CMAKE_REQUIRED_INCLUDES "${TRELLIS_ASIO_INCLUDE_DIR}")
  set(CMAKE_REQUIRED_DEFINITIONS -DASIO_STANDALONE -DASIO_NO_DEPRECATED)
  # Compile only: the check is a static_assert, and the build's flags may need a runtime to link
  # (-fsanitize=fuzzer-no-link, for one).
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  check_cxx_source_compiles([=[
#include <asio/io_context.hpp>
#include <asio/detail/reactor.hpp>
#include <type_traits>
static_assert(std::is_same_v<asio::detail::reactor, asio::detail::epoll_reactor>);
int main() { return 0; }
]=] TRELLIS_ASIO_USES_EPOLL)
endfunction()
_trellis_check_asio_epoll()
if(NOT TRELLIS_ASIO_USES_EPOLL)
  message(FATAL_ERROR "trellis needs Asio's epoll reactor, but with these compiler flags "
                      "(CMAKE_CXX_FLAGS='${CMAKE_CXX_FLAGS}') asio::detail::reactor is another one: "
                      "remove ASIO_DISABLE_EPOLL or similar definitions. Details in "
                      "${CMAKE_BINARY_DIR}/CMakeFiles/CMakeError.log.")
endif()
