#include "core/recording.hpp"

namespace gpudoctor {

std::vector<double>& GpuSeries::column_for_write(Field f) {
  auto& c = columns[index_of(f)];
  if (!c) c = std::make_unique<std::vector<double>>(time_s.size(), kMissing);
  return *c;
}

size_t GpuSeries::append_row(double t_s) {
  time_s.push_back(t_s);
  for (auto& c : columns)
    if (c) c->push_back(kMissing);
  return time_s.size() - 1;
}

}  // namespace gpudoctor
