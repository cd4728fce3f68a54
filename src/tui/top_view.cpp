#include "tui/top_view.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "core/duration.hpp"

namespace gpudoctor::tui {
namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers

constexpr Style kPlain{};
constexpr Style kBold{Color::kDefault, true, false, false};
constexpr Style kGray{Color::kGray, false, true, false};
constexpr Style kReverse{Color::kDefault, false, false, true};

Style colored(Color c, bool bold = false) {
  return Style{c, bold, false, false};
}

void put32(Screen& s, int r, int c, const std::u32string& text, Style st) {
  for (size_t k = 0; k < text.size(); ++k) s.set(r, c + static_cast<int>(k), text[k], st);
}

std::string fmt_opt(const std::optional<double>& v, const char* spec, const char* missing = "-") {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string(missing);
}

std::string gib(double mib) {
  const double g = mib / 1024.0;
  return g < 10 ? fmt::format("{:.1f}", g) : fmt::format("{:.0f}", g);
}

std::string short_name(const std::string& name) {
  if (name.rfind("NVIDIA ", 0) == 0) return name.substr(7);
  return name.empty() ? "?" : name;
}

std::string clock_time(int64_t unix_ms) {
  if (unix_ms <= 0) return "";
  const auto t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string lower_first(std::string_view s) {
  std::string out(s);
  if (!out.empty() && out[0] >= 'A' && out[0] <= 'Z')
    out[0] = static_cast<char>(out[0] - 'A' + 'a');
  return out;
}

std::string cause_words(Cause c) {
  std::string s(cause_code(c));
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

Color ratio_color(double r) {
  if (std::isnan(r)) return Color::kGray;
  if (r >= 0.6) return Color::kGreen;
  if (r >= 0.3) return Color::kYellow;
  return Color::kRed;
}

Style verdict_style(SnapshotVerdict v) {
  switch (v) {
    case SnapshotVerdict::kWorking:
      return colored(Color::kGreen, true);
    case SnapshotVerdict::kBusyButIdle:
    case SnapshotVerdict::kLowEfficiency:
    case SnapshotVerdict::kIdle:
      return colored(Color::kYellow, true);
    case SnapshotVerdict::kFree:
    case SnapshotVerdict::kUnknown:
      return kGray;
    case SnapshotVerdict::kPowerCapped:
    case SnapshotVerdict::kThermal:
    case SnapshotVerdict::kClocksLimited:
      return colored(Color::kMagenta, true);
    case SnapshotVerdict::kLost:
    case SnapshotVerdict::kNotResponding:
      return colored(Color::kRed, true);
  }
  return kPlain;
}

Style cause_style(Cause c) {
  switch (c) {
    case Cause::kHealthy:
      return colored(Color::kGreen);
    case Cause::kThermalThrottle:
    case Cause::kPowerCapped:
    case Cause::kClocksLimited:
      return colored(Color::kMagenta);
    default:
      return colored(Color::kYellow);
  }
}

Style severity_style(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return colored(Color::kRed, true);
    case Severity::kWarning:
      return colored(Color::kYellow, true);
    case Severity::kInfo:
      return kGray;
  }
  return kPlain;
}

std::string_view severity_tag(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return "[CRIT]";
    case Severity::kWarning:
      return "[WARN]";
    case Severity::kInfo:
      return "[info]";
  }
  return "[info]";
}

double nan_or(const std::optional<double>& v, double scale = 1) {
  return v ? *v * scale : std::nan("");
}

// A panel's title line: "── Title  subtitle ─────".
void panel_title(Screen& s, int r, const std::string& title, const std::string& subtitle) {
  const char32_t h = s.unicode() ? U'─' : U'-';
  s.fill(r, 0, s.cols(), h, kGray);
  int c = 3;
  if (s.cols() < 8) c = 0;
  c += s.put(r, c, " " + title + " ", kBold);
  if (!subtitle.empty() && c + 4 < s.cols()) {
    const int w = std::min(static_cast<int>(decode_utf8(subtitle).size()) + 2, s.cols() - c - 2);
    s.field(r, c, w, " " + subtitle + " ", kPlain);
  }
}

// ---------------------------------------------------------------------------------------------
// The GPU table

enum class ColId {
  kGpu,
  kName,
  kUtil,
  kSm,
  kPower,
  kEff,
  kMem,
  kTemp,
  kClock,
  kEvents,
  kNow,
  kWhy
};

struct ColSpec {
  ColId id;
  const char* title;
  int min_w;      // value width, or the narrowest a text column may be
  int natural_w;  // text columns grow to this
  bool has_bar;
  int priority;    // 0 first
  int want_w = 0;  // text columns: taken at this width when it fits, else at min_w
};

// Display order; priority decides which columns stay on a narrow terminal.
constexpr ColSpec kColumns[] = {
    {ColId::kGpu, "GPU", 3, 3, false, 0},      {ColId::kName, "NAME", 8, 16, false, 11},
    {ColId::kUtil, "UTIL", 4, 4, true, 3},     {ColId::kSm, "SM", 4, 4, true, 5},
    {ColId::kPower, "POWER", 9, 9, true, 4},   {ColId::kEff, "EFF", 4, 4, true, 6},
    {ColId::kMem, "MEM", 8, 8, true, 8},       {ColId::kTemp, "TEMP", 4, 4, true, 9},
    {ColId::kClock, "SMCLK", 5, 5, true, 10},  {ColId::kEvents, "EVENTS", 6, 14, false, 7},
    {ColId::kNow, "NOW", 6, 16, false, 1, 14}, {ColId::kWhy, "DIAGNOSIS", 6, 18, false, 2, 15},
};
constexpr int kColumnCount = static_cast<int>(std::size(kColumns));
constexpr int kMinBar = 4, kMaxBar = 10;

struct Column {
  const ColSpec* spec;
  int x = 0;
  int w = 0;    // width of the value (or text)
  int bar = 0;  // bar width before the value (0: none), plus one space
  int total() const { return w + (bar ? bar + 1 : 0); }
};

std::vector<Column> layout_table(int cols) {
  bool chosen[kColumnCount] = {};
  int width[kColumnCount] = {}, bar[kColumnCount] = {};
  std::vector<int> order(kColumnCount);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [](int a, int b) { return kColumns[a].priority < kColumns[b].priority; });
  int used = 0, count = 0;
  auto left = [&] { return cols - used; };
  for (int i : order) {
    if (kColumns[i].id == ColId::kName) continue;  // only with room to spare (step 4)
    int w = kColumns[i].min_w;
    if (kColumns[i].want_w && kColumns[i].want_w + (count ? 1 : 0) <= left())
      w = kColumns[i].want_w;
    const int need = w + (count ? 1 : 0);
    if (need > left()) continue;
    chosen[i] = true, width[i] = w, used += need, ++count;
  }
  auto grow_text = [&](ColId id) {
    for (int i = 0; i < kColumnCount; ++i)
      if (kColumns[i].id == id && chosen[i]) {
        const int add = std::min(left(), kColumns[i].natural_w - width[i]);
        if (add > 0) width[i] += add, used += add;
      }
  };
  grow_text(ColId::kNow);
  grow_text(ColId::kWhy);
  for (int i : order)
    if (chosen[i] && kColumns[i].has_bar && left() >= kMinBar + 1)
      bar[i] = kMinBar, used += kMinBar + 1;
  for (int i = 0; i < kColumnCount; ++i)
    if (kColumns[i].id == ColId::kName && left() >= kColumns[i].min_w + 1)
      chosen[i] = true, width[i] = kColumns[i].min_w, used += kColumns[i].min_w + 1;
  grow_text(ColId::kEvents);
  grow_text(ColId::kName);
  for (bool grew = true; grew;) {
    grew = false;
    for (int i : order)
      if (bar[i] && bar[i] < kMaxBar && left() > 0) ++bar[i], ++used, grew = true;
  }
  std::vector<Column> out;
  int x = 0;
  for (int i = 0; i < kColumnCount; ++i) {
    if (!chosen[i]) continue;
    Column c{&kColumns[i], x, width[i], bar[i]};
    out.push_back(c);
    x += c.total() + 1;
  }
  return out;
}

