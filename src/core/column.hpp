// One field's samples of one GPU (a column of a GpuSeries), and the read-only view analysis reads
// it through. A column holds its values one double per sample, or as decimals in 2 or 4 bytes per
// sample where every value is one (the columns readers build: below), or, where every sample has
// the same value (a power limit, a maximum clock, the memory size, a field always N/A: most of the
// fields of a full nvidia-smi log or an NVML recording), that value once: `compact()` finds such
// columns after a log is read and the recording reader never builds them out. A reader sees no
// difference: the view gives the same value, bit for bit, for every index.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
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

// A column of decimals in 4 bytes a value: a whole number m and the column's count of decimal
// places k, the value being m / 10^k. Logs write values as short decimals ("45.32 W", "87 %",
// "1410 MHz"), and the double a reader parsed from such a text is the one nearest to it, which is
// what the division gives back (m and 10^k are exact in a double and the division is correctly
// rounded): held so, the column reads back every value bit for bit in half the memory. A value is
// only held so after it has been checked to come back the same (so whatever the parser, nothing
// read back can differ); one that does not (more places, too large, -0.0, a NaN of its own) makes
// the column one of doubles. A missing value (kMissing's NaN) is kNone.
namespace decimal {
inline constexpr int32_t kNone = INT32_MIN;
inline constexpr int kMaxPlaces = 6;
inline constexpr double kScale[kMaxPlaces + 1] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
// Where every value of a column fits 16 bits, they are held in 2 bytes (kNone16 for none).
inline constexpr int16_t kNone16 = INT16_MIN;
[[gnu::always_inline]] inline double decode(int32_t m, double scale) {
  const double d = static_cast<double>(m) / scale;
  return m == kNone ? std::numeric_limits<double>::quiet_NaN() : d;
}
[[gnu::always_inline]] inline double decode(int16_t m, double scale) {
  const double d = static_cast<double>(m) / scale;
  return m == kNone16 ? std::numeric_limits<double>::quiet_NaN() : d;
}
// m (from encode) held in 16 bits.
inline bool fits16(int32_t m) {
  return m == kNone || (m > INT16_MIN && m <= INT16_MAX);
}
inline int16_t to16(int32_t m) {
  return m == kNone ? kNone16 : static_cast<int16_t>(m);
}
// m for x with `places` decimal places, where m / 10^places gives x back bit for bit.
inline bool encode(double x, int places, int32_t& m) {
  const double y = x * kScale[places];
  if (!(std::fabs(y) < 2147483647.0)) [[unlikely]] {  // too large, infinite or NaN
    m = kNone;
    return same_bits(x, std::numeric_limits<double>::quiet_NaN());
  }
  if (places == 0) {  // (whole numbers, most of a log's: no division)
    m = static_cast<int32_t>(x);
    return same_bits(static_cast<double>(m), x);
  }
  m = static_cast<int32_t>(y + (y < 0 ? -0.5 : 0.5));
  return same_bits(decode(m, kScale[places]), x);
}
}  // namespace decimal

// A column's values by index: a pointer and a size (to doubles, or to decimals: above), or, for a
// constant column, one value for every index. Valid while its column is not changed (as an
// iterator into a vector is). Used as the pointer it replaced: `if (c)`, `(*c)[i]`, `c->size()`.
class ColumnView {
 public:
  class const_iterator;
  using iterator = const_iterator;
  using value_type = double;
  using size_type = size_t;

  ColumnView() = default;
  ColumnView(std::nullptr_t) {}
  // Every value of v.
  ColumnView(const std::vector<double>& v) : d_(v.data()), n_(v.size()), mask_(~size_t{0}) {
    present_ = true;
  }
  // *value at every index of [0, n).
  static ColumnView constant(const double* value, size_t n) {
    ColumnView c;
    c.d_ = value, c.n_ = n, c.mask_ = 0, c.present_ = true;
    return c;
  }
  // The n decimals at m, with `places` decimal places.
  static ColumnView decimals(const int32_t* m, size_t n, int places) {
    ColumnView c;
    c.d_ = m, c.width_ = 4, c.n_ = n, c.mask_ = ~size_t{0}, c.scale_ = decimal::kScale[places];
    c.present_ = true;
    return c;
  }
  static ColumnView decimals(const int16_t* h, size_t n, int places) {
    ColumnView c;
    c.d_ = h, c.width_ = 2, c.n_ = n, c.mask_ = ~size_t{0}, c.scale_ = decimal::kScale[places];
    c.present_ = true;
    return c;
  }

