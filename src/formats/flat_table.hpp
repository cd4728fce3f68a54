// Rows of cells that a reader has already split, the shape every text log reader ends up with, and
// three tables of them:
//   - FlatTable: structured inputs (JSON samples, W&B run files) flattened into rows of named
//     cells; the columns are the union of the names in order of first appearance.
//   - CellTable: the framing variants (formats/text_layouts, DCGM dumps): a header and rows of
//     cells, each with the file's line it came from.
//   - LineRows: the NVIDIA tools' whitespace-aligned logs (dmon, dcgmi dmon): rows kept as lines.
// The column catalogue's reader takes either as it takes a CSV text (read_generic_csv), so a
// tool's metric names are known in one place whatever framing carried them, and nothing is
// written out as CSV to be parsed again. Not thread-safe; one table per reader call.
#pragma once

#include <algorithm>
#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
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
  // Some row is a header row (is_header): the columns change mid-table.
  virtual bool has_header_rows() const { return false; }
  // The reader will not ask for the rows before r again: a table may let what holds them go.
  virtual void done_before(size_t /*r*/) const {}
};

// A list that grows in blocks that never move: a vector's doublings would copy every element,
// and for a moment hold them all twice (a table of a large log's rows is most of the memory its
// reading takes). Its elements may be sorted in place (random-access iterators), and the blocks
// wholly before an element let go once read (not to be read again).
template <class T>
class StableBlocks {
 public:
  size_t size() const { return n_; }
  T& operator[](size_t i) { return blocks_[i >> kShift][i & kMask]; }
  const T& operator[](size_t i) const { return blocks_[i >> kShift][i & kMask]; }
  void push_back(const T& x) {
    // (Default-initialised: a trivial T's block is not written until used.)
    if ((n_ >> kShift) == blocks_.size()) blocks_.emplace_back(new T[kBlock]);
    (*this)[n_++] = x;
  }
  void pop_back() { --n_; }
  // Frees the blocks that hold only elements before i.
  void release_before(size_t i) {
    for (size_t b = released_; b < (i >> kShift) && b < blocks_.size(); ++b) blocks_[b].reset();
    released_ = std::max(released_, i >> kShift);
  }

  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;
    iterator() = default;
    iterator(StableBlocks* b, size_t i) : b_(b), i_(static_cast<difference_type>(i)) {}
    T& operator*() const { return (*b_)[static_cast<size_t>(i_)]; }
    T* operator->() const { return &**this; }
    T& operator[](difference_type d) const { return *(*this + d); }
    iterator& operator++() { return ++i_, *this; }
    iterator& operator--() { return --i_, *this; }
    iterator operator++(int) { return {b_, static_cast<size_t>(i_++)}; }
    iterator operator--(int) { return {b_, static_cast<size_t>(i_--)}; }
    iterator& operator+=(difference_type d) { return i_ += d, *this; }
    iterator& operator-=(difference_type d) { return i_ -= d, *this; }
    friend iterator operator+(iterator a, difference_type d) { return a += d; }
    friend iterator operator+(difference_type d, iterator a) { return a += d; }
    friend iterator operator-(iterator a, difference_type d) { return a -= d; }
    friend difference_type operator-(const iterator& a, const iterator& b) { return a.i_ - b.i_; }
    friend bool operator==(const iterator& a, const iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const iterator& a, const iterator& b) { return a.i_ <=> b.i_; }

   private:
    StableBlocks* b_ = nullptr;
    difference_type i_ = 0;
  };
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, n_}; }

 private:
  static constexpr size_t kShift = 16, kBlock = size_t{1} << kShift, kMask = kBlock - 1;
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t n_ = 0, released_ = 0;
};

// Which of `runs` (each starting at a row, start(run), in ascending order; the first at or before
// r) holds row r: the one found last time (`hint`: any value works) or the next, as rows are read
// in order, else searched for.
template <class T, class Start>
size_t run_holding(const std::vector<T>& runs, size_t r, std::atomic<size_t>& hint, Start start) {
  const size_t n = runs.size();
  for (size_t k = hint.load(std::memory_order_relaxed), end = std::min(k + 2, n); k < end; ++k)
    if (start(runs[k]) <= r && (k + 1 == n || r < start(runs[k + 1]))) {
      hint.store(k, std::memory_order_relaxed);
      return k;
    }
  const auto it = std::upper_bound(runs.begin(), runs.end(), r,
                                   [&](size_t row, const T& x) { return row < start(x); });
  const size_t k = static_cast<size_t>(it - runs.begin()) - 1;
  hint.store(k, std::memory_order_relaxed);
  return k;
}

