#include "formats/flat_table.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "text/text.hpp"

namespace gpudoctor::log_reader {

namespace {

// Where p lies from base, and the byte `at` from base: as addresses (a cell or line may lie in
// another buffer than base's, a copy), not by pointer arithmetic.
intptr_t offset_of(const char* base, const char* p) {
  return static_cast<intptr_t>(reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(base));
}
const char* at_offset(const char* base, intptr_t at) {
  return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) +
                                       static_cast<uintptr_t>(at));
}

}  // namespace

std::string_view CellCopies::own(std::string_view cell) {
  constexpr size_t kBlock = 64 * 1024;
  if (blocks_.empty() || blocks_.back().capacity() - blocks_.back().size() < cell.size())
    blocks_.emplace_back().reserve(std::max(kBlock, cell.size()));
  std::string& b = blocks_.back();
  const size_t at = b.size();
  b.append(cell);
  return std::string_view(b).substr(at, cell.size());
}

void FlatTable::begin_row() {
  const size_t r = rows_.size();
  rows_.push_back({cells_.size(), nullptr});
  // (A row dropped set nothing: the keys of the row before it stay the previous ones.)
  if (!row_keys_.empty()) prev_keys_.swap(row_keys_), row_keys_.clear();
  if (line_ == 0) return;
  // (A mark of a row begun and dropped is this row's place: taken back first.)
  if (!line_marks_.empty() && line_marks_.back().row >= r) line_marks_.pop_back();
  if (!line_marks_.empty()) {
    LineMark& m = line_marks_.back();
    if (m.line + (r - m.row) * m.step == line_) return;
    if (r - m.row == 1 && line_ >= m.line) {  // a mark's second row sets its step
      m.step = line_ - m.line;
      return;
    }
  }
  line_marks_.push_back({r, line_, 1});
}

size_t FlatTable::line(size_t r) const {
  if (line_marks_.empty() || r < line_marks_.front().row) return CellRows::line(r);
  const LineMark& m =
      line_marks_[run_holding(line_marks_, r, mark_hint_, [](const LineMark& x) { return x.row; })];
  return m.line + (r - m.row) * m.step;
}

size_t FlatTable::find(std::string_view column) const {
  const auto it = index_.find(column);
  return it == index_.end() ? std::string_view::npos : it->second;
}

size_t FlatTable::find(std::string_view column, size_t hint) const {
  if (hint < prev_keys_.size() && names_[prev_keys_[hint]] == column) return prev_keys_[hint];
  return find(column);
}

size_t FlatTable::column_of(std::string_view column) {
  // Rows of one log name their columns in the same order: the column the previous row set at
  // this place is tried before the index.
  if (const size_t at = row_keys_.size();
      at < prev_keys_.size() && names_[prev_keys_[at]] == column)
    return prev_keys_[at];
  auto it = index_.find(column);
  if (it == index_.end()) {
    it = index_.emplace(std::string(column), names_.size()).first;
    names_.emplace_back(column);
    last_set_.emplace_back(SIZE_MAX, 0);
    kept_.push_back(!unread_ || !unread_(column));
  }
  return it->second;
}

void FlatTable::set_view(std::string_view column, std::string_view cell) {
  if (rows_.size() == 0) begin_row();
  place(column_of(column), cell, false);
}

void FlatTable::set(std::string_view column, std::string_view cell) {
  if (rows_.size() == 0) begin_row();
  const size_t c = column_of(column);
  place(c, kept_[c] ? owned_.own(cell) : cell, true);
}

bool FlatTable::set_at(size_t col, std::string_view cell) {
  return place(col, cell, false);
}

FlatTable::Cell FlatTable::cell_of(size_t row, size_t column, std::string_view text, bool copy) {
  // The row's place is where its first cell read in place begins (a copy lies in the table's own
  // blocks, far from the text); its other cells are within 2 GiB of it, before or after, most
  // often (a reader may set them in another order than the text's: sorted keys).
  const char*& base = rows_[row].base;
  if (base == nullptr && !copy && text.data() != nullptr) base = text.data();
  if (base != nullptr && text.data() != nullptr && text.size() <= UINT16_MAX && column < kFar) {
    const intptr_t d = offset_of(base, text.data());
    if (d >= INT32_MIN && d <= INT32_MAX)
      return {static_cast<uint32_t>(static_cast<int32_t>(d)), static_cast<uint16_t>(text.size()),
              static_cast<uint16_t>(column)};
  }
  if (far_.size() > UINT32_MAX) throw std::length_error("more than 4 billion far cells");
  far_.push_back({text, column});
  return {static_cast<uint32_t>(far_.size() - 1), 0, kFar};
}

bool FlatTable::place(size_t col, std::string_view cell, bool copy) {
  const size_t row = rows_.size() - 1;
  if (last_set_[col].first == row) {
    if (kept_[col]) cells_[last_set_[col].second] = cell_of(row, col, cell, copy);
    return false;
  }
  last_set_[col] = {row, cells_.size()};
  row_keys_.push_back(col);
  if (kept_[col]) cells_.push_back(cell_of(row, col, cell, copy));
  return true;
}

void FlatTable::drop_empty_row() {
  if (rows_.size() != 0 && row_keys_.empty()) rows_.pop_back();
}