  explicit operator bool() const { return present_; }
  friend bool operator==(const ColumnView& c, std::nullptr_t) { return !c.present_; }
  // A copy (not a reference), so that `const auto& v = *g.column(f)` and `for (double x :
  // *g.column(f))` hold the view itself and not a reference to a temporary.
  ColumnView operator*() const { return *this; }
  const ColumnView* operator->() const { return this; }

  // (Always inlined: it is most of the loops that read a column, and a call there costs more
  // than the reading.)
  [[gnu::always_inline]] double operator[](size_t i) const {
    if (width_ == 8) [[likely]]
      return static_cast<const double*>(d_)[i & mask_];
    if (width_ == 4) return decimal::decode(static_cast<const int32_t*>(d_)[i], scale_);
    return decimal::decode(static_cast<const int16_t*>(d_)[i], scale_);
  }
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
  // Held as decimals (and then data() is none).
  bool decimal() const { return width_ != 8; }
  // The doubles in memory: size() of them, or for a constant column its one value; nullptr for a
  // column of decimals (read it by index, or copy_to).
  const double* data() const { return width_ == 8 ? static_cast<const double*>(d_) : nullptr; }
  // Values [b, e) into out.
  void copy_to(size_t b, size_t e, double* out) const {
    if (width_ == 4) {
      const auto* m = static_cast<const int32_t*>(d_);
      for (size_t i = b; i < e; ++i) *out++ = decimal::decode(m[i], scale_);
    } else if (width_ == 2) {
      const auto* h = static_cast<const int16_t*>(d_);
      for (size_t i = b; i < e; ++i) *out++ = decimal::decode(h[i], scale_);
    } else if (mask_ == 0) {
      std::fill(out, out + (e - b), *data());
    } else {
      std::copy(data() + b, data() + e, out);
    }
  }
  const_iterator begin() const;
  const_iterator end() const;
  std::vector<double> to_vector() const {
    std::vector<double> v(n_);
    copy_to(0, n_, v.data());
    return v;
  }
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
  // The values: doubles (width 8; one for every index where mask_ is 0), or decimals of 4 or 2
  // bytes.
  const void* d_ = nullptr;
  size_t n_ = 0;
  size_t mask_ = 0;
  double scale_ = 1;
  uint8_t width_ = 8;
  bool present_ = false;
};

class ColumnView::const_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = double;
  using difference_type = std::ptrdiff_t;
  using pointer = const double*;
  using reference = double;
  const_iterator() = default;
  const_iterator(const ColumnView& c, size_t i) : c_(c), i_(i) {}
  double operator*() const { return c_[i_]; }
  double operator[](difference_type k) const { return c_[i_ + static_cast<size_t>(k)]; }
  const_iterator& operator++() { return ++i_, *this; }
  const_iterator operator++(int) {
    const_iterator was = *this;
    ++i_;
    return was;
  }
  const_iterator& operator--() { return --i_, *this; }
  const_iterator operator--(int) {
    const_iterator was = *this;
    --i_;
    return was;
  }
  const_iterator& operator+=(difference_type k) { return i_ += static_cast<size_t>(k), *this; }
  const_iterator& operator-=(difference_type k) { return i_ -= static_cast<size_t>(k), *this; }
  friend const_iterator operator+(const_iterator a, difference_type k) { return a += k; }
  friend const_iterator operator+(difference_type k, const_iterator a) { return a += k; }
  friend const_iterator operator-(const_iterator a, difference_type k) { return a -= k; }
  friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }
  friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }
  friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
    return a.i_ <=> b.i_;
  }

 private:
  // (A copy of the view: pointers to the data itself, which an iterator may outlive the view
  // by, as a vector's does.)
  ColumnView c_;
  size_t i_ = 0;
};

