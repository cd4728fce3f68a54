// One field's samples of one GPU (a column of a GpuSeries), and the read-only view analysis reads
// it through. A column holds its values one double per sample, or, where every sample has the same
// value (a power limit, a maximum clock, the memory size, a field always N/A: most of the fields
// of a full nvidia-smi log or an NVML recording), that value once: `compact()` finds such columns
// after a log is read and the recording reader never builds them out. A reader sees no difference:
// the view gives the same value for every index.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpudoctor {

// The same double, bit for bit (NaN equals NaN of the same payload; 0.0 is not -0.0): what a
// column may fold into one value without changing any value read back.
inline bool same_bits(double a, double b) {
  uint64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

// A column's values by index: a pointer and a size, or, for a constant column, one value for every
// index. Valid while its column is not changed (as an iterator into a vector is). Used as the
// pointer it replaced: `if (c)`, `(*c)[i]`, `c->size()`.
class ColumnView {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = double;
    using difference_type = std::ptrdiff_t;
    using pointer = const double*;
    using reference = double;
    const_iterator() = default;
    // The data itself, not the view: an iterator outlives the view it came from, as a vector's
    // does.
    const_iterator(const double* p, size_t mask, size_t i) : p_(p), mask_(mask), i_(i) {}
    double operator*() const { return p_[i_ & mask_]; }
    double operator[](difference_type k) const { return p_[(i_ + static_cast<size_t>(k)) & mask_]; }
    const_iterator& operator++() { return ++i_, *this; }
    const_iterator operator++(int) { return {p_, mask_, i_++}; }
    const_iterator& operator--() { return --i_, *this; }
    const_iterator operator--(int) { return {p_, mask_, i_--}; }
    const_iterator& operator+=(difference_type k) { return i_ += static_cast<size_t>(k), *this; }
    const_iterator& operator-=(difference_type k) { return i_ -= static_cast<size_t>(k), *this; }
    friend const_iterator operator+(const_iterator a, difference_type k) { return a += k; }
    friend const_iterator operator+(difference_type k, const_iterator a) { return a += k; }
    friend const_iterator operator-(const_iterator a, difference_type k) { return a -= k; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.i_ == b.i_;
    }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
      return a.i_ <=> b.i_;
    }

   private:
    const double* p_ = nullptr;
    size_t mask_ = 0;
    size_t i_ = 0;
  };
  using iterator = const_iterator;
  using value_type = double;
  using size_type = size_t;

  ColumnView() = default;
  ColumnView(std::nullptr_t) {}
  // Every value of v.
  ColumnView(const std::vector<double>& v) : p_(v.data()), n_(v.size()), mask_(~size_t{0}) {
    present_ = true;
  }
  // *value at every index of [0, n).
  static ColumnView constant(const double* value, size_t n) {
    ColumnView c;
    c.p_ = value, c.n_ = n, c.mask_ = 0, c.present_ = true;
    return c;
  }

  explicit operator bool() const { return present_; }
  friend bool operator==(const ColumnView& c, std::nullptr_t) { return !c.present_; }
  // A copy (not a reference), so that `const auto& v = *g.column(f)` and `for (double x :
  // *g.column(f))` hold the view itself and not a reference to a temporary.
  ColumnView operator*() const { return *this; }
  const ColumnView* operator->() const { return this; }

  double operator[](size_t i) const { return p_[i & mask_]; }
  double at(size_t i) const {
    if (i >= n_) throw std::out_of_range("ColumnView::at");
    return (*this)[i];
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  double front() const { return (*this)[0]; }
  double back() const { return (*this)[n_ - 1]; }
  // One value for every index (and then front() is it).
  bool constant() const { return mask_ == 0; }
  // The values in memory: size() of them, or for a constant column its one value.
  const double* data() const { return p_; }
  const_iterator begin() const { return {p_, mask_, 0}; }
  const_iterator end() const { return {p_, mask_, n_}; }
  std::vector<double> to_vector() const { return {begin(), end()}; }
  // The values equal (==, so a NaN never does), as two vectors' == says.
  friend bool operator==(const ColumnView& c, const std::vector<double>& v) {
    if (c.size() != v.size()) return false;
    for (size_t i = 0; i < v.size(); ++i)
      if (!(c[i] == v[i])) return false;
    return true;
  }

  friend bool operator==(const ColumnView& a, const ColumnView& b) {
    if (a.present_ != b.present_ || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == b[i])) return false;
    return true;
  }

 private:
  const double* p_ = nullptr;
  size_t n_ = 0;
  size_t mask_ = 0;
  bool present_ = false;
};

// Asks the kernel to back [p, p + bytes) with huge pages where it can (Linux's transparent huge
// pages, `madvise` mode): a buffer of many megabytes that is about to be written whole may then
// take one page fault per 2 MiB, not one per 4 KiB, where the kernel grants them (it may compact
// memory to find them, or refuse). Only the huge pages wholly inside the range are advised; the
// advice stays with that memory after the buffer is freed (malloc may hand it out again, in its
// heap, to other allocations). Below 4 MiB, or where the system has no such advice, it does
// nothing. Call it before the range is first written.
void advise_huge_pages(void* p, size_t bytes) noexcept;

// v as n copies of value. Where v has less room than n, the room is made anew for n values
// exactly and advised for huge pages first (for buffers written whole at once: a recording's
// columns); if that allocation throws, v is left empty.
template <class T>
void assign_fresh(std::vector<T>& v, size_t n, std::type_identity_t<T> value) {
  if (n > v.capacity()) {
    std::vector<T>().swap(v);
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
  }
  v.assign(n, value);
}

