# Run by ctest as `cmake -P` (see CMakeLists.txt beside this file). Steps:
#   1. cmake --install TRELLIS_BUILD_DIR --prefix WORK_DIR/prefix
#   2. configure consumer/ against that prefix only (CMAKE_PREFIX_PATH), same compiler/build type
#   3. build it, 4. run it,
#   5. compile consumer/main.cpp with `pkg-config --cflags --libs trellis` (PKG_CONFIG_PATH set to
#      the prefix only) and the same compiler and flags, 6. run that.
cmake_minimum_required(VERSION 3.25)

foreach(_var TRELLIS_BUILD_DIR TRELLIS_VERSION WORK_DIR CONSUMER_SOURCE_DIR GENERATOR CXX_COMPILER)
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
foreach(_header trellis/pipeline/error.hpp trellis/pipeline/unique_function.hpp trellis/version.hpp)
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
  "-DTRELLIS_EXPECTED_VERSION=${TRELLIS_VERSION}"
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
if(NOT STEP_OUTPUT MATCHES "trellis ${TRELLIS_VERSION} ")
  message(FATAL_ERROR "[install_consumer] the consumer did not report trellis ${TRELLIS_VERSION}")
endif()

# 5. The same program built with pkg-config only, from the installed trellis.pc.
file(GLOB_RECURSE _pc_files "${_prefix}/*/pkgconfig/trellis.pc")
if(NOT _pc_files)
  message(FATAL_ERROR "[install_consumer] no pkgconfig/trellis.pc under the installed prefix")
endif()
list(GET _pc_files 0 _pc_file)
get_filename_component(_pc_dir "${_pc_file}" DIRECTORY)
find_program(_pkg_config NAMES pkg-config pkgconf NO_CACHE REQUIRED)
set(_pkg_config_env ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${_pc_dir}" ${_pkg_config})
run_step("pkg-config version" ${_pkg_config_env} --modversion trellis)
string(STRIP "${STEP_OUTPUT}" _pc_version)
if(NOT _pc_version STREQUAL TRELLIS_VERSION)
  message(FATAL_ERROR "[install_consumer] trellis.pc says version ${_pc_version}, not ${TRELLIS_VERSION}")
endif()
run_step("pkg-config flags" ${_pkg_config_env} --cflags --libs trellis)
string(STRIP "${STEP_OUTPUT}" _pc_flags)
message(STATUS "[install_consumer] pkg-config --cflags --libs trellis: ${_pc_flags}")
separate_arguments(_pc_flags UNIX_COMMAND "${_pc_flags}")
separate_arguments(_cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
separate_arguments(_linker_flags UNIX_COMMAND "${EXE_LINKER_FLAGS}")
set(_pc_exe "${WORK_DIR}/pkgconfig_consumer")
run_step("compile with pkg-config" ${CXX_COMPILER} -std=c++20 ${_cxx_flags}
         "-DTRELLIS_EXPECTED_VERSION=\"${TRELLIS_VERSION}\"" "${CONSUMER_SOURCE_DIR}/main.cpp"
         -o "${_pc_exe}" ${_linker_flags} ${_pc_flags})

# 6. Run it.
run_step("run pkg-config consumer" "${_pc_exe}")
if(NOT STEP_OUTPUT MATCHES "trellis ${TRELLIS_VERSION} ")
  message(FATAL_ERROR "[install_consumer] the pkg-config consumer did not report trellis ${TRELLIS_VERSION}")
endif()
message(STATUS "[install_consumer] pkg-config consumer says: ${STEP_OUTPUT}")
