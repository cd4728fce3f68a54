#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/clock_reasons.hpp"
#include "core/duration.hpp"
#include "core/parallel.hpp"
#include "core/reading.hpp"
#include "core/recording.hpp"
#include "fleet/fleet.hpp"
#include "sources/source.hpp"

namespace gpudoctor {
namespace {

// Every index once, on several threads when asked, and the first exception comes back here.
TEST(ParallelFor, EveryIndexOnceAndErrorsReturn) {
  EXPECT_GE(usable_cpus(), 1U);
  for (const unsigned threads : {1U, 3U, 0U}) {
    std::vector<std::atomic<int>> seen(1000);
    std::atomic<size_t> other_threads{0};
    const auto me = std::this_thread::get_id();
    parallel_for(seen.size(), threads, [&](size_t i) {
      ++seen[i];
      if (std::this_thread::get_id() != me) ++other_threads;
      // Index 0 waits (5 s at most) for another thread to have done one: they do run.
      for (int k = 0; threads == 3 && i == 0 && other_threads == 0 && k < 500; ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
    for (const auto& s : seen) EXPECT_EQ(s.load(), 1);
    if (threads == 1) {
      EXPECT_EQ(other_threads.load(), 0U);
    } else if (threads == 3) {
      EXPECT_GT(other_threads.load(), 0U);
    }
  }
  // The lowest index that threw, as a loop in order would (index 90 may well throw first).
  for (int round = 0; round < 20; ++round) {
    try {
      parallel_for(100, 3, [](size_t i) {
        if (i == 90) throw std::runtime_error("index 90");
        if (i == 42) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          throw std::runtime_error("index 42");
        }
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "index 42");
    }
  }
  parallel_for(0, 4, [](size_t) { FAIL() << "no index"; });
}

// Work spread already spreads no further: a parallel_for inside another one's fn, or inside a
// fleet worker's task, runs on its calling thread (threads x threads would only take turns); a
// single fleet worker leaves the CPUs to what it calls.
TEST(ParallelFor, InsideSpreadWorkRunsOnTheCallingThread) {
  EXPECT_FALSE(in_spread_work());
  std::atomic<size_t> inner_elsewhere{0}, outer_marked{0};
  std::atomic<size_t> outer_threads_seen{0};
  const auto me = std::this_thread::get_id();
  parallel_for(8, 3, [&](size_t i) {
    outer_marked += in_spread_work();
    if (std::this_thread::get_id() != me) ++outer_threads_seen;
    for (int k = 0; i == 0 && outer_threads_seen == 0 && k < 500; ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto caller = std::this_thread::get_id();
    parallel_for(50, 3, [&](size_t) { inner_elsewhere += std::this_thread::get_id() != caller; });
  });
  EXPECT_EQ(outer_marked.load(), 8U);
  EXPECT_GT(outer_threads_seen.load(), 0U);  // the outer one did spread
  EXPECT_EQ(inner_elsewhere.load(), 0U);
  EXPECT_FALSE(in_spread_work());  // the calling thread's mark ends with the call

  std::atomic<size_t> task_inner_elsewhere{0};
  EXPECT_EQ(run_workers(3, 6,
                        [&](size_t) {
                          const auto caller = std::this_thread::get_id();
                          parallel_for(50, 3, [&](size_t) {
                            task_inner_elsewhere += std::this_thread::get_id() != caller;
                          });
                        }),
            3U);
  EXPECT_EQ(task_inner_elsewhere.load(), 0U);
  EXPECT_FALSE(in_spread_work());
  // One worker: its task may spread.
  std::atomic<size_t> alone_elsewhere{0};
  EXPECT_EQ(run_workers(1, 1,
                        [&](size_t) {
                          const auto caller = std::this_thread::get_id();
                          std::atomic<size_t> others{0};
                          parallel_for(50, 3, [&](size_t i) {
                            if (std::this_thread::get_id() != caller) ++others, ++alone_elsewhere;
                            for (int k = 0; i == 0 && others == 0 && k < 500; ++k)
                              std::this_thread::sleep_for(std::chrono::milliseconds(10));
                          });
                        }),
            1U);
  EXPECT_GT(alone_elsewhere.load(), 0U);
}

TEST(ParallelFor, ContainerCpuLimit) {
  EXPECT_EQ(cgroup_cpu_quota("200000 100000"), 2U);
  EXPECT_EQ(cgroup_cpu_quota("150000 100000\n"), 2U);
  EXPECT_EQ(cgroup_cpu_quota("50000 100000"), 1U);
  EXPECT_EQ(cgroup_cpu_quota("max 100000"), 0U);
  EXPECT_EQ(cgroup_cpu_quota(""), 0U);
  EXPECT_EQ(cgroup_cpu_quota("0 100000"), 0U);
}

// GPUDOCTOR_THREADS sets the default; a wrong value is said, not guessed at.
TEST(ParallelFor, ThreadsFromTheEnvironment) {
  ::unsetenv("GPUDOCTOR_THREADS");
  EXPECT_EQ(default_threads(), std::min(usable_cpus(), 16U));
  EXPECT_EQ(threads_env_error(), "");
  ::setenv("GPUDOCTOR_THREADS", "3", 1);
  EXPECT_EQ(default_threads(), 3U);
  EXPECT_EQ(threads_env_error(), "");
  for (const char* bad : {"0", "257", "two", "2x", "-1"}) {
    ::setenv("GPUDOCTOR_THREADS", bad, 1);
    EXPECT_EQ(threads_env_error(),
              std::string("GPUDOCTOR_THREADS: expected a whole number from 1 to 256, got \"") +
                  bad + "\"");
    EXPECT_EQ(default_threads(), std::min(usable_cpus(), 16U));
  }
  ::unsetenv("GPUDOCTOR_THREADS");
}

TEST(Reading, StatesAreDistinctAndNeverZero) {
  EXPECT_TRUE(Reading::of(0).has_value());
  EXPECT_FALSE(Reading::unsupported().has_value());
  EXPECT_FALSE(Reading::error(nvml_code::kGpuIsLost).has_value());
  EXPECT_FALSE(Reading::no_data().has_value());
  EXPECT_EQ(Reading::unsupported(nvml_code::kNoPermission).code(), nvml_code::kNoPermission);
  EXPECT_EQ(Reading::error(15).state(), Reading::State::kError);
  EXPECT_EQ(Reading::unsupported().value_or(-1), -1);
  EXPECT_NE(Reading::of(0), Reading::unsupported());
}

TEST(Reading, CodeNamesRoundTrip) {
  EXPECT_EQ(nvml_code_name(3), "NOT_SUPPORTED");
  EXPECT_EQ(nvml_code_name(15), "GPU_IS_LOST");
  EXPECT_EQ(nvml_code_name(12345), "ERROR_12345");
  EXPECT_EQ(nvml_code_from_name("NO_PERMISSION"), 4);
  EXPECT_EQ(nvml_code_from_name("BOGUS"), nvml_code::kUnknown);
}

TEST(Duration, ParsesWhatUsersType) {
  EXPECT_EQ(parse_duration("500ms").value().count(), 500);
  EXPECT_EQ(parse_duration("2s").value().count(), 2000);
  EXPECT_EQ(parse_duration("30").value().count(), 30000);
  EXPECT_EQ(parse_duration("1.5m").value().count(), 90000);
  EXPECT_EQ(parse_duration("2h").value().count(), 7200000);
  EXPECT_FALSE(parse_duration("").ok());
  EXPECT_FALSE(parse_duration("fast").ok());
  EXPECT_FALSE(parse_duration("5 parsecs").ok());
  EXPECT_EQ(parse_duration("2x").error().kind, Error::Kind::kUsage);
  EXPECT_EQ(format_duration(std::chrono::milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(120000)), "2m");
}

TEST(ClockReasons, DecodesEveryBitAndUnknownOnes) {
  EXPECT_EQ(clock_reasons_summary(0), "none");
  EXPECT_EQ(clock_reasons_summary(0x4), "sw_power_cap");
  EXPECT_EQ(clock_reasons_summary(0x20 | 0x40), "sw_thermal,hw_thermal");
  const auto words = decode_clock_reasons(0x1 | 0x1000);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0], "idle");
  EXPECT_EQ(words[1], "0x1000");
  EXPECT_EQ(clock_reasons().size(), 9u);
}

TEST(ClockReasons, MaskFromReadingRejectsWhatNoBitmaskCanBe) {
  EXPECT_EQ(reasons_mask(Reading::of(0x44)), 0x44u);
  EXPECT_EQ(reasons_mask(Reading::of(-1)), std::nullopt);
  EXPECT_EQ(reasons_mask(Reading::of(1.5)), std::nullopt);
  EXPECT_EQ(reasons_mask(Reading::of(1e300)), std::nullopt);
  EXPECT_EQ(reasons_mask(Reading::unsupported()), std::nullopt);
}

TEST(GpuList, ParsesAndRejects) {
  EXPECT_TRUE(parse_gpu_list("").value().empty());
  EXPECT_TRUE(parse_gpu_list("all").value().empty());
  EXPECT_EQ(parse_gpu_list("0,2,2,5").value(), (std::vector<unsigned>{0, 2, 5}));
  EXPECT_FALSE(parse_gpu_list("0,,1").ok());
  EXPECT_FALSE(parse_gpu_list("a").ok());
  EXPECT_FALSE(parse_gpu_list("-1").ok());
}

// A Recording with every member set, so that a copy that left one out shows.
Recording every_member_set() {
  Recording rec;
  rec.system = {"550.54.15", "12.4", "12.550", "node-a"};
  rec.start_unix_ms = 1700000000000;
  rec.source = "test";
  rec.notes = {"a note"};
  rec.command = {"python", "train.py"};
  rec.host = HostSeries{8, {{1.0, 50, 2, 3, 40, 10, 100}}};
  rec.markers = {{1.5, "step_end", 32}};
  rec.audit = {{"warn", "cpu_governor", "powersave", "set performance"}};
  GpuSeries g;
  g.info.index = 3;
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.info.uuid = "GPU-1";
  g.host = "node-a";
  g.time_s = {0, 1, 2};
  g.column_for_write(Field::kPower) = {100, 200, 300};
  g.unsupported[Field::kGpmSmUtil] = 3;
  g.processes = {{42, "python", 0, 2, 1024.0}};
  Owner o;
  o.id = "job-7";
  g.owners = {{o, 0, 2}};
  g.processes_recorded = true;
  g.lost_at_s = 2;
  g.power_limit_source = "model-table";
  rec.gpus.push_back(std::move(g));
  return rec;
}

TEST(Recording, CopyKeepsEveryMemberAndOwnsItsColumns) {
  const Recording rec = every_member_set();
  Recording copy = rec;
  EXPECT_EQ(copy.system.hostname, "node-a");
  EXPECT_EQ(copy.system.driver_version, "550.54.15");
  EXPECT_EQ(copy.start_unix_ms, rec.start_unix_ms);
  EXPECT_EQ(copy.source, "test");
  EXPECT_EQ(copy.notes, rec.notes);
  EXPECT_EQ(copy.command, rec.command);
  ASSERT_TRUE(copy.host);
  EXPECT_EQ(copy.host->cores, 8);
  ASSERT_EQ(copy.host->samples.size(), 1u);
  EXPECT_EQ(copy.host->samples[0].job_read_mibs, 10);
  ASSERT_EQ(copy.markers.size(), 1u);
  EXPECT_EQ(copy.markers[0].event, "step_end");
  ASSERT_EQ(copy.audit.size(), 1u);
  EXPECT_EQ(copy.audit[0].code, "cpu_governor");
  EXPECT_EQ(copy.audit[0].fix, "set performance");
  ASSERT_EQ(copy.gpus.size(), 1u);
  const GpuSeries& g = copy.gpus[0];
  EXPECT_EQ(g.info.index, 3u);
  EXPECT_EQ(g.info.uuid, "GPU-1");
  EXPECT_EQ(g.host, "node-a");
  EXPECT_EQ(g.time_s, rec.gpus[0].time_s);
  ASSERT_TRUE(g.has(Field::kPower));
  EXPECT_EQ(*g.column(Field::kPower), *rec.gpus[0].column(Field::kPower));
  EXPECT_FALSE(g.has(Field::kUtilGpu));
  EXPECT_EQ(g.unsupported, rec.gpus[0].unsupported);
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].max_memory_mib, 1024.0);
  ASSERT_EQ(g.owners.size(), 1u);
  EXPECT_EQ(g.owners[0].owner.id, "job-7");
  EXPECT_TRUE(g.processes_recorded);
  EXPECT_EQ(g.lost_at_s, 2.0);
  EXPECT_EQ(g.power_limit_source, "model-table");

  // Deep: the copy's columns are its own.
  copy.gpus[0].column_for_write(Field::kPower)[0] = -1;
  copy.gpus[0].columns[index_of(Field::kPower)].reset();
  EXPECT_EQ((*rec.gpus[0].column(Field::kPower))[0], 100);
  Recording assigned;
  assigned = rec;
  EXPECT_EQ(assigned.gpus[0].column(Field::kPower)->size(), 3u);
  EXPECT_NE(assigned.gpus[0].column(Field::kPower).data(),
            rec.gpus[0].column(Field::kPower).data());
}

// A column with one value throughout is kept once and reads as every value; any change to it
// builds it out first, so no value read back ever differs from what was written.
TEST(Recording, ConstantColumnsReadAsEveryValue) {
  GpuSeries g;
  for (double t : {0.0, 1.0, 2.0, 3.0}) g.append_row(t);
  g.column_for_write(Field::kPowerLimit) = {300, 300, 300, 300};
  g.column_for_write(Field::kPower) = {100, 200, 300, 400};
  g.column_for_write(Field::kTemp) = {kMissing, kMissing, kMissing, kMissing};
  g.column_for_write(Field::kClockSm) = {0.0, -0.0, 0.0, 0.0};  // not the same bits
  g.compact();
  EXPECT_TRUE(g.columns[index_of(Field::kPowerLimit)].is_constant());
  EXPECT_TRUE(g.columns[index_of(Field::kTemp)].is_constant());
  EXPECT_FALSE(g.columns[index_of(Field::kPower)].is_constant());
  EXPECT_FALSE(g.columns[index_of(Field::kClockSm)].is_constant());
  const ColumnView lim = g.column(Field::kPowerLimit);
  ASSERT_TRUE(lim);
  EXPECT_TRUE(lim.constant());
  EXPECT_EQ(lim.size(), 4u);
  EXPECT_EQ(lim, (std::vector<double>{300, 300, 300, 300}));
  EXPECT_EQ(lim.to_vector(), (std::vector<double>{300, 300, 300, 300}));
  EXPECT_EQ(std::count(lim.begin(), lim.end(), 300.0), 4);
  EXPECT_EQ(lim.end() - lim.begin(), 4);
  EXPECT_THROW((void)lim.at(4), std::out_of_range);
  EXPECT_TRUE(std::isnan(g.column(Field::kTemp)[2]));
  EXPECT_FALSE(g.column(Field::kUtilGpu));

  // A row whose value is the constant keeps it one; a missing sample builds it out.
  g.append_row(4);
  EXPECT_TRUE(g.columns[index_of(Field::kTemp)].is_constant());
  EXPECT_FALSE(g.columns[index_of(Field::kPowerLimit)].is_constant());
  EXPECT_EQ(g.column(Field::kPowerLimit).size(), 5u);
  EXPECT_TRUE(std::isnan(g.column(Field::kPowerLimit)[4]));
  EXPECT_EQ(g.column(Field::kPowerLimit)[3], 300);
  g.compact();
  EXPECT_FALSE(g.columns[index_of(Field::kPowerLimit)].is_constant());

  // Copies, kept rows and cut ranges of a constant column stay one value.
  g.column_for_write(Field::kMemTotal) = std::vector<double>(5, 81920);
  g.compact();
  GpuSeries copy = g;
  EXPECT_TRUE(copy.columns[index_of(Field::kMemTotal)].is_constant());
  keep_rows(copy, {0, 2, 4});
  EXPECT_EQ(copy.column(Field::kMemTotal), (std::vector<double>{81920, 81920, 81920}));
  EXPECT_EQ(copy.column(Field::kPower)[1], 300);
  Recording rec;
  rec.gpus.push_back(g);
  trim_recording(rec, 1, 3);
  EXPECT_EQ(rec.gpus[0].column(Field::kMemTotal), (std::vector<double>{81920, 81920}));
  EXPECT_EQ(rec.gpus[0].column(Field::kPower), (std::vector<double>{200, 300}));
  // Written to: built out, and the original is untouched.
  copy.column_for_write(Field::kMemTotal)[1] = 1;
  EXPECT_EQ(copy.column(Field::kMemTotal), (std::vector<double>{81920, 1, 81920}));
  EXPECT_TRUE(g.columns[index_of(Field::kMemTotal)].is_constant());
  EXPECT_EQ(g.column(Field::kMemTotal)[1], 81920);
}

// A series' times are held as decimals where every time is one (a log's: its seconds to the
// tenth, its whole milliseconds), 4 or 2 bytes a time, and read back bit for bit; a time no
// decimal gives back makes the column one of doubles, the times before it kept. Shifting,
// appending and cutting give what the same steps on a vector of doubles give.
TEST(TimeColumn, DecimalsUntilATimeIsNone) {
  auto same = [](const TimeColumn& t, const std::vector<double>& v) {
    if (t.size() != v.size()) return false;
    for (size_t i = 0; i < v.size(); ++i)
      if (!same_bits(t[i], v[i])) return false;
    return std::equal(t.begin(), t.end(), v.begin(),
                      [](double a, double b) { return same_bits(a, b); });
  };
  TimeColumn t;
  std::vector<double> v;
  EXPECT_TRUE(t.empty());
  for (int i = 0; i < 5000; ++i) {  // 1.5 s apart: tenths, past 16 bits
    v.push_back(i * 1.5);
    t.push_back(v.back());
  }
  ASSERT_TRUE(same(t, v));
  EXPECT_EQ(t.value_bytes(), 4u);
  EXPECT_EQ(t.back(), 7498.5);

  // Milliseconds from the first row, as a reader makes them.
  TimeColumn ms;
  std::vector<double> mv;
  for (int64_t i = 0; i < 3000; ++i) {
    mv.push_back(static_cast<double>(i * 1001 + i % 7) / 1000.0);
    ms.push_back(mv.back());
  }
  ASSERT_TRUE(same(ms, mv));
  EXPECT_EQ(ms.value_bytes(), 4u);

  // Shifted by a whole and by a fraction of a second: as each double shifted.
  for (const double by : {-2.0, 0.25, 1e-7, 0.0}) {
    TimeColumn shifted = ms;
    std::vector<double> sv = mv;
    for (double& x : sv) x += by;
    shifted.shift(by);
    EXPECT_TRUE(same(shifted, sv)) << by;
  }

  // Appended: a column of other places, then one of doubles.
  TimeColumn more;
  std::vector<double> joined = v;
  for (int i = 0; i < 10; ++i) more.push_back(8000 + i * 0.125), joined.push_back(8000 + i * 0.125);
  t.append(more);
  ASSERT_TRUE(same(t, joined));
  EXPECT_EQ(t.value_bytes(), 4u);
  const double third = 9000 + 1.0 / 3;  // no decimal gives it back
  t.push_back(third);
  joined.push_back(third);
  ASSERT_TRUE(same(t, joined));
  EXPECT_EQ(t.value_bytes(), 8u);

  // Rows kept: some, then a range.
  std::vector<size_t> rows;
  std::vector<double> kept;
  for (size_t i = 0; i < joined.size(); i += 3) rows.push_back(i), kept.push_back(joined[i]);
  t.keep_rows(rows);
  ASSERT_TRUE(same(t, kept));
  t.keep_range(10, 20);
  EXPECT_TRUE(same(t, std::vector<double>(kept.begin() + 10, kept.begin() + 20)));

  // Room asked for is room had, before a second time and after.
  TimeColumn room;
  room.reserve(1000);
  room.push_back(0);
  EXPECT_GE(room.capacity(), 1000u);
  room.push_back(0.5);
  EXPECT_GE(room.capacity(), 1000u);
  room.reserve(100000);  // (the times move: read from where they are now)
  EXPECT_EQ(room.back(), 0.5);
  EXPECT_EQ(room.view()[0], 0.0);
  const TimeColumn copy = room;  // has the room its times take
  EXPECT_LT(copy.capacity(), 1000u);
  EXPECT_TRUE(same(copy, {0, 0.5}));

  // The recording reader's: doubles written in place.
  TimeColumn blocks;
  blocks.assign_doubles(4, kMissing);
  double* out = blocks.doubles();
  ASSERT_NE(out, nullptr);
  for (int i = 0; i < 4; ++i) out[i] = i * 0.001;
  EXPECT_TRUE(same(blocks, {0, 0.001, 0.002, 0.003}));
  EXPECT_EQ(ms.doubles(), nullptr);  // decimals: none to write
}

// The columns grow to the room their series' times have (the rows a reader guesses are to come),
// once; a constant column built out takes that room at once; a room the system refuses is a
// guess dropped, never an error.
TEST(Recording, ColumnsGrowToTheTimesRoom) {
  GpuSeries g;
  g.time_s.reserve(1000);
  g.time_s.push_back(0);
  auto& power = g.columns[index_of(Field::kPower)];
  auto& temp = g.columns[index_of(Field::kTemp)];
  power = GpuSeries::Column::constant(kMissing, 1);
  temp = GpuSeries::Column::constant(kMissing, 1);
  for (int i = 1; i < 600; ++i) {  // a row as the CSV reader appends it
    g.time_s.push_back(i);
    power.push_back(100 + i, g.time_s.capacity());                 // changes every row
    temp.push_back(i < 300 ? kMissing : 60, g.time_s.capacity());  // one value, then another
  }
  EXPECT_EQ(g.time_s.capacity(), 1000u);
  for (const Field f : {Field::kPower, Field::kTemp}) {
    const auto& c = g.columns[index_of(f)];
    EXPECT_TRUE(c.is_decimal()) << info(f).id;
    EXPECT_EQ(c.size(), 600u) << info(f).id;
    EXPECT_EQ(c.capacity(), 1000u) << info(f).id;
  }
  EXPECT_EQ(g.column(Field::kPower)[599], 699);
  EXPECT_TRUE(std::isnan(g.column(Field::kTemp)[299]));
  EXPECT_EQ(g.column(Field::kTemp)[300], 60);

  std::vector<double> v{1, 2, 3};
  // (More than max_size(): std::length_error, as std::bad_alloc would be, caught. A request the
  // allocator refuses is not made here: sanitizers report it instead of throwing.)
  reserve_guess(v, v.max_size() + 1);
  EXPECT_EQ(v, (std::vector<double>{1, 2, 3}));
  reserve_guess(v, 64);
  EXPECT_EQ(v.capacity(), 64u);
}

// The VmFlags of the mapping that holds address a in /proc/self/smaps ("" where none does).
std::string vm_flags_at(uintptr_t a) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long b = 0, e = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &b, &e) == 2 && line.find(' ') > line.find('-'))
      inside = a >= b && a < e;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line.substr(8) + " ";
  }
  return "";
}

