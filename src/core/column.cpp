#include "core/column.hpp"

namespace gpudoctor {

namespace {

constexpr int64_t kLimit = 2147483647;  // decimals stay below this (and above its negative)

int32_t abs_of(int32_t m) {
  return m == decimal::kNone ? 0 : m < 0 ? -m : m;
}

int32_t max_abs_of(const std::vector<int32_t>& ms) {
  int32_t most = 0;
  for (const int32_t m : ms) most = std::max(most, abs_of(m));
  return most;
}

}  // namespace

void FieldColumn::build_out(size_t room) {
  const double v = s_->d[0];
  int32_t m = 0;
  int places = 0;
  while (places <= decimal::kMaxPlaces && !decimal::encode(v, places, m)) ++places;
  if (places > decimal::kMaxPlaces) {
    kind_ = Kind::kDoubles;
    if (room > n_) reserve_guess(s_->d, room);
    s_->d.assign(n_, v);
    return;
  }
  kind_ = Kind::kDecimal;
  places_ = static_cast<uint8_t>(places);
  if (room > n_) reserve_guess(s_->m, room);
  s_->m.assign(n_, m);
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
  kind_ = Kind::kDoubles;
  places_ = 0;
}

int32_t FieldColumn::max_abs() const {
  return max_abs_of(s_->m);
}

void FieldColumn::push_other(double v, size_t grow_to) {
  if (kind_ == Kind::kConstant) {
    build_out(std::max(grow_to, n_ + 1));
    return push_back(v, grow_to);  // (as decimals or doubles now)
  }
  // Decimals that do not hold v as they are.
  int32_t m;
  if (more_places(v, m)) {
    std::vector<int32_t>& ms = s_->m;
    if (ms.size() == ms.capacity() && grow_to > ms.size()) reserve_guess(ms, grow_to);
    ms.push_back(m);
    return;
  }
  to_doubles(grow_to);
  push_back(v, grow_to);
}

bool FieldColumn::rescale(int places) {
  if (places > decimal::kMaxPlaces) return false;
  if (places <= places_) return places == places_;
  const int32_t f = static_cast<int32_t>(decimal::kScale[places - places_]);
  if (int64_t{max_abs()} * f >= kLimit) return false;
  for (int32_t& m : s_->m)
    if (m != decimal::kNone) m *= f;
  places_ = static_cast<uint8_t>(places);
  return true;
}

bool FieldColumn::more_places(double v, int32_t& m) {
  for (int places = places_ + 1; places <= decimal::kMaxPlaces; ++places) {
    if (!decimal::encode(v, places, m)) continue;
    return rescale(places);
  }
  return false;
}

std::vector<double>& FieldColumn::values(size_t room) {
  if (kind_ == Kind::kConstant) {
    const double v = s_->d[0];
    if (room > n_) reserve_guess(s_->d, room);  // one allocation, not n_ and then a larger one
    s_->d.assign(n_, v);
    kind_ = Kind::kDoubles;
  } else if (kind_ == Kind::kDecimal) {
    to_doubles(room);
  }
  return s_->d;
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
  if (kind_ == Kind::kDecimal) {
    std::vector<int32_t>& ms = s_->m;
    if (ms.size() + c.size() > ms.capacity()) reserve_guess(ms, need);
    int32_t m;
    if (c.constant()) {  // one value, encoded once
      if (decimal::encode(c.front(), places_, m) || more_places(c.front(), m)) {
        ms.insert(ms.end(), c.size(), m);
        return;
      }
    } else {
      for (double v : c) push_back(v, need);
      return;
    }
    to_doubles(need);
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
  if (kind_ == Kind::kDecimal) {
    const int places = std::max(places_, c.places_);
    const int32_t f = static_cast<int32_t>(decimal::kScale[places - c.places_]);
    if ((f == 1 || int64_t{c.max_abs()} * f < kLimit) && rescale(places)) {
      std::vector<int32_t>& ms = s_->m;
      if (ms.size() + c.size() > ms.capacity()) reserve_guess(ms, need);
      if (f == 1) {
        ms.insert(ms.end(), c.s_->m.begin(), c.s_->m.end());
      } else {
        for (const int32_t m : c.s_->m) ms.push_back(m == decimal::kNone ? m : m * f);
      }
      return;
    }
    to_doubles(need);
  }
  append(c.view(), grow_to);
}

void FieldColumn::compact() {
  if (!s_ || kind_ == Kind::kConstant || size() == 0) return;
  const ColumnView v = view();
  if (kind_ == Kind::kDecimal) {
    const int32_t first = s_->m.front();
    for (const int32_t m : s_->m)
      if (m != first) return;
  } else {
    const double first = s_->d.front();
    for (const double x : s_->d)
      if (!same_bits(x, first)) return;
  }
  *this = constant(v.front(), v.size());
}

void FieldColumn::keep_rows(const std::vector<size_t>& rows) {
  if (!s_) return;
  const auto keep = [&rows](auto& v) {
    size_t kept = 0;
    for (size_t r : rows) v[kept++] = v[r];
    v.resize(kept);
  };
  if (kind_ == Kind::kConstant)
    n_ = rows.size();
  else if (kind_ == Kind::kDecimal)
    keep(s_->m);
  else
    keep(s_->d);
}

void FieldColumn::keep_range(size_t b, size_t e) {
  if (!s_) return;
  const auto keep = [b, e](auto& v) {
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(e), v.end());
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(b));
  };
  if (kind_ == Kind::kConstant)
    n_ = e - b;
  else if (kind_ == Kind::kDecimal)
    keep(s_->m);
  else
    keep(s_->d);
}

}  // namespace gpudoctor
