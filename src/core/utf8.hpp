// UTF-8 in and out, strict as Prometheus and terminals need it: overlong forms, surrogates, code
// points past U+10FFFF and cut sequences are invalid, and each invalid byte decodes to U+FFFD.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpudoctor {

std::u32string decode_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t c);
// The text with every invalid byte replaced by U+FFFD (the text itself when it is valid): what a
// Prometheus label value or a JSON string may carry when the bytes come from the host (process
// names, which NVML also cuts at a byte count).
std::string valid_utf8(std::string_view s);
// The columns the text takes on a terminal: its code points (every one taken as one column wide,
// which holds for the text gpudoctor writes: Latin, box drawing, block elements).
size_t text_columns(std::string_view s);

}  // namespace gpudoctor
