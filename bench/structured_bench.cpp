// Read speed of the structured readers (formats/json_samples, wandb, prom_text) on 8 GPUs x
// 2,000 samples written in memory the way each tool writes them.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "formats/json_samples.hpp"
#include "formats/prom_text.hpp"
#include "formats/wandb.hpp"

namespace {

using namespace gpudoctor;

constexpr int kGpus = 8, kSamples = 2000;

// W&B's per-GPU system metrics for one sample, as (key, JSON value) pairs.
template <class F>
void wandb_items(int i, F&& emit) {
  for (int g = 0; g < kGpus; ++g) {
    emit(fmt::format("gpu.{}.gpu", g), fmt::format("{}", 90 + (i + g) % 10));
    emit(fmt::format("gpu.{}.memory", g), fmt::format("{}", 30 + (i + g) % 20));
    emit(fmt::format("gpu.{}.memoryAllocated", g), "52.25");
    emit(fmt::format("gpu.{}.temp", g), fmt::format("{}", 60 + g));
    emit(fmt::format("gpu.{}.powerWatts", g), fmt::format("{:.3f}", 300.0 + (i * 7 + g) % 100));
    emit(fmt::format("gpu.{}.enforcedPowerLimitWatts", g), "400.0");
    emit(fmt::format("gpu.{}.powerPercent", g), fmt::format("{:.2f}", 75.0 + (i % 25)));
    emit(fmt::format("gpu.{}.smClock", g), "1980");
    emit(fmt::format("gpu.{}.memoryClock", g), "1593");
  }
}

std::string events_jsonl() {
  std::string out;
  for (int i = 0; i < kSamples; ++i) {
    out += '{';
    wandb_items(i, [&](const std::string& k, const std::string& v) {
      out += fmt::format("\"system.{}\": {}, ", k, v);
    });
    out += fmt::format("\"_wandb\": true, \"_timestamp\": {:.3f}, \"_runtime\": {}}}\n",
                       1733047200.0 + i * 15, i * 15);
  }
  return out;
}

std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string field(int number, const std::string& data) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(data.size()) + data;
}
std::string field(int number, uint64_t value) {
  return varint(static_cast<uint64_t>(number) << 3) + varint(value);
}

// A run file as W&B's datastore writes it (FULL records; FIRST/LAST across block ends).
std::string run_file() {
  std::string out(":W&B\xE1\xBE\x00", 7);
  auto write_record = [&](uint8_t type, const std::string& data) {
    const char t = static_cast<char>(type);
    const uint32_t crc = crc32_ieee(data, crc32_ieee(std::string_view(&t, 1)));
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>(crc >> (8 * b)));
    out.push_back(static_cast<char>(data.size() & 0xff));
    out.push_back(static_cast<char>(data.size() >> 8));
    out.push_back(t);
    out += data;
  };
  for (int i = 0; i < kSamples; ++i) {
    std::string stats = field(1, uint64_t{0}) +
                        field(2, field(1, uint64_t{1733047200} + static_cast<uint64_t>(i) * 15));
    wandb_items(i, [&](const std::string& k, const std::string& v) {
      stats += field(3, field(1, k) + field(16, v));
    });
    std::string rec = field(1, static_cast<uint64_t>(i + 1)) + field(7, stats);
    size_t left = 32768 - out.size() % 32768;
    if (left < 7) {
      out.append(left, '\0');
      left = 32768;
    }
    if (rec.size() + 7 <= left) {
      write_record(1, rec);
    } else {
      write_record(2, rec.substr(0, left - 7));
      write_record(4, rec.substr(left - 7));
    }
  }
  return out;
}

std::string prom_loop() {
  std::string out;
  static const char* names[] = {"DCGM_FI_DEV_GPU_UTIL",    "DCGM_FI_DEV_POWER_USAGE",
                                "DCGM_FI_DEV_SM_CLOCK",    "DCGM_FI_DEV_GPU_TEMP",
                                "DCGM_FI_DEV_FB_USED",     "DCGM_FI_PROF_SM_ACTIVE",
                                "DCGM_FI_PROF_DRAM_ACTIVE"};
  for (int i = 0; i < kSamples; ++i) {
    out += fmt::format("{}\n", 1733047200 + i * 5);
    for (const char* n : names) {
      out += fmt::format("# HELP {} help text\n# TYPE {} gauge\n", n, n);
      for (int g = 0; g < kGpus; ++g)
        out += fmt::format(
            "{}{{gpu=\"{}\",UUID=\"GPU-5d0c7a2e-0000-4000-8000-00000000000{}\",device=\"nvidia{}\","
            "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node7\"}} {}\n",
            n, g, g, g, 50 + (i + g) % 50);
    }
  }
  return out;
}

template <class Read>
void run(benchmark::State& state, const std::string& text, Read read) {
  for (auto _ : state) {
    auto r = read(text);
    if (!r.ok() || r.value().gpus.size() != kGpus) state.SkipWithError("read failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["file_MB"] = static_cast<double>(text.size()) / 1e6;
}

void BM_ReadWandbEventsJsonl(benchmark::State& state) {
  run(state, events_jsonl(), [](const std::string& t) { return read_json_samples(t, "b", {}); });
}
BENCHMARK(BM_ReadWandbEventsJsonl)->Unit(benchmark::kMillisecond);

void BM_ReadWandbRunFile(benchmark::State& state) {
  run(state, run_file(), [](const std::string& t) { return read_wandb_run(t, "b", {}); });
}
BENCHMARK(BM_ReadWandbRunFile)->Unit(benchmark::kMillisecond);

void BM_ReadPromTextLoop(benchmark::State& state) {
  run(state, prom_loop(), [](const std::string& t) { return read_prom_text(t, "b", {}); });
}
BENCHMARK(BM_ReadPromTextLoop)->Unit(benchmark::kMillisecond);

}  // namespace
