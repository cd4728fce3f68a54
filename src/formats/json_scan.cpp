#include "formats/json_scan.hpp"

#include <algorithm>

#include "formats/encoding.hpp"

namespace gpudoctor::json_scan {

namespace {

constexpr int kMaxScanDepth = 32;

bool digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

void Scan::space() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
    ++i_;
}

bool Scan::value(std::string_view s, size_t pos, size_t& end) {
  s_ = s;
  i_ = pos;
  nodes_.clear();
  space();
  if (!parse(root_, 0)) return false;
  end = i_;
  return true;
}

bool Scan::literal(std::string_view word) {
  if (s_.substr(i_, word.size()) != word) return false;
  i_ += word.size();
  return true;
}

// A string without escapes or control characters, valid UTF-8: its content.
bool Scan::string(std::string_view& out) {
  if (!at('"')) return false;
  const size_t b = ++i_;
  bool high = false;
  for (; i_ < s_.size(); ++i_) {
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c == '"') {
      out = s_.substr(b, i_ - b);
      ++i_;
      return !high || text::valid_utf8(out);
    }
    if (c == '\\' || c < 0x20) return false;
    high = high || c >= 0x80;
  }
  return false;
}

// A number, as cell_of writes the DOM's value (fmt's shortest form, which for the numbers taken
// here is the text itself without trailing fraction zeros).
bool Scan::number(std::string_view& out) {
  const size_t b = i_;
  if (at('-')) ++i_;
  const size_t int_b = i_;
  if (!(i_ < s_.size() && digit(s_[i_]))) return false;
  if (at('0')) {
    ++i_;
    if (i_ < s_.size() && digit(s_[i_])) return false;  // "01": not JSON
  } else {
    while (i_ < s_.size() && digit(s_[i_])) ++i_;
  }
  const size_t int_e = i_;
  if (!at('.')) {
    if (at('e') || at('E') || int_e - int_b > 18) return false;
    out = s_.substr(b, i_ - b);
    if (out == "-0") out = "0";  // (an integer: the DOM holds 0)
    return true;
  }
  const size_t frac_b = ++i_;
  while (i_ < s_.size() && digit(s_[i_])) ++i_;
  const size_t frac_e = i_;
  if (frac_e == frac_b || at('e') || at('E')) return false;
  size_t keep = frac_e;
  while (keep > frac_b && s_[keep - 1] == '0') --keep;
  size_t significant = 0;
  if (int_e - int_b == 1 && s_[int_b] == '0') {
    size_t z = frac_b;
    while (z < keep && s_[z] == '0') ++z;
    if (z < keep && z - frac_b >= 4) return false;  // below 1e-4: fmt writes an exponent
    significant = keep - z;
  } else {
    significant = (int_e - int_b) + (keep - frac_b);
  }
  if (significant > 15) return false;
  out = s_.substr(b, (keep == frac_b ? int_e : keep) - b);  // "400.0" -> "400", "-0.0" -> "-0"
  return true;
}

bool Scan::parse(Node& out, int depth) {
  if (i_ >= s_.size()) return false;
  switch (s_[i_]) {
    case '{':
      return container(out, depth, true);
    case '[':
      return container(out, depth, false);
    case '"':
      out.type = Type::kString;
      return string(out.cell);
    case 't':
      out.type = Type::kBool;
      out.cell = "1";
      return literal("true");
    case 'f':
      out.type = Type::kBool;
      out.cell = "0";
      return literal("false");
    case 'n':
      out.type = Type::kNull;
      return literal("null");
    default:
      out.type = Type::kNumber;
      return number(out.cell);
  }
}

bool Scan::container(Node& out, int depth, bool object) {
  if (depth >= kMaxScanDepth) return false;
  const char close = object ? '}' : ']';
  out.type = object ? Type::kObject : Type::kArray;
  ++i_;
  if (pending_.size() <= static_cast<size_t>(depth))
    pending_.resize(static_cast<size_t>(depth) + 1);
  pending_[static_cast<size_t>(depth)].clear();
  space();
  if (!at(close)) {
    while (true) {
      Node element;
      if (object) {
        if (!string(element.key)) return false;
        space();
        if (!at(':')) return false;
        ++i_;
        space();
      }
      if (!parse(element, depth + 1)) return false;
      pending_[static_cast<size_t>(depth)].push_back(element);
      space();
      if (at(',')) {
        ++i_;
        space();
        continue;
      }
      if (!at(close)) return false;
      break;
    }
  }
  ++i_;
  const auto& elements = pending_[static_cast<size_t>(depth)];
  out.first = static_cast<uint32_t>(nodes_.size());
  out.count = static_cast<uint32_t>(elements.size());
  nodes_.insert(nodes_.end(), elements.begin(), elements.end());
  return true;
}

void Scan::members(const Node& object, std::vector<uint32_t>& out) const {
  out.resize(object.count);
  for (uint32_t i = 0; i < object.count; ++i) out[i] = i;
  std::stable_sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    return child(object, a).key < child(object, b).key;
  });
  // A key given twice: its last value (each run of equal keys keeps its last, in file order).
  size_t w = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    if (r + 1 < out.size() && child(object, out[r]).key == child(object, out[r + 1]).key) continue;
    out[w++] = out[r];
  }
  out.resize(w);
}

}  // namespace gpudoctor::json_scan
