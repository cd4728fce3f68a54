// Rows of a log without a GPU column, told apart by their position in each sampling round.
#include "formats/sampling_rounds.hpp"

#include <algorithm>
#include <cmath>

namespace gpudoctor::log_reader {

std::vector<uint32_t> positions_in_rounds(ColumnView t, uint32_t& gpus) {
  gpus = 1;
  if (t.size() < 3) return {};
  auto gap_after = [&](size_t i) { return std::max(t[i + 1] - t[i], 0.0005); };
  // No gap four times another: no rounds (most logs of one GPU), known without sorting or
  // holding the gaps (a log of a million rows is read to here with its columns held).
  double lo = gap_after(0), hi = lo;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    const double g = gap_after(i);
    lo = std::min(lo, g), hi = std::max(hi, g);
  }
  if (hi < 4 * lo) return {};
  std::vector<uint32_t> pos(t.size(), 0);
  std::vector<double> gaps(t.size() - 1);
  for (size_t i = 0; i + 1 < t.size(); ++i) gaps[i] = gap_after(i);
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  double best_ratio = 0, threshold = 0;
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    const double r = sorted[i + 1] / sorted[i];
    if (r > best_ratio) {
      best_ratio = r;
      threshold = std::sqrt(sorted[i + 1] * sorted[i]);
    }
  }
  if (best_ratio < 4) return {};
  std::vector<uint32_t> sizes;
  uint32_t in_round = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i > 0 && gaps[i - 1] > threshold) {
      sizes.push_back(in_round);
      in_round = 0;
    }
    pos[i] = in_round++;
  }
  sizes.push_back(in_round);
  // The most common round size; the rounds must mostly agree on it (the last may be cut short).
  std::vector<uint32_t> s = sizes;
  std::sort(s.begin(), s.end());
  uint32_t mode = s[0], best = 0;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && s[j] == s[i]) ++j;
    if (j - i > best) {
      best = static_cast<uint32_t>(j - i);
      mode = s[i];
    }
    i = j;
  }
  if (mode <= 1 || best * 10 < sizes.size() * 8) return {};
  gpus = mode;
  return pos;
}

}  // namespace gpudoctor::log_reader
