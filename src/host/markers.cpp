#include "host/markers.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

namespace gpudoctor::host {

std::optional<StepMarker> parse_marker(const std::string& line, int64_t start_unix_ms) {
  std::istringstream in(line);
  double t = 0;
  std::string event;
  if (!(in >> t >> event) || !std::isfinite(t) || t <= 0) return std::nullopt;
  if (event != "step_start" && event != "data_ready" && event != "step_end") return std::nullopt;
  StepMarker m;
  m.time_s = t - static_cast<double>(start_unix_ms) / 1000.0;
  m.event = event;
  for (std::string kv; in >> kv;) {
    if (kv.rfind("samples=", 0) == 0) {
      char* end = nullptr;
      const double v = std::strtod(kv.c_str() + 8, &end);
      if (*end != '\0' || !std::isfinite(v) || v < 0) return std::nullopt;
      m.samples = v;
    }
  }
  return m;
}

void MarkerReader::poll(int64_t start_unix_ms, std::vector<StepMarker>& out) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = partial_.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (auto m = parse_marker(line, start_unix_ms))
      out.push_back(std::move(*m));
    else
      ++bad_;
  }
  partial_.erase(0, start);
  if (partial_.size() > 4096) partial_.clear(), ++bad_;  // no newline in sight: not our protocol
}

StepStats step_stats(const std::vector<StepMarker>& markers) {
  StepStats s;
  double step_sum = 0, wait_sum = 0, compute_sum = 0, samples = 0;
  size_t waits = 0, computes = 0, with_samples = 0;
  // NaN: not seen (yet) in the current step.
  double start = kMissing, ready = kMissing, prev_end = kMissing, first_begin = kMissing;
  double last_end = 0;
  for (const auto& m : markers) {
    if (m.event == "step_start") {
      start = m.time_s, ready = kMissing;
      if (std::isnan(first_begin)) first_begin = m.time_s;
    } else if (m.event == "data_ready") {
      ready = m.time_s;
      if (!std::isnan(start)) wait_sum += m.time_s - start, ++waits;
    } else if (m.event == "step_end") {
      const double begin = !std::isnan(start) ? start : prev_end;
      if (!std::isnan(begin)) {
        step_sum += m.time_s - begin;
        ++s.steps;
        if (std::isnan(first_begin)) first_begin = begin;
      }
      if (!std::isnan(ready)) compute_sum += m.time_s - ready, ++computes;
      if (!std::isnan(m.samples)) samples += m.samples, ++with_samples;
      prev_end = m.time_s, last_end = m.time_s;
      start = kMissing, ready = kMissing;
    }
  }
  if (s.steps) s.mean_step_s = step_sum / static_cast<double>(s.steps);
  if (waits) s.mean_wait_s = wait_sum / static_cast<double>(waits);
  if (computes) s.mean_compute_s = compute_sum / static_cast<double>(computes);
  if (with_samples && !std::isnan(first_begin) && last_end > first_begin)
    s.throughput = samples / (last_end - first_begin);
  return s;
}

}  // namespace gpudoctor::host
