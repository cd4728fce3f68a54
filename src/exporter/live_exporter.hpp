// LiveExporter: what `gpudoctor serve` publishes. The sampling thread hands it every frame; it
// keeps a window of recent samples (a Recording, trimmed to --window), assesses the frame, runs
// the diagnosis over the window every few seconds, and renders /metrics (both formats) and
// /diagnosis once per frame into an immutable Published snapshot. HTTP threads only take the
// latest snapshot: a scrape never touches NVML and never waits for the sampling.
// Thread-safety: add_frame() from one thread (the sampling loop); latest() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/config.hpp"
#include "analysis/diagnosis.hpp"
#include "analysis/ledger.hpp"
#include "core/recording.hpp"
#include "exporter/exposition.hpp"

namespace gpudoctor {

struct LiveOptions {
  double window_s = 300;             // the live diagnosis looks this far back
  double diagnosis_interval_s = 10;  // and runs at most this often
  double churn_window_s = 15;        // gpudoctor_memory_churn_ratio looks this far back
  std::string source = "nvml";       // the --source spec, for the diagnosis' "source"
  DiagnosisConfig config;
};

struct Published {
  std::chrono::steady_clock::time_point made_at;
  int64_t frame_unix_ms = 0;
  size_t frames = 0;  // frames seen since start
  std::shared_ptr<const std::string> metrics_text, metrics_openmetrics, diagnosis_json;
};

class LiveExporter {
 public:
  LiveExporter(SystemInfo system, std::vector<DeviceInfo> devices, ExportOptions export_options,
               LiveOptions live_options);

  // One new frame from the source and how long sample() took; ok: the sample produced readings.
  void add_frame(Frame frame, double sample_duration_s, bool ok);
  // The latest snapshot; null before the first frame.
  std::shared_ptr<const Published> latest() const;

  // For tests: the window as it stands, and the ledger (sampling thread only).
  const Recording& window() const { return window_; }
  const std::vector<GpuLedger>& ledger() const { return ledger_; }

 private:
  void trim_window(double now_s);
  void rediagnose(double now_s);
  std::optional<double> memory_churn(const GpuSeries& g) const;
  void update_ledger(const Diagnosis& d, int64_t now_ms);

  ExportOptions export_options_;
  LiveOptions live_options_;
  std::vector<DeviceInfo> devices_;
  Recording window_;
  Frame prev_;
  bool have_prev_ = false;
  size_t frames_ = 0;
  std::optional<double> last_diagnosis_s_;
  std::vector<std::vector<GpuFinding>> findings_;
  std::vector<std::optional<Cause>> verdicts_;
  std::vector<LedgerBook> books_;  // one per device (analysis/ledger.hpp: the counting rule)
  std::vector<GpuLedger> ledger_;
  double now_window_s_ = 0;  // the latest frame, in the window's seconds
  std::shared_ptr<const std::string> diagnosis_json_;
  ScrapeStat diagnosis_stat_{"diagnosis", false, 0};

  mutable std::mutex mu_;
  std::shared_ptr<const Published> published_;
};

// Moves every time of the recording by -offset_s (and its start by +offset_s): after trimming a
// window, its first sample is at 0 again.
void shift_recording(Recording& rec, double offset_s);

}  // namespace gpudoctor
