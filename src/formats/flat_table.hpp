// Rows of cells that a reader has already split, the shape every text log reader ends up with, and
// two tables of them:
//   - FlatTable: structured inputs (JSON samples, W&B run files) flattened into rows of named
//     cells; the columns are the union of the names in order of first appearance.
//   - CellTable: the framing variants (formats/text_layouts): a header and rows of cells, each
//     with the file's line it came from.
// The column catalogue's reader takes either as it takes a CSV text (read_generic_csv), so a
// tool's metric names are known in one place whatever framing carried them, and nothing is
// written out as CSV to be parsed again. Not thread-safe; one table per reader call.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpudoctor::log_reader {

// What the catalogue's reader needs of a table: the header's names, the rows' cells (trimmed, as
// a CSV reader gives them) and the file's line of each, for messages.
class CellRows {
 public:
  virtual ~CellRows() = default;
  virtual size_t columns() const = 0;
  virtual std::string_view name(size_t column) const = 0;
  virtual size_t rows() const = 0;
  // Row r's cells, one per column ("" where the row has none).
  virtual void row(size_t r, std::vector<std::string_view>& cells) const = 0;
  // The file's line of the header and of row r (the table as a CSV text: 1 and r + 2).
  virtual size_t header_line() const { return 1; }
  virtual size_t line(size_t r) const { return r + 2; }
  // Row r names the columns of the rows below it (a log whose header changes mid-file).
  virtual bool is_header(size_t /*r*/) const { return false; }
  // The last row was cut short (the file ends inside it): counted as such, not read.
  virtual bool last_row_cut() const { return false; }
};

class FlatTable : public CellRows {
 public:
  // Starts a new row; cells set after it belong to it.
  void begin_row();
  // Sets a cell of the current row (the last value wins when a name repeats in one row): set
  // copies the cell, set_view keeps the view (of text that outlives the table).
  void set(std::string_view column, std::string_view cell);
  void set_view(std::string_view column, std::string_view cell);
  // The index of a column, or npos. With a hint: the column the previous row set as its
  // hint-th cell is tried first (rows of one log name their columns in the same order).
  size_t find(std::string_view column) const;
  size_t find(std::string_view column, size_t hint) const;
  // Sets cell `column` (an index find gave) of the current row to a view; false when the row had
  // set it already (it is overwritten).
  bool set_at(size_t column, std::string_view cell);
  // Drops the current row when it has no cell (a record without any metric).
  void drop_empty_row();
  size_t rows() const override { return row_begin_.size(); }
  size_t columns() const override { return names_.size(); }
  std::string_view name(size_t column) const override { return names_[column]; }
  void row(size_t r, std::vector<std::string_view>& cells) const override;
  // The table as CSV text: a header line, then one line per row ("" cells where a row has none).
  std::string csv() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  size_t column_of(std::string_view column);
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;
  std::vector<std::string> names_;
  // Per column, the row that last set it and where among the cells: a repeated name overwrites.
  std::vector<std::pair<size_t, size_t>> last_set_;
  // Every row's cells, row after row, in the order they were set; row_begin_[r]: row r's first.
  std::vector<std::pair<size_t, std::string_view>> cells_;
  std::vector<size_t> row_begin_;
  std::deque<std::string> owned_;  // the cells set copies (a deque: they never move)
};

class CellTable : public CellRows {
 public:
  // The header (copied), then the rows, each with the file's line. A row's cells are kept as
  // views: of the input text, which outlives the table, or of a copy own() made.
  void set_header(const std::vector<std::string_view>& names, size_t file_line);
  void add_row(const std::vector<std::string_view>& cells, size_t file_line);
  std::string_view own(std::string_view cell) { return owned_.emplace_back(cell); }
  // Drops every row (the header stays).
  void clear_rows();
  size_t columns() const override { return header_.size(); }
  std::string_view name(size_t column) const override { return header_[column]; }
  size_t rows() const override { return rows_.size(); }
  void row(size_t r, std::vector<std::string_view>& cells) const override;
  size_t header_line() const override { return header_line_; }
  size_t line(size_t r) const override { return rows_[r].line; }
  // The header line's number, known only once the first row is (gpustat).
  void set_header_line(size_t file_line) { header_line_ = file_line; }

 private:
  struct Row {
    size_t first, count, line;  // cells_[first, first + count)
  };
  std::vector<std::string> header_;
  size_t header_line_ = 0;
  std::vector<std::string_view> cells_;  // every row's cells, row after row
  std::vector<Row> rows_;
  std::deque<std::string> owned_;
};

// A CSV cell: as is, or quoted with doubled quotes when it holds a separator, quote or newline.
void append_csv_cell(std::string& out, std::string_view cell);

}  // namespace gpudoctor::log_reader
