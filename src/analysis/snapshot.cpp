#include "analysis/snapshot.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"

namespace gpudoctor {
namespace {

std::optional<double> opt(const Reading& r) {
  return r.has_value() ? std::optional<double>(r.value()) : std::nullopt;
}

constexpr uint64_t kThermalBits = 0x20 | 0x40;
constexpr uint64_t kClockLimitBits = 0x2 | 0x8 | 0x80;
constexpr uint64_t kPowerCapBit = 0x4;

// Below this interval the energy counter's resolution and update rate make its mean noisy; the
// driver's own 1-second average is better then.
constexpr double kMinEnergyWindowS = 0.2;

}  // namespace

std::string verdict_label(SnapshotVerdict v) {
  switch (v) {
    case SnapshotVerdict::kWorking:
      return "WORKING";
    case SnapshotVerdict::kBusyButIdle:
      return "BUSY BUT IDLE";
    case SnapshotVerdict::kLowEfficiency:
      return "LOW EFFICIENCY";
    case SnapshotVerdict::kIdle:
      return "IDLE";
    case SnapshotVerdict::kFree:
      return "FREE";
    case SnapshotVerdict::kPowerCapped:
      return "POWER CAPPED";
    case SnapshotVerdict::kThermal:
      return "THERMAL THROTTLE";
    case SnapshotVerdict::kClocksLimited:
      return "CLOCKS LIMITED";
    case SnapshotVerdict::kLost:
      return "LOST";
    case SnapshotVerdict::kNotResponding:
      return "NOT RESPONDING";
    case SnapshotVerdict::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::string verdict_code(SnapshotVerdict v) {
  std::string s = verdict_label(v);
  for (char& c : s)
    c = c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

GpuAssessment assess(const DeviceSample* prev, const DeviceSample& cur, double dt_s,
                     const Thresholds& t) {
  GpuAssessment a;
  if (cur.lost) {
    a.verdict = SnapshotVerdict::kLost;
    a.detail = "the GPU fell off the bus (GPU_IS_LOST); check `dmesg` for Xid errors";
    return a;
  }
  if (cur[Field::kUtilGpu].state() == Reading::State::kError &&
      cur[Field::kUtilGpu].code() == nvml_code::kTimeout) {
    a.verdict = SnapshotVerdict::kNotResponding;
    a.detail = "NVML calls on this GPU did not answer within the sampling budget";
    return a;
  }
  a.util_pct = opt(cur[Field::kUtilGpu]);
  a.sm_pct = opt(cur[Field::kGpmSmUtil]);
  a.mem_used_mib = opt(cur[Field::kMemUsed]);
  a.mem_total_mib = opt(cur[Field::kMemTotal]);
  a.enforced_limit_w = opt(cur[Field::kPowerLimitEnforced]);

  // Mean power over the interval from the energy counter when possible (exact), else the reading.
  if (prev && prev->time_s > 0 && cur.time_s > 0) dt_s = cur.time_s - prev->time_s;
  if (prev && dt_s >= kMinEnergyWindowS && prev->at(Field::kEnergy).has_value() &&
      cur[Field::kEnergy].has_value()) {
    const double de = cur[Field::kEnergy].value() - prev->at(Field::kEnergy).value();
    if (de >= 0) {
      a.power_w = de / 1000.0 / dt_s;
      a.power_from_energy = true;
    }
  }
  if (!a.power_w) a.power_w = opt(cur[Field::kPower]);

  if (auto d = opt(cur[Field::kPowerLimitDefault]); d && *d > 0) {
    a.limit_w = d;
    a.limit_is_default = true;
  } else if (a.enforced_limit_w && *a.enforced_limit_w > 0) {
    a.limit_w = a.enforced_limit_w;
  }
  if (a.power_w && a.limit_w) a.power_ratio = *a.power_w / *a.limit_w;
  if (a.power_ratio) {
    a.efficiency_has_sm = a.sm_pct.has_value();
    a.efficiency = *a.power_ratio * (a.sm_pct ? *a.sm_pct / 100.0 : 1.0);
  }

  // PCIe link: a narrower link than the slot allows is a fault; a lower generation is normal at
  // idle (the link downshifts to save power) and a fault under load.
  const auto gen = opt(cur[Field::kPcieGen]), gen_max = opt(cur[Field::kPcieGenMax]);
  const auto width = opt(cur[Field::kPcieWidth]), width_max = opt(cur[Field::kPcieWidthMax]);
  const bool busy = a.util_pct && *a.util_pct >= t.idle_util_pct;
  if (gen && width) {
    a.pcie_text = fmt::format("Gen{:.0f} x{:.0f}", *gen, *width);
    const bool narrow = width_max && *width < *width_max;
    const bool slow = gen_max && *gen < *gen_max && busy;
    a.pcie_degraded = narrow || slow;
    if (a.pcie_degraded && gen_max && width_max)
      a.pcie_text += fmt::format(" (max Gen{:.0f} x{:.0f})", *gen_max, *width_max);
  }

  const std::optional<uint64_t> reasons_opt = reasons_mask(cur[Field::kClockEventReasons]);
  const uint64_t reasons = reasons_opt.value_or(0);  // only tested bit by bit below
  const auto temp = opt(cur[Field::kTemp]);
  const auto slowdown = opt(cur[Field::kTempSlowdown]);
  const auto clock = opt(cur[Field::kClockSm]), clock_max = opt(cur[Field::kClockSmMax]);

  auto pct = [](double ratio) { return fmt::format("{:.0f} %", ratio * 100); };
  auto power_text = [&] {
    if (!a.power_w) return std::string("power n/a");
    if (!a.power_ratio) return fmt::format("power {:.0f} W", *a.power_w);
    return fmt::format("power {} of {:.0f} W", pct(*a.power_ratio), *a.limit_w);
  };
  auto sm_text = [&] {
    return a.sm_pct ? fmt::format("SM activity {:.0f} %", *a.sm_pct)
                    : std::string("SM activity n/a");
  };

  if (!a.util_pct) {
    a.verdict = SnapshotVerdict::kUnknown;
    a.detail = "utilization not available";
    return a;
  }
  const double util = *a.util_pct;
  if (util < t.idle_util_pct) {
    const size_t nproc = cur.processes.size();
    const bool held = nproc > 0 || (a.mem_used_mib && a.mem_total_mib && *a.mem_total_mib > 0 &&
                                    *a.mem_used_mib / *a.mem_total_mib > t.held_memory_ratio);
    a.verdict = held ? SnapshotVerdict::kIdle : SnapshotVerdict::kFree;
    if (held) {
      a.detail = fmt::format("util {:.0f} % while ", util);
      a.detail += a.mem_used_mib
                      ? fmt::format("{:.1f} GiB memory is held", *a.mem_used_mib / 1024.0)
                      : std::string("the GPU is held");
      if (nproc > 0) a.detail += fmt::format(" by {} process{}", nproc, nproc == 1 ? "" : "es");
    } else {
      a.detail = fmt::format("util {:.0f} %, no memory held, {}", util, power_text());
    }
    return a;
  }
  if ((reasons & kThermalBits) || (temp && slowdown && *temp >= *slowdown) ||
      (temp && *temp >= t.hot_temp_c)) {
    a.verdict = SnapshotVerdict::kThermal;
    a.detail = temp ? fmt::format("temperature {:.0f} C", *temp) : std::string("temperature n/a");
    if (reasons & kThermalBits)
      a.detail +=
          fmt::format(" with {}", fmt::join(decode_clock_reasons(reasons & kThermalBits), ", "));
    if (slowdown) a.detail += fmt::format(" (slowdown at {:.0f} C)", *slowdown);
    if (clock && clock_max)
      a.detail += fmt::format(", SM clock {:.0f} of {:.0f} MHz", *clock, *clock_max);
    return a;
  }
  if (a.limit_is_default && a.enforced_limit_w && *a.enforced_limit_w < 0.95 * *a.limit_w &&
      a.power_w && *a.power_w >= 0.9 * *a.enforced_limit_w &&
      (!reasons_opt || (*reasons_opt & kPowerCapBit))) {
    a.verdict = SnapshotVerdict::kPowerCapped;
    a.detail =
        fmt::format("power limit lowered to {:.0f} W of the {:.0f} W default, drawing {:.0f} W",
                    *a.enforced_limit_w, *a.limit_w, *a.power_w);
    return a;
  }
  if ((reasons & kClockLimitBits) && clock && clock_max && *clock < 0.8 * *clock_max) {
    a.verdict = SnapshotVerdict::kClocksLimited;
    a.detail = fmt::format("SM clock {:.0f} of {:.0f} MHz ({})", *clock, *clock_max,
                           fmt::join(decode_clock_reasons(reasons & kClockLimitBits), ", "));
    return a;
  }
  if (!a.power_ratio) {
    a.verdict = SnapshotVerdict::kUnknown;
    a.detail = fmt::format("util {:.0f} %, {}: cannot tell how hard it works", util, power_text());
    return a;
  }
  if (util >= t.busy_util_pct && *a.power_ratio < t.low_power_ratio) {
    a.verdict = SnapshotVerdict::kBusyButIdle;
    a.detail = fmt::format("util {:.0f} % but {}", util, power_text());
    a.detail += a.sm_pct ? " and " + sm_text() : " (no SM activity on this GPU)";
    return a;
  }
  if (a.efficiency && *a.efficiency < t.low_efficiency) {
    a.verdict = SnapshotVerdict::kLowEfficiency;
    a.detail = fmt::format("util {:.0f} %, {}, {}, efficiency {:.2f}", util, power_text(),
                           sm_text(), *a.efficiency);
    return a;
  }
  a.verdict = SnapshotVerdict::kWorking;
  a.detail = fmt::format("util {:.0f} %, {}, {}, efficiency {:.2f}", util, power_text(), sm_text(),
                         *a.efficiency);
  return a;
}

std::string verdict_line(unsigned index, const GpuAssessment& a) {
  std::string line = fmt::format("GPU {}: {}: {}", index, verdict_label(a.verdict), a.detail);
  if (a.pcie_degraded) line += fmt::format("; PCIe link degraded: {}", a.pcie_text);
  return line;
}

}  // namespace gpudoctor
