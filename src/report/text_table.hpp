// A text table that fits a width: columns that matter least are dropped first, then the flexible
// ones (names, owners, processes) are shortened (from the middle or the end) down to their
// minimum. `status` and `watch` lay out their tables with it (100 columns unless the terminal is
// wider or narrower).
#pragma once

#include <string>
#include <vector>

namespace gpudoctor {

struct TextColumn {
  std::string header;
  bool right = false;   // right-aligned (numbers)
  int drop = 0;         // 0: always shown; -1: never; else dropped in order 1, 2, ... when too wide
  size_t min = 0;       // a flexible column's narrowest width (0: not flexible)
  bool middle = false;  // shortened from the middle ("kube…/train-7f9") rather than the end
};

// The text shortened to `width` code points: from the end ("NVIDIA GeForce RTX 3…") or from the
// middle ("namespace/po…/train-0").
std::string fit_cell(const std::string& text, size_t width, bool middle);

class TextTable {
 public:
  // `gap`: the spaces between two columns. Columns whose drop rank is below `shorten_from` go
  // before any flexible column is shortened; from that rank on, a column goes only when
  // shortening the flexible ones to their minimum would not make the row fit.
  explicit TextTable(std::vector<TextColumn> columns, size_t gap = 2, int shorten_from = 1)
      : columns_(std::move(columns)), gap_(gap), shorten_from_(shorten_from) {}

  // Lays the columns out for these rows (each a cell per column) within `width`: which columns
  // are shown and how wide each is. Call before header() and row().
  void fit(const std::vector<std::vector<std::string>>& rows, size_t width);
  std::string header() const;
  std::string row(const std::vector<std::string>& cells) const;
  // The laid-out width of the table (what fit() chose).
  size_t width() const;
  bool shown(size_t column) const { return column < widths_.size() && widths_[column] > 0; }

 private:
  std::vector<TextColumn> columns_;
  size_t gap_;
  int shorten_from_;
  std::vector<size_t> widths_;  // 0: dropped
};

}  // namespace gpudoctor
