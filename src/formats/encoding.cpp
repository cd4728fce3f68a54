#include "formats/encoding.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "text/text.hpp"

namespace gpudoctor::text {

namespace {

// Windows-1252's 0x80-0x9F (0: undefined there, read as the C1 control of latin-1).
constexpr uint16_t kCp1252High[32] = {
    0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

void put(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The length of the valid UTF-8 sequence at s[i], 0 when invalid.
size_t utf8_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t min = 0, cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, min = 0x80, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, min = 0x800, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII runs, 32 then 8 bytes at a time.
    while (i + 32 <= n) {
      uint64_t w[4];
      std::memcpy(w, s.data() + i, 32);
      if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ULL) break;
      i += 32;
    }
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8_len(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::optional<Encoding> encoding_by_head(std::string_view bytes) {
  const auto b = [&](size_t k) {
    return k < bytes.size() ? static_cast<unsigned char>(bytes[k]) : 0;
  };
  if (b(0) == 0xEF && b(1) == 0xBB && b(2) == 0xBF) return Encoding::kUtf8Bom;
  if (b(0) == 0xFF && b(1) == 0xFE) return Encoding::kUtf16Le;
  if (b(0) == 0xFE && b(1) == 0xFF) return Encoding::kUtf16Be;
  const std::string_view head = bytes.substr(0, 4096);
  if (looks_utf16(head)) {
    size_t zero_even = 0, zero_odd = 0;
    for (size_t i = 0; i + 1 < head.size(); i += 2) {
      zero_even += head[i] == 0;
      zero_odd += head[i + 1] == 0;
    }
    return zero_odd >= zero_even ? Encoding::kUtf16Le : Encoding::kUtf16Be;
  }
  return std::nullopt;
}

Encoding detect_encoding(std::string_view bytes) {
  if (const auto by_head = encoding_by_head(bytes)) return *by_head;
  // In pieces cut before an ASCII byte (never inside a character, and a sequence an ASCII byte
  // cuts is invalid either way), checked on every CPU, each taking the next piece; a piece's pages
  // go once it is checked, where the text is a mapping this thread registered (ReleasePassed).
  constexpr size_t kPiece = size_t{8} << 20;
  std::vector<std::pair<size_t, size_t>> pieces;
  for (size_t b = 0; b < bytes.size();) {
    size_t e = std::min(bytes.size(), b + kPiece);
    while (e < bytes.size() && static_cast<unsigned char>(bytes[e]) >= 0x80) ++e;
    pieces.emplace_back(b, e);
    b = e;
  }
  std::atomic<bool> valid{true};
  const text::detail::PassedWindow window = text::detail::passed_window;
  parallel_for(pieces.size(), 0, [&](size_t k) {
    if (!valid.load(std::memory_order_relaxed)) return;
    const auto [b, e] = pieces[k];
    if (!valid_utf8(bytes.substr(b, e - b))) valid = false;
    text::detail::release_range(window, bytes.data() + b, bytes.data() + e);
  });
  return valid ? Encoding::kUtf8 : Encoding::kWindows1252;
}

std::string_view decode_to_utf8(std::string_view bytes, Encoding enc, std::string& storage) {
  switch (enc) {
    case Encoding::kUtf8:
      return bytes;
    case Encoding::kUtf8Bom:
      return bytes.substr(3);
    case Encoding::kWindows1252: {
      storage.clear();
      storage.reserve(bytes.size() + bytes.size() / 8);
      const size_t n = bytes.size();
      for (size_t i = 0; i < n;) {
        // ASCII runs are copied whole, 8 bytes tested at a time.
        size_t j = i;
        while (j + 8 <= n) {
          uint64_t w;
          std::memcpy(&w, bytes.data() + j, 8);
          if (w & 0x8080808080808080ULL) break;
          j += 8;
        }
        while (j < n && static_cast<unsigned char>(bytes[j]) < 0x80) ++j;
        storage.append(bytes.data() + i, j - i);
        if (j >= n) break;
        const auto c = static_cast<unsigned char>(bytes[j]);
        if (c < 0xA0 && kCp1252High[c - 0x80] != 0)
          put(storage, kCp1252High[c - 0x80]);
        else
          put(storage, c);
        i = j + 1;
      }
      return storage;
    }
    case Encoding::kUtf16Le:
    case Encoding::kUtf16Be: {
      const bool le = enc == Encoding::kUtf16Le;
      size_t i = 0;
      const auto b = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
      if (bytes.size() >= 2 &&
          ((le && b(0) == 0xFF && b(1) == 0xFE) || (!le && b(0) == 0xFE && b(1) == 0xFF)))
        i = 2;
      storage.clear();
      storage.reserve(bytes.size() / 2 + 16);
      auto unit = [&](size_t k) -> uint32_t {
        return le ? (b(k) | (b(k + 1) << 8)) : ((b(k) << 8) | b(k + 1));
      };
      while (i + 1 < bytes.size()) {
        uint32_t u = unit(i);
        i += 2;
        if (u >= 0xD800 && u <= 0xDBFF && i + 1 < bytes.size()) {
          const uint32_t lo = unit(i);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            i += 2;
            put(storage, 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00));
            continue;
          }
        }
        if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD;
        put(storage, u);
      }
      return storage;
    }
  }
  return bytes;
}

std::string_view encoding_name(Encoding enc) {
  switch (enc) {
    case Encoding::kUtf8:
      return "UTF-8";
    case Encoding::kUtf8Bom:
      return "UTF-8 with a byte order mark";
    case Encoding::kUtf16Le:
      return "UTF-16 LE";
    case Encoding::kUtf16Be:
      return "UTF-16 BE";
    case Encoding::kWindows1252:
      return "Windows-1252 (latin-1)";
  }
  return "UTF-8";
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_len(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace gpudoctor::text