// Copies of cells, one after another in blocks that are never reallocated (a string each would be
// 32 bytes and an allocation for a cell of 16 bytes or more; a row's copies lie near each other, as
// its cells in a text do).
class CellCopies {
 public:
  std::string_view own(std::string_view cell);

 private:
  std::deque<std::string> blocks_;  // each filled up to its capacity only
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
  // Columns whose cells no reader reads (by name; set before the first row): the column is kept
  // and named, its cells are not (a row of only such cells is still a row, of empty cells).
  void unread_columns(std::function<bool(std::string_view name)> unread) {
    unread_ = std::move(unread);
  }
  size_t rows() const override { return rows_.size(); }
  size_t columns() const override { return names_.size(); }
  std::string_view name(size_t column) const override {
    return names_[order_.empty() ? column : order_[column]];
  }
  void row(size_t r, std::vector<std::string_view>& cells) const override;
  void done_before(size_t r) const override;
  // The columns named put first, in that order (those the table has), the others after them as
  // they came: the table as read (name, row) from here on; set no cell after it.
  void put_first(const std::vector<std::string_view>& names);
  // The file's line of what stands for the header (a layout without one: its first value's).
  void set_header_line(size_t file_line) { header_line_ = file_line; }
  size_t header_line() const override { return header_line_; }
  // The table as CSV text: a header line, then one line per row ("" cells where a row has none).
  std::string csv() const;
  // The file's line of the rows begun from here on (a JSON-lines log's sample: its line), for
  // messages; a table never told has its rows at r + 2, as its CSV text.
  void at_line(size_t file_line) { line_ = file_line; }
  size_t line(size_t r) const override;

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
  // A cell: where in its row's text, how long, which column: 8 bytes (a JSON-lines log's table is
  // most of the memory its reading takes). A cell that does not fit that (more than 2 GiB from its
  // row's place, a copy set() made where the row has no cell in the text, 64 KiB or longer, a
  // column past 65,534) is a far cell, kept whole.
  struct Cell {   // (no initialisers: a block of them is not written until used)
    uint32_t at;  // from the row's place (as a signed 32-bit offset); a far cell: its index in far_
    uint16_t size;
    uint16_t column;  // kFar: a far cell
  };
  struct FarCell {
    std::string_view text;
    size_t column;
  };
  static constexpr uint16_t kFar = 0xFFFF;
  Cell cell_of(size_t row, size_t column, std::string_view text, bool copy);
  // Sets the current row's cell; copy: the text is the table's own copy.
  bool place(size_t column, std::string_view cell, bool copy);
  // Row r's cells as set (untrimmed).
  void cells_of(size_t r, std::vector<std::string_view>& cells) const;
  // Every row's cells, row after row, in the order they were set, and where each row's begin:
  // its first cell, and its place (where its first cell read in place, not a copy, begins, or
  // none). Mutable: let go as the reader passes them (done_before).
  struct RowStart {  // (no initialisers: a block of them is not written until used)
    size_t first;
    const char* base;
  };
  mutable StableBlocks<Cell> cells_;
  mutable StableBlocks<RowStart> rows_;
  std::vector<FarCell> far_;
  CellCopies owned_;  // the cells set copies
  // Rows' file lines where at_line gave them: a mark where a row's line does not follow the
  // rows' before it at their step (its second row sets it: 1 for a sample a line, 0 for rows of
  // one line, a block's lines for blocks), so a regular log keeps one mark.
  struct LineMark {
    size_t row, line, step;
  };
  size_t line_ = 0;
  std::vector<LineMark> line_marks_;
  mutable std::atomic<size_t> mark_hint_{0};  // the mark line() found last (any value works)
  // The columns the current row and the row before it set, in the order set (where the next
  // row's names are looked for first), and which columns' cells are kept.
  std::vector<size_t> row_keys_, prev_keys_;
  std::function<bool(std::string_view)> unread_;
  std::vector<uint8_t> kept_;
  // put_first's order: the column at each place, and each column's place (none: as they came).
  std::vector<size_t> order_, place_;
  size_t header_line_ = 1;
};

