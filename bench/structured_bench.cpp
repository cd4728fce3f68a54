// Read speed of the readers of other tools' logs on 8 GPUs x 2,000 samples written in memory the
// way each tool writes them: the structured readers (formats/json_samples, wandb, prom_text), the
// table snapshots (nvidia-smi, nvitop), dmon and DCGM, and the framing variants of the column
// catalogue (Afterburner, key: value blocks, gpustat, whitespace tables). bench/RESULTS.md compares
// them with BM_ReadSmiCsv (bench/sample_bench.cpp) in the same run.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "reader_counters.hpp"

#include "formats/dcgm.hpp"
#include "formats/dmon.hpp"
#include "formats/json_samples.hpp"
#include "formats/prom_text.hpp"
#include "formats/smi_table.hpp"
#include "formats/text_layouts.hpp"
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

// Values of sample i, GPU g: utilisation, power, memory used (MiB), temperature, SM clock.
int util_of(int i, int g) {
  return 90 + (i + g) % 10;
}
int power_of(int i, int g) {
  return 300 + (i * 7 + g) % 100;
}
int mem_of(int i, int g) {
  return 60000 + (i * 13 + g) % 2000;
}
int temp_of(int i, int g) {
  return 60 + (i + g) % 8;
}
// "Sun Dec  1 10:00:00 2024" style date lines, one second per sample.
std::string date_line(int i) {
  return fmt::format("Tue Dec {:2} {:02}:{:02}:{:02} 2026", 1 + i / 86400, 10 + i / 3600 % 24,
                     i / 60 % 60, i % 60);
}

// `nvidia-smi -l 1` (R535 layout), 8 GPUs and a process on each.
std::string smi_table() {
  std::string out;
  for (int i = 0; i < kSamples; ++i) {
    out += date_line(i) +
           "\n+------------------------------------------------------------------------------------"
           "---+\n"
           "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2    "
           " |\n"
           "|-----------------------------------------+----------------------+---------------------"
           "-+\n"
           "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. "
           "ECC |\n"
           "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute "
           "M. |\n"
           "|                                         |                      |               MIG "
           "M. |\n"
           "|=========================================+======================+====================="
           "=|\n";
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          "|   {}  NVIDIA H100 80GB HBM3          On  | 00000000:{:02X}:00.0 Off |                 "
          "   0 |\n"
          "| N/A   {}C    P0             {}W / 700W |  {}MiB / 81559MiB |     {}%      Default |\n"
          "|                                         |                      |             Disabled "
          "|\n"
          "+-----------------------------------------+----------------------+----------------------"
          "+\n",
          g, 0x18 + g * 0x10, temp_of(i, g), power_of(i, g), mem_of(i, g), util_of(i, g));
    out +=
        "\n+---------------------------------------------------------------------------------------"
        "+\n"
        "| Processes:                                                                            "
        "|\n"
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory "
        "|\n"
        "|        ID   ID                                                             Usage      "
        "|\n"
        "|=======================================================================================|"
        "\n";
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          "|    {}   N/A  N/A   {}      C   /usr/bin/python                           {}MiB |\n", g,
          3375095 + g, mem_of(i, g) - 20);
    out +=
        "+---------------------------------------------------------------------------------------+"
        "\n";
  }
  return out;
}

