// Cost of sampling: one NvmlSource::sample() of 8 stand-in GPUs (busy-8gpu capture), and the
// snapshot assessment and rendering that `watch` adds per frame. The stand-in library's own work
// (JSON lookups) is included, so the figure is an upper bound on gpudoctor's own cost.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reader_counters.hpp"

#include "analysis/snapshot.hpp"
#include "core/gpu_models.hpp"
#include "formats/export.hpp"
#include "formats/load.hpp"
#include "formats/smi_csv.hpp"
#include "report/watch_report.hpp"
#include "sources/sim/sim_source.hpp"
#include "sources/source.hpp"
#include "store/sqlite_store.hpp"

namespace {

using namespace gpudoctor;

std::unique_ptr<Source> open_fake_path(const std::string& path) {
  setenv("GPUDOCTOR_NVML_LIB", FAKE_NVML_LIB, 1);
  setenv("GPUDOCTOR_FAKE_NVML_CAPTURE", path.c_str(), 1);
  auto src = open_source("nvml", {});
  if (!src) {
    std::fprintf(stderr, "bench: %s\n", src.error().message.c_str());
    std::exit(1);
  }
  return std::move(src.value());
}

std::unique_ptr<Source> open_fake(const char* capture) {
  return open_fake_path(std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/captures/" + capture);
}

// busy-8gpu.json with every field of dcgm-exporter's default list an H100 has added to each
// sample (memory temperature, NVDEC, NVLink, PCIe replays, remapped rows): what sampling costs
// where all the new calls answer. Written once to a temporary file.
std::string all_counters_capture() {
  static const std::string path = [] {
    const std::string src =
        std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/captures/busy-8gpu.json";
    std::ifstream in(src);
    nlohmann::json doc = nlohmann::json::parse(in);
    for (auto& d : doc["devices"]) {
      for (auto& smp : d["samples"]) {
        auto& v = smp["values"];
        v["temp_mem_c"] = 70;
        v["util_dec_pct"] = 0;
        v["nvlink_mibs"] = 70000.5;
        v["pcie_replays"] = 3;
        v["remapped_rows_corrected"] = 0;
        v["remapped_rows_uncorrected"] = 0;
        v["remap_failure"] = 0;
      }
    }
    const std::string out = (std::filesystem::temp_directory_path() /
                             fmt::format("busy-8gpu-counters-{}.json", getpid()))
                                .string();
    std::ofstream(out) << doc.dump();
    return out;
  }();
  return path;
}

void BM_SampleEightGpus(benchmark::State& state) {
  auto src = open_fake("busy-8gpu.json");
  for (auto _ : state) {
    Frame f = src->sample();
    benchmark::DoNotOptimize(f);
  }
  state.counters["gpu_samples/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 8, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SampleEightGpus)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The same with every new call supported (all_counters_capture()).
void BM_SampleEightGpusAllCounters(benchmark::State& state) {
  auto src = open_fake_path(all_counters_capture());
  for (auto _ : state) {
    Frame f = src->sample();
    benchmark::DoNotOptimize(f);
  }
  state.counters["gpu_samples/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 8, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SampleEightGpusAllCounters)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_AssessAndRenderEightGpus(benchmark::State& state) {
  auto src = open_fake("busy-8gpu.json");
  const Frame a = src->sample();
  const Frame b = src->sample();
  const WatchRenderer renderer(WatchFormat::kTable);
  for (auto _ : state) {
    std::vector<GpuAssessment> as;
    for (size_t i = 0; i < b.devices.size(); ++i)
      as.push_back(assess(&a.devices[i], b.devices[i], 0.1));
    std::string out = renderer.rows(src->devices(), b, as);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_AssessAndRenderEightGpus)->Unit(benchmark::kMicrosecond);

// Issue 4's target: one simulated GPU-hour at 100 ms sampling in under a second.
void BM_SimulateOneGpuHourAt100ms(benchmark::State& state) {
  for (auto _ : state) {
    auto spec = sim::parse_sim_spec("healthy,gpus=1");
    const auto model = gpu_model_by_key(spec->scenario.model);
    sim::SimSource src(std::move(spec.value()), *model, {});
    for (int i = 1; i <= 36000; ++i) benchmark::DoNotOptimize(src.sample_at(i * 0.1));
  }
}
BENCHMARK(BM_SimulateOneGpuHourAt100ms)->Unit(benchmark::kMillisecond);

// 8 simulated GPUs x 2,000 rounds, every field the simulator has.
Recording simulated_eight_gpus() {
  auto spec = sim::parse_sim_spec("healthy,gpus=8");
  const auto model = gpu_model_by_key(spec->scenario.model);
  sim::SimSource src(std::move(spec.value()), *model, {});
  Recording rec;
  rec.start_unix_ms = 1'700'000'000'000;
  rec.gpus.resize(8);
  for (int i = 1; i <= 2000; ++i) {
    const Frame f = src.sample_at(i * 1.0);
    for (size_t g = 0; g < 8; ++g) {
      GpuSeries& s = rec.gpus[g];
      s.info = src.devices()[g];
      const size_t row = s.append_row(i * 1.0);
      for (const auto& fi : all_fields())
        if (f.devices[g][fi.field].has_value())
          s.column_for_write(fi.field)[row] = f.devices[g][fi.field].value();
    }
  }
  return rec;
}

// Issue 3's target: nvidia-smi CSV parsed at >= 150 MB/s on one core. The input is what
// `gpudoctor export --format smi-csv` writes for 8 simulated GPUs (every field nvidia-smi has).
void BM_ReadSmiCsv(benchmark::State& state) {
  const Recording rec = simulated_eight_gpus();
  const std::string text = write_smi_csv(rec, true);
  Recording last;
  for (auto _ : state) {
    auto r = read_smi_csv(text, "bench", {});
    if (!r.ok()) return state.SkipWithError(r.error().message.c_str());
    benchmark::DoNotOptimize(r);
    last = std::move(r.value());
  }
  bench::set_reader_counters(state, text.size(), last);
}
BENCHMARK(BM_ReadSmiCsv)->Unit(benchmark::kMillisecond);

void run_load(benchmark::State& state, const std::string& text) {
  Recording last;
  for (auto _ : state) {
    auto r = load_text(text, "bench", {});
    if (!r.ok()) return state.SkipWithError(r.error().message.c_str());
    benchmark::DoNotOptimize(r);
    last = std::move(r.value());
  }
  bench::set_reader_counters(state, text.size(), last);
}

// Issue 13: the same nvidia-smi CSV through load_text, where encodings are checked (>= 300 MB/s).
void BM_LoadSmiCsv(benchmark::State& state) {
  run_load(state, write_smi_csv(simulated_eight_gpus(), true));
}
BENCHMARK(BM_LoadSmiCsv)->Unit(benchmark::kMillisecond);

// Issue 13: a generic CSV through the column catalogue (gpudoctor's own export, one row per GPU
// and time) and a GPU-Z style log in Windows-1252 (decoded, then read): >= 100 MB/s.
void BM_LoadGenericCsv(benchmark::State& state) {
  run_load(state, write_csv(simulated_eight_gpus()));
}
BENCHMARK(BM_LoadGenericCsv)->Unit(benchmark::kMillisecond);

void BM_LoadGpuzLatin1(benchmark::State& state) {
  std::string text =
      "        Date        , GPU Clock [MHz] , Memory Clock [MHz] , GPU Temperature [\xB0"
      "C] , Memory Used [MB] , GPU Load [%] , Memory Controller Load [%] , Board Power Draw [W] "
      ", PerfCap Reason [] , \r\n";
  for (int i = 0; i < 200000; ++i)
    text += fmt::format(
        "2026-12-{:02d} {:02d}:{:02d}:{:02d} , {:7.1f} , {:7.1f} , {:5.1f} , {:6} , {:3} , {:3} , "
        "{:6.1f} , {:2} , \r\n",
        1 + i / 86400, i / 3600 % 24, i / 60 % 60, i % 60, 1980.0 - i % 50, 9501.0, 60.0 + i % 7,
        7100 + i % 3, 90 + i % 10, 40 + i % 9, 100.0 + (i % 40) * 0.1, i % 3);
  run_load(state, text);
}
BENCHMARK(BM_LoadGpuzLatin1)->Unit(benchmark::kMillisecond);

// A GPU-Z sensor log as GPU-Z writes it (the layout of shared/data/real-logs' "GPU-Z Sensor
// Log.txt"): 22 sensors of an RTX card, each value right-aligned under its title and followed by
// three spaces, 524 bytes a row. BM_LoadGpuzLatin1's rows are the dense end (87 bytes, 8 sensors).
void BM_LoadGpuzAsWritten(benchmark::State& state) {
  static const std::vector<std::string_view> titles = {"GPU Clock [MHz]",
                                                       "Memory Clock [MHz]",
                                                       "GPU Temperature [\xB0"
                                                       "C]",
                                                       "Hot Spot [\xB0"
                                                       "C]",
                                                       "Fan 1 Speed (%) [%]",
                                                       "Fan 1 Speed (RPM) [RPM]",
                                                       "Fan 2 Speed (%) [%]",
                                                       "Fan 2 Speed (RPM) [RPM]",
                                                       "Memory Used [MB]",
                                                       "GPU Load [%]",
                                                       "Memory Controller Load [%]",
                                                       "Video Engine Load [%]",
                                                       "Bus Interface Load [%]",
                                                       "Board Power Draw [W]",
                                                       "GPU Chip Power Draw [W]",
                                                       "PWR_SRC Power Draw [W]",
                                                       "PWR_SRC Voltage [V]",
                                                       "Power Consumption (%) [% TDP]",
                                                       "PerfCap Reason []",
                                                       "GPU Voltage [V]",
                                                       "CPU Temperature [\xB0"
                                                       "C]",
                                                       "System Memory Used [MB]"};
  std::string text = "        Date        ,";
  for (const auto t : titles) text += fmt::format(" {} ,", t);
  text += "\r\n";
  std::vector<std::string> v(titles.size());
  for (int i = 0; i < 50000; ++i) {
    v = {fmt::format("{:.1f}", 2460.0 + i % 61),
         "2062.7",
         fmt::format("{:.1f}", 56.0 + i % 50 * 0.1),
         fmt::format("{:.1f}", 62.0 + i % 45 * 0.1),
         "47",
         fmt::format("{}", 1546 + i % 4),
         "47",
         "1548",
         fmt::format("{}", 5392 + i % 11),
         fmt::format("{}", 90 + i % 10),
         fmt::format("{}", 90 + i % 9),
         "0",
         fmt::format("{}", i % 4),
         fmt::format("{:.1f}", 100.0 + i % 97 * 0.1),
         fmt::format("{:.1f}", 55.0 + i % 59 * 0.1),
         "47.5",
         "12.0",
         fmt::format("{:.1f}", i % 1000 * 0.1),
         fmt::format("{}", i % 3 == 0 ? 4 : 1),
         fmt::format("{:.4f}", 0.95 + i % 50 * 0.001),
         fmt::format("{:.1f}", 45.0 + i % 100 * 0.1),
         fmt::format("{}", 7122 + i % 21)};
    text += fmt::format("2026-12-{:02d} {:02d}:{:02d}:{:02d} ,", 1 + i / 86400, i / 3600 % 24,
                        i / 60 % 60, i % 60);
    for (size_t k = 0; k < titles.size(); ++k)
      text += fmt::format("{:>{}}   ,", v[k], titles[k].size() - 1);
    text += "\r\n";
  }
  run_load(state, text);
}
BENCHMARK(BM_LoadGpuzAsWritten)->Unit(benchmark::kMillisecond);

// HWiNFO64's log of a whole machine, as tests/data/make_machine_logs.py writes it (Windows-1252,
// d.m.yyyy and h:m:s.ms without leading zeros, 253 columns, the GPU's 9 after the CPU's, drives',
// board's 243): most cells are split and never parsed, as in the logs users have.
void BM_LoadHwinfoMachine(benchmark::State& state) {
  std::vector<std::string> cpu = {"Virtual Memory Committed [MB]",
                                  "Physical Memory Used [MB]",
                                  "Memory Clock [MHz]",
                                  "Total CPU Usage [%]",
                                  "CPU Package Power [W]",
                                  "Motherboard [\xB0"
                                  "C]"};
  for (int core = 0; core < 12; ++core)
    for (const char* what :
         {"Clock (perf #1/1) [MHz]", "T0 Usage [%]", "Power [W]", "VID [V]", "C6 Residency [%]"})
      cpu.push_back(fmt::format("Core {} {}", core, what));
  for (int drive = 0; drive < 3; ++drive)
    for (const char* what :
         {"Read Activity [%]", "Write Activity [%]", "Read Rate [MB/s]", "Write Rate [MB/s]",
          "Drive Temperature [\xB0"
          "C]"})
      cpu.push_back(what);
  for (int i = 0; i < 60; ++i)
    cpu.push_back(
        fmt::format("Temperature {} [\xB0"
                    "C]",
                    i));
  for (int i = 0; i < 100; ++i) cpu.push_back(fmt::format("VIN{} [V]", i));
  std::vector<std::string> gpu = {
      "GPU Temperature [\xB0"
      "C]",
      "GPU Power [W]",
      "GPU Clock [MHz]",
      "GPU Memory Clock [MHz]",
      "GPU Core Load [%]",
      "GPU Memory Controller Load [%]",
      "Performance Limit - Power [Yes/No]",
      "Performance Limit - Thermal [Yes/No]",
      "Total GPU Power [% of TDP] [%]"};
  std::string text = "Date,Time";
  for (const auto* names : {&cpu, &gpu})
    for (const auto& h : *names) text += ",\"" + h + "\"";
  text += ",\r\n";
  for (int i = 0; i < 16000; ++i) {
    const int ms = i * 2000 + 930;
    text += fmt::format("9.1.2026,{}:{}:{}.{}", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60,
                        ms % 1000 / 10);
    text += fmt::format(",{},9446,1800.0,{:.1f},{:.1f},38", 1000 + i % 97, 10 + (i % 31) * 0.7,
                        40 + (i % 23) * 1.3);
    for (size_t c = 6; c < cpu.size(); ++c)
      text += fmt::format(",{:.3f}", 1.0 + static_cast<double>((i * 7 + c * 13) % 400) * 0.011);
    const bool busy = i % 50 < 40;
    text += fmt::format(",{},{:.1f},{},{},{},{},{},No,{:.1f},\r\n", busy ? 66 + i % 3 : 41,
                        busy ? 165.0 + (i % 11) * 0.8 : 17.0, busy ? 1852 - i % 5 * 15 : 210,
                        busy ? 7501 : 405, busy ? 97 + i % 3 : 0, busy ? 40 + i % 4 : 0,
                        busy && i % 4 == 0 ? "Yes" : "No", busy ? 97.0 + (i % 9) * 0.4 : 10.0);
  }
  run_load(state, text);
}
BENCHMARK(BM_LoadHwinfoMachine)->Unit(benchmark::kMillisecond);

// Issue 3's target: a recording of 24 h x 8 GPUs x 1 s read back into memory in < 0.5 s. The file
// (made by `gpudoctor sim healthy,gpus=8,duration=24h,interval=1s -o FILE`) is created once in
// /tmp on first use (one file per schema version), which takes about 10 s.
void BM_ReadRecordingDay(benchmark::State& state) {
  const std::string path = fmt::format("/tmp/gpudoctor-bench-day-v{}.db", kRecordingSchemaVersion);
  if (!std::filesystem::exists(path)) {
    auto spec = sim::parse_sim_spec("healthy,gpus=8,duration=24h,interval=1s");
    const Recording rec =
        sim::simulate_recording(std::move(spec.value()), *gpu_model_by_key("h100-sxm"));
    std::vector<DeviceInfo> devices;
    for (const auto& g : rec.gpus) devices.push_back(g.info);
    auto w = RecordingWriter::create(path, rec.system, devices, rec.source, rec.start_unix_ms);
    if (!w || !w.value()->add_recording(rec) || !w.value()->close()) {
      state.SkipWithError("cannot write the day recording");
      return;
    }
  }
  for (auto _ : state) {
    auto rec = read_recording(path);
    if (!rec) state.SkipWithError(rec.error().message.c_str());
    benchmark::DoNotOptimize(rec);
  }
}
BENCHMARK(BM_ReadRecordingDay)->Unit(benchmark::kMillisecond)->Iterations(3);

// Issue 3's target: `record` at 100 ms on 8 GPUs costs < 1 % of one core. The writer's share:
// 8,192 frames of 8 simulated GPUs (819.2 s at 100 ms: two merges of 4,096 rows per GPU) with a
// commit every 10 frames (every second), then close. `CPU_per_s` is the writer's CPU per second of
// recording; 10 ms of it is 1 % of one core.
void BM_RecordEightGpusAt100ms(benchmark::State& state) {
  auto spec = sim::parse_sim_spec("healthy,gpus=8");
  const auto model = gpu_model_by_key(spec->scenario.model);
  sim::SimSource src(std::move(spec.value()), *model, {});
  src.set_start_unix_ms(1'700'000'000'000);
  std::vector<Frame> frames;
  for (int i = 0; i < 100; ++i) frames.push_back(src.sample_at(i * 0.1));
  const std::string path = "/tmp/gpudoctor-bench-record.db";
  constexpr int kFrames = 8192;
  for (auto _ : state) {
    auto w = RecordingWriter::create(path, src.system(), src.devices(), "sim:healthy",
                                     1'700'000'000'000);
    if (!w) {
      state.SkipWithError(w.error().message.c_str());
      return;
    }
    for (int i = 0; i < kFrames; ++i) {
      Frame& f = frames[static_cast<size_t>(i) % frames.size()];
      f.time_unix_ms = 1'700'000'000'000 + int64_t{100} * i;
      if (!w.value()->add(f) || (i % 10 == 9 && !w.value()->flush())) {
        state.SkipWithError("cannot record");
        return;
      }
    }
    if (!w.value()->close()) state.SkipWithError("cannot close");
  }
  state.counters["CPU_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kFrames / 10,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}
BENCHMARK(BM_RecordEightGpusAt100ms)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
