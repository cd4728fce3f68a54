// The format zoo: one simulated run written out in the layouts of several tools (nvidia-smi CSV,
// gpudoctor's CSV, W&B's wide system metrics, nvitop -1 snapshots, GPU-Z's sensor log in
// Windows-1252, HWiNFO's CSV),
// read back through load_text and diagnosed: every layout gives the run's own verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/causes.hpp"
#include "analysis/diagnosis.hpp"
#include "core/clock_reasons.hpp"
#include "core/gpu_models.hpp"
#include "formats/export.hpp"
#include "formats/load.hpp"
#include "formats/smi_csv.hpp"
#include "sources/sim/sim_source.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

double value(const GpuSeries& g, Field f, size_t row) {
  const auto c = g.column(f);
  return c != nullptr && row < c->size() ? (*c)[row] : kMissing;
}

std::string cell(double v, const char* spec = "{:.2f}") {
  return is_missing(v) ? std::string() : fmt::format(fmt::runtime(spec), v);
}

uint64_t reasons_at(const GpuSeries& g, size_t row) {
  const double v = value(g, Field::kClockEventReasons, row);
  return is_missing(v) ? 0 : static_cast<uint64_t>(v);
}

uint64_t bit(std::string_view code) {
  for (const auto& r : clock_reasons())
    if (r.code == code) return r.bit;
  return 0;
}

// W&B's CSV export: _runtime, _timestamp, then system.gpu.N.<key> for every GPU.
std::string write_wandb(const Recording& rec) {
  static constexpr std::pair<std::string_view, Field> kKeys[] = {
      {"gpu", Field::kUtilGpu},      {"memory", Field::kUtilMem},
      {"powerWatts", Field::kPower}, {"enforcedPowerLimitWatts", Field::kPowerLimitEnforced},
      {"smClock", Field::kClockSm},  {"memoryClock", Field::kClockMem},
      {"temp", Field::kTemp}};
  std::string out = "_runtime,_timestamp";
  for (size_t g = 0; g < rec.gpus.size(); ++g)
    for (const auto& [k, f] : kKeys) out += fmt::format(",system.gpu.{}.{}", g, k);
  out += '\n';
  const GpuSeries& g0 = rec.gpus.front();
  for (size_t r = 0; r < g0.size(); ++r) {
    out += fmt::format("{:.3f},{:.3f}", g0.time_s[r],
                       static_cast<double>(rec.start_unix_ms) / 1000 + g0.time_s[r]);
    for (const auto& g : rec.gpus)
      for (const auto& [k, f] : kKeys) {
        out += ',';
        out += cell(value(g, f, r));
      }
    out += '\n';
  }
  return out;
}

std::string date_time(const Recording& rec, double t_s, bool day_first) {
  const auto ms = rec.start_unix_ms + static_cast<int64_t>(t_s * 1000);
  const std::string iso = text::format_timestamp_ms(ms, '-');  // "2026-01-01 00:00:01.000"
  if (!day_first) return iso.substr(0, 19);
  return fmt::format("\"{}.{}.{}\",\"{}\"", std::stoi(iso.substr(8, 2)),
                     std::stoi(iso.substr(5, 2)), iso.substr(0, 4), iso.substr(11));
}

// GPU-Z's sensor log of one GPU, in Windows-1252, with its PerfCap codes (1 Pwr, 2 Thrm, 16 Util).
std::string write_gpuz(const Recording& rec) {
  const GpuSeries& g = rec.gpus.front();
  std::string out =
      "        Date        , GPU Clock [MHz] , Memory Clock [MHz] , GPU Temperature [\xB0"
      "C] , GPU Load [%] , Memory Controller Load [%] , Board Power Draw [W] , PerfCap Reason [] "
      ", \r\n";
  for (size_t r = 0; r < g.size(); ++r) {
    const uint64_t m = reasons_at(g, r);
    const int perfcap = ((m & bit("sw_power_cap")) ? 1 : 0) | ((m & bit("sw_thermal")) ? 2 : 0) |
                        ((m & bit("hw_thermal")) ? 2 : 0) | ((m & bit("gpu_idle")) ? 16 : 0);
    out += fmt::format(
        "{} , {} , {} , {} , {} , {} , {} , {} , \r\n", date_time(rec, g.time_s[r], false),
        cell(value(g, Field::kClockSm, r), "{:.1f}"), cell(value(g, Field::kClockMem, r), "{:.1f}"),
        cell(value(g, Field::kTemp, r), "{:.1f}"), cell(value(g, Field::kUtilGpu, r), "{:.0f}"),
        cell(value(g, Field::kUtilMem, r), "{:.0f}"), cell(value(g, Field::kPower, r), "{:.1f}"),
        perfcap);
  }
  return out;
}

