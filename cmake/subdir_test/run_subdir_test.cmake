# Run by ctest as `cmake -P` (see CMakeLists.txt beside this file). Steps:
#   1. configure consumer/ (which add_subdirectory()s TRELLIS_SOURCE_DIR) without a build type,
#   2. build only the consumer's program, 3. check nothing else of trellis was built, 4. run it.
cmake_minimum_required(VERSION 3.25)

foreach(_var TRELLIS_SOURCE_DIR TRELLIS_VERSION WORK_DIR CONSUMER_SOURCE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "run_subdir_test.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_step name)
  string(TIMESTAMP _start "%s")
  message(STATUS "[add_subdirectory_consumer] ${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  string(TIMESTAMP _end "%s")
  math(EXPR _secs "${_end} - ${_start}")
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "[add_subdirectory_consumer] ${name} failed (exit ${_rc}) after ${_secs}s")
  endif()
  message(STATUS "[add_subdirectory_consumer] ${name}: ok (${_secs}s)")
  set(STEP_OUTPUT "${_out}" PARENT_SCOPE)
endfunction()

# 1. Configure. No CMAKE_BUILD_TYPE on purpose: a top-level trellis would force Release into the
#    cache; as a dependency it must leave the parent's (empty) choice alone. The parent's
#    CMAKE_CXX_FLAGS is a marker the consumer checks is still there, unchanged, afterwards.
set(_configure_args
  -S "${CONSUMER_SOURCE_DIR}" -B "${_build}" -G "${GENERATOR}"
  "-DTRELLIS_SOURCE_DIR=${TRELLIS_SOURCE_DIR}"
  "-DTRELLIS_EXPECTED_VERSION=${TRELLIS_VERSION}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_CXX_FLAGS=-DTRELLIS_CONSUMER_PARENT_FLAGS=1")
if(MAKE_PROGRAM)
  list(APPEND _configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run_step("configure consumer" ${CMAKE_COMMAND} ${_configure_args})

# 2. Build the consumer's program only: that needs trellis::pipeline and nothing else.
run_step("build consumer" ${CMAKE_COMMAND} --build "${_build}" --target trellis_subdir_consumer)

# 3. Only what the program links was built.
file(GLOB_RECURSE _libraries "${_build}/trellis/*.a" "${_build}/trellis/*.so")
list(TRANSFORM _libraries REPLACE ".*/" "")
if(NOT _libraries STREQUAL "libtrellis_pipeline.a" AND NOT _libraries STREQUAL "libtrellis_pipeline.so")
  message(FATAL_ERROR "[add_subdirectory_consumer] built trellis libraries: '${_libraries}', "
                      "expected only trellis_pipeline")
endif()

# 4. Run it: it prints the version it was compiled against.
find_program(_exe trellis_subdir_consumer PATHS "${_build}" NO_DEFAULT_PATH NO_CACHE)
if(NOT _exe)
  message(FATAL_ERROR "[add_subdirectory_consumer] the consumer binary was not built")
endif()
run_step("run consumer" "${_exe}")
if(NOT STEP_OUTPUT MATCHES "trellis ${TRELLIS_VERSION} ")
  message(FATAL_ERROR "[add_subdirectory_consumer] unexpected output: ${STEP_OUTPUT}")
endif()
message(STATUS "[add_subdirectory_consumer] consumer says: ${STEP_OUTPUT}")
