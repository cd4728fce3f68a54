# Build step: a text file as a C++ string (a raw string literal), so the program carries the file
# and never reads it at run time.
#   cmake -DIN=FILE -DOUT=HEADER -DNAME=IDENTIFIER -P embed_text.cmake
# HEADER declares `inline constexpr std::string_view gpudoctor::embedded::IDENTIFIER`.
file(READ "${IN}" text)
set(delim "gpudoctor_embed")
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed_text: ${IN} contains the raw string's end marker )${delim}\"")
endif()
set(body "// Generated from ${IN} by cmake/embed_text.cmake at build time: edit that file, not this.
#pragma once

#include <string_view>

namespace gpudoctor::embedded {
inline constexpr std::string_view ${NAME} = R\"${delim}(${text})${delim}\";
}  // namespace gpudoctor::embedded
")
# Rewrite only on change, so an unchanged table rebuilds nothing.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL body)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${body}")
