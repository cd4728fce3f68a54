#include "formats/finish.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/reading.hpp"
#include "core/recording.hpp"
#include "test_helpers.hpp"

namespace gpudoctor::log_reader {
namespace {

using namespace test_util;

// A GPU with three rows of power readings and, optionally, a name and a power limit column.
GpuSeries gpu(const std::string& name, std::optional<double> limit = std::nullopt,
              Field limit_field = Field::kPowerLimit) {
  GpuSeries g;
  g.info.name = name;
  for (int i = 0; i < 3; ++i) {
    const size_t row = g.append_row(i);
    g.column_for_write(Field::kPower)[row] = 100 + i;
    if (limit) g.column_for_write(limit_field)[row] = *limit;
  }
  return g;
}

template <class... G>
std::vector<GpuSeries> gpus_of(G&&... g) {
  std::vector<GpuSeries> v;
  (v.push_back(std::forward<G>(g)), ...);
  return v;
}

void finish(Recording& rec, std::vector<GpuSeries>& gpus, const FinishOptions& opt,
            const std::vector<FieldCounts>* counts = nullptr) {
  std::vector<GpuToFinish> to;
  for (size_t i = 0; i < gpus.size(); ++i)
    to.push_back({&gpus[i], counts ? &(*counts)[i] : nullptr});
  finish_gpus(rec, to, opt);
}

// ---------------------------------------------------------------------------------------------
// The four sources of a power limit

TEST(Finish, AReaderThatThrowsIsAnInternalErrorNamingTheInput) {
  auto r = guarded_read("run.csv", "CSV log",
                        []() -> Result<Recording> { throw std::runtime_error("boom"); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Error::Code::kInternal);
  EXPECT_EQ(r.error().message, "run.csv: cannot read the CSV log: boom");
  auto fine = guarded_read("run.csv", "CSV log",
                           []() -> Result<Recording> { return failure("run.csv: not a CSV log"); });
  ASSERT_FALSE(fine);
  EXPECT_EQ(fine.error().code, Error::Code::kOther);
}

TEST(Finish, PowerLimitFromTheLogItself) {
  for (const Field f :
       {Field::kPowerLimit, Field::kPowerLimitEnforced, Field::kPowerLimitDefault}) {
    Recording rec;
    std::vector<GpuSeries> gpus = gpus_of(gpu("NVIDIA A100-SXM4-40GB", 300, f));
    finish(rec, gpus, {});
    EXPECT_EQ(gpus[0].power_limit_source, "log");
    EXPECT_FALSE(has_note(rec, "power limit")) << all_notes(rec);
    if (f != Field::kPowerLimitDefault) {
      EXPECT_FALSE(gpus[0].has(Field::kPowerLimitDefault));
    }
  }
  // --power-limit is then ignored, and says so.
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("x", 300));
  FinishOptions o;
  o.power_limit_w = 250;
  finish(rec, gpus, o);
  EXPECT_EQ(gpus[0].power_limit_source, "log");
  EXPECT_TRUE(has_note(rec, "--power-limit ignored: the log has its own power limit"))
      << all_notes(rec);
}

TEST(Finish, ALimitColumnWithoutValuesIsNoLimit) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("NVIDIA H100 80GB HBM3"));
  gpus[0].column_for_write(Field::kPowerLimitEnforced);  // NaN throughout
  finish(rec, gpus, {});
  EXPECT_EQ(gpus[0].power_limit_source, "model-table");
  EXPECT_EQ(*gpus[0].column(Field::kPowerLimitDefault), std::vector<double>(3, 700));
}

TEST(Finish, PowerLimitFromTheFlag) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("NVIDIA A100-SXM4-40GB"), gpu("", 300));
  FinishOptions o;
  o.power_limit_w = 312.5;
  finish(rec, gpus, o);
  EXPECT_EQ(gpus[0].power_limit_source, "flag");
  EXPECT_EQ(*gpus[0].column(Field::kPowerLimitDefault), std::vector<double>(3, 312.5));
  EXPECT_EQ(gpus[1].power_limit_source, "log");
  EXPECT_TRUE(has_note(rec, "power limit 312.5 W from --power-limit")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "ignored")) << all_notes(rec);  // it was used for GPU 0
}

TEST(Finish, PowerLimitFromTheModelTable) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("NVIDIA A100-SXM4-40GB"), gpu("A100 40GB SXM"));
  finish(rec, gpus, {});
  for (const auto& g : gpus) {
    EXPECT_EQ(g.power_limit_source, "model-table");
    EXPECT_EQ(*g.column(Field::kPowerLimitDefault), std::vector<double>(3, 400));
    EXPECT_EQ(g.info.architecture, Architecture::kAmpere);
  }
  EXPECT_TRUE(has_note(rec, "power limit 400 W from the model table for NVIDIA A100-SXM4-40GB"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec,
                       "power limit 400 W from the model table for A100 40GB SXM (taken as "
                       "NVIDIA A100-SXM4-40GB)"))
      << all_notes(rec);
}

