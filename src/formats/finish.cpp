#include "formats/finish.hpp"

#include <algorithm>
#include <cmath>

#include "core/reading.hpp"
#include "text/text.hpp"

namespace gpudoctor::log_reader {
namespace {

constexpr std::array<Field, 3> kLimitFields{Field::kPowerLimit, Field::kPowerLimitEnforced,
                                            Field::kPowerLimitDefault};

std::string fmt_watts(double w) {
  return fmt::format("{}", std::round(w * 100) / 100);
}

// "NVIDIA A100-SXM4-40GB" -> "a100-sxm4-40gb": lower case, without a leading vendor word (older
// drivers leave "NVIDIA" out of some names), spaces collapsed.
std::string normalised(std::string_view name) {
  name = text::trim(name);
  for (const std::string_view vendor : {"NVIDIA ", "Tesla "})
    if (text::istarts_with(name, vendor)) name = text::trim_left(name.substr(vendor.size()));
  std::string out;
  out.reserve(name.size());
  for (const char c : name) {
    if (text::is_space(c)) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c);
    }
  }
  return out;
}

bool has_digit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "no power limit ... for ..." when a GPU has none.
std::string no_limit_note(const std::string& name, const ModelMatch& m) {
  if (name.empty())
    return "no power limit in the log, nor a GPU name to look one up by: efficiency cannot be "
           "computed (give --power-limit, or --gpu-name MODEL)";
  std::string why;
  if (m.truncated && m.candidates.size() > 1)
    why = fmt::format(" (a name cut short that fits {})", fmt::join(m.candidates, ", "));
  return fmt::format(
      "no power limit in the log and none known for \"{}\"{}: efficiency cannot be computed "
      "(give --power-limit)",
      name, why);
}

}  // namespace

std::string shorten(std::string s, size_t most) {
  if (s.size() <= most) return s;
  size_t cut = most;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // a continuation
  s.resize(cut);
  s += "...";
  return s;
}

std::string join_names(const std::vector<std::string_view>& names, size_t most) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < most; ++i) {
    if (i > 0) s += ", ";
    s.append(names[i]);
  }
  if (names.size() > most) s += fmt::format(" and {} more", names.size() - most);
  return s;
}

void add_note(Recording& rec, std::string note) {
  if (std::find(rec.notes.begin(), rec.notes.end(), note) == rec.notes.end())
    rec.notes.push_back(std::move(note));
}

void note_skipped(Recording& rec, const Problem& p, std::string_view what, std::string_view unit) {
  if (p.count > 0)
    add_note(rec, fmt::format("skipped {} {} {} (first: {})", p.count, unit, what, p.first));
}

void note_unreadable(Recording& rec, const Problem& p) {
  if (p.count > 0)
    add_note(rec,
             fmt::format("{} unreadable value(s) taken as missing (first: {})", p.count, p.first));
}

Error no_readable_rows(std::string_view origin, std::string_view header,
                       std::string_view header_line, size_t data_lines, std::string_view text,
                       std::initializer_list<const Problem*> problems) {
  if (data_lines == 0)
    return usage_error(fmt::format("{}:{}: {} but no data rows{}", origin, header_line, header,
                                   text::cut_short_suffix(text)));
  for (const Problem* p : problems)
    if (p->count > 0)
      return usage_error(fmt::format("{}: no readable rows ({})", origin, p->first));
  return usage_error(fmt::format("{}: no readable rows", origin));
}

ModelMatch match_model(std::string_view name) {
  ModelMatch m;
  name = text::trim(name);
  const bool left = name.starts_with("..") && !name.ends_with("...");
  if (name.ends_with("...") || left) {
    m.truncated = true;
    const std::string part = normalised(left ? name.substr(2) : name.substr(0, name.size() - 3));
    // "NVIDIA GeForce ..." says nothing about the board: a model number must be left.
    if (!has_digit(part)) return m;
    for (const auto& model : gpu_models()) {
      const std::string n = normalised(model.nvml_name);
      if (left ? n.ends_with(part) : n.starts_with(part)) m.candidates.push_back(model.nvml_name);
    }
    if (m.candidates.empty()) return m;
    const auto first = gpu_model_by_name(m.candidates.front());
    if (!first) return m;
    for (const auto c : m.candidates) {
      const auto other = gpu_model_by_name(c);
      if (!other || other->tdp_w != first->tdp_w || other->architecture != first->architecture)
        return m;
    }
    m.model = first;
    return m;
  }
  if (!name.empty()) m.model = gpu_model_by_name(name);
  return m;
}

