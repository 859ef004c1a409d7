# The code-generation options of the core library (the hot path), in one
# place: the main build and bench/before_after, which builds two trees' cores
# side by side, apply them alike.
#
#   include(cmake/CoreCompileOptions.cmake)
#   mxlimit_core_compile_options(target)
function(mxlimit_core_compile_options target)
  # PIC code may be linked into a shared object, and GCC then assumes any
  # exported function could be replaced at load time, so it will not inline
  # one into another; Engine::Check needs that inlining (see engine.cc, and
  # BM_Limiter_Check, which guards it). Nothing interposes this library's
  # functions.
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU>:-fno-semantic-interposition>)
  # GCC's generic x86-64 tuning clears any block past a few dozen bytes with
  # `rep stosq`, whose start-up costs more than a bucket's evaluation; every
  # Decision (mostly zero fields) is built that way. Known-size clears become
  # SSE stores instead, as clang emits them anyway (BM_Limiter_Check shows
  # the difference; CHANGELOG.md has the figures). Release builds only, the
  # ones measured: clang-tidy reads the dev preset's compile commands, and
  # clang rejects a GCC-only option there.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND
     CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    target_compile_options(${target} PRIVATE
      $<$<CONFIG:Release>:-mmemset-strategy=vector_loop:1024:noalign,libcall:-1:noalign>)
  endif()
endfunction()