struct CellValue {
  std::string text;
  double ratio = std::nan("");  // bar fill
  Style style;                  // of the value
  Style bar_style;
  Align align = Align::kRight;
};

CellValue cell_value(ColId id, const GpuView& g, bool selected, bool diagnosed) {
  const GpuAssessment& a = g.now;
  CellValue v;
  v.style = kPlain;
  v.bar_style = colored(Color::kCyan);
  const bool dead = g.lost || a.verdict == SnapshotVerdict::kNotResponding;
  switch (id) {
    case ColId::kGpu:
      v.text = fmt::format("{}{:>2}", selected ? '>' : ' ', g.info.index);
      v.style = selected ? Style{Color::kDefault, true, false, true} : kBold;
      break;
    case ColId::kName:
      v.text = short_name(g.info.name);
      v.align = Align::kLeft;
      break;
    case ColId::kUtil:
      v.text = fmt_opt(a.util_pct, "{:.0f}%");
      v.ratio = nan_or(a.util_pct, 0.01);
      break;
    case ColId::kSm:
      v.text = fmt_opt(a.sm_pct, "{:.0f}%");
      v.ratio = nan_or(a.sm_pct, 0.01);
      v.bar_style = colored(ratio_color(v.ratio));
      break;
    case ColId::kPower:
      if (a.power_w && a.limit_w) {
        v.text = fmt::format("{:.0f}/{:.0f}W", *a.power_w, *a.limit_w);
        if (v.text.size() > 9) v.text.pop_back();
      } else {
        v.text = fmt_opt(a.power_w, "{:.0f}W");
      }
      v.ratio = nan_or(a.power_ratio);
      v.bar_style = colored(ratio_color(v.ratio));
      break;
    case ColId::kEff:
      v.text = fmt_opt(a.efficiency, "{:.2f}");
      v.ratio = nan_or(a.efficiency);
      v.bar_style = colored(ratio_color(v.ratio));
      if (a.efficiency) v.style = colored(ratio_color(*a.efficiency));
      break;
    case ColId::kMem:
      if (a.mem_used_mib && a.mem_total_mib && *a.mem_total_mib > 0) {
        v.text = fmt::format("{}/{}G", gib(*a.mem_used_mib), gib(*a.mem_total_mib));
        v.ratio = *a.mem_used_mib / *a.mem_total_mib;
      } else {
        v.text = a.mem_used_mib ? gib(*a.mem_used_mib) + "G" : "-";
      }
      v.bar_style = colored(Color::kBlue);
      break;
    case ColId::kTemp: {
      v.text = fmt_opt(g.temp_c, "{:.0f}C");
      const double hot = g.temp_slowdown_c.value_or(90);
      v.ratio = g.temp_c ? *g.temp_c / std::max(hot, 1.0) : std::nan("");
      const Color c = !g.temp_c              ? Color::kGray
                      : *g.temp_c >= hot - 3 ? Color::kRed
                      : *g.temp_c >= 75      ? Color::kYellow
                                             : Color::kGreen;
      v.bar_style = colored(c);
      if (g.temp_c && *g.temp_c >= hot - 3) v.style = colored(Color::kRed, true);
      break;
    }
    case ColId::kClock:
      v.text = fmt_opt(g.clock_sm_mhz, "{:.0f}");
      if (g.clock_sm_mhz && g.clock_sm_max_mhz && *g.clock_sm_max_mhz > 0)
        v.ratio = *g.clock_sm_mhz / *g.clock_sm_max_mhz;
      break;
    case ColId::kEvents: {
      v.align = Align::kLeft;
      if (!g.reasons) {
        v.text = "-";
        break;
      }
      const auto words = decode_clock_reasons(*g.reasons);
      v.text = words.empty() ? "none" : fmt::format("{}", fmt::join(words, ","));
      bool limiting = false;
      for (const auto& r : clock_reasons())
        if ((*g.reasons & r.bit) && r.limits_work) limiting = true;
      v.style = limiting ? colored(Color::kMagenta) : kGray;
      break;
    }
    case ColId::kNow:
      v.text = verdict_label(a.verdict);
      v.style = verdict_style(a.verdict);
      v.align = Align::kLeft;
      break;
    case ColId::kWhy:
      v.align = Align::kLeft;
      if (g.cause) {
        v.text = cause_words(*g.cause);
        v.style = cause_style(*g.cause);
      } else {
        v.text = diagnosed ? "-" : "...";
        v.style = kGray;
      }
      break;
  }
  if (dead && id != ColId::kGpu && id != ColId::kName && id != ColId::kNow) {
    v.text = "-";
    v.ratio = std::nan("");
    v.style = kGray;
  }
  return v;
}

