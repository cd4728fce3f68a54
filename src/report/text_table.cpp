#include "report/text_table.hpp"

#include <algorithm>

#include "core/utf8.hpp"

namespace gpudoctor {
namespace {

// The byte offset of code point `n` in s (s.size() past the end).
size_t offset_of(const std::string& s, size_t n) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (seen == n) return i;
    ++seen;
  }
  return s.size();
}

std::string pad(const std::string& s, size_t width, bool right) {
  const size_t w = text_columns(s);
  if (w >= width) return s;
  return right ? std::string(width - w, ' ') + s : s + std::string(width - w, ' ');
}

}  // namespace

std::string fit_cell(const std::string& text, size_t width, bool middle) {
  const size_t w = text_columns(text);
  if (w <= width) return text;
  if (width == 0) return "";
  if (width == 1) return "~";
  if (!middle) return text.substr(0, offset_of(text, width - 1)) + "~";
  const size_t keep = width - 1, tail = keep / 2 + keep % 2, head = keep - tail;
  return text.substr(0, offset_of(text, head)) + "~" + text.substr(offset_of(text, w - tail));
}

void TextTable::fit(const std::vector<std::vector<std::string>>& rows, size_t width) {
  widths_.assign(columns_.size(), 0);
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].drop < 0) continue;
    widths_[c] = text_columns(columns_[c].header);
    for (const auto& r : rows)
      if (c < r.size()) widths_[c] = std::max(widths_[c], text_columns(r[c]));
  }
  auto total = [&] {
    size_t t = 0, n = 0;
    for (size_t w : widths_)
      if (w > 0) t += w, ++n;
    return n > 0 ? t + gap_ * (n - 1) : 0;
  };
  // Drop the columns that matter least: before shorten_from while the row does not fit as it is,
  // after it while it would not fit even with the flexible columns at their narrowest.
  auto narrowest = [&] {
    size_t t = total();
    for (size_t c = 0; c < columns_.size(); ++c)
      if (widths_[c] > 0 && columns_[c].min > 0)
        t -= widths_[c] -
             std::min(widths_[c], std::max(columns_[c].min, text_columns(columns_[c].header)));
    return t;
  };
  const int last_rank =
      std::max_element(columns_.begin(), columns_.end(),
                       [](const TextColumn& a, const TextColumn& b) { return a.drop < b.drop; })
          ->drop;
  for (int rank = 1; rank <= last_rank; ++rank) {
    if ((rank < shorten_from_ ? total() : narrowest()) <= width) break;
    for (size_t c = 0; c < columns_.size(); ++c)
      if (columns_[c].drop == rank) widths_[c] = 0;
  }
  // Then shorten the flexible columns, the widest first, a column at a time.
  while (total() > width) {
    size_t best = columns_.size();
    for (size_t c = 0; c < columns_.size(); ++c) {
      const size_t floor = std::max(columns_[c].min, text_columns(columns_[c].header));
      if (widths_[c] == 0 || columns_[c].min == 0 || widths_[c] <= floor) continue;
      if (best == columns_.size() || widths_[c] > widths_[best]) best = c;
    }
    if (best == columns_.size()) break;  // as narrow as it goes
    --widths_[best];
  }
}

std::string TextTable::header() const {
  std::vector<std::string> h;
  for (const auto& c : columns_) h.push_back(c.header);
  return row(h);
}

std::string TextTable::row(const std::vector<std::string>& cells) const {
  std::string out;
  size_t last = 0;
  for (size_t c = 0; c < columns_.size(); ++c)
    if (shown(c)) last = c;
  bool first = true;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (!shown(c)) continue;
    if (!first) out.append(gap_, ' ');
    first = false;
    const std::string text =
        fit_cell(c < cells.size() ? cells[c] : std::string(), widths_[c], columns_[c].middle);
    // The last column is not padded (no trailing spaces).
    out += c == last && !columns_[c].right ? text : pad(text, widths_[c], columns_[c].right);
  }
  return out + "\n";
}

size_t TextTable::width() const {
  size_t t = 0, n = 0;
  for (size_t w : widths_)
    if (w > 0) t += w, ++n;
  return n > 0 ? t + gap_ * (n - 1) : 0;
}

}  // namespace gpudoctor