inline ColumnView::const_iterator ColumnView::begin() const {
  return {*this, 0};
}
inline ColumnView::const_iterator ColumnView::end() const {
  return {*this, n_};
}

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
template <class T>
void reserve_guess(std::vector<T>& v, size_t n) noexcept {
  try {
    if (n <= v.capacity()) return;
    v.reserve(n);
    advise_huge_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
  } catch (const std::exception&) {  // std::bad_alloc, std::length_error
  }
}

// A column's storage: absent, every value (as doubles, or as decimals where every value is one:
// the columns readers build), or one value and a length. The values live on the heap behind a
// pointer, so moving the column (or its GpuSeries) leaves views valid. Copies are deep.
class FieldColumn {
 private:
  // f(the vector of values) of a column that holds one per row (not a constant one). (First in the
  // class: the members that use it take its deduced return type.)
  template <class F>
  decltype(auto) on_values(F&& f) {
    if (kind_ == Kind::kDecimal) return f(s_->m);
    if (kind_ == Kind::kDecimal16) return f(s_->h);
    return f(s_->d);
  }
  template <class F>
  decltype(auto) on_values(F&& f) const {
    if (kind_ == Kind::kDecimal) return f(std::as_const(s_->m));
    if (kind_ == Kind::kDecimal16) return f(std::as_const(s_->h));
    return f(std::as_const(s_->d));
  }

 public:
  FieldColumn() = default;
  FieldColumn(std::nullptr_t) {}
  explicit FieldColumn(std::vector<double> v) : s_(std::make_unique<Store>()) {
    s_->d = std::move(v);
  }
  static FieldColumn constant(double value, size_t n) {
    FieldColumn c(std::vector<double>{value});
    c.n_ = n, c.kind_ = Kind::kConstant;
    return c;
  }
  FieldColumn(const FieldColumn& o)
      : s_(o.s_ ? std::make_unique<Store>(*o.s_) : nullptr),
        n_(o.n_),
        kind_(o.kind_),
        places_(o.places_) {}
  // A moved-from column is absent.
  FieldColumn(FieldColumn&& o) noexcept
      : s_(std::move(o.s_)),
        n_(std::exchange(o.n_, 0)),
        kind_(std::exchange(o.kind_, Kind::kDoubles)),
        places_(std::exchange(o.places_, 0)) {}
  FieldColumn& operator=(const FieldColumn& o) {
    if (this != &o) *this = FieldColumn(o);
    return *this;
  }
  FieldColumn& operator=(FieldColumn&& o) noexcept {
    if (this != &o) {
      s_ = std::move(o.s_);
      n_ = std::exchange(o.n_, 0);
      kind_ = std::exchange(o.kind_, Kind::kDoubles);
      places_ = std::exchange(o.places_, 0);
    }
    return *this;
  }
  ~FieldColumn() = default;