bool has_logged_power_limit(const GpuSeries& g) {
  return std::any_of(kLimitFields.begin(), kLimitFields.end(), [&](Field f) {
    const auto c = g.column(f);
    return c && std::any_of(c->begin(), c->end(), [](double v) { return !is_missing(v); });
  });
}

void mark_logged_power_limits(Recording& rec) {
  for (auto& g : rec.gpus)
    if (g.power_limit_source.empty() && has_logged_power_limit(g)) g.power_limit_source = "log";
}

namespace {

// The limit a GPU's power and power-percent columns imply (W&B's powerPercent, GPU-Z's and
// HWiNFO's % of TDP, Afterburner's power percent: power / limit x 100): the median of power x 100 /
// percent over the samples with both, those at 10 % or more where there are some (a small percent
// is rounded coarsely). nullopt without such samples.
std::optional<double> limit_from_percent(const GpuSeries& g) {
  const auto power = g.column(Field::kPower);
  const auto pct = g.column(Field::kPowerPercent);
  if (power == nullptr || pct == nullptr) return std::nullopt;
  for (const double floor : {10.0, 1.0}) {
    std::vector<double> limits;
    for (size_t i = 0; i < power->size() && i < pct->size(); ++i) {
      const double w = (*power)[i], p = (*pct)[i];
      if (is_missing(w) || is_missing(p) || p < floor || w <= 0) continue;
      limits.push_back(w * 100 / p);
    }
    if (limits.empty()) continue;
    auto mid = limits.begin() + static_cast<std::ptrdiff_t>(limits.size() / 2);
    std::nth_element(limits.begin(), mid, limits.end());
    if (*mid >= 5 && *mid <= 5000) return *mid;
  }
  return std::nullopt;
}

}  // namespace

