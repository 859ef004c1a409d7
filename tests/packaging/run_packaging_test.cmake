# Installs the already-built mxlimit into a scratch prefix and builds a consumer
# project against it with find_package(mxlimit): the C++ libraries, and the C
# ABI shared and static. Run by ctest in script mode; the prefix is left for
# run_pkg_config_test.cmake.
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${prefix} ${consumer_build})

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging step failed (${rc}): ${ARGN}")
  endif()
endfunction()

if(NOT CONFIG)
  set(CONFIG Release)
endif()
run_step(${CMAKE_COMMAND} --install ${MXLIMIT_BINARY_DIR} --prefix ${prefix} --config ${CONFIG})
run_step(${CMAKE_COMMAND} -S ${MXLIMIT_SOURCE_DIR}/tests/packaging/consumer -B ${consumer_build}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
  -DMXLIMIT_VERSION=${VERSION})
run_step(${CMAKE_COMMAND} --build ${consumer_build})
run_step(${consumer_build}/consumer)
# The C ABI through mxlimit::c (libmxlimit_c.so) and mxlimit::c_static.
run_step(${consumer_build}/c_consumer shared)
run_step(${consumer_build}/c_consumer_static static)
if(EXISTS ${consumer_build}/shared_consumer)
  run_step(${consumer_build}/shared_consumer)
endif()
