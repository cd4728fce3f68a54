#include "report/trace_report.hpp"

#include <fmt/format.h>

namespace gpudoctor {

namespace {

using Json = nlohmann::ordered_json;

double num(const Json& j, const char* k) {
  const auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string pct(double f) {
  return fmt::format("{:.0f} %", 100 * f);
}

// Kernel names are C++ signatures: the part before the argument list, cut to fit a line.
std::string short_name(std::string name, size_t width) {
  if (const auto paren = name.find('('); paren != std::string::npos && paren > 0)
    name.resize(paren);
  if (name.size() > width) name = name.substr(0, width - 3) + "...";
  return name;
}

std::string rank_text(const Json& r, size_t top) {
  std::string s;
  const std::string who = r["rank"].is_number() ? fmt::format("rank {}", r["rank"].get<int>())
                                                : r["origin"].get<std::string>();
  s += fmt::format("  {}{}: {:.1f} ms from the first GPU event to the last\n", who,
                   r["device"].is_string() ? " (" + r["device"].get<std::string>() + ")" : "",
                   num(r, "span_ms"));
  const Json& b = r["breakdown"];
  s += fmt::format(
      "    compute {}, communication {}, memory {}, idle {} (waiting for launches {})\n",
      pct(num(b, "compute")), pct(num(b, "communication")), pct(num(b, "memory")),
      pct(num(b, "idle")), pct(num(r, "idle_host_wait")));
  if (const auto it = r.find("idle_breakdown"); it != r.end() && it->is_object())
    s += fmt::format(
        "    idle by what the GPU waited for: the CPU (nothing queued) {}, another stream or "
        "event {}, other {}\n",
        pct(num(*it, "host_wait")), pct(num(*it, "stream_event_wait")), pct(num(*it, "other")));
  if (num(r, "sync_records") > 0)
    s += fmt::format(
        "    synchronisation records in the trace: {:.0f} ({:.0f} of the whole device, {:.0f} "
        "waits of a stream on another's event); the idle time they explain: {} of the span\n",
        num(r, "sync_records"), num(r, "device_syncs"), num(r, "stream_waits"),
        pct(num(r, "idle_sync_recorded")));
  std::string bands;
  double below = 0;
  const double kernels = num(r, "kernels");
  for (const auto& band : r["bands"]) {
    if (!band["below_us"].is_number()) break;
    below += num(band, "count");
    bands += fmt::format(", {} under {} us", pct(kernels > 0 ? below / kernels : 0),
                         band["below_us"].get<int64_t>());
  }
  s += fmt::format("    {:.0f} kernels ({:.1f} ms){}\n", kernels, num(r, "kernel_ms"), bands);
  s += fmt::format(
      "    launch delay median {:.1f} us, p90 {:.1f} us ({:.0f} launches matched); CUDA runtime "
      "calls {} of the span\n",
      num(r, "launch_delay_median_us"), num(r, "launch_delay_p90_us"), num(r, "launches"),
      pct(num(r, "runtime_share")));
  if (num(r, "nccl_kernels") > 0)
    s += fmt::format("    NCCL: {:.0f} kernels, {:.1f} ms, {} of it overlapped by compute\n",
                     num(r, "nccl_kernels"), num(r, "nccl_ms"), pct(num(r, "nccl_overlap")));
  if (!r["steps"].empty())
    s += fmt::format("    steps: {}, median {:.1f} ms; DataLoader {} of the steps' time\n",
                     r["steps"].size(), num(r, "step_median_ms"), pct(num(r, "dataloader_share")));
  size_t n = 0;
  for (const auto& k : r["top_kernels"]) {
    if (n++ >= top) break;
    if (n == 1) s += "    top kernels by time:\n";
    s += fmt::format("      {:>5.1f} %  {:>9.3f} ms  {:>6}x  {}\n", 100 * num(k, "share"),
                     num(k, "ms"), k["count"].get<size_t>(),
                     short_name(k["name"].get<std::string>(), 60));
  }
  return s;
}

}  // namespace

std::string trace_text(const Json& trace, size_t top) {
  if (!trace.is_object() || !trace.contains("ranks")) return "";
  std::string s = "\nProfiler trace\n";
  for (const auto& r : trace["ranks"]) s += rank_text(r, top);
  return s;
}

}  // namespace gpudoctor
