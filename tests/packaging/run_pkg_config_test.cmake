cmake_minimum_required(VERSION 3.25)
# Builds and runs a C program against the mxlimit installed by
# run_packaging_test.cmake, through the installed mxlimit-c.pc only: the
# flags come from `pkg-config --cflags --libs mxlimit-c`, the compiler is
# called directly, as cgo's `#cgo pkg-config:` and a Rust build.rs do. The
# .pc file is relocatable, so the scratch prefix works as /usr/local would.
set(prefix ${WORK_DIR}/prefix)
set(out ${WORK_DIR}/c_consumer_pkg_config)
set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)

execute_process(COMMAND ${PKG_CONFIG} --cflags --libs mxlimit-c
  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config found no mxlimit-c in $ENV{PKG_CONFIG_PATH}")
endif()
message(STATUS "pkg-config --cflags --libs mxlimit-c: ${flags}")
# Paths are relative to the .pc file's directory; resolved, they must be the
# prefix's.
separate_arguments(flags UNIX_COMMAND "${flags}")
set(found_include OFF)
set(found_lib OFF)
foreach(flag IN LISTS flags)
  if(flag MATCHES "^-I(.+)$")
    file(REAL_PATH "${CMAKE_MATCH_1}" dir)
    if(dir STREQUAL "${prefix}/include")
      set(found_include ON)
    endif()
  elseif(flag MATCHES "^-L(.+)$")
    file(REAL_PATH "${CMAKE_MATCH_1}" dir)
    if(dir STREQUAL "${prefix}/${LIBDIR}")
      set(found_lib ON)
    endif()
  endif()
endforeach()
if(NOT found_include OR NOT found_lib OR NOT "-lmxlimit_c" IN_LIST flags)
  message(FATAL_ERROR "mxlimit-c.pc does not point into ${prefix}: ${flags}")
endif()
execute_process(COMMAND ${C_COMPILER} -std=c11 -Wall -Wextra -Werror
    ${MXLIMIT_SOURCE_DIR}/tests/packaging/consumer/main.c ${flags} -o ${out}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with mxlimit-c's flags failed (${rc})")
endif()
# Installed libraries are found through the loader's path, as after
# `ldconfig` in a real prefix.
set(ENV{LD_LIBRARY_PATH} ${prefix}/${LIBDIR})
execute_process(COMMAND ${out} pkg-config RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the pkg-config consumer failed (${rc})")
endif()