// HWiNFO64's CSV of one GPU: quoted, d.m.yyyy and h:m:s.ms, Yes/No limits, the header again at
// the end.
std::string write_hwinfo(const Recording& rec) {
  const GpuSeries& g = rec.gpus.front();
  const std::string header =
      "\"Date\",\"Time\",\"GPU Temperature [\xB0"
      "C]\",\"GPU Core Load [%]\",\"GPU Memory Controller Load [%]\",\"GPU Power [W]\",\"GPU "
      "Clock [MHz]\",\"GPU Memory Clock [MHz]\",\"Performance Limit - Power [Yes/No]\","
      "\"Performance Limit - Thermal [Yes/No]\",\"Performance Limit - Utilization [Yes/No]\",\r\n";
  std::string out = header;
  auto yes = [](bool b) { return b ? "\"Yes\"" : "\"No\""; };
  for (size_t r = 0; r < g.size(); ++r) {
    const uint64_t m = reasons_at(g, r);
    out += fmt::format(
        "{},\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",{},{},{},\r\n",
        date_time(rec, g.time_s[r], true), cell(value(g, Field::kTemp, r), "{:.0f}"),
        cell(value(g, Field::kUtilGpu, r), "{:.1f}"), cell(value(g, Field::kUtilMem, r), "{:.1f}"),
        cell(value(g, Field::kPower, r), "{:.3f}"), cell(value(g, Field::kClockSm, r), "{:.1f}"),
        cell(value(g, Field::kClockMem, r), "{:.1f}"), yes(m & bit("sw_power_cap")),
        yes(m & (bit("sw_thermal") | bit("hw_thermal"))), yes(m & bit("gpu_idle")));
  }
  return out + header;
}

