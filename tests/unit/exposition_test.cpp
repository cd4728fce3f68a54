// The Prometheus exposition: exact text for a known snapshot in both naming modes, OpenMetrics,
// escaping, NaN and infinities, no family for unsupported fields, format negotiation, locale.
#include <clocale>
#include <cmath>
#include <fstream>
#include <limits>
#include <locale>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "exporter/exposition.hpp"
#include "formats/load.hpp"

namespace gpudoctor {
namespace {

ExportSnapshot small_snapshot() {
  ExportSnapshot s;
  s.system.driver_version = "550.54.15";
  DeviceInfo d;
  d.index = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-0000";
  d.pci_bus_id = "00000000:01:00.0";
  d.architecture = Architecture::kHopper;
  s.devices = {d};
  DeviceSample ds;
  ds[Field::kUtilGpu] = Reading::of(99);
  ds[Field::kEnergy] = Reading::of(1234567);
  ds[Field::kPowerLimitDefault] = Reading::of(700);
  ds[Field::kGpmSmUtil] = Reading::of(45);
  ds[Field::kFan] = Reading::unsupported();
  ds[Field::kTemp] = Reading::error(nvml_code::kTimeout);
  s.frame.devices = {ds};
  GpuAssessment a;
  a.util_pct = 99;
  a.power_ratio = 0.25;
  a.limit_is_default = true;
  a.efficiency = 0.125;
  s.assessments = {a};
  s.memory_churn = {std::nullopt};
  s.findings = {{{Cause::kLaunchOverhead, Severity::kWarning}}};
  s.verdicts = {Cause::kLaunchOverhead};
  s.scrapes = {{"sim", true, 0.25}, {"diagnosis", false, 0.5}};
  s.version = "1.2.3";
  return s;
}

ExportOptions options(bool dcgm) {
  ExportOptions o;
  o.dcgm_names = dcgm;
  o.hostname = "node7";
  return o;
}

const char* kDcgmText =
    R"(# HELP DCGM_FI_DEV_GPU_UTIL GPU-Util: percent of the sample period in which at least one kernel ran (not how busy the SMs were) (in %; DCGM field 203).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 99
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Energy consumed since the driver was loaded; exact average power over any window (Volta and newer) (in mJ; DCGM field 156).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 1234567
# HELP DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF Default power limit of the board (its TDP): the denominator of the efficiency score (in W; DCGM field 163).
# TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF gauge
DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 700
# HELP DCGM_FI_PROF_SM_ACTIVE GPM: SM activity, percent of SM-time with at least one warp resident: the honest 'how busy' (ratio 0-1; DCGM field 1002).
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 0.45
# HELP gpudoctor_power_default_limit_watts Default (board TDP) power limit, in watts.
# TYPE gpudoctor_power_default_limit_watts gauge
gpudoctor_power_default_limit_watts{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7"} 700
# HELP gpudoctor_gpu_info GPU identity: model name, architecture and driver version (always 1).
# TYPE gpudoctor_gpu_info gauge
gpudoctor_gpu_info{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7",model_name="NVIDIA H100 80GB HBM3",architecture="hopper",driver_version="550.54.15"} 1
# HELP gpudoctor_gpu_lost 1 when the GPU fell off the bus (GPU_IS_LOST), else 0.
# TYPE gpudoctor_gpu_lost gauge
gpudoctor_gpu_lost{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7"} 0
# HELP gpudoctor_power_ratio Mean power over the last sampling interval as a share of the default power limit.
# TYPE gpudoctor_power_ratio gauge
gpudoctor_power_ratio{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7"} 0.25
# HELP gpudoctor_efficiency_ratio Efficiency score: power / default limit x SM activity / 100 (power / limit alone where SM activity is not measured). Below 0.6 the GPU is probably loafing.
# TYPE gpudoctor_efficiency_ratio gauge
gpudoctor_efficiency_ratio{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7"} 0.125
# HELP gpudoctor_busy_idle 1 when the GPU is busy but idle: GPU-Util at or above 90 % while power is below 60 % of the default limit.
# TYPE gpudoctor_busy_idle gauge
gpudoctor_busy_idle{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7"} 1
# HELP gpudoctor_verdict The live diagnosis' verdict for the GPU over the window (always 1).
# TYPE gpudoctor_verdict gauge
gpudoctor_verdict{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7",cause="launch_overhead"} 1
# HELP gpudoctor_finding A finding of the live diagnosis over the window that covers the GPU (always 1).
# TYPE gpudoctor_finding gauge
gpudoctor_finding{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7",cause="launch_overhead",severity="warning"} 1
# HELP gpudoctor_scrape_success 1 when the last collection from this source succeeded, else 0.
# TYPE gpudoctor_scrape_success gauge
gpudoctor_scrape_success{source="sim"} 1
gpudoctor_scrape_success{source="diagnosis"} 0
# HELP gpudoctor_scrape_duration_seconds How long the last collection from this source took, in seconds.
# TYPE gpudoctor_scrape_duration_seconds gauge
gpudoctor_scrape_duration_seconds{source="sim"} 0.25
gpudoctor_scrape_duration_seconds{source="diagnosis"} 0.5
# HELP gpudoctor_build_info gpudoctor's version (always 1).
# TYPE gpudoctor_build_info gauge
gpudoctor_build_info{version="1.2.3"} 1
)";

TEST(Exposition, ExactTextWithDcgmNames) {
  EXPECT_EQ(render_metrics(small_snapshot(), options(true), ExpositionFormat::kPrometheusText),
            kDcgmText);
}

TEST(Exposition, OwnNamesInCatalogueUnits) {
  const std::string out =
      render_metrics(small_snapshot(), options(false), ExpositionFormat::kPrometheusText);
  const std::string labels =
      R"({gpu="0",UUID="GPU-0000",pci_bus_id="00000000:01:00.0",device="nvidia0",Hostname="node7"})";
  EXPECT_NE(out.find("# TYPE gpudoctor_gpu_utilization_percent gauge\n"
                     "gpudoctor_gpu_utilization_percent" +
                     labels + " 99\n"),
            std::string::npos)
      << out;
  // Energy in joules, Prometheus' base unit; SM activity in percent as the catalogue has it.
  EXPECT_NE(out.find("# TYPE gpudoctor_energy_joules_total counter\n"
                     "gpudoctor_energy_joules_total" +
                     labels + " 1234.567\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gpudoctor_gpm_sm_utilization_percent" + labels + " 45\n"), std::string::npos);
  EXPECT_EQ(out.find("DCGM_"), std::string::npos);
  EXPECT_EQ(out.find("modelName"), std::string::npos);
  // The default limit is a field family here: once, not twice.
  EXPECT_EQ(out.find("# TYPE gpudoctor_power_default_limit_watts"),
            out.rfind("# TYPE gpudoctor_power_default_limit_watts"));
}

TEST(Exposition, NoFamilyForUnsupportedOrMissingFields) {
  const std::string out =
      render_metrics(small_snapshot(), options(true), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(out.find("FAN_SPEED"), std::string::npos);    // not supported
  EXPECT_EQ(out.find("GPU_TEMP"), std::string::npos);     // an error this sample
  EXPECT_EQ(out.find("POWER_USAGE"), std::string::npos);  // no data
  EXPECT_EQ(out.find("clock_event_reason"), std::string::npos);
  EXPECT_EQ(out.find("gpudoctor_compute_processes"), std::string::npos);
}

TEST(Exposition, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  // Bytes that are no UTF-8 (a process name NVML cut mid-character, or any byte a process
  // chose) become U+FFFD: Prometheus refuses the whole scrape over one invalid label value.
  EXPECT_EQ(escape_label_value("ab\xff\xe6\x97"), "ab\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(escape_label_value("\xe6\x97\xa5本"), "\xe6\x97\xa5本");
  ExportSnapshot s = small_snapshot();
  s.devices[0].name = "Odd \"GPU\" \\ with\nnewline";
  const std::string out = render_metrics(s, options(true), ExpositionFormat::kPrometheusText);
  EXPECT_NE(out.find(R"(modelName="Odd \"GPU\" \\ with\nnewline")"), std::string::npos) << out;
  // Every sample line is one line: no raw newline leaked from a label.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(line.rfind("# ", 0) == 0 || line.rfind("DCGM_", 0) == 0 ||
                line.rfind("gpudoctor_", 0) == 0)
        << line;
}

TEST(Exposition, NanAndInfinities) {
  EXPECT_EQ(format_sample_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_sample_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_sample_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_sample_value(-0.0), "0");
  EXPECT_EQ(format_sample_value(1e21), "1e+21");
  EXPECT_EQ(format_sample_value(0.1), "0.1");
  EXPECT_EQ(format_sample_value(-2.5), "-2.5");
  ExportSnapshot s = small_snapshot();
  s.frame.devices[0][Field::kUtilGpu] = Reading::of(std::numeric_limits<double>::quiet_NaN());
  s.frame.devices[0][Field::kPowerLimitDefault] =
      Reading::of(std::numeric_limits<double>::infinity());
  const std::string out = render_metrics(s, options(true), ExpositionFormat::kPrometheusText);
  EXPECT_NE(out.find("Hostname=\"node7\"} NaN\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Hostname=\"node7\"} +Inf\n"), std::string::npos) << out;
}

TEST(Exposition, OpenMetrics) {
  const std::string out =
      render_metrics(small_snapshot(), options(false), ExpositionFormat::kOpenMetrics);
  ASSERT_GE(out.size(), 6u);
  EXPECT_EQ(out.substr(out.size() - 6), "# EOF\n");
  // Counters: the family without _total, the sample with it.
  EXPECT_NE(out.find("# TYPE gpudoctor_energy_joules counter\ngpudoctor_energy_joules_total{"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("# TYPE gpudoctor_build info\ngpudoctor_build_info{"), std::string::npos);
  EXPECT_NE(out.find("# TYPE gpudoctor_gpu info\ngpudoctor_gpu_info{"), std::string::npos);
  // DCGM's energy counter has no _total: OpenMetrics can only call it unknown.
  const std::string dcgm =
      render_metrics(small_snapshot(), options(true), ExpositionFormat::kOpenMetrics);
  EXPECT_NE(dcgm.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"), std::string::npos);
}

TEST(Exposition, NegotiatesTheFormat) {
  EXPECT_EQ(negotiate_format(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("*/*"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain;version=0.0.4"), ExpositionFormat::kPrometheusText);
  // What Prometheus 2.x sends.
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,application/"
                             "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
                             "*/*;q=0.1"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format("application/openmetrics-text; q=0, text/plain"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=0.0"),
            ExpositionFormat::kPrometheusText);
  EXPECT_NE(content_type(ExpositionFormat::kOpenMetrics).find("application/openmetrics-text"),
            std::string_view::npos);
  EXPECT_EQ(content_type(ExpositionFormat::kPrometheusText),
            "text/plain; version=0.0.4; charset=utf-8");
}

// A locale whose decimal point is a comma, as de_DE has.
struct CommaPoint : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
};

TEST(Exposition, NumbersDoNotDependOnTheLocale) {
  const std::string expected =
      render_metrics(small_snapshot(), options(true), ExpositionFormat::kPrometheusText);
  const std::locale saved =
      std::locale::global(std::locale(std::locale::classic(), new CommaPoint));
  // The C library's locale too, where the machine has de_DE.
  const std::string c_saved = std::setlocale(LC_ALL, nullptr);
  const bool have_de = std::setlocale(LC_ALL, "de_DE.UTF-8") != nullptr;
  const std::string out =
      render_metrics(small_snapshot(), options(true), ExpositionFormat::kPrometheusText);
  std::setlocale(LC_ALL, c_saved.c_str());
  std::locale::global(saved);
  EXPECT_EQ(out, expected);
  EXPECT_NE(out.find(" 0.45\n"), std::string::npos);
  if (!have_de) GTEST_LOG_(INFO) << "de_DE.UTF-8 not installed: checked the C++ locale only";
}

TEST(Exposition, EveryRenderedFamilyIsDocumented) {
  // A snapshot with everything: all fields, reasons, PCIe, processes, churn.
  ExportSnapshot s = small_snapshot();
  for (const auto& fi : all_fields()) s.frame.devices[0][fi.field] = Reading::of(1);
  s.frame.devices[0][Field::kClockEventReasons] = Reading::of(0x24);
  s.frame.devices[0].processes_supported = true;
  s.frame.devices[0].processes = {
      {42, "python train.py", 100.0, std::nullopt, std::nullopt, std::nullopt}};
  s.assessments[0].pcie_text = "Gen4 x16";
  s.memory_churn = {0.5};
  Owner job;
  job.kind = OwnerKind::kSlurmJob;
  job.id = "41877";
  job.user = "alice";
  s.frame.devices[0].owners = {job};
  s.ledger.resize(1);
  s.ledger[0].lost_s[static_cast<size_t>(Cause::kIdle)] = 5;
  for (bool dcgm : {true, false}) {
    ExportOptions o = options(dcgm);
    o.expose_process_names = true;
    std::set<std::string> documented;
    for (const auto& f : metric_families(o)) {
      const std::string base =
          f.type == "counter" ? f.name.substr(0, f.name.size() - 6) : f.name;  // "_total"
      documented.insert(f.name);
      documented.insert(base);
    }
    const std::string out = render_metrics(s, o, ExpositionFormat::kPrometheusText);
    std::istringstream lines(out);
    size_t families = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("# TYPE ", 0) != 0) continue;
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(documented.count(name)) << name;
      ++families;
    }
    EXPECT_EQ(families, metric_families(o).size()) << "dcgm " << dcgm;
    EXPECT_NE(out.find("reason=\"sw_power_cap\"} 1\n"), std::string::npos);
    EXPECT_NE(out.find("reason=\"gpu_idle\"} 0\n"), std::string::npos);
    EXPECT_NE(out.find(R"(pid="42",process_name="python train.py"} 1)"), std::string::npos);
    EXPECT_NE(out.find(R"(owner_kind="slurm_job",job="41877",step="",pod="",namespace="",)"
                       R"(container="",user="alice"} 1)"),
              std::string::npos);
    EXPECT_NE(out.find(R"(cause="idle"} 5)"), std::string::npos);
    EXPECT_NE(out.find(R"(state="idle_allocated"} 0)"), std::string::npos);
  }
  // Without --expose-process-names no process name leaves the machine.
  const std::string out = render_metrics(s, options(true), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(out.find("python"), std::string::npos);
  EXPECT_NE(out.find("gpudoctor_compute_processes{"), std::string::npos);
}

// What serve exports under dcgm-exporter's names reads back, through the readers of saved
// /metrics snapshots, as the catalogue fields it came from (the DCGM columns of one table).
TEST(Exposition, NewDcgmFamiliesReadBackAsTheirFields) {
  ExportSnapshot s = small_snapshot();
  DeviceSample& d = s.frame.devices[0];
  d[Field::kTemp] = Reading::of(60);
  const std::pair<Field, double> values[] = {{Field::kTempMem, 71},
                                             {Field::kUtilEnc, 7},
                                             {Field::kUtilDec, 55},
                                             {Field::kPcieReplays, 12},
                                             {Field::kNvlink, 81920},
                                             {Field::kXid, 79},
                                             {Field::kRemappedRowsCorrected, 2},
                                             {Field::kRemappedRowsUncorrected, 1},
                                             {Field::kRemapFailure, 0},
                                             {Field::kVgpuLicensed, 1}};
  for (const auto& [f, v] : values) d[f] = Reading::of(v);
  const std::string text = render_metrics(s, options(true), ExpositionFormat::kPrometheusText);
  // DCGM's units and dcgm-exporter's XID label.
  const size_t nvl = text.find("\nDCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"0\"");
  ASSERT_NE(nvl, std::string::npos) << text;
  const size_t at = text.find("} ", nvl) + 2;
  EXPECT_NEAR(std::stod(text.substr(at, text.find('\n', at) - at)), 81920 * 1024 / 1000.0,
              1e-6);  // DCGM's MB/s: KiB/s / 1000
  EXPECT_NE(text.find("Hostname=\"node7\",err_code=\"79\"} 79\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"), std::string::npos);
  const auto rec = load_text(text, "metrics.prom", {});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->gpus.size(), 1u);
  const GpuSeries& g = rec->gpus[0];
  for (const auto& [f, v] : values) {
    ASSERT_TRUE(g.has(f)) << info(f).id;
    EXPECT_NEAR((*g.column(f))[0], v, 1e-9 * v) << info(f).id;
  }
}

// docs/prometheus.md names every family serve can export, in both naming modes.
TEST(Exposition, DocsListEveryFamily) {
  std::ifstream in(std::string(GPUDOCTOR_SOURCE_DIR) + "/docs/prometheus.md");
  ASSERT_TRUE(in) << "docs/prometheus.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (bool dcgm : {true, false}) {
    ExportOptions o = options(dcgm);
    o.expose_process_names = true;
    for (const auto& f : metric_families(o))
      EXPECT_NE(doc.find("`" + f.name + "`"), std::string::npos)
          << f.name << " is not in docs/prometheus.md";
  }
}

}  // namespace
}  // namespace gpudoctor

namespace gpudoctor {
namespace {

// dcgm-exporter's default counter list (etc/default-counters.csv, its 21 uncommented lines), each
// with the Prometheus type that list gives it. serve exports every one under that name: all of
// them come from NVML, so none is left out. The NVLink total is a gauge in MB/s in the current
// list (dcgm-exporter's internal/pkg/counters tests pin it); older lists called it a counter.
TEST(Exposition, DcgmExporterDefaultCounters) {
  const std::map<std::string, std::string> list = {
      {"DCGM_FI_DEV_SM_CLOCK", "gauge"},
      {"DCGM_FI_DEV_MEM_CLOCK", "gauge"},
      {"DCGM_FI_DEV_MEMORY_TEMP", "gauge"},
      {"DCGM_FI_DEV_GPU_TEMP", "gauge"},
      {"DCGM_FI_DEV_POWER_USAGE", "gauge"},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"},
      {"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "counter"},
      {"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "counter"},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"},
      {"DCGM_FI_DEV_GPU_UTIL", "gauge"},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"},
      {"DCGM_FI_DEV_ENC_UTIL", "gauge"},
      {"DCGM_FI_DEV_DEC_UTIL", "gauge"},
      {"DCGM_FI_DEV_XID_ERRORS", "gauge"},
      {"DCGM_FI_DEV_FB_FREE", "gauge"},
      {"DCGM_FI_DEV_FB_USED", "gauge"},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gauge"},
      {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge"},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter"},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter"},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge"}};
  ASSERT_EQ(list.size(), 21u);
  // Rates the list calls counters: DCGM fills PCIe throughput from nvmlDeviceGetPcieThroughput,
  // KB/s over 20 ms, not a running total; rate() over it would be meaningless, so serve says
  // gauge, as dcgm-exporter did for the NVLink total, the same kind of value.
  const std::map<std::string, std::string> rates = {{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "gauge"},
                                                    {"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "gauge"}};
  // Nothing of the list is left out; were NVML unable to give a field, it would be named here
  // with the reason.
  const std::set<std::string> not_from_nvml = {};

  ExportSnapshot s = small_snapshot();
  for (const auto& fi : all_fields()) s.frame.devices[0][fi.field] = Reading::of(1);
  s.frame.devices[0][Field::kMemTotal] = Reading::of(81559);
  s.frame.devices[0][Field::kMemUsed] = Reading::of(1559);
  const std::string out = render_metrics(s, options(true), ExpositionFormat::kPrometheusText);
  std::map<std::string, std::string> types;
  for (const auto& f : metric_families(options(true))) types[f.name] = f.type;
  for (const auto& [name, type] : list) {
    if (not_from_nvml.count(name)) {
      EXPECT_FALSE(types.count(name)) << name;
      continue;
    }
    ASSERT_TRUE(types.count(name)) << name;
    const std::string want = rates.count(name) ? rates.at(name) : type;
    EXPECT_EQ(types[name], want) << name;
    EXPECT_NE(out.find("\n# TYPE " + name + " " + want + "\n"), std::string::npos) << name;
    EXPECT_NE(out.find("\n" + name + "{gpu=\"0\""), std::string::npos) << name;
  }
  EXPECT_NE(out.find("\nDCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-0000\",pci_bus_id=\"00000000:01:"
                     "00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname="
                     "\"node7\"} 80000\n"),
            std::string::npos)
      << out;
  // No free memory without both figures, and none with gpudoctor's own names.
  s.frame.devices[0][Field::kMemTotal] = Reading::unsupported();
  EXPECT_EQ(render_metrics(s, options(true), ExpositionFormat::kPrometheusText).find("FB_FREE"),
            std::string::npos);
  EXPECT_EQ(render_metrics(s, options(false), ExpositionFormat::kPrometheusText).find("FB_FREE"),
            std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
