#include "report/watch_report.hpp"

#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock_reasons.hpp"
#include "core/duration.hpp"
#include "report/status_report.hpp"

namespace gpudoctor {
namespace {

struct Row {
  std::string time;
  unsigned gpu;
  std::optional<double> util, sm, power, power_pct, eff, pstate, clock, temp, mem;
  std::optional<uint64_t> reasons;
  std::string verdict, cause;
  std::string owner_kind, owner_id, owner, user;  // the first owner; "" none
};

constexpr const char* kColumns[] = {
    "time",       "gpu",        "util_pct",     "sm_pct", "power_w",      "power_pct",
    "efficiency", "pstate",     "sm_clock_mhz", "temp_c", "mem_used_mib", "reasons",
    "verdict",    "owner_kind", "owner_id",     "owner",  "user",         "cause"};

std::vector<TextColumn> table_columns() {
  return {{"# time", false, 0, 0, false},  {"gpu", true, 0, 0, false},
          {"util", true, 0, 0, false},     {"sm", true, 0, 0, false},
          {"pwr_W", true, 0, 0, false},    {"pwr%", true, 0, 0, false},
          {"eff", true, 0, 0, false},      {"P", true, 2, 0, false},
          {"smMHz", true, 3, 0, false},    {"tempC", true, 4, 0, false},
          {"mem_MiB", true, 1, 0, false},  {"reasons", false, 5, 12, false},
          {"verdict", false, 0, 0, false}, {"cause", false, 0, 0, false},
          {"owner", false, 0, 20, true}};
}

// The widest each table column gets: what the table is laid out for (rows stream in later).
std::vector<std::string> widest_row() {
  return {"00:00:00",
          "15",
          "100",
          "100",
          "1000",
          "100",
          "1.00",
          "12",
          "3000",
          "100",
          "196608",
          std::string(16, 'x'),
          "busy_but_idle",
          "communication_wait",
          std::string(24, 'x')};
}

// A CSV cell: quoted when it holds a comma, quote or line break.
std::string csv_cell(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string clock_time(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string cell(const std::optional<double>& v, const char* spec, const char* missing) {
  return v ? fmt::format(fmt::runtime(spec), *v) : missing;
}

}  // namespace

WatchRenderer::WatchRenderer(WatchFormat format, size_t width)
    : format_(format), table_(table_columns(), 1, /*shorten_from=*/5) {
  table_.fit({widest_row()}, width);
}

Result<WatchFormat> parse_watch_format(const std::string& s) {
  if (s == "table") return WatchFormat::kTable;
  if (s == "csv") return WatchFormat::kCsv;
  if (s == "jsonl") return WatchFormat::kJsonl;
  return usage_error(fmt::format("unknown format '{}' (use table, csv or jsonl)", s));
}

std::string WatchRenderer::header() const {
  switch (format_) {
    case WatchFormat::kTable:
      return table_.header();
    case WatchFormat::kCsv:
      return fmt::format("{}\n", fmt::join(kColumns, ","));
    case WatchFormat::kJsonl:
      return "";
  }
  return "";
}

std::string WatchRenderer::rows(const std::vector<DeviceInfo>& devices, const Frame& frame,
                                const std::vector<GpuAssessment>& assessments,
                                const std::vector<std::optional<Cause>>& causes) const {
  std::string out;
  for (size_t i = 0; i < frame.devices.size() && i < devices.size(); ++i) {
    const DeviceSample& s = frame.devices[i];
    const GpuAssessment& a = assessments[i];
    Row r;
    r.gpu = devices[i].index;
    r.util = a.util_pct;
    r.sm = a.sm_pct;
    r.power = a.power_w;
    if (a.power_ratio) r.power_pct = *a.power_ratio * 100;
    r.eff = a.efficiency;
    r.pstate = opt_value(s[Field::kPstate]);
    r.clock = opt_value(s[Field::kClockSm]);
    r.temp = opt_value(s[Field::kTemp]);
    r.mem = a.mem_used_mib;
    r.reasons = reasons_mask(s[Field::kClockEventReasons]);
    r.verdict = verdict_code(a.verdict);
    if (i < causes.size() && causes[i]) r.cause = std::string(cause_code(*causes[i]));
    if (!s.owners.empty()) {
      const Owner& o = s.owners.front();
      r.owner_kind = owner_kind_code(o.kind);
      r.owner_id = o.id;
      r.owner = owners_text(s.owners);
      r.user = o.user;
    }

    switch (format_) {
      case WatchFormat::kTable: {
        out += table_.row({clock_time(frame.time_unix_ms), std::to_string(r.gpu),
                           cell(r.util, "{:.0f}", "-"), cell(r.sm, "{:.0f}", "-"),
                           cell(r.power, "{:.0f}", "-"), cell(r.power_pct, "{:.0f}", "-"),
                           cell(r.eff, "{:.2f}", "-"), cell(r.pstate, "{:.0f}", "-"),
                           cell(r.clock, "{:.0f}", "-"), cell(r.temp, "{:.0f}", "-"),
                           cell(r.mem, "{:.0f}", "-"),
                           r.reasons ? clock_reasons_summary(*r.reasons) : "n/a", r.verdict,
                           r.cause.empty() ? "-" : r.cause, r.owner.empty() ? "-" : r.owner});
        break;
      }
      case WatchFormat::kCsv:
        out += fmt::format(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            iso8601_utc(frame.time_unix_ms), r.gpu, cell(r.util, "{:.0f}", ""),
            cell(r.sm, "{:.1f}", ""), cell(r.power, "{:.1f}", ""), cell(r.power_pct, "{:.1f}", ""),
            cell(r.eff, "{:.3f}", ""), cell(r.pstate, "{:.0f}", ""), cell(r.clock, "{:.0f}", ""),
            cell(r.temp, "{:.0f}", ""), cell(r.mem, "{:.0f}", ""),
            r.reasons ? fmt::format("0x{:x}", *r.reasons) : "", r.verdict, r.owner_kind,
            csv_cell(r.owner_id), csv_cell(r.owner), csv_cell(r.user), r.cause);
        break;
      case WatchFormat::kJsonl: {
        auto j = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nullptr; };
        nlohmann::json o = {
            {"time", iso8601_utc(frame.time_unix_ms)},
            {"gpu", r.gpu},
            {"util_pct", j(r.util)},
            {"sm_pct", j(r.sm)},
            {"power_w", j(r.power)},
            {"power_pct", j(r.power_pct)},
            {"efficiency", j(r.eff)},
            {"pstate", j(r.pstate)},
            {"sm_clock_mhz", j(r.clock)},
            {"temp_c", j(r.temp)},
            {"mem_used_mib", j(r.mem)},
            {"verdict", r.verdict},
            {"cause", r.cause.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.cause)}};
        o["reasons"] = r.reasons ? nlohmann::json(decode_clock_reasons(*r.reasons, false))
                                 : nlohmann::json(nullptr);
        o["owners"] = nlohmann::json::array();
        for (const auto& ow : s.owners) o["owners"].push_back(owner_json(ow));
        out += o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        break;
      }
    }
  }
  return out;
}

}  // namespace gpudoctor