void draw_table_header(Screen& s, int r, const std::vector<Column>& cols) {
  for (const auto& c : cols) {
    const int w = c.total();
    s.field(r, c.x, w, c.spec->title, kBold,
            c.bar || c.spec->id == ColId::kName || c.spec->id == ColId::kNow ||
                    c.spec->id == ColId::kWhy || c.spec->id == ColId::kEvents
                ? Align::kLeft
                : Align::kRight);
  }
}

void draw_gpu_row(Screen& s, int r, const std::vector<Column>& cols, const GpuView& g,
                  bool selected, bool diagnosed) {
  for (const auto& c : cols) {
    const CellValue v = cell_value(c.spec->id, g, selected, diagnosed);
    int x = c.x;
    if (c.bar) {
      const std::u32string b = bar(v.ratio, c.bar, s.unicode());
      const int filled = std::isnan(v.ratio)
                             ? 0
                             : static_cast<int>(std::count_if(b.begin(), b.end(), [&](char32_t ch) {
                                 return ch != U'·' && ch != U'.';
                               }));
      for (int k = 0; k < c.bar; ++k)
        s.set(r, x + k, b[static_cast<size_t>(k)], k < filled ? v.bar_style : kGray);
      x += c.bar + 1;
    }
    s.field(r, x, c.w, v.text, v.style, v.align);
  }
}

// ---------------------------------------------------------------------------------------------
// Panels

struct Panel {
  int min_rows = 0, want_rows = 0;
  int rows = 0;  // granted
};

// One screen row of the findings panel: the start of a finding (with its severity tag) or the
// continuation of one wrapped over several rows, or a note.
struct FindingRow {
  size_t finding = 0;  // which finding (or note) it belongs to
  std::string tag;     // "[WARN]" on a finding's first row, else ""
  std::string text;
  Style style;
  bool note = false;  // not a finding: "collecting samples", "no problem found"
};

// Cuts text into pieces of at most `width` columns, at spaces where possible; at most max_rows
// pieces (the last one then ends with "...").
std::vector<std::string> wrap(const std::string& text, int width, int max_rows) {
  std::vector<std::string> out;
  if (width <= 0) return out;
  std::u32string rest = decode_utf8(text);
  auto encode = [](const std::u32string& u) {
    std::string o;
    for (char32_t c : u) append_utf8(o, c);
    return o;
  };
  const auto w = static_cast<size_t>(width);
  while (!rest.empty() && static_cast<int>(out.size()) < max_rows) {
    if (rest.size() <= w) {
      out.push_back(encode(rest));
      rest.clear();
      break;
    }
    size_t cut = rest.rfind(U' ', w);
    if (cut == std::u32string::npos || cut < w / 2) cut = w;
    out.push_back(encode(rest.substr(0, cut)));
    rest.erase(0, cut);
    while (!rest.empty() && rest.front() == U' ') rest.erase(0, 1);
  }
  if (!rest.empty() && !out.empty()) out.back() += "...";  // Screen::field cuts with an ellipsis
  return out;
}

constexpr int kFindingIndent = 8;  // " [WARN] "
constexpr int kFindingMaxRows = 3;

// wrapped: each finding over up to kFindingMaxRows rows, else one (cut) row each.
std::vector<FindingRow> finding_rows(const TopState& st, const std::vector<unsigned>* only_gpu,
                                     int cols, bool wrapped = true) {
  std::vector<FindingRow> out;
  const int width = std::max(1, cols - kFindingIndent);
  auto note = [&](const std::string& text, Style s) { out.push_back({0, "", text, s, true}); };
  if (!st.diagnosed) {
    note(fmt::format("collecting samples for the live diagnosis ({} so far)", st.frames), kGray);
    return out;
  }
  size_t n = 0;
  for (const auto& f : st.findings) {
    if (only_gpu && std::none_of(f.gpus.begin(), f.gpus.end(), [&](unsigned g) {
          return std::find(only_gpu->begin(), only_gpu->end(), g) != only_gpu->end();
        }))
      continue;
    const std::string text = fmt::format("{} for {}: {}", cause_info(f.cause).title,
                                         human_duration(f.duration_s), f.summary);
    const auto pieces = wrap(text, wrapped ? width : 1 << 20, wrapped ? kFindingMaxRows : 1);
    for (size_t k = 0; k < pieces.size(); ++k)
      out.push_back({n, k == 0 ? std::string(severity_tag(f.severity)) : "", pieces[k],
                     severity_style(f.severity)});
    ++n;
  }
  if (out.empty()) {
    if (!st.verdict)
      note(
          "nothing to judge yet: " + (st.limitations.empty() ? std::string("too few samples")
                                                             : lower_first(st.limitations.front())),
          kGray);
    else
      note(only_gpu ? "no finding about this GPU" : "no problem found: the GPUs judged are healthy",
           colored(Color::kGreen));
  }
  return out;
}

