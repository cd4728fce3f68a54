// Encodings, decoded once at the edge (formats/load.cpp) so that every reader sees UTF-8 and every
// output (text, JSON, HTML) is valid UTF-8: UTF-8 with or without a byte order mark, UTF-16 LE/BE
// (with its byte order mark, or told by the NUL bytes of ASCII text), and, where the bytes are not
// valid UTF-8, Windows-1252 (latin-1 with the printable 0x80-0x9F of Windows: GPU-Z's "°C").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpudoctor::text {

enum class Encoding { kUtf8, kUtf8Bom, kUtf16Le, kUtf16Be, kWindows1252 };

// How a reader that decodes as it reads (InputReader::decodes_as_it_reads) takes a text's bytes,
// as load_text tells it: UTF-8 (decoded before, or ASCII); UTF-8 not checked yet: each line
// holding a byte of 0x80 or more is checked as it is read, and a text that is not all UTF-8 gives
// an error of code kNotUtf8; Windows-1252 (load_text found the text is not UTF-8): each line
// holding such a byte is decoded to UTF-8 as it is read, the others (most, in the logs of GPU-Z
// and HWiNFO, whose "°C" is in the header) are read in place, with no copy of the text.
enum class ReadAs { kUtf8, kCheckUtf8, kWindows1252 };

// The encoding of a text, from its first bytes (byte order marks, NUL bytes) and, for 8-bit text,
// whether the whole text is valid UTF-8.
Encoding detect_encoding(std::string_view bytes);
// The encoding its first bytes alone tell (a byte order mark, UTF-16's NUL bytes), or nullopt: an
// 8-bit text, UTF-8 where all of it is valid UTF-8, else Windows-1252 (detect_encoding).
std::optional<Encoding> encoding_by_head(std::string_view bytes);
// True when the bytes are valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view bytes);

// The text as UTF-8 without a byte order mark: a view into `bytes` when it already is (no copy),
// else into `storage`, which receives the converted text. Invalid UTF-16 (a lone surrogate)
// becomes U+FFFD.
std::string_view decode_to_utf8(std::string_view bytes, Encoding enc, std::string& storage);

// "UTF-16 LE", "Windows-1252" ...
std::string_view encoding_name(Encoding enc);

// Any string made valid UTF-8: invalid bytes become U+FFFD (names and cells quoted in messages).
std::string sanitize_utf8(std::string_view s);

}  // namespace gpudoctor::text
