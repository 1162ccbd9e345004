# Run by ctest as `cmake -P` (see CMakeLists.txt beside this file). Steps:
#   1. cmake --install TRELLIS_BUILD_DIR --prefix WORK_DIR/prefix
#   2. configure consumer/ against that prefix only (CMAKE_PREFIX_PATH), same compiler/build type
#   3. build it, 4. run it.
cmake_minimum_required(VERSION 3.25)

foreach(_var TRELLIS_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "run_install_test.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_prefix "${WORK_DIR}/prefix")
set(_consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_step name)
  string(TIMESTAMP _start "%s")
  message(STATUS "[install_consumer] ${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  string(TIMESTAMP _end "%s")
  math(EXPR _secs "${_end} - ${_start}")
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "[install_consumer] ${name} failed (exit ${_rc}) after ${_secs}s")
  endif()
  message(STATUS "[install_consumer] ${name}: ok (${_secs}s)")
  set(STEP_OUTPUT "${_out}" PARENT_SCOPE)
endfunction()

set(_config_args "")
if(CONFIG)
  set(_config_args --config "${CONFIG}")
endif()

# 1. Install.
run_step("install" ${CMAKE_COMMAND} --install "${TRELLIS_BUILD_DIR}" --prefix "${_prefix}" ${_config_args})
file(GLOB_RECURSE _config_files "${_prefix}/*/trellisConfig.cmake")
if(NOT _config_files)
  message(FATAL_ERROR "[install_consumer] no trellisConfig.cmake under the installed prefix")
endif()
foreach(_header trellis/pipeline/error.hpp trellis/pipeline/unique_function.hpp)
  if(NOT EXISTS "${_prefix}/include/${_header}")
    message(FATAL_ERROR "[install_consumer] include/${_header} is missing from the installed prefix")
  endif()
endforeach()

# 2. Configure the consumer. CMAKE_FIND_USE_PACKAGE_REGISTRY=OFF and the explicit prefix make sure
#    it cannot pick up the build tree or another installed trellis.
set(_configure_args
  -S "${CONSUMER_SOURCE_DIR}" -B "${_consumer_build}" -G "${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${_prefix}"
  "-DTRELLIS_EXPECTED_PREFIX=${_prefix}"
  "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
if(CONFIG)
  list(APPEND _configure_args "-DCMAKE_BUILD_TYPE=${CONFIG}")
endif()
if(MAKE_PROGRAM)
  list(APPEND _configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run_step("configure consumer" ${CMAKE_COMMAND} ${_configure_args})

# 3. Build it.
run_step("build consumer" ${CMAKE_COMMAND} --build "${_consumer_build}" ${_config_args})

# 4. Run it.
find_program(_consumer_exe trellis_consumer PATHS "${_consumer_build}" "${_consumer_build}/${CONFIG}"
             NO_DEFAULT_PATH NO_CACHE)
if(NOT _consumer_exe)
  message(FATAL_ERROR "[install_consumer] the consumer binary was not built")
endif()
run_step("run consumer" "${_consumer_exe}")
message(STATUS "[install_consumer] consumer says: ${STEP_OUTPUT}")