void draw_findings(Screen& s, int r0, int rows, const TopState& st,
                   const std::vector<unsigned>* only_gpu) {
  if (rows <= 0) return;
  std::string sub;
  if (st.diagnosed) {
    sub = fmt::format("live diagnosis of the last {}, {} ago", human_duration(st.diagnosis_span_s),
                      human_duration(std::max(0.0, st.time_s - st.diagnosis_at_s)));
    if (st.verdict && !only_gpu) sub += ": " + cause_words(*st.verdict);
  }
  panel_title(s, r0, "Findings", sub);
  const int room = rows - 1;
  auto lines = finding_rows(st, only_gpu, s.cols());
  // When the wrapped findings do not fit, one row each; the last row then says how many more.
  if (static_cast<int>(lines.size()) > room) lines = finding_rows(st, only_gpu, s.cols(), false);
  for (int k = 0; k < room && k < static_cast<int>(lines.size()); ++k) {
    const int r = r0 + 1 + k;
    const FindingRow& l = lines[static_cast<size_t>(k)];
    if (k == room - 1 && k > 0 && static_cast<int>(lines.size()) > room) {
      s.put(r, 1, fmt::format("... and {} more", static_cast<int>(lines.size()) - k), kGray);
      break;
    }
    if (!l.tag.empty()) s.put(r, 1, l.tag, l.style);
    const int c = l.note ? 1 : kFindingIndent;
    s.field(r, c, s.cols() - c, l.text, l.note ? l.style : kPlain);
  }
}

struct SparkLine {
  std::string label;
  std::vector<float> values;
  float max = 100;
  std::string value_text;
  Style style;
};

std::vector<SparkLine> history_lines(const TopState& st, size_t selected, bool detail) {
  std::vector<SparkLine> out;
  auto series = [](const GpuView& g, float HistoryPoint::*m) {
    std::vector<float> v;
    v.reserve(g.history.size());
    for (const auto& h : g.history) v.push_back(h.*m);
    return v;
  };
  auto any = [](const std::vector<float>& v) {
    return std::any_of(v.begin(), v.end(), [](float x) { return !std::isnan(x); });
  };
  auto last = [](const std::vector<float>& v, const char* spec) {
    for (auto it = v.rbegin(); it != v.rend(); ++it)
      if (!std::isnan(*it)) return fmt::format(fmt::runtime(spec), *it);
    return std::string("-");
  };
  if (selected >= st.gpus.size()) return out;
  const GpuView& g = st.gpus[selected];
  const std::string id = fmt::format("GPU{:>3}", g.info.index);
  auto add = [&](const std::string& what, std::vector<float> v, float max, const char* spec,
                 Color c) {
    SparkLine l{id + " " + what, std::move(v), max, "", colored(c)};
    l.value_text = last(l.values, spec);
    out.push_back(std::move(l));
  };
  add("power", series(g, &HistoryPoint::power_pct), 100, "{:.0f}%", Color::kGreen);
  add("util", series(g, &HistoryPoint::util_pct), 100, "{:.0f}%", Color::kCyan);
  if (auto sm = series(g, &HistoryPoint::sm_pct); any(sm))
    add("SM", std::move(sm), 100, "{:.0f}%", Color::kBlue);
  if (detail) {
    if (auto e = series(g, &HistoryPoint::efficiency); any(e))
      add("eff", std::move(e), 1, "{:.2f}", Color::kYellow);
    if (auto c = series(g, &HistoryPoint::clock_ratio); any(c)) {
      for (auto& x : c) x *= 100;
      add("clock", std::move(c), 100, "{:.0f}%", Color::kMagenta);
    }
    return out;
  }
  for (size_t i = 0; i < st.gpus.size(); ++i) {
    if (i == selected) continue;
    const GpuView& o = st.gpus[i];
    SparkLine l{fmt::format("GPU{:>3} power", o.info.index), series(o, &HistoryPoint::power_pct),
                100, "", colored(Color::kGreen)};
    l.value_text = o.lost ? "lost" : last(l.values, "{:.0f}%");
    out.push_back(std::move(l));
  }
  return out;
}

double history_span(const GpuView& g) {
  return g.history.size() >= 2 ? g.history.back().t_s - g.history.front().t_s : 0;
}

void draw_history(Screen& s, int r0, int rows, const TopState& st, size_t selected, bool detail) {
  if (rows <= 0) return;
  const auto lines = history_lines(st, selected, detail);
  std::string sub = "power % of the default limit, GPU-Util, SM activity";
  if (selected < st.gpus.size())
    sub = fmt::format("last {}: ", human_duration(history_span(st.gpus[selected]))) + sub;
  panel_title(s, r0, "History", sub);
  constexpr int kLabel = 13, kValue = 5;
  const int width = s.cols() - kLabel - kValue - 2;
  for (int k = 0; k + 1 < rows && k < static_cast<int>(lines.size()); ++k) {
    const auto& l = lines[static_cast<size_t>(k)];
    const int r = r0 + 1 + k;
    s.field(r, 0, kLabel, l.label, k < 3 ? kBold : kPlain);
    if (width >= 4)
      put32(s, r, kLabel + 1, sparkline(l.values, width, l.max, s.unicode()), l.style);
    s.field(r, std::max(kLabel + 1, s.cols() - kValue), kValue, l.value_text, kPlain,
            Align::kRight);
  }
}