void finish_gpus(Recording& rec, const std::vector<GpuToFinish>& gpus, const FinishOptions& opt) {
  // Fields the log had but never with a value: unsupported where the log said so.
  std::array<bool, kFieldCount> field_seen{};
  for (const auto& [s, counts] : gpus) {
    for (size_t fi = 0; fi < kFieldCount; ++fi) {
      const auto f = static_cast<Field>(fi);
      bool value = s->has(f) && std::any_of(s->column(f)->begin(), s->column(f)->end(),
                                            [](double v) { return !is_missing(v); });
      if (counts) {
        value = value || counts->value[fi] > 0;
        const bool unsupported_only =
            counts->value[fi] == 0 && counts->other[fi] == 0 &&
            (counts->not_supported[fi] > 0 || counts->no_permission[fi] > 0);
        if (unsupported_only) {
          s->unsupported[f] =
              counts->not_supported[fi] > 0 ? nvml_code::kNotSupported : nvml_code::kNoPermission;
          field_seen[fi] = true;
        }
      }
      if (value) {
        field_seen[fi] = true;
        if (info(f).id.starts_with("gpm_")) s->info.gpm_supported = true;
      }
    }
    if (const ModelMatch m = match_model(s->info.name); m.model)
      s->info.architecture = m.model->architecture;
  }
  std::vector<std::string_view> empty;
  for (const auto& [f, label] : opt.columns)
    if (!field_seen[index_of(f)] && std::find(empty.begin(), empty.end(), label) == empty.end())
      empty.push_back(label);
  if (!empty.empty())
    add_note(rec,
             fmt::format("no values in the log{} for: {}",
                         opt.placeholder.empty() ? std::string()
                                                 : fmt::format(" ({} throughout)", opt.placeholder),
                         fmt::join(empty, ", ")));

  // Power limit: the denominator of the efficiency score. The log's own limit first, else
  // --power-limit, else the model table. A percent-of-limit column is said here and worked out in
  // the diagnosis (analysis/power_limit.cpp), where it comes before the model table's figure
  // (which a laptop's or a board's own limit may not match).
  bool option_used = false;
  std::vector<unsigned> from_percent;
  for (const auto& [s, counts] : gpus) {
    if (has_logged_power_limit(*s)) {
      s->power_limit_source = "log";
      continue;
    }
    if (!opt.power_limit_w && limit_from_percent(*s)) from_percent.push_back(s->info.index);
    std::optional<double> limit;
    const ModelMatch m = match_model(s->info.name);
    if (opt.power_limit_w) {
      limit = *opt.power_limit_w;
      option_used = true;
      s->power_limit_source = "flag";
      add_note(rec, fmt::format("power limit {} W from --power-limit", fmt_watts(*limit)));
    } else if (m.model) {
      limit = m.model->tdp_w;
      s->power_limit_source = "model-table";
      std::string how;
      if (m.truncated && m.candidates.size() > 1)
        how = fmt::format(" (a name cut short: {}, all {} W)", fmt::join(m.candidates, " or "),
                          fmt_watts(*limit));
      else if (m.truncated)
        how = fmt::format(" (a name cut short: taken as {})", m.model->nvml_name);
      else if (!text::iequals(text::trim(s->info.name), m.model->nvml_name))
        how = fmt::format(" (taken as {})", m.model->nvml_name);
      add_note(rec, fmt::format("power limit {} W from the model table for {}{}", fmt_watts(*limit),
                                s->info.name, how));
    } else {
      s->power_limit_source.clear();
      // Advice only where it would work: a log with no power has no use for a limit.
      if (s->has(Field::kPower)) add_note(rec, no_limit_note(s->info.name, m));
    }
    if (limit) {
      auto& col = s->column_for_write(Field::kPowerLimitDefault);
      std::fill(col.begin(), col.end(), *limit);
    }
  }
  if (!from_percent.empty())
    add_note(rec,
             fmt::format("power limit of GPU(s) {} from the log's power and its percent of the "
                         "limit (power x 100 / percent)",
                         fmt::join(from_percent, ", ")));
  if (opt.power_limit_w && !option_used && !gpus.empty())
    add_note(rec, "--power-limit ignored: the log has its own power limit");
}

void name_unnamed_gpus(Recording& rec, const std::string& name) {
  bool used = false;
  const ModelMatch m = match_model(name);
  for (auto& g : rec.gpus) {
    if (!g.info.name.empty()) continue;
    used = true;
    g.info.name = name;
    if (!m.model) continue;
    g.info.architecture = m.model->architecture;
    if (!g.power_limit_source.empty() || has_logged_power_limit(g)) continue;
    auto& col = g.column_for_write(Field::kPowerLimitDefault);
    std::fill(col.begin(), col.end(), m.model->tdp_w);
    g.power_limit_source = "model-table";
    add_note(rec, fmt::format("power limit {} W from the model table for {} (--gpu-name)",
                              fmt_watts(m.model->tdp_w), name));
  }
  if (!used) {
    add_note(rec, "--gpu-name ignored: the log names its GPUs");
    return;
  }
  add_note(rec, fmt::format("GPU name \"{}\" from --gpu-name{}", name,
                            m.model ? std::string() : ": " + gpu_name_not_found(name)));
  const bool all_limited = std::all_of(rec.gpus.begin(), rec.gpus.end(), [](const GpuSeries& g) {
    return !g.power_limit_source.empty();
  });
  if (all_limited) std::erase(rec.notes, no_limit_note("", ModelMatch{}));
}

void finish_series_gpus(Recording& rec, std::optional<double> power_limit_w) {
  std::vector<GpuToFinish> gpus;
  for (auto& g : rec.gpus) gpus.push_back({&g, nullptr});
  FinishOptions fo;
  fo.power_limit_w = power_limit_w;
  finish_gpus(rec, gpus, fo);
}

}  // namespace gpudoctor::log_reader