void FlatTable::cells_of(size_t r, std::vector<std::string_view>& cells) const {
  cells.assign(names_.size(), {});
  const size_t end = r + 1 < rows_.size() ? rows_[r + 1].first : cells_.size();
  const char* base = rows_[r].base;
  auto at = [&](size_t column) -> std::string_view& {
    return cells[place_.empty() ? column : place_[column]];
  };
  for (size_t i = rows_[r].first; i < end; ++i) {
    const Cell& c = cells_[i];
    if (c.column == kFar)
      at(far_[c.at].column) = far_[c.at].text;
    else
      at(c.column) = std::string_view(at_offset(base, static_cast<int32_t>(c.at)), c.size);
  }
}

void FlatTable::done_before(size_t r) const {
  if (r >= rows_.size()) return;
  cells_.release_before(rows_[r].first);
  rows_.release_before(r);
}

void FlatTable::put_first(const std::vector<std::string_view>& names) {
  order_.clear();
  for (const std::string_view n : names)
    if (const size_t c = find(n);
        c != std::string_view::npos && std::find(order_.begin(), order_.end(), c) == order_.end())
      order_.push_back(c);
  for (size_t c = 0; c < names_.size(); ++c)
    if (std::find(order_.begin(), order_.end(), c) == order_.end()) order_.push_back(c);
  place_.assign(names_.size(), 0);
  for (size_t p = 0; p < order_.size(); ++p) place_[order_[p]] = p;
}

void FlatTable::row(size_t r, std::vector<std::string_view>& cells) const {
  // (Cells are views of the text, row after row: the pages behind the row may go again, as they
  // did when the rows were first read.)
  if (rows_[r].base != nullptr) text::passed(rows_[r].base);
  cells_of(r, cells);
  for (std::string_view& c : cells) c = text::trim(c);
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
  return owned_.own(cell);
}

void CellTable::clear_rows() {
  rows_.clear();
  cells_.clear();
}

void CellTable::row(size_t r, std::vector<std::string_view>& cells) const {
  const Row& row = rows_[r];
  const auto first = cells_.begin() + static_cast<std::ptrdiff_t>(row.first);
  cells.assign(first, first + static_cast<std::ptrdiff_t>(row.count));
  // (Where the rows follow the text, the pages behind a row may go again, as they did when the
  // rows were first read; a copy lies outside the text: passed over. Rows gathered from all over
  // the text, a DCGM dump's, would bring back pages just handed back, again and again.)
  if (rows_follow_text_)
    for (const std::string_view c : cells)
      if (!c.empty()) text::passed(c.data());
}

size_t LineRows::add_header(std::vector<std::string> names, size_t file_line) {
  headers_.push_back(std::move(names));
  const size_t h = headers_.size() - 1;
  if (h == 0) {
    header_line_ = file_line;
  } else {
    runs_.push_back({lines_.size(), file_line, static_cast<uint32_t>(h), -1, -1, true});
    push_line({});
  }
  return h;
}

void LineRows::add_row(std::string_view line, size_t file_line, int gpu, int drop) {
  const auto header = static_cast<uint32_t>(headers_.size() - 1);
  const auto g = static_cast<int16_t>(gpu), d = static_cast<int16_t>(drop);
  const size_t r = lines_.size();
  if (runs_.empty() || runs_.back().is_header || runs_.back().header != header ||
      runs_.back().gpu != g || runs_.back().drop != d ||
      runs_.back().first_line + (r - runs_.back().first_row) != file_line)
    runs_.push_back({r, file_line, header, g, d, false});
  push_line(line);
}

void LineRows::push_line(std::string_view text) {
  const size_t r = lines_.size();
  const char* p = text.data() != nullptr ? text.data() : "";
  if (r % kGroup == 0) marks_.push_back(p);
  const intptr_t off = offset_of(marks_.back(), p);
  if (off >= 0 && off < kFar && text.size() < kFar) {
    lines_.push_back({static_cast<uint16_t>(off), static_cast<uint16_t>(text.size())});
  } else {
    lines_.push_back({kFar, kFar});
    far_.emplace_back(r, std::string_view(p, text.size()));
  }
}

std::string_view LineRows::text_of(size_t r) const {
  const Line x = lines_[r];
  if (x.off != kFar) return {at_offset(marks_[r / kGroup], x.off), x.size};
  const auto it =
      std::partition_point(far_.begin(), far_.end(), [r](const auto& f) { return f.first < r; });
  return it->second;
}

const LineRows::Run& LineRows::run_of(size_t r) const {
  return runs_[run_holding(runs_, r, run_hint_, [](const Run& x) { return x.first_row; })];
}

void LineRows::split(size_t /*header*/, std::string_view line,
                     std::vector<std::string_view>& cells) const {
  text::split_ws(line, cells);
}

void LineRows::row(size_t r, std::vector<std::string_view>& cells) const {
  const Run& run = run_of(r);
  cells.clear();
  if (run.is_header) {
    for (const auto& n : headers_[run.header]) cells.emplace_back(n);
    return;
  }
  const std::string_view text = text_of(r);
  text::passed(text.data());  // the rows are read in order: the lines behind may go
  split(run.header, text, cells);
  if (run.gpu >= 0 && static_cast<size_t>(run.gpu) < cells.size()) {
    std::string_view& g = cells[static_cast<size_t>(run.gpu)];
    if (const auto i = text::parse_int(g); !i || *i < 0 || *i > 1000000) g = {};
  }
  if (run.drop >= 0 && static_cast<size_t>(run.drop) < cells.size())
    cells.erase(cells.begin() + run.drop);
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
    append_csv_cell(out, name(i));
  }
  out.push_back('\n');
  std::vector<std::string_view> cells;
  for (size_t r = 0; r < rows(); ++r) {
    cells_of(r, cells);
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out.push_back(',');
      append_csv_cell(out, cells[i]);
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace gpudoctor::log_reader
