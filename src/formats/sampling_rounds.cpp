// Rows of a log without a GPU column, told apart by their position in each sampling round.
#include "formats/sampling_rounds.hpp"

#include <algorithm>
#include <cmath>

namespace gpudoctor::log_reader {

std::vector<uint32_t> positions_in_rounds(const std::vector<double>& t, uint32_t& gpus) {
  std::vector<uint32_t> pos(t.size(), 0);
  gpus = 1;
  if (t.size() < 3) return pos;
  std::vector<double> gaps(t.size() - 1);
  for (size_t i = 0; i + 1 < t.size(); ++i) gaps[i] = std::max(t[i + 1] - t[i], 0.0005);
  // No gap four times another: no rounds (most logs of one GPU), known without sorting.
  const auto [lo, hi] = std::minmax_element(gaps.begin(), gaps.end());
  if (*hi < 4 * *lo) return pos;
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
  if (best_ratio < 4) return pos;
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
  if (mode <= 1 || best * 10 < sizes.size() * 8) {
    std::fill(pos.begin(), pos.end(), 0);
    return pos;
  }
  gpus = mode;
  return pos;
}

}  // namespace gpudoctor::log_reader
