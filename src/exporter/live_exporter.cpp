#include "exporter/live_exporter.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <utility>

#include "report/diagnosis_report.hpp"

namespace gpudoctor {

void shift_recording(Recording& rec, double offset_s) {
  const auto ms = static_cast<int64_t>(std::llround(offset_s * 1000));
  if (ms == 0) return;
  const double s = static_cast<double>(ms) / 1000.0;
  rec.start_unix_ms += ms;
  for (auto& g : rec.gpus) {
    g.time_s.shift(-s);
    for (auto& p : g.processes) p.first_s -= s, p.last_s -= s;
    for (auto& o : g.owners) o.first_s -= s, o.last_s -= s;
    if (g.lost_at_s) *g.lost_at_s -= s;
  }
}

LiveExporter::LiveExporter(SystemInfo system, std::vector<DeviceInfo> devices,
                           ExportOptions export_options, LiveOptions live_options)
    : export_options_(std::move(export_options)),
      live_options_(std::move(live_options)),
      devices_(std::move(devices)),
      findings_(devices_.size()),
      verdicts_(devices_.size()),
      books_(devices_.size()),
      ledger_(devices_.size()) {
  window_.system = std::move(system);
  window_.source = "live: " + live_options_.source;
  for (const auto& d : devices_) {
    GpuSeries g;
    g.info = d;
    window_.gpus.push_back(std::move(g));
  }
}

void LiveExporter::trim_window(double now_s) {
  // Trimmed in steps of a tenth of the window, so the copying is amortised over many frames.
  const double keep_from = now_s - live_options_.window_s;
  double first = now_s;
  for (const auto& g : window_.gpus)
    if (!g.time_s.empty()) first = std::min(first, g.time_s.front());
  if (first >= keep_from - live_options_.window_s / 10) return;
  trim_recording(window_, keep_from, 1e300);
  shift_recording(window_, keep_from);
}

std::optional<double> LiveExporter::memory_churn(const GpuSeries& g) const {
  const auto used = g.column(Field::kMemUsed);
  const auto total = g.column(Field::kMemTotal);
  if (!used || !total || g.size() < 2) return std::nullopt;
  const double since = g.time_s.back() - live_options_.churn_window_s;
  std::optional<double> worst;
  for (size_t i = g.size() - 1; i > 0 && g.time_s[i - 1] >= since; --i) {
    const double dt = g.time_s[i] - g.time_s[i - 1];
    const double u0 = (*used)[i - 1], u1 = (*used)[i], tot = (*total)[i];
    if (dt <= 0 || is_missing(u0) || is_missing(u1) || is_missing(tot) || tot <= 0) continue;
    const double churn = std::abs(u1 - u0) / tot / dt;
    worst = std::max(worst.value_or(0), churn);
  }
  return worst;
}

void LiveExporter::update_ledger(const Diagnosis& d, int64_t now_ms) {
  const auto keep_ms = static_cast<int64_t>(live_options_.window_s * 1000);
  for (const auto& g : d.gpus)
    for (size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i].index == g.index) {
        books_[i].judge(g.judged, d.start_unix_ms, now_ms, keep_ms);
        ledger_[i] = books_[i].totals();
      }
}

void LiveExporter::rediagnose(double now_s) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const Diagnosis d = diagnose(window_, live_options_.config, JudgedSamples::kEach);
    for (auto& f : findings_) f.clear();
    for (auto& v : verdicts_) v.reset();
    for (const auto& f : d.findings) {
      if (f.cause == Cause::kHealthy) continue;
      for (unsigned idx : f.gpus)
        for (size_t i = 0; i < devices_.size(); ++i)
          if (devices_[i].index == idx) findings_[i].push_back({f.cause, f.severity});
    }
    for (const auto& g : d.gpus)
      for (size_t i = 0; i < devices_.size(); ++i)
        if (devices_[i].index == g.index) verdicts_[i] = g.verdict;
    update_ledger(d, window_.start_unix_ms + std::llround(now_window_s_ * 1000));
    diagnosis_json_ = std::make_shared<const std::string>(diagnosis_json(d).dump(2) + "\n");
    diagnosis_stat_.success = true;
  } catch (const std::exception&) {  // a bug in the analysis must not take the exporter down
    diagnosis_stat_.success = false;
  }
  diagnosis_stat_.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  last_diagnosis_s_ = now_s;
}

void LiveExporter::add_frame(Frame frame, double sample_duration_s, bool ok) {
  ++frames_;
  if (frames_ == 1) window_.start_unix_ms = frame.time_unix_ms;
  append_frame(window_, frame);
  for (size_t i = 0; i < frame.devices.size() && i < books_.size(); ++i) {
    const DeviceSample& ds = frame.devices[i];
    const double dt = have_prev_ ? std::clamp(frame.time_s - prev_.time_s, 0.0, 10.0) : 0;
    if (!ds.lost)
      books_[i].add_sample(frame.time_unix_ms, dt, !ds.owners.empty() || !ds.processes.empty());
  }
  const double now_s = static_cast<double>(frame.time_unix_ms - window_.start_unix_ms) / 1000.0;
  trim_window(now_s);
  now_window_s_ = static_cast<double>(frame.time_unix_ms - window_.start_unix_ms) / 1000.0;
  if (!last_diagnosis_s_ || frame.time_s - *last_diagnosis_s_ >= live_options_.diagnosis_interval_s)
    rediagnose(frame.time_s);

  ExportSnapshot snap;
  snap.system = window_.system;
  snap.devices = devices_;
  const double dt = have_prev_ ? frame.time_s - prev_.time_s : 0;
  for (size_t i = 0; i < frame.devices.size(); ++i) {
    const DeviceSample* p = have_prev_ && i < prev_.devices.size() ? &prev_.devices[i] : nullptr;
    snap.assessments.push_back(assess(p, frame.devices[i], dt));
    snap.memory_churn.push_back(i < window_.gpus.size() ? memory_churn(window_.gpus[i])
                                                        : std::nullopt);
  }
  snap.findings = findings_;
  snap.verdicts = verdicts_;
  snap.ledger = ledger_;
  snap.scrapes = {{export_options_.source_name, ok, sample_duration_s}, diagnosis_stat_};
  snap.frame = std::move(frame);

  auto pub = std::make_shared<Published>();
  pub->made_at = std::chrono::steady_clock::now();
  pub->frame_unix_ms = snap.frame.time_unix_ms;
  pub->frames = frames_;
  pub->metrics_text = std::make_shared<const std::string>(
      render_metrics(snap, export_options_, ExpositionFormat::kPrometheusText));
  pub->metrics_openmetrics = std::make_shared<const std::string>(
      render_metrics(snap, export_options_, ExpositionFormat::kOpenMetrics));
  pub->diagnosis_json = diagnosis_json_;

  prev_ = std::move(snap.frame);
  have_prev_ = true;
  std::lock_guard lock(mu_);
  published_ = std::move(pub);
}

std::shared_ptr<const Published> LiveExporter::latest() const {
  std::lock_guard lock(mu_);
  return published_;
}

}  // namespace gpudoctor