TEST(Recording, BuffersWrittenWholeAreAdvisedHugePages) {
  // A recording's column: room for exactly its rows, every value the one given.
  std::vector<double> v{1, 2};
  const size_t n = size_t{3} << 20;  // 24 MiB
  assign_fresh(v, n, kMissing);
  ASSERT_EQ(v.size(), n);
  EXPECT_EQ(v.capacity(), n);
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double x) { return std::isnan(x); }));
  // The huge pages inside it carry the advice (the kernel's "hg" flag on the mapping):
  // whether the kernel grants them is its own business.
  const uintptr_t huge = uintptr_t{2} << 20;
  const uintptr_t first = (reinterpret_cast<uintptr_t>(v.data()) + huge - 1) & ~(huge - 1);
  const std::string flags = vm_flags_at(first);
  // Smaller, or room there already: the values all the same.
  assign_fresh(v, 5, 7.0);
  EXPECT_EQ(v, (std::vector<double>{7, 7, 7, 7, 7}));
  advise_huge_pages(nullptr, n);
  advise_huge_pages(v.data(), v.size() * sizeof(double));  // under 4 MiB: nothing to advise
  EXPECT_EQ(v, (std::vector<double>{7, 7, 7, 7, 7}));

  // The recording reader's columns are made so.
  GpuSeries g;
  g.time_s.assign_doubles(1000, 1.0);
  std::vector<double>& power = g.column_for_write(Field::kPower);
  EXPECT_EQ(power.size(), 1000u);
  EXPECT_EQ(power.capacity(), 1000u);
  EXPECT_TRUE(std::isnan(g.column(Field::kPower)[999]));

  // Last, as it needs a kernel with transparent huge pages (Debian's, CI's): the advice given.
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages: the advice is not checked";
  EXPECT_NE(flags.find(" hg "), std::string::npos) << "VmFlags:" << flags;
}

TEST(Recording, SliceKeepsWhatIsNotCutAndClipsWhatIs) {
  const Recording rec = every_member_set();
  const GpuSeries s = slice_series(rec.gpus[0], {{0.5, 1.5}});
  EXPECT_EQ(s.time_s, std::vector<double>{1});
  EXPECT_EQ(*s.column(Field::kPower), std::vector<double>{200});
  EXPECT_EQ(s.info.uuid, "GPU-1");
  EXPECT_EQ(s.host, "node-a");
  EXPECT_EQ(s.unsupported, rec.gpus[0].unsupported);
  EXPECT_TRUE(s.processes_recorded);
  EXPECT_EQ(s.power_limit_source, "model-table");
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].first_s, 0.5);
  EXPECT_EQ(s.processes[0].last_s, 1.5);
  ASSERT_EQ(s.owners.size(), 1u);
  EXPECT_EQ(s.owners[0].last_s, 1.5);
  EXPECT_FALSE(s.lost_at_s);  // lost at 2 s, after the slice
}

}  // namespace
}  // namespace gpudoctor