TEST(Finish, NamesCutShortMatchTheModelTableByPrefix) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("NVIDIA A100-SXM..."), gpu("NVIDIA H100 80GB H..."),
                                        gpu("Tesla V100-..."), gpu("NVIDIA GeForce ..."));
  finish(rec, gpus, {});
  // Both A100 SXM4 boards have 400 W: the prefix is enough.
  EXPECT_EQ(gpus[0].power_limit_source, "model-table");
  EXPECT_EQ(gpus[0].info.architecture, Architecture::kAmpere);
  EXPECT_TRUE(has_note(rec,
                       "power limit 400 W from the model table for NVIDIA A100-SXM... (a "
                       "name cut short: NVIDIA A100-SXM4-40GB or NVIDIA A100-SXM4-80GB, all "
                       "400 W)"))
      << all_notes(rec);
  EXPECT_EQ(gpus[1].power_limit_source, "model-table");
  EXPECT_TRUE(has_note(rec, "(a name cut short: taken as NVIDIA H100 80GB HBM3)"))
      << all_notes(rec);
  // V100 SXM2 (300 W) and PCIe (250 W) both start so: no limit, and the note says why.
  EXPECT_EQ(gpus[2].power_limit_source, "");
  EXPECT_FALSE(gpus[2].has(Field::kPowerLimitDefault));
  EXPECT_TRUE(has_note(rec,
                       "none known for \"Tesla V100-...\" (a name cut short that fits Tesla "
                       "V100-SXM2-16GB, "))
      << all_notes(rec);
  // Nothing but a brand: never a match.
  EXPECT_EQ(gpus[3].power_limit_source, "");
  EXPECT_EQ(gpus[3].info.architecture, Architecture::kUnknown);
  // A name not cut short is never matched by prefix.
  EXPECT_FALSE(match_model("NVIDIA GeForce RTX 4090 Laptop GPU").truncated);
  // Cut short, a laptop's name fits the laptop row alone, never the desktop card.
  const ModelMatch laptop = match_model("NVIDIA GeForce RTX 4090 Lap...");
  EXPECT_EQ(laptop.candidates,
            (std::vector<std::string_view>{"NVIDIA GeForce RTX 4090 Laptop GPU"}));
  ASSERT_TRUE(laptop.model);
  EXPECT_EQ(laptop.model->key, "rtx-4090-laptop");
}

TEST(Finish, NoLimitAnywhere) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("Some Board 9000"), gpu(""));
  finish(rec, gpus, {});
  EXPECT_EQ(gpus[0].power_limit_source, "");
  EXPECT_EQ(gpus[1].power_limit_source, "");
  EXPECT_TRUE(has_note(rec,
                       "no power limit in the log and none known for \"Some Board 9000\": "
                       "efficiency cannot be computed (give --power-limit)"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec,
                       "no power limit in the log, nor a GPU name to look one up by: "
                       "efficiency cannot be computed (give --power-limit, or --gpu-name MODEL)"))
      << all_notes(rec);
}

TEST(Finish, GpuNameFlagNamesUnnamedGpusAndGivesTheirLimit) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu(""), gpu("NVIDIA L4"));
  finish(rec, gpus, {});
  for (auto& g : gpus) rec.gpus.push_back(std::move(g));
  name_unnamed_gpus(rec, "A100-SXM4-80GB");
  EXPECT_EQ(rec.gpus[0].info.name, "A100-SXM4-80GB");
  EXPECT_EQ(rec.gpus[0].power_limit_source, "model-table");
  ASSERT_TRUE(rec.gpus[0].has(Field::kPowerLimitDefault));
  EXPECT_EQ(rec.gpus[0].column(Field::kPowerLimitDefault)->front(), 400);
  EXPECT_EQ(rec.gpus[1].info.name, "NVIDIA L4");  // named by the log: kept
  EXPECT_TRUE(has_note(rec, "GPU name \"A100-SXM4-80GB\" from --gpu-name")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "nor a GPU name")) << all_notes(rec);

  Recording named;
  named.gpus.push_back(gpu("NVIDIA L4"));
  name_unnamed_gpus(named, "H100");
  EXPECT_TRUE(has_note(named, "--gpu-name ignored")) << all_notes(named);
}

// ---------------------------------------------------------------------------------------------
// Fields without values, GPM, notes