struct ProcRow {
  unsigned gpu;
  const ProcessView* p;
};

void draw_processes(Screen& s, int r0, int rows, const TopState& st, const ViewState& v,
                    const std::vector<size_t>& gpus) {
  if (rows <= 0) return;
  std::vector<ProcRow> procs;
  bool supported = false;
  for (size_t i : gpus) {
    if (i >= st.gpus.size()) continue;
    supported = supported || st.gpus[i].processes_supported;
    for (const auto& p : st.gpus[i].processes) procs.push_back({st.gpus[i].info.index, &p});
  }
  std::stable_sort(procs.begin(), procs.end(), [&](const ProcRow& a, const ProcRow& b) {
    switch (v.sort) {
      case ProcessSort::kMemory:
        return a.p->mem_mib.value_or(-1) > b.p->mem_mib.value_or(-1);
      case ProcessSort::kSm:
        return a.p->sm_pct.value_or(-1) > b.p->sm_pct.value_or(-1);
      case ProcessSort::kPid:
        return a.p->pid < b.p->pid;
      case ProcessSort::kGpu:
        return a.gpu < b.gpu;
    }
    return false;
  });
  std::set<unsigned> on;
  for (const auto& pr : procs) on.insert(pr.gpu);
  panel_title(s, r0, "Processes",
              fmt::format("{} on {} GPU{}, sorted by {} (s: sort)", procs.size(), on.size(),
                          on.size() == 1 ? "" : "s", process_sort_name(v.sort)));
  if (rows < 2) return;
  if (procs.empty()) {
    s.put(r0 + 1, 1, supported ? "no compute processes" : "this source gives no process list",
          kGray);
    return;
  }
  // GPU  PID  USER  GPU-MEM  SM  [OWNER]  COMMAND
  const bool owners = std::any_of(procs.begin(), procs.end(),
                                  [](const ProcRow& pr) { return !pr.p->owner.empty(); });
  const int cx[] = {0, 4, 12, 23, 32, 37, owners ? 58 : 37};
  const int r = r0 + 1;
  s.field(r, cx[0], 3, "GPU", kBold, Align::kRight);
  s.field(r, cx[1], 7, "PID", kBold, Align::kRight);
  s.field(r, cx[2], 10, "USER", kBold);
  s.field(r, cx[3], 8, "GPU-MEM", kBold, Align::kRight);
  s.field(r, cx[4], 4, "SM", kBold, Align::kRight);
  if (owners) s.field(r, cx[5], 20, "JOB/POD", kBold);
  s.put(r, cx[6], "COMMAND", kBold);
  const int room = rows - 2;  // the title says how many there are in all
  for (int k = 0; k < room && k < static_cast<int>(procs.size()); ++k) {
    const int y = r + 1 + k;
    const ProcRow& pr = procs[static_cast<size_t>(k)];
    s.field(y, cx[0], 3, std::to_string(pr.gpu), kPlain, Align::kRight);
    s.field(y, cx[1], 7, std::to_string(pr.p->pid), kPlain, Align::kRight);
    s.field(y, cx[2], 10, pr.p->user.empty() ? "-" : pr.p->user, kPlain);
    s.field(y, cx[3], 8, pr.p->mem_mib ? gib(*pr.p->mem_mib) + " GiB" : "-", kPlain, Align::kRight);
    s.field(y, cx[4], 4, fmt_opt(pr.p->sm_pct, "{:.0f}%"), kPlain, Align::kRight);
    if (owners && s.cols() > cx[5])
      s.field(y, cx[5], std::min(20, s.cols() - cx[5]), pr.p->owner.empty() ? "-" : pr.p->owner,
              kPlain);
    if (s.cols() > cx[6]) s.field(y, cx[6], s.cols() - cx[6], pr.p->command, kPlain);
  }
}

// Grants rows to panels in priority order: first each panel's minimum (a panel that does not fit
// is dropped, and so is every panel after it), then what is left up to what each wants.
void allocate(std::vector<Panel*> panels, int avail) {
  size_t shown = 0;
  for (; shown < panels.size(); ++shown) {
    Panel& p = *panels[shown];
    if (p.min_rows > avail) break;
    p.rows = p.min_rows;
    avail -= p.min_rows;
  }
  for (size_t i = shown; i < panels.size(); ++i) panels[i]->rows = 0;
  for (size_t i = 0; i < shown; ++i) {
    Panel& p = *panels[i];
    const int add = std::min(avail, p.want_rows - p.rows);
    if (add > 0) p.rows += add, avail -= add;
  }
}

void draw_header(Screen& s, const TopState& st, const ViewState& v, const std::string& extra) {
  s.fill(0, 0, s.cols(), U' ', kReverse);
  const char* dot = s.unicode() ? " · " : " | ";
  std::string left = " gpudoctor top";
  if (!st.hostname.empty()) left += dot + st.hostname;
  left += dot + st.source;
  left += fmt::format("{}{} GPU{}", dot, st.gpus.size(), st.gpus.size() == 1 ? "" : "s");
  if (!st.driver_version.empty()) left += dot + ("driver " + st.driver_version);
  if (const auto t = clock_time(st.time_unix_ms); !t.empty()) left += dot + t;
  std::string right = extra;
  if (v.paused) right += (right.empty() ? "" : "  ") + std::string("PAUSED (p: resume)");
  if (!right.empty()) right += " ";
  const int rw = static_cast<int>(decode_utf8(right).size());
  const int lw = std::min(static_cast<int>(decode_utf8(left).size()), s.cols() - rw - 1);
  if (lw >= 14) {
    s.field(0, 0, lw, left, kReverse);
    s.put(0, s.cols() - rw, right, Style{Color::kDefault, true, false, true});
  } else {
    s.field(0, 0, s.cols(), right.empty() ? left : right, kReverse);
  }
}