  explicit operator bool() const { return s_ != nullptr; }
  friend bool operator==(const FieldColumn& c, std::nullptr_t) { return c.s_ == nullptr; }
  bool is_constant() const { return s_ && kind_ == Kind::kConstant; }
  // Held as decimals (in 4 bytes a value, or in 2 where every one fits 16 bits).
  bool is_decimal() const { return s_ && (kind_ == Kind::kDecimal || kind_ == Kind::kDecimal16); }
  // The bytes a value takes: 8, 4 or 2; 0 for a constant or absent column.
  size_t value_bytes() const {
    if (!s_ || kind_ == Kind::kConstant) return 0;
    return on_values([](const auto& v) { return sizeof(v[0]); });
  }
  size_t size() const {
    if (!s_) return 0;
    return kind_ == Kind::kConstant ? n_ : on_values([](const auto& v) { return v.size(); });
  }
  // The values it has room for without growing.
  size_t capacity() const {
    if (!s_) return 0;
    return kind_ == Kind::kConstant ? n_ : on_values([](const auto& v) { return v.capacity(); });
  }
  ColumnView view() const {
    if (!s_) return {};
    switch (kind_) {
      case Kind::kConstant:
        return ColumnView::constant(s_->d.data(), n_);
      case Kind::kDecimal:
        return ColumnView::decimals(s_->m.data(), s_->m.size(), places_);
      case Kind::kDecimal16:
        return ColumnView::decimals(s_->h.data(), s_->h.size(), places_);
      case Kind::kDoubles:
        break;
    }
    return ColumnView(s_->d);
  }
  // Every value as a double, to change in place: a constant column or one of decimals is built out
  // first, with room for `room` values.
  std::vector<double>& values(size_t room = 0) {
    if (kind_ != Kind::kDoubles) to_doubles(room);
    return s_->d;
  }
  // Appends v; a constant column stays one while v is its value (an empty one takes v's), and is
  // then built out as decimals where its values are. A column of values grows to `grow_to` values
  // where that is more than it holds (the series' times' room: the columns grow with them, once,
  // not by doublings of their own).
  // (Always inlined: a reader appends a value per cell, and a call there costs more than most.)
  [[gnu::always_inline]] void push_back(double v, size_t grow_to = 0) {
    if (kind_ == Kind::kDecimal16) {  // (the common cases first: a reader's columns)
      int32_t m;
      if (decimal::encode(v, places_, m) && decimal::fits16(m)) [[likely]]
        return grow_push(s_->h, decimal::to16(m), grow_to);
    } else if (kind_ == Kind::kDecimal) {
      int32_t m;
      if (decimal::encode(v, places_, m)) [[likely]]
        return grow_push(s_->m, m, grow_to);
    } else if (kind_ == Kind::kDoubles) {
      return grow_push(s_->d, v, grow_to);
    } else {
      if (n_ == 0) s_->d[0] = v;
      if (same_bits(v, s_->d[0])) {
        ++n_;
        return;
      }
    }
    push_other(v, grow_to);
  }
  // Appends every value of c (or of column c); two constant columns of the same value stay one.
  // Values that do not fit grow the vector to `grow_to` where that is more than they need.
  void append(ColumnView c, size_t grow_to = 0);
  void append(const FieldColumn& c, size_t grow_to = 0);
  // Folds a column whose values are all the same (bit for bit) into that value once.
  void compact();
  // Keeps the values at `rows` (increasing indices, each below size()).
  void keep_rows(const std::vector<size_t>& rows);
  // Keeps the values of rows [b, e) (b <= e <= size()).
  void keep_range(size_t b, size_t e);
  void reset() { *this = FieldColumn(); }
  // Room for n values where it holds one per row (asked for: see reserve_guess).
  void reserve(size_t n) {
    if (s_ && kind_ != Kind::kConstant) on_values([n](auto& v) { reserve_guess(v, n); });
  }

 private:
  enum class Kind : uint8_t { kDoubles, kConstant, kDecimal, kDecimal16 };
  struct Store {
    std::vector<double> d;   // the values (kDoubles), or the one value (kConstant)
    std::vector<int32_t> m;  // the values (kDecimal)
    std::vector<int16_t> h;  // the values (kDecimal16)
  };
  // A constant column's values written out (as decimals where its value is one), with room for
  // `room`.
  void build_out(size_t room);
  // The column as doubles, with room for `room`.
  void to_doubles(size_t room);
  // Appends x to v, growing it to `grow_to` where it is full and that is more than it holds.
  template <class T>
  static void grow_push(std::vector<T>& v, T x, size_t grow_to) {
    if (v.size() == v.capacity() && grow_to > v.size()) reserve_guess(v, grow_to);
    v.push_back(x);
  }
  // push_back of a value that changes the column: the first other value of a constant column, or
  // one its decimals do not hold.
  void push_other(double v, size_t grow_to);
  // Decimals with more places, so that v is one (m, fitting the column's width); false where no
  // count of places holds v and every value before it.
  bool more_places(double v, int32_t& m);
  // The decimals times 10^(places - places_), where they all fit the column's width.
  bool rescale(int places);
  // The largest |m| of the decimals.
  int32_t max_abs() const;
  // 2-byte decimals as 4-byte ones, with room for `room`.
  void widen16(size_t room);

  std::unique_ptr<Store> s_;
  size_t n_ = 0;  // a constant column's length
  Kind kind_ = Kind::kDoubles;
  uint8_t places_ = 0;  // kDecimal, kDecimal16: the values' decimal places
};

}  // namespace gpudoctor
