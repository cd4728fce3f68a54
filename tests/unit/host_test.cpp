// The host side of `gpudoctor run`: /proc parsing and sampling, the environment audit (on a
// made-up /sys tree), step markers, baselines, and their place in recordings and reports.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "host/audit.hpp"
#include "host/markers.hpp"
#include "host/proc.hpp"
#include "report/html_report.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / fmt::format("gd-host-{}-{}", getpid(), name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Proc, ParsesStatWithSpacesAndParenthesesInTheName) {
  const auto p = host::parse_stat(
      "4242 (pt_data_worker (1)) S 4200 4242 4200 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 1 "
      "0 0");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pid, 4242);
  EXPECT_EQ(p->ppid, 4200);
  EXPECT_EQ(p->comm, "pt_data_worker (1)");
  EXPECT_EQ(p->cpu_ticks, 325u);
  EXPECT_FALSE(host::parse_stat("garbage"));
  EXPECT_FALSE(host::parse_stat("12 (x) S"));
}

TEST(Proc, ProcessTreeAndSamplerSeeABusyChild) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A grandchild burning CPU, like a DataLoader worker.
    if (fork() == 0) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      volatile unsigned long x = 0;
      while (std::chrono::steady_clock::now() < end) x = x + 1;
      _exit(0);
    }
    pause();
    _exit(0);
  }
  // Wait for the worker to exist (the machine may be busy).
  for (int i = 0; i < 200 && host::process_tree(child).size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  host::JobSampler sampler(child);
  (void)sampler.sample(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const HostSample h = sampler.sample(0.6);
  const auto tree = host::process_tree(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GE(tree.size(), 2u);  // the child and its busy worker
  EXPECT_EQ(h.job_processes, 2);
  EXPECT_GT(h.job_cpu_cores, 0.05);  // the worker spins (on a loaded machine, not a whole core)
  EXPECT_LE(h.job_cpu_cores, 2.5);
  EXPECT_FALSE(std::isnan(h.cpu_pct));
  EXPECT_GE(sampler.pids_seen().size(), 2u);
}

TEST(Audit, FlagsTheSettingsThatLeaveGpusWaiting) {
  const fs::path sys = temp_dir("sys");
  write(sys / "devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
  write(sys / "devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
  write(sys / "bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
  write(sys / "devices/system/node/node1/cpulist", "8-15\n");
  host::AuditInput in;
  in.sys = sys.string();
  in.env = {{"CUDA_LAUNCH_BLOCKING", "1"}, {"NCCL_P2P_DISABLE", "1"}, {"OMP_NUM_THREADS", "8"}};
  in.cores = 4;
  in.cpus = {0, 1, 2, 3};
  in.gpus = 2;
  in.gpu_pci_bus_ids = {"00000000:3B:00.0"};
  std::map<std::string, std::string> got;
  for (const auto& a : host::audit_environment(in)) got[a.code] = a.level;
  EXPECT_EQ(got["cuda_launch_blocking"], "fail");
  EXPECT_EQ(got["nccl_p2p_disable"], "warn");
  EXPECT_EQ(got["nccl_settings"], "info");
  EXPECT_EQ(got["omp_oversubscribed"], "warn");
  EXPECT_EQ(got["few_cores_per_gpu"], "warn");
  EXPECT_EQ(got["cpu_governor"], "warn");
  EXPECT_EQ(got["numa_affinity"], "warn");

  // A well-set machine: nothing to say.
  write(sys / "devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  write(sys / "devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
  in.env = {{"OMP_NUM_THREADS", "8"}};
  in.cores = 32;
  in.cpus = {8, 9, 10};
  EXPECT_TRUE(host::audit_environment(in).empty());
  fs::remove_all(sys);
}

// 'powersave' pins the lowest clock only under a generic cpufreq driver; under intel_pstate or
// amd-pstate-epp (active mode) it is the default and scales, unless the preference is 'power'.
TEST(Audit, PowersaveGovernorDependsOnTheDriver) {
  const fs::path sys = temp_dir("sys-gov");
  const fs::path cpu0 = sys / "devices/system/cpu/cpu0/cpufreq";
  write(cpu0 / "scaling_governor", "powersave\n");
  host::AuditInput in;
  in.sys = sys.string();
  in.env = {{"OMP_NUM_THREADS", "8"}};
  in.cores = 32;
  in.cpus = {0};
  auto governor = [&]() -> std::string {
    for (const auto& a : host::audit_environment(in))
      if (a.code == "cpu_governor") return a.level + ": " + a.message;
    return "";
  };
  write(cpu0 / "scaling_driver", "acpi-cpufreq\n");
  EXPECT_NE(governor().find("warn: CPU frequency governor 'powersave'"), std::string::npos);
  write(cpu0 / "scaling_driver", "intel_pstate\n");
  write(cpu0 / "energy_performance_preference", "balance_performance\n");
  EXPECT_EQ(governor(), "");
  write(cpu0 / "energy_performance_preference", "power\n");
  EXPECT_NE(governor().find("warn: energy-performance preference 'power'"), std::string::npos);
  write(cpu0 / "scaling_driver", "amd-pstate-epp\n");
  EXPECT_NE(governor().find("preference 'power'"), std::string::npos);
  fs::remove_all(sys);
}

TEST(Audit, CpuLists) {
  EXPECT_EQ(host::parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(host::parse_cpu_list("3-1").empty());
  EXPECT_TRUE(host::parse_cpu_list("x").empty());
}

TEST(Markers, ProtocolAndStepStatistics) {
  const int64_t start = 1'700'000'000'000;
  EXPECT_FALSE(host::parse_marker("hello", start));
  EXPECT_FALSE(host::parse_marker("1700000001.0 jump", start));
  EXPECT_FALSE(host::parse_marker("1700000001.0 step_end samples=-3", start));
  const auto m = host::parse_marker("1700000001.5 step_end samples=64", start);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->time_s, 1.5);
  EXPECT_EQ(m->samples, 64);

  const fs::path dir = temp_dir("markers");
  const fs::path file = dir / "m.txt";
  host::MarkerReader reader(file.string());
  std::vector<StepMarker> got;
  {
    std::ofstream out(file);
    for (int i = 0; i < 10; ++i) {
      const double t0 = 1'700'000'001.0 + i * 0.5;
      out << fmt::format("{:.3f} step_start\n{:.3f} data_ready\n{:.3f} step_end samples=32\n", t0,
                         t0 + 0.2, t0 + 0.5);
    }
    out << "1700000010.0 step_st";  // a line still being written
  }
  reader.poll(start, got);
  EXPECT_EQ(got.size(), 30u);
  { std::ofstream(file, std::ios::app) << "art\nnot a marker\n"; }
  reader.poll(start, got);
  EXPECT_EQ(got.size(), 31u);
  EXPECT_EQ(reader.bad_lines(), 1u);
  got.pop_back();  // a step_start without its end
  const auto s = host::step_stats(got);
  EXPECT_EQ(s.steps, 10u);
  EXPECT_NEAR(s.mean_step_s, 0.5, 1e-6);
  EXPECT_NEAR(s.mean_wait_s, 0.2, 1e-6);
  EXPECT_NEAR(s.mean_compute_s, 0.3, 1e-6);
  EXPECT_NEAR(s.throughput, 320.0 / 5.0, 1e-6);
  fs::remove_all(dir);
}

TEST(Baseline, DropsOfMoreThanTwentyPercentAreRegressions) {
  Baseline was{"resnet", "", "", 1, 380.0, 0.8, 1200.0, 0.1};
  Baseline now{"", "", "", 4, 200.0, 0.7, 3000.0, 0.1};
  const auto c = compare_to_baseline(was, now);
  ASSERT_EQ(c.regressions.size(), 1u);
  EXPECT_EQ(c.regressions[0].metric, "mean_power_w");
  EXPECT_NEAR(c.regressions[0].drop, 180.0 / 380, 1e-9);
  ASSERT_TRUE(c.scaling_efficiency);
  EXPECT_NEAR(*c.scaling_efficiency, 3000.0 / (4 * 1200), 1e-9);  // 62.5 %

  const fs::path dir = temp_dir("baselines");
  setenv("GPUDOCTOR_BASELINE_DIR", dir.c_str(), 1);
  auto path = save_baseline(was);
  ASSERT_TRUE(path) << path.error().message;
  auto back = load_baseline("resnet");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->mean_power_w, 380.0);
  EXPECT_EQ(back->throughput, 1200.0);
  EXPECT_EQ(list_baselines(), std::vector<std::string>{"resnet"});
  auto missing = load_baseline("nope");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("saved: resnet"), std::string::npos);
  Baseline bad = was;
  bad.name = "../escape";
  EXPECT_FALSE(save_baseline(bad));
  // A hand-edited file with the wrong types: an error or the fields that fit, never a throw.
  std::ofstream(dir / "edited.json") << R"({"name": 7, "gpus": "four", "mean_power_w": "x"})";
  auto edited = load_baseline("edited");
  ASSERT_FALSE(edited);
  EXPECT_NE(edited.error().message.find("\"gpus\" is not a count"), std::string::npos);
  std::ofstream(dir / "edited.json") << R"({"name": 7, "gpus": 2, "mean_power_w": "x"})";
  edited = load_baseline("edited");
  ASSERT_TRUE(edited) << edited.error().message;
  EXPECT_EQ(edited->name, "edited");
  EXPECT_EQ(edited->gpus, 2);
  EXPECT_FALSE(edited->mean_power_w);
  unsetenv("GPUDOCTOR_BASELINE_DIR");
  fs::remove_all(dir);
}

Recording run_recording() {
  Recording rec;
  rec.source = "run: test";
  rec.start_unix_ms = 1'700'000'000'000;
  rec.command = {"python", "train.py", "--lr", "3e-4 <&>"};
  rec.audit.push_back({"warn", "cpu_governor", "governor powersave", "use performance"});
  rec.host.emplace();
  rec.host->cores = 8;
  GpuSeries g;
  g.info.name = "NVIDIA A100-SXM4-80GB";
  for (int i = 0; i < 300; ++i) {
    const bool busy = i % 4 < 2;
    const size_t k = g.append_row(i);
    g.column_for_write(Field::kUtilGpu)[k] = busy ? 100 : 0;
    g.column_for_write(Field::kPower)[k] = busy ? 330 : 90;
    g.column_for_write(Field::kPowerLimitDefault)[k] = 400;
    HostSample h;
    h.time_s = i;
    h.cpu_pct = 97, h.iowait_pct = 1, h.job_cpu_cores = 7.8, h.job_processes = 9;
    rec.host->samples.push_back(h);
  }
  rec.gpus.push_back(std::move(g));
  for (int i = 0; i < 20; ++i) {
    rec.markers.push_back({i * 2.0, "step_start", kMissing});
    rec.markers.push_back({i * 2.0 + 1.5, "data_ready", kMissing});
    rec.markers.push_back({i * 2.0 + 2.0, "step_end", 64});
  }
  return rec;
}

TEST(Run, HostEvidenceBacksDataStarvation) {
  const Diagnosis d = diagnose(run_recording());
  ASSERT_TRUE(d.verdict);
  EXPECT_EQ(cause_code(*d.verdict), "data_starvation");
  const auto& f = d.findings.at(0);
  EXPECT_EQ(f.evidence["host_bound"], "cpu");
  EXPECT_NEAR(f.evidence["job_cpu_cores"].get<double>(), 7.8, 0.01);
  EXPECT_NE(f.summary.find("kept 7.8 of 8 CPU cores busy: the input pipeline is CPU-bound"),
            std::string::npos)
      << f.summary;
}

TEST(Run, RecordingKeepsCommandHostMarkersAndAudit) {
  const Recording rec = run_recording();
  const fs::path dir = temp_dir("store");
  const std::string path = (dir / "run.db").string();
  {
    std::vector<DeviceInfo> devices = {rec.gpus[0].info};
    auto w = RecordingWriter::create(path, rec.system, devices, rec.source, rec.start_unix_ms);
    ASSERT_TRUE(w) << w.error().message;
    ASSERT_TRUE(w.value()->add_recording(rec));
    ASSERT_TRUE(w.value()->close());
  }
  auto back = read_recording(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->command, rec.command);
  ASSERT_TRUE(back->host);
  EXPECT_EQ(back->host->cores, 8);
  ASSERT_EQ(back->host->samples.size(), 300u);
  EXPECT_EQ(back->host->samples[5].job_cpu_cores, 7.8);
  EXPECT_EQ(back->host->samples[5].time_s, 5);
  ASSERT_EQ(back->markers.size(), 60u);
  EXPECT_EQ(back->markers[2].event, "step_end");
  EXPECT_EQ(back->markers[2].samples, 64);
  ASSERT_EQ(back->audit.size(), 1u);
  EXPECT_EQ(back->audit[0].code, "cpu_governor");
  fs::remove_all(dir);
}

TEST(Run, HtmlReportIsSelfContainedAndEscaped) {
  const Recording rec = run_recording();
  const Diagnosis d = diagnose(rec);
  const std::string html = render_html_report(rec, d);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Verdict: Data starvation"), std::string::npos);
  EXPECT_NE(html.find("python train.py --lr 3e-4 &lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(html.find("<h2>Steps</h2>"), std::string::npos);
  EXPECT_NE(html.find("waiting for data"), std::string::npos);
  EXPECT_NE(html.find("governor powersave"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  // It opens with where the GPU time went and the GPU's power over the run
  // (tests/unit/html_report_test.cpp checks the bar's numbers).
  EXPECT_LT(html.find("Verdict:"), html.find("<h2>Where the GPU time went</h2>"));
  EXPECT_NE(html.find("data-part=\"working\""), std::string::npos);
  EXPECT_LT(html.find("<h2>Where the GPU time went</h2>"), html.find("<h2>The GPU over time</h2>"));
  EXPECT_LT(html.find("aria-label=\"Power over the run\""), html.find("<h2>GPUs</h2>"));
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing fetched from the network
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