void draw_footer(Screen& s, const ViewState& v) {
  const int r = s.rows() - 1;
  const std::string arrows = s.unicode() ? "↑↓" : "up/down";
  const std::string text =
      v.detail
          ? fmt::format(" q quit  Esc back  {} other GPU  p pause  s sort  h help", arrows)
          : fmt::format(" q quit  {} 0-9 select  Enter detail  p pause  s sort  h help", arrows);
  s.field(r, 0, s.cols(), text, kGray);
}

void draw_help(Screen& s) {
  const bool u = s.unicode();
  const std::vector<std::string> lines = {
      "gpudoctor top: keys",
      "",
      u ? "q  Ctrl-C       quit" : "q  Ctrl-C       quit",
      u ? "↑ ↓  k j        select a GPU" : "Up Down  k j    select a GPU",
      "0-9            select a GPU by index (two digits",
      "               quickly for 10-15)",
      "Enter          one GPU in detail (Esc: back)",
      "p              pause the display (sampling goes on)",
      "s              sort processes: memory, SM share, pid, GPU",
      "h  ?           this help (any key closes it)",
      "Ctrl-L         redraw",
      "",
      "UTIL  GPU-Util: some kernel ran (not how busy)",
      "SM    SM activity (Hopper and newer)",
      "POWER draw / default limit (TDP)",
      "EFF   power share x SM activity; < 0.6: loafing",
      "NOW   instant verdict; DIAGNOSIS: live diagnosis",
  };
  int w = 0;
  for (const auto& l : lines) w = std::max(w, static_cast<int>(decode_utf8(l).size()));
  const int bw = std::min(s.cols(), w + 4),
            bh = std::min(s.rows(), static_cast<int>(lines.size()) + 2);
  const int x0 = (s.cols() - bw) / 2, y0 = (s.rows() - bh) / 2;
  for (int y = y0; y < y0 + bh; ++y) s.fill(y, x0, bw, U' ', kPlain);
  const char32_t h = u ? U'─' : U'-', vert = u ? U'│' : U'|';
  s.fill(y0, x0, bw, h, kBold);
  s.fill(y0 + bh - 1, x0, bw, h, kBold);
  for (int y = y0; y < y0 + bh; ++y) {
    s.set(y, x0, vert, kBold);
    s.set(y, x0 + bw - 1, vert, kBold);
  }
  s.set(y0, x0, u ? U'┌' : U'+', kBold);
  s.set(y0, x0 + bw - 1, u ? U'┐' : U'+', kBold);
  s.set(y0 + bh - 1, x0, u ? U'└' : U'+', kBold);
  s.set(y0 + bh - 1, x0 + bw - 1, u ? U'┘' : U'+', kBold);
  for (int k = 0; k < bh - 2; ++k)
    s.field(y0 + 1 + k, x0 + 2, bw - 4, lines[static_cast<size_t>(k)], k == 0 ? kBold : kPlain);
}

// ---------------------------------------------------------------------------------------------
// Views

void main_view(Screen& s, const TopState& st, const ViewState& v) {
  const int rows = s.rows();
  const int n = static_cast<int>(st.gpus.size());
  const size_t sel = std::min(v.selected, st.gpus.empty() ? 0 : st.gpus.size() - 1);
  const int footer = v.key_line && rows >= 8 ? 1 : 0;
  const int avail = rows - 1 - footer;

  // Every GPU row first, but leave the findings two rows where that still shows a GPU.
  Panel table{std::min(1 + n, std::max(std::min(avail, 2), avail - 2)), 1 + n};
  const int nfind = static_cast<int>(finding_rows(st, nullptr, s.cols()).size());
  Panel findings{2, 1 + std::min(nfind, 10)};
  const int nhist = static_cast<int>(history_lines(st, sel, false).size());
  Panel history{3, 1 + nhist};
  int nproc = 0;
  for (const auto& g : st.gpus) nproc += static_cast<int>(g.processes.size());
  Panel procs{3, 2 + std::max(1, std::min(nproc, 16))};
  allocate({&table, &findings, &history, &procs}, avail);

  // The GPU rows that fit, keeping the selected one in view.
  const int visible = std::max(0, table.rows - 1);
  int first = 0;
  if (visible > 0 && static_cast<int>(sel) >= visible) first = static_cast<int>(sel) - visible + 1;
  std::string extra;
  if (visible < n)
    extra = fmt::format(
        "GPUs {}-{} of {}", visible ? st.gpus[static_cast<size_t>(first)].info.index : 0,
        visible ? st.gpus[static_cast<size_t>(first + visible - 1)].info.index : 0, n);
  draw_header(s, st, v, extra);

  int y = 1;
  const auto cols = layout_table(s.cols());
  if (table.rows > 0) draw_table_header(s, y, cols);
  for (int k = 0; k < visible && first + k < n; ++k) {
    const auto i = static_cast<size_t>(first + k);
    draw_gpu_row(s, y + 1 + k, cols, st.gpus[i], i == sel, st.diagnosed);
  }
  if (n == 0 && table.rows > 1) s.put(y + 1, 1, "no GPU", kGray);
  y += table.rows;
  draw_findings(s, y, findings.rows, st, nullptr);
  y += findings.rows;
  draw_history(s, y, history.rows, st, sel, false);
  y += history.rows;
  std::vector<size_t> all(st.gpus.size());
  std::iota(all.begin(), all.end(), size_t{0});
  draw_processes(s, y, procs.rows, st, v, all);
  if (footer) draw_footer(s, v);
}