// `while true; do nvitop -1; sleep 1; done` at 79 columns, 8 GPUs and a process on each.
std::string nvitop_loop() {
  std::string out;
  for (int i = 0; i < kSamples; ++i) {
    out += date_line(i) +
           "\n╒═════════════════════════════════════════════════════════════════════════════╕\n"
           "│ NVITOP 1.3.2       Driver Version: 550.54.14      CUDA Driver Version: 12.4 │\n"
           "├───────────────────────────────┬──────────────────────┬──────────────────────┤\n"
           "│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ MIG M.   Uncorr. ECC │\n"
           "│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │\n"
           "╞═══════════════════════════════╪══════════════════════╪══════════════════════╡\n";
    for (int g = 0; g < kGpus; ++g) {
      if (g > 0)
        out += "├───────────────────────────────┼──────────────────────┼──────────────────────┤\n";
      out += fmt::format(
          "│   {}  H100 80GB HBM3        On │ 00000000:{:02X}:00.0 Off │ Disabled           0 │\n"
          "│ N/A   {}C    P0   {}W / 700W │  {:.2f}GiB / 79.65GiB │     {}%      Default │\n",
          g, 0x18 + g * 0x10, temp_of(i, g), power_of(i, g), mem_of(i, g) / 1024.0, util_of(i, g));
    }
    out +=
        "╘═══════════════════════════════╧══════════════════════╧══════════════════════╛\n"
        "[ CPU: █████▍ 18.4%     UPTIME: 3.2 days ]  ( Load Average:  2.31  2.20  2.05 )\n"
        "[ MEM: ████████████▏ 41.7%               ]  [ SWP: ▏ 0.0%                     ]\n"
        "\n╒═════════════════════════════════════════════════════════════════════════════╕\n"
        "│ Processes:                                                    alice@node-17 │\n"
        "│ GPU     PID      USER  GPU-MEM %SM %GMBW  %CPU  %MEM     TIME  COMMAND      │\n"
        "╞═════════════════════════════════════════════════════════════════════════════╡\n";
    for (int g = 0; g < kGpus; ++g) {
      if (g > 0)
        out += "├─────────────────────────────────────────────────────────────────────────────┤\n";
      out += fmt::format(
          "│   {}  {} C   alice {:.2f}GiB  97    41 100.3   2.1  1:02:17  python tr..  │\n", g,
          731942 + g, mem_of(i, g) / 1024.0 - 0.02);
    }
    out += "╘═════════════════════════════════════════════════════════════════════════════╛\n";
  }
  return out;
}

// `nvidia-smi dmon -s pucm -o DT`.
std::string dmon_log() {
  std::string out =
      "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk  "
      "   fb   bar1\n"
      "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    MHz  "
      "   MB     MB\n";
  for (int i = 0; i < kSamples; ++i)
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          " 20261201   {:02}:{:02}:{:02}    {:>3}  {:>5}  {:>5}      -  {:>5}  {:>5}      0      0 "
          "  2619   1980  {:>5}      4\n",
          10 + i / 3600, i / 60 % 60, i % 60, g, power_of(i, g), temp_of(i, g), util_of(i, g),
          30 + (i + g) % 20, mem_of(i, g));
  return out;
}

// `dcgmi dmon -e 155,150,203,252,1002,1005 -d 1000`.
std::string dcgmi_dmon_log() {
  std::string out =
      "#Entity   POWER             TMPTR        GPUTL        FBUSD        SMACT        DRAMA       "
      "\n"
      "ID        W                 C                         MB                                    "
      "\n";
  for (int i = 0; i < kSamples; ++i)
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format("GPU {}     {:<17.3f} {:<12} {:<12} {:<12} {:<12.3f} {:<12.3f}\n", g,
                         power_of(i, g) + 0.125, temp_of(i, g), util_of(i, g), mem_of(i, g),
                         util_of(i, g) / 100.0 - 0.05, 0.3 + g * 0.01);
  return out;
}

// DCGM's field dump (dcgmi / a DCGM sample program): one line per GPU, field and time.
std::string dcgm_dump() {
  std::string out = "GPUId,TimeStampUs,Field,Values\n";
  for (int i = 0; i < kSamples; ++i)
    for (int g = 0; g < kGpus; ++g) {
      const int64_t us = 1764583200000000 + int64_t{i} * 1000000 + g * 120;
      out += fmt::format("{},{},155,{:.3f}\n{},{},150,{}\n{},{},203,{}\n{},{},252,{}\n", g, us,
                         power_of(i, g) + 0.125, g, us + 10, temp_of(i, g), g, us + 20,
                         util_of(i, g), g, us + 30, mem_of(i, g));
    }
  return out;
}

