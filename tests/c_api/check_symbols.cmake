# The symbol check of libmxlimit_c.so, run by ctest in script mode:
#   * `nm -D --defined-only` lists only mxlimit_* symbols (no engine, abseil,
#     yaml-cpp or standard library symbol leaks out to clash with another
#     copy in the embedder's process);
#   * they are exactly the functions c.h declares with MXLIMIT_C_API, it and
#     the mxlimit/c_*.h headers it includes (c_outcomes.h, c_tiers.h):
#     what a program that includes c.h sees;
#   * the SONAME is libmxlimit_c.so.MAJOR.
# -D LIBRARY=... NM=... READELF=... HEADER=... SONAME=...
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  OUTPUT_VARIABLE nm_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc})")
endif()
string(REPLACE "\n" ";" nm_lines "${nm_out}")
set(exported)
set(foreign)
foreach(line IN LISTS nm_lines)
  if(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ ]+)$")
    set(type ${CMAKE_MATCH_1})
    set(name ${CMAKE_MATCH_2})
    # Functions only (T: defined in the text section).
    if(type STREQUAL "T" AND name MATCHES "^mxlimit_[a-z0-9_]+$")
      list(APPEND exported ${name})
    else()
      list(APPEND foreign "${line}")
    endif()
  elseif(NOT line STREQUAL "")
    list(APPEND foreign "${line}")
  endif()
endforeach()
if(foreign)
  list(JOIN foreign "\n  " foreign)
  message(FATAL_ERROR "${LIBRARY} exports more than the mxlimit_* "
    "functions:\n  ${foreign}")
endif()

# c.h, then every mxlimit/c_*.h it includes, found next to it.
get_filename_component(header_dir ${HEADER} DIRECTORY)
file(STRINGS ${HEADER} included REGEX "^#include \"mxlimit/c_[a-z0-9_]+\\.h\"")
set(headers ${HEADER})
foreach(line IN LISTS included)
  string(REGEX MATCH "c_[a-z0-9_]+\\.h" name "${line}")
  if(NOT EXISTS ${header_dir}/${name})
    message(FATAL_ERROR "${HEADER} includes mxlimit/${name}, not in ${header_dir}")
  endif()
  list(APPEND headers ${header_dir}/${name})
endforeach()
set(declared)
foreach(header IN LISTS headers)
  file(STRINGS ${header} declarations REGEX "^MXLIMIT_C_API ")
  foreach(line IN LISTS declarations)
    if(NOT line MATCHES "(mxlimit_[a-z0-9_]+)\\(")
      message(FATAL_ERROR "${header}: cannot read the declaration: ${line}")
    endif()
    list(APPEND declared ${CMAKE_MATCH_1})
  endforeach()
endforeach()
list(SORT exported)
list(SORT declared)
if(NOT exported STREQUAL declared)
  message(FATAL_ERROR "exported functions differ from those declared in "
    "${headers}:\n"
    "  exported: ${exported}\n  declared: ${declared}")
endif()
list(LENGTH exported count)

execute_process(COMMAND ${READELF} -d ${LIBRARY}
  OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "Library soname: \\[([^]]+)\\]")
  message(FATAL_ERROR "${LIBRARY} has no SONAME")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL SONAME)
  message(FATAL_ERROR "SONAME is ${CMAKE_MATCH_1}, expected ${SONAME}")
endif()
message(STATUS "${SONAME}: exports exactly the ${count} functions of c.h")