void detail_view(Screen& s, const TopState& st, const ViewState& v) {
  const size_t sel = std::min(v.selected, st.gpus.size() - 1);
  const GpuView& g = st.gpus[sel];
  const GpuAssessment& a = g.now;
  const int rows = s.rows();
  const int footer = v.key_line && rows >= 8 ? 1 : 0;
  draw_header(s, st, v, "");
  const bool u = s.unicode();
  const char* dot = u ? " · " : " | ";

  // Identity, the instant verdict and the live diagnosis.
  std::vector<std::pair<std::string, Style>> top;
  std::string id =
      fmt::format("GPU {}{}{}", g.info.index, dot, g.info.name.empty() ? "?" : g.info.name);
  if (!g.info.pci_bus_id.empty()) id += dot + g.info.pci_bus_id;
  if (g.info.architecture != Architecture::kUnknown)
    id += dot + architecture_name(g.info.architecture);
  top.emplace_back(id, kBold);
  top.emplace_back(fmt::format("now: {}: {}", verdict_label(a.verdict), a.detail),
                   verdict_style(a.verdict));
  if (g.cause)
    top.emplace_back(fmt::format("diagnosis: {} (confidence {:.2f}): {}", cause_words(*g.cause),
                                 g.cause_confidence.value_or(0), cause_info(*g.cause).what),
                     cause_style(*g.cause));
  else
    top.emplace_back(
        st.diagnosed ? "diagnosis: nothing to judge this GPU by yet" : "diagnosis: not run yet",
        kGray);

  // One line per measure: a long bar and the numbers in words.
  struct Metric {
    std::string label;
    double ratio;
    Color color;
    std::string text;
  };
  std::vector<Metric> metrics;
  const bool dead = g.lost || a.verdict == SnapshotVerdict::kNotResponding;
  if (!dead) {
    metrics.push_back({"GPU-Util", nan_or(a.util_pct, 0.01), Color::kCyan,
                       fmt_opt(a.util_pct, "{:.0f} % of the time some kernel ran", "n/a")});
    metrics.push_back({"SM activity", nan_or(a.sm_pct, 0.01), ratio_color(nan_or(a.sm_pct, 0.01)),
                       a.sm_pct ? fmt::format("{:.0f} %", *a.sm_pct)
                                : std::string("n/a (GPM: Hopper and newer)")});
    std::string pw = "n/a";
    if (a.power_w) {
      pw = a.limit_w ? fmt::format("{:.0f} W of {:.0f} W ({:.0f} %)", *a.power_w, *a.limit_w,
                                   *a.power_ratio * 100)
                     : fmt::format("{:.0f} W", *a.power_w);
      if (a.enforced_limit_w && a.limit_w && std::abs(*a.enforced_limit_w - *a.limit_w) > 0.5)
        pw += fmt::format(", limit lowered to {:.0f} W", *a.enforced_limit_w);
    }
    metrics.push_back({"Power", nan_or(a.power_ratio), ratio_color(nan_or(a.power_ratio)), pw});
    metrics.push_back({"Efficiency", nan_or(a.efficiency), ratio_color(nan_or(a.efficiency)),
                       a.efficiency
                           ? fmt::format("{:.2f}{}", *a.efficiency,
                                         a.efficiency_has_sm ? " (power x SM activity)"
                                                             : " (power alone: no SM activity)")
                           : std::string("n/a")});
    const bool mem = a.mem_used_mib && a.mem_total_mib && *a.mem_total_mib > 0;
    metrics.push_back(
        {"Memory", mem ? *a.mem_used_mib / *a.mem_total_mib : std::nan(""), Color::kBlue,
         mem ? fmt::format("{} of {} GiB", gib(*a.mem_used_mib), gib(*a.mem_total_mib)) : "n/a"});
    const double hot = g.temp_slowdown_c.value_or(90);
    metrics.push_back(
        {"Temperature", g.temp_c ? *g.temp_c / hot : std::nan(""),
         g.temp_c && *g.temp_c >= hot - 3 ? Color::kRed : Color::kGreen,
         g.temp_c ? fmt::format("{:.0f} C{}", *g.temp_c,
                                g.temp_slowdown_c
                                    ? fmt::format(" (slows down at {:.0f} C)", *g.temp_slowdown_c)
                                    : "")
                  : "n/a"});
    std::string clk = "n/a";
    if (g.clock_sm_mhz)
      clk = g.clock_sm_max_mhz
                ? fmt::format("{:.0f} of {:.0f} MHz", *g.clock_sm_mhz, *g.clock_sm_max_mhz)
                : fmt::format("{:.0f} MHz", *g.clock_sm_mhz);
    if (g.pstate) clk += fmt::format(", P{:.0f}", *g.pstate);
    metrics.push_back({"SM clock",
                       g.clock_sm_mhz && g.clock_sm_max_mhz && *g.clock_sm_max_mhz > 0
                           ? *g.clock_sm_mhz / *g.clock_sm_max_mhz
                           : std::nan(""),
                       Color::kCyan, clk});
  }
  std::string events = "clock events: ";
  if (g.reasons)
    events +=
        *g.reasons ? fmt::format("{}", fmt::join(decode_clock_reasons(*g.reasons), ", ")) : "none";
  else
    events += "n/a";
  if (!a.pcie_text.empty())
    events += fmt::format("{}PCIe {}{}", dot, a.pcie_text, a.pcie_degraded ? " (degraded)" : "");

  const int avail = rows - 1 - footer;
  Panel head{std::min(avail, 1), static_cast<int>(top.size())};
  Panel meas{std::min(static_cast<int>(metrics.size()) + 1, 2),
             static_cast<int>(metrics.size()) + 1};
  std::vector<unsigned> only{g.info.index};
  const int nfind = static_cast<int>(finding_rows(st, &only, s.cols()).size());
  Panel findings{2, 1 + std::min(nfind, 6)};
  Panel history{3, 1 + static_cast<int>(history_lines(st, sel, true).size())};
  Panel procs{3, 2 + std::max(1, std::min(static_cast<int>(g.processes.size()), 16))};
  allocate({&head, &meas, &findings, &history, &procs}, avail);

  int y = 1;
  for (int k = 0; k < head.rows; ++k)
    s.field(y + k, 0, s.cols(), top[static_cast<size_t>(k)].first,
            top[static_cast<size_t>(k)].second);
  y += head.rows;
  constexpr int kLabel = 12;
  const int bw = std::clamp(s.cols() / 3, 4, 40);
  for (int k = 0; k < meas.rows; ++k) {
    const int r = y + k;
    if (k == meas.rows - 1 || k >= static_cast<int>(metrics.size())) {
      s.field(r, 0, s.cols(), events, kPlain);
      break;
    }
    const Metric& m = metrics[static_cast<size_t>(k)];
    s.field(r, 0, kLabel, m.label, kBold);
    const std::u32string b = bar(m.ratio, bw, u);
    for (int c = 0; c < bw; ++c) {
      const char32_t ch = b[static_cast<size_t>(c)];
      s.set(r, kLabel + c, ch, ch == U'·' || ch == U'.' ? kGray : colored(m.color));
    }
    s.field(r, kLabel + bw + 1, s.cols() - kLabel - bw - 1, m.text, kPlain);
  }
  y += meas.rows;
  draw_findings(s, y, findings.rows, st, &only);
  y += findings.rows;
  draw_history(s, y, history.rows, st, sel, true);
  y += history.rows;
  draw_processes(s, y, procs.rows, st, v, {sel});
  if (footer) draw_footer(s, v);
}

}  // namespace

