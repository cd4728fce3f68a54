#include "core/column.hpp"

namespace gpudoctor {

namespace {

// The largest |m| a decimal of 4 or of 2 bytes holds (its smallest value is kept for none).
constexpr int64_t kMost32 = 2147483647, kMost16 = 32767;

template <class I>
int32_t max_abs_of(const std::vector<I>& ms) {
  int32_t most = 0;
  for (const I m : ms)
    if (m != std::numeric_limits<I>::min()) most = std::max(most, m < 0 ? -int32_t{m} : m);
  return most;
}

template <class I>
void scale_by(std::vector<I>& ms, int32_t f) {
  for (I& m : ms)
    if (m != std::numeric_limits<I>::min()) m = static_cast<I>(m * f);
}

// Appends `from` times f to `to` (none stays none), where every value fits (checked before).
template <class To, class From>
void append_scaled(std::vector<To>& to, const std::vector<From>& from, int32_t f) {
  const size_t at = to.size();
  to.resize(at + from.size());
  To* out = to.data() + at;
  for (const From m : from)
    *out++ = m == std::numeric_limits<From>::min() ? std::numeric_limits<To>::min()
                                                   : static_cast<To>(m * f);
}

}  // namespace

void FieldColumn::build_out(size_t room) {
  const double v = s_->d[0];
  int32_t m = 0;
  int places = 0;
  while (places <= decimal::kMaxPlaces && !decimal::encode(v, places, m)) ++places;
  if (places > decimal::kMaxPlaces) {
    if (room > n_) reserve_guess(s_->d, room);
    s_->d.assign(n_, v);
    kind_ = Kind::kDoubles;
    return;
  }
  // (The kind changed once the values are written: an allocation that throws leaves the
  // constant column as it was.)
  if (decimal::fits16(m)) {
    if (room > n_) reserve_guess(s_->h, room);
    s_->h.assign(n_, decimal::to16(m));
    kind_ = Kind::kDecimal16;
  } else {
    if (room > n_) reserve_guess(s_->m, room);
    s_->m.assign(n_, m);
    kind_ = Kind::kDecimal;
  }
  places_ = static_cast<uint8_t>(places);
  s_->d = {};
}

void FieldColumn::to_doubles(size_t room) {
  const ColumnView was = view();
  std::vector<double> d;
  reserve_guess(d, std::max(room, was.size()));
  d.resize(was.size());
  was.copy_to(0, was.size(), d.data());
  s_->d = std::move(d);
  std::vector<int32_t>().swap(s_->m);
  std::vector<int16_t>().swap(s_->h);
  kind_ = Kind::kDoubles;
  places_ = 0;
}

void FieldColumn::widen16(size_t room) {
  std::vector<int32_t> m;
  reserve_guess(m, std::max(room, s_->h.size()));
  append_scaled(m, s_->h, 1);
  s_->m = std::move(m);
  std::vector<int16_t>().swap(s_->h);
  kind_ = Kind::kDecimal;
}

int32_t FieldColumn::max_abs() const {
  return kind_ == Kind::kDecimal16 ? max_abs_of(s_->h) : max_abs_of(s_->m);
}

bool FieldColumn::rescale(int places) {
  if (places > decimal::kMaxPlaces) return false;
  if (places <= places_) return places == places_;
  const int32_t f = static_cast<int32_t>(decimal::kScale[places - places_]);
  const bool narrow = kind_ == Kind::kDecimal16;
  if (int64_t{max_abs()} * f > (narrow ? kMost16 : kMost32)) return false;
  if (narrow)
    scale_by(s_->h, f);
  else
    scale_by(s_->m, f);
  places_ = static_cast<uint8_t>(places);
  return true;
}

bool FieldColumn::more_places(double v, int32_t& m) {
  for (int places = places_ + 1; places <= decimal::kMaxPlaces; ++places) {
    if (!decimal::encode(v, places, m)) continue;
    if (kind_ == Kind::kDecimal16 && !decimal::fits16(m)) return false;
    return rescale(places);
  }
  return false;
}

void FieldColumn::push_other(double v, size_t grow_to) {
  if (kind_ == Kind::kConstant) {
    build_out(std::max(grow_to, n_ + 1));
    return push_back(v, grow_to);  // (as decimals or doubles now)
  }
  // Decimals that do not hold v as they are: more places, or 4 bytes, or doubles.
  int32_t m;
  if (more_places(v, m)) {
    if (kind_ == Kind::kDecimal16)
      grow_push(s_->h, decimal::to16(m), grow_to);
    else
      grow_push(s_->m, m, grow_to);
    return;
  }
  if (kind_ == Kind::kDecimal16) {
    widen16(grow_to);
    return push_back(v, grow_to);
  }
  to_doubles(grow_to);
  push_back(v, grow_to);
}

void FieldColumn::append(ColumnView c, size_t grow_to) {
  if (c.empty()) return;
  if (kind_ == Kind::kConstant && c.constant() && (n_ == 0 || same_bits(c.front(), s_->d[0]))) {
    s_->d[0] = c.front();
    n_ += c.size();
    return;
  }
  const size_t need = std::max(grow_to, size() + c.size());
  if (kind_ == Kind::kConstant) build_out(need);
  if (kind_ != Kind::kDoubles) {
    if (!c.constant()) {
      for (const double v : c) push_back(v, need);
      return;
    }
    // One value (a run of missing ones, most often): appended once as any value, then copied as
    // the column then holds it.
    push_back(c.front(), need);
    const size_t rest = c.size() - 1;
    if (kind_ == Kind::kDecimal16)
      s_->h.insert(s_->h.end(), rest, s_->h.back());
    else if (kind_ == Kind::kDecimal)
      s_->m.insert(s_->m.end(), rest, s_->m.back());
    else
      s_->d.insert(s_->d.end(), rest, c.front());
    return;
  }
  std::vector<double>& d = s_->d;
  if (d.size() + c.size() > d.capacity()) reserve_guess(d, need);
  const size_t at = d.size();
  d.resize(at + c.size());
  c.copy_to(0, c.size(), d.data() + at);
}

void FieldColumn::append(const FieldColumn& c, size_t grow_to) {
  if (!c.is_decimal() || kind_ == Kind::kDoubles) return append(c.view(), grow_to);
  const size_t need = std::max(grow_to, size() + c.size());
  if (kind_ == Kind::kConstant) build_out(need);
  if (kind_ == Kind::kDoubles) return append(c.view(), grow_to);
  // Both at the larger count of places, in the narrowest width that holds both.
  const int places = std::max(places_, c.places_);
  const auto f = static_cast<int32_t>(decimal::kScale[places - c.places_]);
  const bool c16 = c.kind_ == Kind::kDecimal16;
  const int64_t c_most = f == 1 ? (c16 ? kMost16 : kMost32) : int64_t{c.max_abs()} * f;
  if (kind_ == Kind::kDecimal16 && c16 && c_most <= kMost16 && rescale(places)) {
    if (s_->h.size() + c.size() > s_->h.capacity()) reserve_guess(s_->h, need);
    append_scaled(s_->h, c.s_->h, f);
    return;
  }
  if (kind_ == Kind::kDecimal16) widen16(need);
  if (c_most <= kMost32 && rescale(places)) {
    if (s_->m.size() + c.size() > s_->m.capacity()) reserve_guess(s_->m, need);
    if (c16)
      append_scaled(s_->m, c.s_->h, f);
    else
      append_scaled(s_->m, c.s_->m, f);
    return;
  }
  to_doubles(need);
  append(c.view(), grow_to);
}

void FieldColumn::compact() {
  if (!s_ || kind_ == Kind::kConstant || size() == 0) return;
  bool same = true;
  on_values([&same](const auto& v) {
    for (const auto& x : v)
      if (!same_bits(static_cast<double>(x), static_cast<double>(v.front()))) {
        same = false;
        return;
      }
  });
  if (!same) return;
  const ColumnView v = view();
  *this = constant(v.front(), v.size());
}

void FieldColumn::keep_rows(const std::vector<size_t>& rows) {
  if (!s_) return;
  if (kind_ == Kind::kConstant) {
    n_ = rows.size();
    return;
  }
  on_values([&rows](auto& v) {
    size_t kept = 0;
    for (size_t r : rows) v[kept++] = v[r];
    v.resize(kept);
  });
}

void FieldColumn::keep_range(size_t b, size_t e) {
  if (!s_) return;
  if (kind_ == Kind::kConstant) {
    n_ = e - b;
    return;
  }
  on_values([b, e](auto& v) {
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(e), v.end());
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(b));
  });
}

}  // namespace gpudoctor
