#include "core/time_column.hpp"

namespace gpudoctor {

void TimeColumn::append(const TimeColumn& o, size_t room) {
  if (o.empty()) return;
  if (!col_) col_ = FieldColumn::constant(o.front(), 0);
  col_.append(o.col_, std::max(room, room_));
  refresh();
}

void TimeColumn::shift(double delta) {
  if (!v_.decimal() && !v_.constant()) {
    for (double& t : col_.values()) t += delta;
    return refresh();
  }
  // Decimals (or one time): the shifted times appended anew, held as they then can be. (None
  // is -0.0, so a shift by 0 changes none.)
  if (delta == 0 && v_.decimal()) return;
  TimeColumn out;
  out.reserve(size());
  for (const double t : v_) out.push_back(t + delta);
  out.room_ = room_;
  *this = std::move(out);  // (the room asked for kept)
}

void TimeColumn::assign_doubles(size_t n, double value) {
  std::vector<double> d;
  assign_fresh(d, n, value);
  col_ = FieldColumn(std::move(d));
  room_ = 0;
  refresh();
}

}  // namespace gpudoctor