std::u32string bar(double ratio, int width, bool unicode) {
  std::u32string out;
  if (width <= 0) return out;
  const char32_t empty = unicode ? U'·' : U'.';
  if (std::isnan(ratio)) return std::u32string(static_cast<size_t>(width), empty);
  const double r = std::clamp(ratio, 0.0, 1.0);
  if (!unicode) {
    const int full = static_cast<int>(std::lround(r * width));
    out.append(static_cast<size_t>(full), U'#');
    out.append(static_cast<size_t>(width - full), empty);
    return out;
  }
  const int eighths = static_cast<int>(std::lround(r * width * 8));
  const int full = eighths / 8, part = eighths % 8;
  static constexpr char32_t kParts[] = {U' ', U'▏', U'▎', U'▍', U'▌', U'▋', U'▊', U'▉'};
  out.append(static_cast<size_t>(full), U'█');
  if (part && full < width) out.push_back(kParts[part]);
  out.append(static_cast<size_t>(width) - out.size(), empty);
  return out;
}

std::u32string sparkline(const std::vector<float>& values, int width, float max, bool unicode) {
  static constexpr char32_t kUnicode[] = {U'▁', U'▂', U'▃', U'▄', U'▅', U'▆', U'▇', U'█'};
  static constexpr char32_t kAscii[] = {U'_', U'.', U',', U':', U'-', U'=', U'+', U'#'};
  std::u32string out;
  if (width <= 0) return out;
  out.assign(static_cast<size_t>(width), U' ');
  const size_t n = values.size(), w = static_cast<size_t>(width);
  if (n == 0 || !(max > 0)) return out;
  const size_t cells = std::min(n, w);
  for (size_t k = 0; k < cells; ++k) {
    // Cell k (of the rightmost `cells`) covers values [b, e).
    const size_t b = k * n / cells, e = (k + 1) * n / cells;
    double sum = 0;
    int count = 0;
    for (size_t i = b; i < e; ++i)
      if (!std::isnan(values[i])) sum += values[i], ++count;
    if (!count) continue;
    const double level = std::clamp(sum / count / max, 0.0, 1.0);
    const auto idx = static_cast<size_t>(std::min(7.0, std::floor(level * 8)));
    out[w - cells + k] = unicode ? kUnicode[idx] : kAscii[idx];
  }
  return out;
}

std::vector<std::string> table_layout(int cols) {
  std::vector<std::string> out;
  for (const auto& c : layout_table(cols))
    out.push_back(c.bar ? fmt::format("{}:{}+{}", c.spec->title, c.w, c.bar)
                        : fmt::format("{}:{}", c.spec->title, c.w));
  return out;
}

Screen render_top(const TopState& state, const ViewState& view, int rows, int cols) {
  Screen s(rows, cols, view.unicode);
  if (rows <= 0 || cols <= 0) return s;
  if (rows < 3 || cols < 24) {
    s.field(0, 0, cols, fmt::format("gpudoctor top: terminal too small ({}x{})", cols, rows),
            kBold);
    return s;
  }
  if (view.detail && !state.gpus.empty())
    detail_view(s, state, view);
  else
    main_view(s, state, view);
  if (view.help) draw_help(s);
  return s;
}

}  // namespace gpudoctor::tui