// MSI Afterburner's .hml of one GPU, 16,000 data lines (as many values as the others hold).
std::string afterburner_log() {
  std::string out =
      "00, 01-12-2026 10:00:00, Hardware monitoring log v1.6\n"
      "01, 01-12-2026 10:00:00, NVIDIA GeForce RTX 4090\n"
      "02, 01-12-2026 10:00:00, GPU temperature, GPU usage, FB usage, Memory usage, Core clock, "
      "Memory clock, Power, Power percent, Power limit, Temp limit, Voltage limit, No load limit\n"
      "03, GPU temperature, \xC2\xB0"
      "C, 0.000, 100.000, 0, 0, 0, 0\n"
      "03, GPU usage, %, 0.000, 100.000, 0, 0, 0, 0\n"
      "03, Memory usage, MB, 0.000, 24576.000, 0, 0, 0, 0\n"
      "03, Core clock, MHz, 0.000, 3000.000, 0, 0, 0, 0\n"
      "03, Power, W, 0.000, 500.000, 0, 0, 0, 0\n";
  for (int i = 0; i < kSamples * kGpus; ++i)
    out += fmt::format(
        "80, {:02}-12-2026 {:02}:{:02}:{:02}, {:.3f}, {:.3f}, {:.3f}, {:.3f}, {:.3f}, 10501.000, "
        "{:.3f}, {:.3f}, {}, 0.000, 0.000, 0.000\n",
        1 + i / 86400, 10 + i / 3600 % 14, i / 60 % 60, i % 60, 60.0 + i % 8, 90.0 + i % 10,
        40.0 + i % 9, 20000.0 + i % 500, 2520.0 - i % 30, 300.0 + i % 100, 70.0 + i % 25,
        i % 7 == 0 ? "1.000" : "0.000");
  return out;
}

// A GPUtil logger's key: value blocks.
std::string kv_blocks() {
  std::string out;
  for (int i = 0; i < kSamples; ++i) {
    out +=
        fmt::format("=== 2026-12-01 {:02}:{:02}:{:02} ===\n", 10 + i / 3600, i / 60 % 60, i % 60);
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          "GPU {}: NVIDIA GeForce RTX 3090\n  GPU Load: {}%\n  Memory Used: {}MB / 24576MB\n"
          "  Temperature: {}.0 C\n",
          g, util_of(i, g), mem_of(i, g) - 40000, temp_of(i, g));
    out += '\n';
  }
  return out;
}

// `gpustat --show-power` in a loop.
std::string gpustat_log() {
  std::string out;
  for (int i = 0; i < kSamples; ++i) {
    out += fmt::format("node-07                  {}  535.104.05\n", date_line(i));
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          "[{}] NVIDIA A100-SXM4-80GB | {}\xC2\xB0"
          "C,  {} %,  {} / 400 W | {} / 81920 MB | alice({}M)\n",
          g, temp_of(i, g), util_of(i, g), power_of(i, g) - 50, mem_of(i, g), mem_of(i, g) - 100);
  }
  return out;
}

// A home-made monitor's whitespace table.
std::string ws_table() {
  std::string out =
      "GPU monitor (pynvml) started on node-3, interval 1 s\n"
      "==========================================================================\n"
      "Time                 GPU  GPU Util(%)  Mem Util(%)  Mem Used(MiB)  Power(W)  SM Clock(MHz)\n"
      "--------------------------------------------------------------------------\n";
  for (int i = 0; i < kSamples; ++i)
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format("2026-12-01 {:02}:{:02}:{:02}  {}    {:<12} {:<12} {:<14} {:<9.1f} {}\n",
                         10 + i / 3600, i / 60 % 60, i % 60, g, util_of(i, g), 30 + (i + g) % 20,
                         mem_of(i, g), power_of(i, g) + 0.5, 1980 - (i % 3) * 15);
  return out;
}

// json.dump(samples): an array of one object per GPU and sample.
std::string json_array() {
  std::string out = "[";
  for (int i = 0; i < kSamples; ++i)
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          "{}{{\"time\": \"2026-12-01 {:02}:{:02}:{:02}\", \"gpu\": {}, \"util\": {}, \"power_w\": "
          "{:.1f}, \"mem_used_mib\": {}, \"temp\": {}, \"sm_clock_mhz\": 1980}}",
          i == 0 && g == 0 ? "" : ", ", 10 + i / 3600, i / 60 % 60, i % 60, g, util_of(i, g),
          power_of(i, g) + 0.5, mem_of(i, g), temp_of(i, g));
  return out + "]\n";
}

