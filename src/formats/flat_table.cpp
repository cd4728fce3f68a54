#include "formats/flat_table.hpp"

#include <algorithm>
#include <cstdint>

namespace gpudoctor::log_reader {

void FlatTable::begin_row() {
  rows_.emplace_back();
}

void FlatTable::set(std::string_view column, std::string_view cell) {
  if (rows_.empty()) begin_row();
  auto it = index_.find(column);
  if (it == index_.end()) {
    it = index_.emplace(std::string(column), names_.size()).first;
    names_.emplace_back(column);
    last_set_.emplace_back(SIZE_MAX, 0);
  }
  const size_t col = it->second, row = rows_.size() - 1;
  auto& cells = rows_.back();
  if (last_set_[col].first == row) {
    cells[last_set_[col].second].second.assign(cell);
    return;
  }
  last_set_[col] = {row, cells.size()};
  cells.emplace_back(col, std::string(cell));
}

void FlatTable::drop_empty_row() {
  if (!rows_.empty() && rows_.back().empty()) rows_.pop_back();
}

void append_csv_cell(std::string& out, std::string_view cell) {
  if (cell.find_first_of(",\"\r\n") == std::string_view::npos) {
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
  std::vector<const std::string*> cells(names_.size());
  for (const auto& row : rows_) {
    std::fill(cells.begin(), cells.end(), nullptr);
    for (const auto& [c, v] : row) cells[c] = &v;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out.push_back(',');
      if (cells[i]) append_csv_cell(out, *cells[i]);
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace gpudoctor::log_reader
