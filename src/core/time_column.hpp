// The times of one GPU's samples (seconds since the recording's start, increasing), read as a
// vector of doubles is (`t[i]`, `t.size()`, `t.back()`, iterators for the binary searches) and held
// as a column's values are (core/column.hpp): as decimals in 2 or 4 bytes a time where every time
// is one, which a log's are (its "12.5" seconds, its whole milliseconds since the first row), else
// as doubles. Every time reads back bit for bit as it was appended; a time that a decimal would
// not give back makes the column one of doubles from then on. A week of 100 ms times is 48 MB as
// doubles and 24 MB as decimals.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

#include "core/column.hpp"

namespace gpudoctor {

class TimeColumn {
 public:
  using value_type = double;
  using size_type = size_t;
  using const_iterator = ColumnView::const_iterator;
  using iterator = const_iterator;

  TimeColumn() = default;
  // These times, held as the doubles they are (a recording's, a test's).
  TimeColumn(std::vector<double> v) : col_(std::move(v)) { refresh(); }
  TimeColumn(std::initializer_list<double> v) : TimeColumn(std::vector<double>(v)) {}
  // (A copy has the room its times take, not the room the original was asked for.)
  TimeColumn(const TimeColumn& o) : col_(o.col_) { refresh(); }
  TimeColumn(TimeColumn&& o) noexcept : col_(std::move(o.col_)), room_(std::exchange(o.room_, 0)) {
    refresh(), o.refresh();
  }
  TimeColumn& operator=(const TimeColumn& o) {
    if (this != &o) col_ = o.col_, room_ = 0, refresh();
    return *this;
  }
  TimeColumn& operator=(TimeColumn&& o) noexcept {
    if (this != &o)
      col_ = std::move(o.col_), room_ = std::exchange(o.room_, 0), refresh(), o.refresh();
    return *this;
  }
  ~TimeColumn() = default;

  // (Through a view kept beside the column: a read costs what a column's does.)
  [[gnu::always_inline]] double operator[](size_t i) const { return v_[i]; }
  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  double front() const { return v_.front(); }
  double back() const { return v_.back(); }
  const_iterator begin() const { return v_.begin(); }
  const_iterator end() const { return v_.end(); }
  // The times as a column's view (valid until the column changes); a TimeColumn passes as one.
  ColumnView view() const { return v_; }
  operator ColumnView() const { return v_; }
  std::vector<double> to_vector() const { return v_.to_vector(); }
  // The bytes a time takes: 8, 4 or 2 (0 for none or one).
  size_t value_bytes() const { return col_.value_bytes(); }

  // Appends t (a time after the last), growing the room to what reserve() asked where it is full.
  [[gnu::always_inline]] void push_back(double t) {
    if (!col_)
      col_ = FieldColumn::constant(t, 1);
    else
      col_.push_back(t, room_);
    refresh();
  }
  // Appends every time of `o` (times after the last), growing the room to `room` where full.
  void append(const TimeColumn& o, size_t room = 0);
  // Room for n times (asked for, not promised: see reserve_guess).
  void reserve(size_t n) {
    if (n <= room_) return;
    room_ = n;
    col_.reserve(n);
    refresh();  // (the times may have moved)
  }
  // The times it has room for without growing (those asked for by reserve() at least).
  size_t capacity() const { return std::max(room_, col_.capacity()); }
  void clear() { *this = TimeColumn(); }
  // Every time plus delta (as `t += delta` on each double gives it).
  void shift(double delta);
  // Keeps the times at `rows` (increasing indices) / of rows [b, e).
  void keep_rows(const std::vector<size_t>& rows) { col_.keep_rows(rows), refresh(); }
  void keep_range(size_t b, size_t e) { col_.keep_range(b, e), refresh(); }
  // n times of `value`, as doubles (the recording reader's column, then written by doubles()).
  void assign_doubles(size_t n, double value);
  // The times in place, to write, where they are doubles (after assign_doubles); nullptr where
  // not. Changes nothing else (threads may each write their own rows).
  double* doubles() { return v_.decimal() || v_.constant() ? nullptr : col_.values().data(); }

  // The same times (==, as two vectors' == says).
  friend bool operator==(const TimeColumn& a, const TimeColumn& b) {
    return a.size() == b.size() && (a.empty() || a.v_ == b.v_);  // (none: absent or not)
  }
  friend bool operator==(const TimeColumn& a, const std::vector<double>& b) { return a.v_ == b; }

 private:
  void refresh() { v_ = col_.view(); }

  FieldColumn col_;
  ColumnView v_;
  size_t room_ = 0;
};

}  // namespace gpudoctor