// `gpustat --json` in a loop: one indented object per call, a list of GPUs in each.
std::string gpustat_json_loop() {
  std::string out;
  for (int i = 0; i < kSamples; ++i) {
    out += fmt::format(
        "{{\n    \"hostname\": \"trainer-07\",\n    \"driver_version\": \"535.104.05\",\n    "
        "\"query_time\": \"2026-12-01T{:02}:{:02}:{:02}.123456\",\n    \"gpus\": [\n",
        10 + i / 3600, i / 60 % 60, i % 60);
    for (int g = 0; g < kGpus; ++g)
      out += fmt::format(
          "        {{\n            \"index\": {},\n            \"uuid\": "
          "\"GPU-0a1b2c3d-0000-4000-8000-00000000000{}\",\n            \"name\": \"NVIDIA "
          "A100-SXM4-80GB\",\n            \"temperature.gpu\": {},\n            \"fan.speed\": "
          "null,\n            \"utilization.gpu\": {},\n            \"power.draw\": {},\n         "
          "   \"enforced.power.limit\": 400,\n            \"memory.used\": {},\n            "
          "\"memory.total\": 81920,\n            \"processes\": []\n        }}{}\n",
          g, g, temp_of(i, g), util_of(i, g), power_of(i, g) - 50, mem_of(i, g),
          g + 1 < kGpus ? "," : "");
    out += "    ]\n}\n";
  }
  return out;
}

template <class Read>
void run(benchmark::State& state, const std::string& text, Read read, size_t gpus = kGpus) {
  Recording last;
  for (auto _ : state) {
    auto r = read(text);
    if (!r.ok() || r.value().gpus.size() != gpus) {
      state.SkipWithError(r.ok() ? "wrong number of GPUs" : r.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(r);
    last = std::move(r.value());
  }
  bench::set_reader_counters(state, text.size(), last);
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

namespace {

void BM_ReadSmiTable(benchmark::State& state) {
  run(state, smi_table(), [](const std::string& t) { return read_smi_table(t, "b", {}); });
}
BENCHMARK(BM_ReadSmiTable)->Unit(benchmark::kMillisecond);

void BM_ReadNvitopLoop(benchmark::State& state) {
  run(state, nvitop_loop(), [](const std::string& t) { return read_smi_table(t, "b", {}); });
}
BENCHMARK(BM_ReadNvitopLoop)->Unit(benchmark::kMillisecond);

void BM_ReadDmon(benchmark::State& state) {
  run(state, dmon_log(), [](const std::string& t) { return read_dmon(t, "b", {}); });
}
BENCHMARK(BM_ReadDmon)->Unit(benchmark::kMillisecond);

void BM_ReadDcgmiDmon(benchmark::State& state) {
  run(state, dcgmi_dmon_log(), [](const std::string& t) { return read_dcgmi_dmon(t, "b", {}); });
}
BENCHMARK(BM_ReadDcgmiDmon)->Unit(benchmark::kMillisecond);

void BM_ReadDcgmDump(benchmark::State& state) {
  run(state, dcgm_dump(), [](const std::string& t) { return read_dcgm_long(t, "b", {}); });
}
BENCHMARK(BM_ReadDcgmDump)->Unit(benchmark::kMillisecond);

void BM_ReadAfterburner(benchmark::State& state) {
  run(
      state, afterburner_log(), [](const std::string& t) { return read_afterburner(t, "b", {}); },
      1);
}
BENCHMARK(BM_ReadAfterburner)->Unit(benchmark::kMillisecond);

void BM_ReadKeyValueBlocks(benchmark::State& state) {
  run(state, kv_blocks(), [](const std::string& t) { return read_key_value_blocks(t, "b", {}); });
}
BENCHMARK(BM_ReadKeyValueBlocks)->Unit(benchmark::kMillisecond);

void BM_ReadGpustat(benchmark::State& state) {
  run(state, gpustat_log(), [](const std::string& t) { return read_gpustat(t, "b", {}); });
}
BENCHMARK(BM_ReadGpustat)->Unit(benchmark::kMillisecond);

void BM_ReadWsTable(benchmark::State& state) {
  run(state, ws_table(), [](const std::string& t) { return read_ws_table(t, "b", {}); });
}
BENCHMARK(BM_ReadWsTable)->Unit(benchmark::kMillisecond);

void BM_ReadJsonArray(benchmark::State& state) {
  run(state, json_array(), [](const std::string& t) { return read_json_samples(t, "b", {}); });
}
BENCHMARK(BM_ReadJsonArray)->Unit(benchmark::kMillisecond);

void BM_ReadGpustatJsonLoop(benchmark::State& state) {
  run(state, gpustat_json_loop(),
      [](const std::string& t) { return read_json_samples(t, "b", {}); });
}
BENCHMARK(BM_ReadGpustatJsonLoop)->Unit(benchmark::kMillisecond);

}  // namespace
