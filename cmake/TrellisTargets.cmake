# Shared settings for trellis targets: warnings, sanitizers, and helpers that declare a module
# library or a doctest suite in one line.
include_guard(GLOBAL)

add_library(trellis_warnings INTERFACE)
target_compile_options(trellis_warnings INTERFACE -Wall -Wextra $<$<BOOL:${TRELLIS_WERROR}>:-Werror>)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 reports -Wrestrict false positives inside libstdc++ for "literal" + std::string at -O3
  # (GCC bug 105329).
  target_compile_options(trellis_warnings INTERFACE -Wno-restrict)
endif()

add_library(trellis_sanitize INTERFACE)
if(TRELLIS_SANITIZE)
  string(REPLACE ";" "," _trellis_san "${TRELLIS_SANITIZE}")
  target_compile_options(trellis_sanitize INTERFACE -fsanitize=${_trellis_san} -fno-omit-frame-pointer
                                                    -fno-sanitize-recover=all)
  target_link_options(trellis_sanitize INTERFACE -fsanitize=${_trellis_san})
  if("thread" IN_LIST TRELLIS_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 warns that TSan does not model atomic_thread_fence (used by Asio and by us); TSan
    # still checks the accesses around it.
    target_compile_options(trellis_sanitize INTERFACE -Wno-tsan)
  endif()
  if("undefined" IN_LIST TRELLIS_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang 14 cannot emit the `function` check's prologue data for a coroutine that also has
    # coverage instrumentation (the fuzz build): "Cannot represent a difference across sections".
    target_compile_options(trellis_sanitize INTERFACE -fno-sanitize=function)
  endif()
endif()

# Link-time optimisation of release builds (GCC). A request crosses many small functions in four
# libraries (pipeline hops, codec, transport); LTO inlines across them and lays the hot code out
# more densely: the HTTP example server runs 6% fewer instructions and takes 23% fewer
# instruction-cache misses per request (docs/design.md). The libraries are compiled to fat LTO
# objects (intermediate code and machine code), so that the example programs link them with LTO
# while the test suites and micro-benchmarks link the machine code without it (an LTO link
# compiles the libraries again: ~25 s per program on two cores), and so that an installed
# library works for consumers linking either way. (On the embedded echo pipeline, which
# bench_http_codec measures, LTO changes the instruction count by under 1%: its gain is in the
# code layout of a whole server.)
# On by default only when trellis is the top-level project: as a dependency, link-time
# optimisation is the parent's choice (CMAKE_INTERPROCEDURAL_OPTIMIZATION).
option(TRELLIS_LTO "Link-time optimisation for Release builds with GCC" ${PROJECT_IS_TOP_LEVEL})
set(TRELLIS_LTO_ACTIVE OFF)
if(TRELLIS_LTO AND CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT TRELLIS_SANITIZE
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  include(CheckIPOSupported)
  check_ipo_supported(RESULT _trellis_ipo OUTPUT _trellis_ipo_output LANGUAGES CXX)
  if(_trellis_ipo)
    set(TRELLIS_LTO_ACTIVE ON)
  else()
    message(STATUS "trellis: link-time optimisation unavailable: ${_trellis_ipo_output}")
  endif()
endif()

# trellis_lto(TARGET): links an executable with link-time optimisation when it is on.
function(trellis_lto target)
  if(TRELLIS_LTO_ACTIVE)
    set_property(TARGET ${target} PROPERTY INTERPROCEDURAL_OPTIMIZATION ON)
  endif()
endfunction()

# trellis_module(NAME [SOURCES folder] [DEPS targets...]) declares trellis_NAME (alias
# trellis::NAME) from NAME/src/*.cpp (or the *.cpp of SOURCES, relative to the current folder)
# with public headers in NAME/include.
function(trellis_module name)
  cmake_parse_arguments(ARG "" "SOURCES" "DEPS" ${ARGN})
  if(NOT ARG_SOURCES)
    set(ARG_SOURCES src)
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_SOURCES}/*.cpp)
  add_library(trellis_${name} ${sources})
  add_library(trellis::${name} ALIAS trellis_${name})
  set_target_properties(trellis_${name} PROPERTIES EXPORT_NAME ${name} POSITION_INDEPENDENT_CODE ON)
  target_include_directories(trellis_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_compile_features(trellis_${name} PUBLIC cxx_std_20)
  target_link_libraries(trellis_${name} PUBLIC ${ARG_DEPS})
  target_link_libraries(trellis_${name} PRIVATE $<BUILD_INTERFACE:trellis_warnings>)
  target_link_libraries(trellis_${name} PUBLIC $<BUILD_INTERFACE:trellis_sanitize>)
  if(TRELLIS_LTO_ACTIVE)
    # Fat objects: CMake's own IPO property would make slim ones (-fno-fat-lto-objects).
    target_compile_options(trellis_${name} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
  set_property(GLOBAL APPEND PROPERTY TRELLIS_MODULES trellis_${name})
endfunction()

# trellis_test_suite(NAME LIBS targets...) builds one doctest binary from tests/*_test.cpp of the
# current directory and registers every test case with ctest.
function(trellis_test_suite name)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp)
  add_executable(${name} ${sources})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} trellis::allocation_hook trellis_doctest_main doctest::doctest
                                        trellis_warnings trellis_sanitize)
  doctest_discover_tests(${name} TEST_PREFIX "${name}." PROPERTIES TIMEOUT 300)
endfunction()