TEST(Finish, MarksUnsupportedFieldsAndNotesEmptyOnes) {
  Recording rec;
  std::vector<GpuSeries> gpus = gpus_of(gpu("NVIDIA L4", 72), gpu("NVIDIA L4", 72));
  gpus[0].column_for_write(Field::kGpmSmUtil)[1] = 41;
  std::vector<FieldCounts> counts(2);
  counts[0].not_supported[index_of(Field::kFan)] = 3;   // [Not Supported] throughout
  counts[1].no_permission[index_of(Field::kFan)] = 3;   // [Insufficient Permissions] throughout
  counts[0].not_supported[index_of(Field::kTemp)] = 2;  // mixed with N/A: no claim
  counts[0].other[index_of(Field::kTemp)] = 1;
  counts[1].other[index_of(Field::kTemp)] = 3;
  counts[0].value[index_of(Field::kGpmSmUtil)] = 1;
  FinishOptions o;
  o.placeholder = "[N/A]";
  o.columns = {{Field::kPower, "power.draw"},
               {Field::kFan, "fan.speed"},
               {Field::kTemp, "temperature.gpu"},
               {Field::kTemp, "temperature.gpu"},
               {Field::kClockSm, "clocks.sm"}};
  finish(rec, gpus, o, &counts);
  EXPECT_EQ(gpus[0].unsupported.at(Field::kFan), nvml_code::kNotSupported);
  EXPECT_EQ(gpus[1].unsupported.at(Field::kFan), nvml_code::kNoPermission);
  EXPECT_EQ(gpus[0].unsupported.count(Field::kTemp), 0u);
  EXPECT_TRUE(gpus[0].info.gpm_supported);
  EXPECT_FALSE(gpus[1].info.gpm_supported);
  EXPECT_EQ(gpus[0].info.architecture, Architecture::kAda);
  EXPECT_TRUE(has_note(rec,
                       "no values in the log ([N/A] throughout) for: temperature.gpu, "
                       "clocks.sm"))
      << all_notes(rec);
  // Without a placeholder the note names none.
  Recording plain;
  std::vector<GpuSeries> more = gpus_of(gpu("x", 1));
  FinishOptions p;
  p.columns = {{Field::kTemp, "temp"}};
  finish(plain, more, p);
  EXPECT_TRUE(has_note(plain, "no values in the log for: temp")) << all_notes(plain);
}

TEST(Finish, ProblemsAndNotes) {
  Recording rec;
  Problem p;
  count_problem(p, "run.csv", 7, "cannot read \"{}\"", "x");
  count_problem(p, "run.csv", 9, "cannot read \"{}\"", "y");
  EXPECT_EQ(p.count, 2u);
  EXPECT_EQ(p.first, "run.csv:7: cannot read \"x\"");
  note_skipped(rec, p, "with the wrong number of cells");
  note_skipped(rec, p, "cut short", "snapshot(s)");
  note_skipped(rec, Problem{}, "never shown");
  note_unreadable(rec, p);
  add_note(rec, "once");
  add_note(rec, "once");
  EXPECT_EQ(
      rec.notes,
      (std::vector<std::string>{
          "skipped 2 line(s) with the wrong number of cells (first: run.csv:7: cannot read "
          "\"x\")",
          "skipped 2 snapshot(s) cut short (first: run.csv:7: cannot read \"x\")",
          "2 unreadable value(s) taken as missing (first: run.csv:7: cannot read \"x\")", "once"}));
}

TEST(Finish, LiveSourcesCapturesAndRecordingsTakeTheirLimitAsLogged) {
  Recording rec;
  rec.gpus.resize(2);
  Frame f;
  f.time_unix_ms = 1000;
  f.devices.resize(2);
  f.devices[0][Field::kPowerLimitDefault] = Reading::of(400);
  f.devices[1][Field::kPowerLimitDefault] = Reading::unsupported();
  append_frame(rec, f);
  EXPECT_EQ(rec.gpus[0].power_limit_source, "log");
  EXPECT_EQ(rec.gpus[1].power_limit_source, "");

  Recording loaded;
  loaded.gpus.push_back(gpu("a", 300));
  loaded.gpus.push_back(gpu("b"));
  loaded.gpus.push_back(gpu("c", 300));
  loaded.gpus[2].power_limit_source = "flag";  // kept: a recording that knows better
  mark_logged_power_limits(loaded);
  EXPECT_EQ(loaded.gpus[0].power_limit_source, "log");
  EXPECT_EQ(loaded.gpus[1].power_limit_source, "");
  EXPECT_EQ(loaded.gpus[2].power_limit_source, "flag");
}

}  // namespace
}  // namespace gpudoctor::log_reader