class CellTable : public CellRows {
 public:
  // The header (copied), then the rows, each with the file's line. A row's cells are kept as
  // views: of the input text, which outlives the table, or of a copy own() made.
  void set_header(const std::vector<std::string_view>& names, size_t file_line);
  void add_row(const std::vector<std::string_view>& cells, size_t file_line);
  // Room for this many more rows of this many cells each.
  void reserve(size_t rows, size_t cells_per_row);
  std::string_view own(std::string_view cell);
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
  // The rows are in the text's order (each row's cells after the row before's): reading them
  // hands back the text behind them.
  void rows_follow_the_text() { rows_follow_text_ = true; }

 private:
  struct Row {
    size_t first, count, line;  // cells_[first, first + count)
  };
  std::vector<std::string> header_;
  size_t header_line_ = 0;
  std::vector<std::string_view> cells_;  // every row's cells, row after row
  std::vector<Row> rows_;
  CellCopies owned_;
  bool rows_follow_text_ = false;
};

// A tool's rows kept as the lines they are, each split when the reader asks for it (a table of
// cells would hold 16 bytes per cell, more than the text itself), and the headers that change the
// columns between them: nvidia-smi dmon, dcgmi dmon. A layout whose lines are not cut at
// whitespace overrides split().
class LineRows : public CellRows {
 public:
  // A header: the first names the table's columns, a later one is a header row (the columns
  // change below it). Returns its number, for split().
  size_t add_header(std::vector<std::string> names, size_t file_line);
  // A row, read under the last header. gpu: the cell that is the GPU's index (after split), blanked
  // where it is no index so that the reader counts the row as one without a GPU; drop: a cell left
  // out (after split; a date without a time), or -1.
  void add_row(std::string_view line, size_t file_line, int gpu = -1, int drop = -1);
  // The file ends inside the last row.
  void set_last_row_cut() { last_row_cut_ = true; }
  bool has_header() const { return !headers_.empty(); }

  size_t columns() const override { return headers_.front().size(); }
  std::string_view name(size_t column) const override { return headers_.front()[column]; }
  size_t rows() const override { return lines_.size(); }
  void row(size_t r, std::vector<std::string_view>& cells) const override;
  size_t header_line() const override { return header_line_; }
  size_t line(size_t r) const override {
    const Run& run = run_of(r);
    return run.first_line + (r - run.first_row);
  }
  bool is_header(size_t r) const override { return run_of(r).is_header; }
  bool has_header_rows() const override { return headers_.size() > 1; }
  bool last_row_cut() const override { return last_row_cut_; }

 protected:
  // A row's line cut into its cells (at whitespace unless overridden); header: the number
  // add_header gave the header it is read under.
  virtual void split(size_t header, std::string_view line,
                     std::vector<std::string_view>& cells) const;

 private:
  // How row r is read: the runs of rows under one header, on consecutive lines of the file, that
  // share their GPU cell and dropped cell (most of a log is one run).
  struct Run {
    size_t first_row, first_line;  // its first row and that row's line in the file
    uint32_t header;               // the header it is read under (a header row: the one it names)
    int16_t gpu, drop;
    bool is_header;  // one header row
  };
  // Where row r's text is: kGroup rows share a mark (where the first of them begins), and a row is
  // kept as its place after its mark and its length, 4 bytes (a table of a large log's rows is most
  // of what its reading holds besides the columns; a log of 54-byte lines had 8 a row). A row
  // whose place or length does not fit 16 bits is kFar, in far_.
  static constexpr size_t kGroup = 16;
  static constexpr uint16_t kFar = UINT16_MAX;
  struct Line {    // (no initialisers: a block of them is not written until used)
    uint16_t off;  // from its group's mark
    uint16_t size;
  };
  const Run& run_of(size_t r) const;
  void push_line(std::string_view text);
  std::string_view text_of(size_t r) const;
  std::deque<std::vector<std::string>> headers_;  // a deque: the names never move
  StableBlocks<Line> lines_;
  std::vector<const char*> marks_;                        // per kGroup rows
  std::vector<std::pair<size_t, std::string_view>> far_;  // (row, its text), rows in order
  std::vector<Run> runs_;
  mutable std::atomic<size_t> run_hint_{0};  // the run run_of found last (a hint: any value works)
  size_t header_line_ = 0;
  bool last_row_cut_ = false;
};

// A CSV cell: as is, or quoted with doubled quotes when it holds a separator, quote or newline.
void append_csv_cell(std::string& out, std::string_view cell);

}  // namespace gpudoctor::log_reader