// `while true; do nvitop -1; sleep 1; done` (79 columns, no bars): the date line, the GPU table
// in box drawing, the host bars, the process table. nvitop prints whole watts, % and degrees.
std::string write_nvitop(const Recording& rec) {
  auto whole = [](double v, std::string_view unit) {
    return is_missing(v) ? std::string("N/A") : fmt::format("{:.0f}{}", v, unit);
  };
  auto memory = [](double mib) {  // nvitop's bytes2human
    if (is_missing(mib)) return std::string("N/A");
    return mib < 20 * 1024 ? fmt::format("{:.0f}MiB", mib) : fmt::format("{:.2f}GiB", mib / 1024);
  };
  std::string out;
  const GpuSeries& g0 = rec.gpus.front();
  for (size_t r = 0; r < g0.size(); ++r) {
    const int64_t ms = rec.start_unix_ms + static_cast<int64_t>(g0.time_s[r] * 1000);
    const int64_t days = ms / 86'400'000;
    static constexpr const char* kDays[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
    const std::string iso = text::format_timestamp_ms(ms, '-');  // "2026-01-01 00:00:01.000"
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    out +=
        fmt::format("{} {} {} {} {}\n", kDays[days % 7], kMonths[std::stoi(iso.substr(5, 2)) - 1],
                    iso.substr(8, 2), iso.substr(11, 8), iso.substr(0, 4));
    out +=
        "╒═════════════════════════════════════════════════════════════════════════════╕\n"
        "│ NVITOP 1.3.2       Driver Version: 550.54.14      CUDA Driver Version: 12.4 │\n"
        "├───────────────────────────────┬──────────────────────┬──────────────────────┤\n"
        "│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ Volatile Uncorr. ECC │\n"
        "│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │\n"
        "╞═══════════════════════════════╪══════════════════════╪══════════════════════╡\n";
    for (size_t i = 0; i < rec.gpus.size(); ++i) {
      const GpuSeries& g = rec.gpus[i];
      std::string name = g.info.name;
      if (name.starts_with("NVIDIA ")) name = name.substr(7);
      if (name.size() > 19) name = ".." + name.substr(name.size() - 17);
      if (i > 0)
        out += "├───────────────────────────────┼──────────────────────┼──────────────────────┤\n";
      out += fmt::format("│ {:>3}  {:<19} {:>4} │ {:<16} {:>3} │ {:>20} │\n", i, name, "On",
                         "00000000:00:00.0", "Off", "0");
      const std::string power = fmt::format("{} / {}", whole(value(g, Field::kPower, r), "W"),
                                            whole(value(g, Field::kPowerLimitEnforced, r), "W"));
      const std::string mem = fmt::format("{} / {}", memory(value(g, Field::kMemUsed, r)),
                                          memory(value(g, Field::kMemTotal, r)));
      const double p = value(g, Field::kPstate, r);
      out +=
          fmt::format("│ {:>3}  {:>4}  {:>4}  {:>12} │ {:>20} │ {:>7}  {:>11} │\n",
                      whole(value(g, Field::kFan, r), "%"), whole(value(g, Field::kTemp, r), "C"),
                      is_missing(p) ? std::string("N/A") : fmt::format("P{:.0f}", p), power, mem,
                      whole(value(g, Field::kUtilGpu, r), "%"), "Default");
    }
    out +=
        "╘═══════════════════════════════╧══════════════════════╧══════════════════════╛\n"
        "[ CPU: █████▍ 18.4%     UPTIME: 3.2 days ]  ( Load Average:  2.31  2.20  2.05 )\n"
        "[ MEM: ████████████▏ 41.7%               ]  [ SWP: ▏ 0.0%                     ]\n"
        "\n"
        "╒═════════════════════════════════════════════════════════════════════════════╕\n"
        "│ Processes:                                                    alice@ws-4090 │\n"
        "│ GPU     PID      USER  GPU-MEM %SM %GMBW  %CPU  %MEM  TIME  COMMAND         │\n"
        "╞═════════════════════════════════════════════════════════════════════════════╡\n"
        "│  No running processes found                                                 │\n"
        "╘═════════════════════════════════════════════════════════════════════════════╛\n";
  }
  return out;
}

struct Layout {
  std::string name, text;
  bool one_gpu;
  // The layout lacks the signal the cause shows in: "cannot tell" is a right answer, another
  // cause is not.
  bool may_not_tell = false;
};

TEST(FormatZoo, EveryLayoutGivesTheSameVerdict) {
  for (const std::string scenario :
       {"power_capped", "thermal_throttle", "idle", "healthy_default_cap", "hw_slowdown"}) {
    SCOPED_TRACE(scenario);
    const auto spec = sim::parse_sim_spec(scenario + ",duration=120s,interval=1s");
    ASSERT_TRUE(spec.ok());
    const auto model = gpu_model_by_key(spec->scenario.model);
    ASSERT_TRUE(model.has_value());
    const Recording rec = sim::simulate_recording(spec.value(), *model);
    const Diagnosis want = diagnose(rec);
    ASSERT_TRUE(want.verdict.has_value());
    std::vector<Layout> layouts = {{"nvidia-smi csv", write_smi_csv(rec, true), false},
                                   {"gpudoctor csv", write_csv(rec), false},
                                   {"wandb", write_wandb(rec), false}};
    // nvitop's table has no clocks nor clock-event reasons: the runs whose cause shows only there
    // (a thermal slowdown, a hardware slowdown) may not be told from it: "cannot tell", or another
    // cause with this one as the alternative the input cannot rule out, never another cause
    // alone.
    layouts.push_back({"nvitop", write_nvitop(rec), false,
                       scenario == "thermal_throttle" || scenario == "hw_slowdown"});
    if (rec.gpus.size() == 1) {
      layouts.push_back({"gpu-z", write_gpuz(rec), true});
      layouts.push_back({"hwinfo", write_hwinfo(rec), true});
    }
    for (const auto& l : layouts) {
      SCOPED_TRACE(l.name);
      LoadOptions opt;
      opt.gpu_name =
          std::string(model->nvml_name);  // GPU-Z and HWiNFO logs name no GPU: the user says it
      const auto back = load_text(l.text, l.name, opt);
      ASSERT_TRUE(back.ok()) << back.error().message;
      ASSERT_EQ(back->gpus.size(), rec.gpus.size());
      const Diagnosis got = diagnose(*back);
      if (l.may_not_tell && !got.verdict) continue;
      ASSERT_TRUE(got.verdict.has_value());
      if (l.may_not_tell && *got.verdict != *want.verdict) {
        // Then the finding must name the right cause as the alternative the input cannot rule
        // out.
        ASSERT_FALSE(got.findings.empty());
        const auto& alts = got.findings.front().alternatives;
        EXPECT_TRUE(std::any_of(alts.begin(), alts.end(),
                                [&](const auto& a) { return a.cause == *want.verdict; }))
            << cause_code(*got.verdict) << " without " << cause_code(*want.verdict)
            << " as its alternative";
        continue;
      }
      EXPECT_EQ(cause_code(*got.verdict), cause_code(*want.verdict));
    }
  }
}

}  // namespace
}  // namespace gpudoctor
