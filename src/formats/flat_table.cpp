#include "formats/flat_table.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "text/text.hpp"

namespace gpudoctor::log_reader {

void FlatTable::begin_row() {
  row_begin_.push_back(cells_.size());
}

size_t FlatTable::find(std::string_view column) const {
  const auto it = index_.find(column);
  return it == index_.end() ? std::string_view::npos : it->second;
}

size_t FlatTable::find(std::string_view column, size_t hint) const {
  if (row_begin_.size() > 1) {
    const size_t prev = row_begin_[row_begin_.size() - 2] + hint;
    if (prev < row_begin_.back()) {
      const size_t c = cells_[prev].column;
      if (names_[c] == column) return c;
    }
  }
  return find(column);
}

size_t FlatTable::column_of(std::string_view column) {
  // Rows of one log name their columns in the same order: the cell the previous row set at this
  // place is tried before the index.
  if (row_begin_.size() > 1) {
    const size_t prev = row_begin_[row_begin_.size() - 2] + (cells_.size() - row_begin_.back());
    if (prev < row_begin_.back()) {
      const size_t c = cells_[prev].column;
      if (names_[c] == column) return c;
    }
  }
  auto it = index_.find(column);
  if (it == index_.end()) {
    it = index_.emplace(std::string(column), names_.size()).first;
    names_.emplace_back(column);
    last_set_.emplace_back(SIZE_MAX, 0);
  }
  return it->second;
}

void FlatTable::set_view(std::string_view column, std::string_view cell) {
  if (row_begin_.empty()) begin_row();
  set_at(column_of(column), cell);
}

bool FlatTable::set_at(size_t col, std::string_view cell) {
  const size_t row = row_begin_.size() - 1;
  if (cell.size() > UINT32_MAX) throw std::length_error("a cell of 4 GiB or more");
  const Cell c{cell.data(), static_cast<uint32_t>(cell.size()), static_cast<uint32_t>(col)};
  if (last_set_[col].first == row) {
    cells_[last_set_[col].second] = c;
    return false;
  }
  last_set_[col] = {row, cells_.size()};
  cells_.push_back(c);
  return true;
}

void FlatTable::set(std::string_view column, std::string_view cell) {
  set_view(column, owned_.emplace_back(cell));
}

void FlatTable::drop_empty_row() {
  if (!row_begin_.empty() && row_begin_.back() == cells_.size()) row_begin_.pop_back();
}

void FlatTable::row(size_t r, std::vector<std::string_view>& cells) const {
  cells.assign(names_.size(), {});
  const size_t end = r + 1 < row_begin_.size() ? row_begin_[r + 1] : cells_.size();
  // (Cells are views of the text, row after row: the pages behind the row may go again, as they
  // did when the rows were first read.)
  if (row_begin_[r] < end) text::passed(cells_[row_begin_[r]].p);
  for (size_t i = row_begin_[r]; i < end; ++i)
    cells[cells_[i].column] = text::trim(cells_[i].text());
}

void CellTable::set_header(const std::vector<std::string_view>& names, size_t file_line) {
  header_.assign(names.begin(), names.end());
  header_line_ = file_line;
}

void CellTable::add_row(const std::vector<std::string_view>& cells, size_t file_line) {
  rows_.push_back({cells_.size(), cells.size(), file_line});
  for (const std::string_view c : cells) cells_.push_back(text::trim(c));
}

void CellTable::reserve(size_t rows, size_t cells_per_row) {
  rows_.reserve(rows_.size() + rows);
  cells_.reserve(cells_.size() + rows * cells_per_row);
}

std::string_view CellTable::own(std::string_view cell) {
  // Cells copied one after another into blocks that are never reallocated (a string each would be
  // 32 bytes and an allocation for a cell of 16 bytes or more).
  constexpr size_t kBlock = 64 * 1024;
  if (owned_.empty() || owned_.back().capacity() - owned_.back().size() < cell.size())
    owned_.emplace_back().reserve(std::max(kBlock, cell.size()));
  std::string& b = owned_.back();
  const size_t at = b.size();
  b.append(cell);
  return std::string_view(b).substr(at, cell.size());
}

void CellTable::clear_rows() {
  rows_.clear();
  cells_.clear();
}

void CellTable::row(size_t r, std::vector<std::string_view>& cells) const {
  const Row& row = rows_[r];
  const auto first = cells_.begin() + static_cast<std::ptrdiff_t>(row.first);
  cells.assign(first, first + static_cast<std::ptrdiff_t>(row.count));
}

size_t LineRows::add_header(std::vector<std::string> names, size_t file_line) {
  headers_.push_back(std::move(names));
  const size_t h = headers_.size() - 1;
  if (h == 0)
    header_line_ = file_line;
  else
    rows_.push_back({{}, file_line, static_cast<uint32_t>(h), -1, -1, true});
  return h;
}

void LineRows::add_row(std::string_view line, size_t file_line, int gpu, int drop) {
  rows_.push_back({line, file_line, static_cast<uint32_t>(headers_.size() - 1),
                   static_cast<int16_t>(gpu), static_cast<int16_t>(drop), false});
}

void LineRows::split(size_t /*header*/, std::string_view line,
                     std::vector<std::string_view>& cells) const {
  text::split_ws(line, cells);
}

void LineRows::row(size_t r, std::vector<std::string_view>& cells) const {
  const Row& x = rows_[r];
  cells.clear();
  text::passed(x.line.data());  // the rows are read in order: the lines behind may go
  if (x.is_header) {
    for (const auto& n : headers_[x.header]) cells.emplace_back(n);
    return;
  }
  split(x.header, x.line, cells);
  if (x.gpu >= 0 && static_cast<size_t>(x.gpu) < cells.size()) {
    std::string_view& g = cells[static_cast<size_t>(x.gpu)];
    if (const auto i = text::parse_int(g); !i || *i < 0 || *i > 1000000) g = {};
  }
  if (x.drop >= 0 && static_cast<size_t>(x.drop) < cells.size())
    cells.erase(cells.begin() + x.drop);
}

void append_csv_cell(std::string& out, std::string_view cell) {
  // (A loop, not find_first_of: that looks each byte up in the set with a call to memchr.)
  bool plain = true;
  for (const char c : cell)
    if (c == ',' || c == '"' || c == '\r' || c == '\n') {
      plain = false;
      break;
    }
  if (plain) {
    out.append(cell);
    return;
  }
  out.push_back('"');
  for (char c : cell) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

std::string FlatTable::csv() const {
  std::string out;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (i) out.push_back(',');
    append_csv_cell(out, names_[i]);
  }
  out.push_back('\n');
  std::vector<std::string_view> cells;
  for (size_t r = 0; r < rows(); ++r) {
    cells.assign(names_.size(), {});
    const size_t end = r + 1 < row_begin_.size() ? row_begin_[r + 1] : cells_.size();
    for (size_t i = row_begin_[r]; i < end; ++i) cells[cells_[i].column] = cells_[i].text();
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out.push_back(',');
      append_csv_cell(out, cells[i]);
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace gpudoctor::log_reader
