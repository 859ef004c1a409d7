# Writes a C++ header that holds a Lua script's exact bytes and their SHA-1
# (the name EVALSHA calls it by), so the library never carries a hand-copied
# string that could drift from the .lua file.
#
#   cmake -DINPUT=script.lua -DOUTPUT=script.h -DNAME=kMxl1Script -P EmbedLuaScript.cmake
#
# Defines `inline constexpr std::string_view ${NAME}` and `${NAME}Sha1`.
file(READ ${INPUT} body)
string(SHA1 sha1 "${body}")
set(delimiter "mxlimit_lua")
string(FIND "${body}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter ${delimiter}")
endif()
get_filename_component(source ${INPUT} NAME)
file(WRITE ${OUTPUT}.tmp
"// Generated from ${source} by cmake/EmbedLuaScript.cmake: do not edit.
#pragma once
#include <string_view>
namespace mxlimit::internal {
inline constexpr std::string_view ${NAME} = R\"${delimiter}(${body})${delimiter}\";
inline constexpr std::string_view ${NAME}Sha1 = \"${sha1}\";
}  // namespace mxlimit::internal
")
# Unchanged output keeps its timestamp: no needless rebuilds.
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
