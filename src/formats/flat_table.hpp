// Structured inputs (JSON samples, W&B run files) flattened into one table of named cells, the
// shape every text log reader ends up with. The table is written as RFC 4180 CSV whose header is
// the union of the names in order of first appearance, and read by the column catalogue
// (read_generic_csv), so a tool's metric names are known in one place whatever framing carried
// them. Not thread-safe; one table per reader call.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpudoctor::log_reader {

class FlatTable {
 public:
  // Starts a new row; cells set after it belong to it.
  void begin_row();
  // Sets a cell of the current row (the last value wins when a name repeats in one row).
  void set(std::string_view column, std::string_view cell);
  // Drops the current row when it has no cell (a record without any metric).
  void drop_empty_row();
  size_t rows() const { return rows_.size(); }
  size_t columns() const { return names_.size(); }
  // The table as CSV text: a header line, then one line per row ("" cells where a row has none).
  std::string csv() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;
  std::vector<std::string> names_;
  // Per column, the row that last set it and where in that row: a repeated name overwrites.
  std::vector<std::pair<size_t, size_t>> last_set_;
  std::vector<std::vector<std::pair<size_t, std::string>>> rows_;
};

// A CSV cell: as is, or quoted with doubled quotes when it holds a separator, quote or newline.
void append_csv_cell(std::string& out, std::string_view cell);

}  // namespace gpudoctor::log_reader
