// The verdict rule, one for a GPU and for a run: where the judged GPU time went. Time that is
// mostly working (healthy windows holding healthy_share of it) is healthy, its smaller findings
// listed under it; otherwise the problem that lost the most GPU time among those holding at least
// finding_min_share of the time in windows (on a tie, the one covering most). A finding below that
// share is listed, never the verdict. And the run's one line (its headline). Internal to
// src/analysis (diagnose() calls it).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "analysis/causes.hpp"
#include "analysis/config.hpp"
#include "analysis/diagnosis.hpp"

namespace gpudoctor::diag {

// The time of a GPU (or of a run) as the judged windows split it among causes.
struct Tally {
  struct Time {
    double lost_h = 0, hours = 0;
  };
  std::map<Cause, Time> by_cause;
  double judged_h = 0;   // time in judged windows: what a cause's share is of
  double windows_h = 0;  // time in windows, judged or not (start-up and shutdown are not)

  void add(Cause c, double lost_h, double hours) {
    auto& t = by_cause[c];
    t.lost_h += lost_h;
    t.hours += hours;
  }
  double hours_of(Cause c) const {
    const auto it = by_cause.find(c);
    return it == by_cause.end() ? 0 : it->second.hours;
  }
};

// The cause the time went to; nullopt when nothing was judged (or no cause holds enough of it).
std::optional<Cause> verdict_of(const Tally& t, const DiagnosisConfig& cfg);

// The run's one line: the verdict's meaning, or, when some GPUs of the run idled while others
// worked, how many and what share of the GPU time ("2 of 8 GPUs idle: 25 % of the GPU time").
std::string headline(const Diagnosis& d, double idle_h, double observed_h);

}  // namespace gpudoctor::diag