// Room for n values, where the system grants it: the room a guess asks for (a reader's rows to
// come) may be refused (a strict overcommit limit), and the vector then grows as it would have.
// New room is advised for huge pages (a reader's column is written to its end).
inline void reserve_guess(std::vector<double>& v, size_t n) noexcept {
  try {
    if (n <= v.capacity()) return;
    v.reserve(n);
    advise_huge_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(double));
  } catch (const std::exception&) {  // std::bad_alloc, std::length_error
  }
}

// A column's storage: absent, every value, or one value and a length. The values live on the heap
// behind a pointer, so moving the column (or its GpuSeries) leaves views valid. Copies are deep.
class FieldColumn {
 public:
  FieldColumn() = default;
  FieldColumn(std::nullptr_t) {}
  explicit FieldColumn(std::vector<double> v)
      : v_(std::make_unique<std::vector<double>>(std::move(v))) {}
  static FieldColumn constant(double value, size_t n) {
    FieldColumn c(std::vector<double>{value});
    c.n_ = n, c.constant_ = true;
    return c;
  }
  FieldColumn(const FieldColumn& o)
      : v_(o.v_ ? std::make_unique<std::vector<double>>(*o.v_) : nullptr),
        n_(o.n_),
        constant_(o.constant_) {}
  // A moved-from column is absent (and not constant).
  FieldColumn(FieldColumn&& o) noexcept
      : v_(std::move(o.v_)),
        n_(std::exchange(o.n_, 0)),
        constant_(std::exchange(o.constant_, false)) {}
  FieldColumn& operator=(const FieldColumn& o) {
    if (this != &o) *this = FieldColumn(o);
    return *this;
  }
  FieldColumn& operator=(FieldColumn&& o) noexcept {
    if (this != &o) {
      v_ = std::move(o.v_);
      n_ = std::exchange(o.n_, 0);
      constant_ = std::exchange(o.constant_, false);
    }
    return *this;
  }
  ~FieldColumn() = default;

  explicit operator bool() const { return v_ != nullptr; }
  friend bool operator==(const FieldColumn& c, std::nullptr_t) { return c.v_ == nullptr; }
  bool is_constant() const { return constant_; }
  size_t size() const { return !v_ ? 0 : constant_ ? n_ : v_->size(); }
  ColumnView view() const {
    if (!v_) return {};
    return constant_ ? ColumnView::constant(v_->data(), n_) : ColumnView(*v_);
  }
  // Every value, to change in place: a constant column is built out first, with room for
  // `room` values.
  std::vector<double>& values(size_t room = 0) {
    if (constant_) {
      const double v = (*v_)[0];
      if (room > n_) reserve_guess(*v_, room);  // one allocation, not n_ and then a larger one
      v_->assign(n_, v);
      constant_ = false;
    }
    return *v_;
  }
  // Appends v; a constant column stays one while v is its value (an empty one takes v's). A full
  // vector of values grows to `grow_to` values where that is more than it holds (the series'
  // times' room: the columns grow with them, once, not by doublings of their own).
  void push_back(double v, size_t grow_to = 0) {
    if (!constant_) {  // (the common case first: a reader's column of values)
      std::vector<double>& vals = *v_;
      if (vals.size() == vals.capacity() && grow_to > vals.size()) reserve_guess(vals, grow_to);
      vals.push_back(v);
      return;
    }
    if (n_ == 0) (*v_)[0] = v;
    if (same_bits(v, (*v_)[0])) {
      ++n_;
      return;
    }
    std::vector<double>& vals = values(grow_to);
    if (vals.size() == vals.capacity() && grow_to > vals.size()) reserve_guess(vals, grow_to);
    vals.push_back(v);
  }
  // Appends every value of c; two constant columns of the same value stay one. Values that do
  // not fit grow the vector to `grow_to` where that is more than they need.
  void append(ColumnView c, size_t grow_to = 0) {
    if (c.empty()) return;
    if (constant_ && c.constant() && (n_ == 0 || same_bits(c.front(), (*v_)[0]))) {
      (*v_)[0] = c.front();
      n_ += c.size();
      return;
    }
    auto& v = values(std::max(grow_to, size() + c.size()));
    if (v.size() + c.size() > v.capacity())
      reserve_guess(v, std::max(grow_to, v.size() + c.size()));
    v.insert(v.end(), c.begin(), c.end());
  }
  // Folds a column whose values are all the same (bit for bit) into that value once.
  void compact() {
    if (!v_ || constant_ || v_->empty()) return;
    const double first = v_->front();
    for (double x : *v_)
      if (!same_bits(x, first)) return;
    *this = constant(first, v_->size());
  }
  // Keeps the values at `rows` (increasing indices, each below size()).
  void keep_rows(const std::vector<size_t>& rows) {
    if (!v_) return;
    if (constant_) {
      n_ = rows.size();
      return;
    }
    size_t kept = 0;
    for (size_t r : rows) (*v_)[kept++] = (*v_)[r];
    v_->resize(kept);
  }
  // Keeps the values of rows [b, e) (b <= e <= size()).
  void keep_range(size_t b, size_t e) {
    if (!v_) return;
    if (constant_) {
      n_ = e - b;
      return;
    }
    v_->erase(v_->begin() + static_cast<std::ptrdiff_t>(e), v_->end());
    v_->erase(v_->begin(), v_->begin() + static_cast<std::ptrdiff_t>(b));
  }
  void reset() { *this = FieldColumn(); }

 private:
  std::unique_ptr<std::vector<double>> v_;  // the values, or the one value of a constant column
  size_t n_ = 0;                            // a constant column's length
  bool constant_ = false;
};

}  // namespace gpudoctor
