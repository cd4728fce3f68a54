#include "formats/trace_attach.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <vector>

#include <fmt/format.h>

#include "formats/run_folders.hpp"

namespace gpudoctor {

namespace {

// Where a trace lies on the recording's clock, said in seconds from the recording's start.
std::string alignment_note(const Recording& rec, const TraceRank& t) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& e : t.events) {
    if (e.kind != TraceKind::kKernel && e.kind != TraceKind::kMemcpy &&
        e.kind != TraceKind::kMemset)
      continue;
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns());
  }
  double end_s = 0;
  for (const auto& g : rec.gpus)
    if (!g.time_s.empty()) end_s = std::max(end_s, g.time_s.back());
  const std::string who = t.rank >= 0 ? fmt::format("rank {}", t.rank) : t.origin;
  if (first == INT64_MAX) return fmt::format("profiler trace of {}: no GPU event", who);
  const double start_s =
      (static_cast<double>(first) / 1e6 - static_cast<double>(rec.start_unix_ms)) / 1e3;
  const double length_s = static_cast<double>(last - first) / 1e9;
  std::string where;
  if (rec.start_unix_ms <= 0)
    where = "the recording has no wall-clock start: not aligned";
  else if (start_s + length_s < 0 || start_s > end_s)
    where = fmt::format(
        "its GPU events ({:.3f} s) start {:.1f} s from the recording's start, outside the "
        "recording's {:.1f} s: the two do not overlap (the same run?)",
        length_s, start_s, end_s);
  else
    where = fmt::format(
        "its GPU events ({:.3f} s) start {:.3f} s into the recording (offset by the wall clock)",
        length_s, start_s);
  return fmt::format("profiler trace of {} ({}): {}", who, t.origin, where);
}

}  // namespace

std::optional<Error> attach_traces(Recording& rec, const std::string& path,
                                   const LoadOptions& options) {
  std::vector<std::string> files;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    auto listed = folder_logs(path);
    if (!listed) return listed.error();
    files = std::move(listed.value());
  } else {
    files.push_back(path);
  }
  LoadOptions o = options;
  o.input_format = "trace";
  size_t added = 0;
  for (const auto& f : files) {
    auto r = load_telemetry(f, o);
    if (!r) return r.error();
    for (auto& t : r->traces) {
      rec.notes.push_back(alignment_note(rec, t));
      rec.traces.push_back(std::move(t));
      ++added;
    }
  }
  if (added == 0) return usage_error(fmt::format("--trace {}: no profiler trace in it", path));
  return std::nullopt;
}

}  // namespace gpudoctor
