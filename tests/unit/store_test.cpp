#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <sqlite3.h>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/sqlite_store.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

fs::path temp_db(const char* name) {
  return fs::temp_directory_path() / fmt::format("gpudoctor-store-{}-{}.db", name, getpid());
}

void remove_db(const fs::path& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
}

int64_t query_int(const fs::path& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// Same NaN positions, same values.
void expect_same_column(ColumnView a, ColumnView b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]))
      ASSERT_TRUE(std::isnan(b[i])) << what << " row " << i;
    else
      ASSERT_EQ(a[i], b[i]) << what << " row " << i;
  }
}

Frame frame(int64_t unix_ms, double util, bool lost = false) {
  Frame f;
  f.time_unix_ms = unix_ms;
  f.devices.resize(2);
  f.devices[0][Field::kUtilGpu] = Reading::of(util);
  f.devices[0][Field::kPower] = Reading::of(250.5);
  f.devices[0][Field::kPowerLimit] = Reading::of(700);
  f.devices[0][Field::kFan] = Reading::unsupported(nvml_code::kNoPermission);
  f.devices[0].processes.push_back({42, "python", 1000, std::nullopt, std::nullopt, std::nullopt});
  f.devices[0].processes_supported = true;
  f.devices[1][Field::kUtilGpu] = Reading::error(nvml_code::kTimeout);  // stored as NaN
  f.devices[1].lost = lost;
  return f;
}

TEST(Store, RoundTripsFramesStatusProcessesAndEvents) {
  const fs::path path = temp_db("rt");
  std::vector<DeviceInfo> devices(2);
  devices[0].name = "NVIDIA H100 80GB HBM3";
  devices[0].architecture = Architecture::kHopper;
  devices[1].index = 1;
  {
    auto w = RecordingWriter::create(path.string(), {"550", "12.4", "12.550", "node"}, devices,
                                     "nvml", 1'700'000'000'000);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE(w.value()->add(frame(1'700'000'000'000, 99)).ok());
    ASSERT_TRUE(w.value()->add(frame(1'700'000'000'500, 50, true)).ok());
    ASSERT_TRUE(w.value()->annotate(0.5, "free text").ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  auto rec = read_recording(path.string());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(rec->start_unix_ms, 1'700'000'000'000);
  EXPECT_EQ(rec->system.hostname, "node");
  EXPECT_EQ(rec->source, "nvml");
  EXPECT_TRUE(rec->notes.empty());  // a user's annotation is not a reader's note
  ASSERT_EQ(rec->gpus.size(), 2u);
  const GpuSeries& g0 = rec->gpus[0];
  EXPECT_EQ(g0.info.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.info.architecture, Architecture::kHopper);
  ASSERT_EQ(g0.size(), 2u);
  EXPECT_DOUBLE_EQ(g0.time_s[1], 0.5);
  EXPECT_EQ((*g0.column(Field::kUtilGpu))[1], 50);
  EXPECT_EQ((*g0.column(Field::kPower))[0], 250.5);
  EXPECT_FALSE(g0.has(Field::kTemp));  // never had a value: no column, not zeros
  EXPECT_EQ(g0.unsupported.at(Field::kFan), nvml_code::kNoPermission);
  EXPECT_EQ(g0.power_limit_source, "log");  // the live source read the limit itself
  EXPECT_TRUE(g0.processes_recorded);       // the source listed processes
  ASSERT_EQ(g0.processes.size(), 1u);
  EXPECT_EQ(g0.processes[0].pid, 42u);
  EXPECT_EQ(g0.processes[0].name, "python");
  EXPECT_DOUBLE_EQ(g0.processes[0].last_s, 0.5);
  const GpuSeries& g1 = rec->gpus[1];
  EXPECT_EQ(g1.size(), 1u);               // the lost frame has no row
  EXPECT_FALSE(g1.has(Field::kUtilGpu));  // the only util reading was an error: no value
  EXPECT_DOUBLE_EQ(g1.lost_at_s.value(), 0.5);
  EXPECT_EQ(g1.power_limit_source, "");
  EXPECT_FALSE(g1.processes_recorded);
  remove_db(path);
}

// Every field, with NaN gaps, over several blocks; two GPUs of different lengths.
Recording every_field_recording() {
  Recording rec;
  rec.system = {"550.54.15", "12.4", "12.550.54.15", "node"};
  rec.start_unix_ms = 1'700'000'000'000;
  rec.source = "nvidia-smi csv: run.csv";
  rec.notes = {"power limit of GPU 0 from --power-limit", "GPU 1: H100 SXM from the model table"};
  rec.gpus.resize(2);
  GpuSeries& a = rec.gpus[0];
  a.info.name = "NVIDIA H100 80GB HBM3";
  a.info.uuid = "GPU-0000";
  a.info.pci_bus_id = "00000000:01:00.0";
  a.info.serial = "1650";
  a.info.architecture = Architecture::kHopper;
  a.info.persistence_mode = true;
  a.info.mig_mode = false;
  a.info.gpm_supported = true;
  a.power_limit_source = "flag";
  a.processes_recorded = true;
  for (size_t row = 0; row < 2 * kRecordingBlockRows + 123; ++row) {
    a.append_row(static_cast<double>(row) * 0.25);
    for (size_t f = 0; f < kFieldCount; ++f)
      if ((row + f) % 7 != 0)  // a gap in every column
        a.column_for_write(all_fields()[f].field)[row] = static_cast<double>(row * 1000 + f) / 3;
  }
  a.processes.push_back({7, "train.py", 0.5, 100.25, 4096.5});
  a.processes.push_back({8, "eval", 10, 20, std::nullopt});
  GpuSeries& b = rec.gpus[1];
  b.info.index = 1;
  b.info.name = "NVIDIA H100 80GB HBM3";
  b.power_limit_source = "model-table";
  for (size_t row = 0; row < 10; ++row) {
    b.append_row(static_cast<double>(row) + 0.001);
    b.column_for_write(Field::kEnergy)[row] = 1e12 + static_cast<double>(row);  // needs float64
  }
  b.column_for_write(Field::kPower);  // present, never a value
  for (size_t row = 0; row < 10; ++row) b.column_for_write(Field::kPowerLimit)[row] = 700;
  b.column_for_write(Field::kPowerLimitDefault)[3] = 700;  // NaN, then one value, then NaN
  b.unsupported[Field::kFan] = nvml_code::kNotSupported;
  b.unsupported[Field::kGpmSmUtil] = nvml_code::kFunctionNotFound;
  b.lost_at_s = 10.5;
  return rec;
}

// `in` written as `gpudoctor import` writes a log's recording: in one transaction, then closed.
void write_imported(const fs::path& path, const Recording& in) {
  std::vector<DeviceInfo> devices;
  for (const auto& g : in.gpus) devices.push_back(g.info);
  auto w = RecordingWriter::create(path.string(), in.system, devices, in.source, in.start_unix_ms);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(w.value()->add_recording(in).ok());
  ASSERT_TRUE(w.value()->close().ok());
}

TEST(Store, ImportRoundTripsEveryFieldAcrossBlocks) {
  const fs::path path = temp_db("every");
  const Recording in = every_field_recording();
  write_imported(path, in);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  // One block per GPU per 4096 rows per column.
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM samples WHERE gpu = 0 AND field = 't_ms'"), 3);
  auto out = read_recording(path.string());
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->start_unix_ms, in.start_unix_ms);
  EXPECT_EQ(out->source, in.source);
  EXPECT_EQ(out->system.driver_version, in.system.driver_version);
  EXPECT_EQ(out->system.cuda_driver_version, in.system.cuda_driver_version);
  EXPECT_EQ(out->system.nvml_version, in.system.nvml_version);
  EXPECT_EQ(out->system.hostname, in.system.hostname);
  EXPECT_EQ(out->notes, in.notes);
  ASSERT_EQ(out->gpus.size(), in.gpus.size());
  for (size_t i = 0; i < in.gpus.size(); ++i) {
    const GpuSeries& a = in.gpus[i];
    const GpuSeries& b = out->gpus[i];
    EXPECT_EQ(b.info.index, a.info.index);
    EXPECT_EQ(b.info.name, a.info.name);
    EXPECT_EQ(b.info.uuid, a.info.uuid);
    EXPECT_EQ(b.info.pci_bus_id, a.info.pci_bus_id);
    EXPECT_EQ(b.info.serial, a.info.serial);
    EXPECT_EQ(b.info.architecture, a.info.architecture);
    EXPECT_EQ(b.info.persistence_mode, a.info.persistence_mode);
    EXPECT_EQ(b.info.mig_mode, a.info.mig_mode);
    EXPECT_EQ(b.info.gpm_supported, a.info.gpm_supported);
    EXPECT_EQ(b.power_limit_source, a.power_limit_source);
    EXPECT_EQ(b.processes_recorded, a.processes_recorded);
    expect_same_column(a.time_s.view(), b.time_s.view(), "time");
    for (const auto& fi : all_fields()) {
      ASSERT_EQ(a.has(fi.field), b.has(fi.field)) << fi.id;
      if (a.has(fi.field))
        expect_same_column(*a.column(fi.field), *b.column(fi.field), std::string(fi.id));
    }
    EXPECT_EQ(b.unsupported, a.unsupported);
    EXPECT_EQ(b.lost_at_s, a.lost_at_s);
    ASSERT_EQ(b.processes.size(), a.processes.size());
    for (size_t p = 0; p < a.processes.size(); ++p) {
      EXPECT_EQ(b.processes[p].pid, a.processes[p].pid);
      EXPECT_EQ(b.processes[p].name, a.processes[p].name);
      EXPECT_EQ(b.processes[p].first_s, a.processes[p].first_s);
      EXPECT_EQ(b.processes[p].last_s, a.processes[p].last_s);
      EXPECT_EQ(b.processes[p].max_memory_mib, a.processes[p].max_memory_mib);
    }
  }
  remove_db(path);
}

// A live frame of one GPU: util with a gap every 5th row, a power value every row.
Frame live_frame(int64_t row) {
  Frame f;
  f.time_unix_ms = 1'700'000'000'000 + row * 100;
  f.devices.resize(1);
  if (row % 5 != 0) f.devices[0][Field::kUtilGpu] = Reading::of(static_cast<double>(row % 101));
  f.devices[0][Field::kPower] = Reading::of(100 + static_cast<double>(row) / 8);
  f.devices[0][Field::kPowerLimit] = Reading::of(700);  // the same in every row
  return f;
}

// The rows of live_frame(0 .. rows - 1), read back.
void check_live_rows(const Recording& rec, int64_t rows) {
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), static_cast<size_t>(rows));
  ASSERT_TRUE(g.has(Field::kUtilGpu) && g.has(Field::kPower));
  EXPECT_FALSE(g.has(Field::kTemp));
  // The limit, the same in every block (small ones from the commits, or merged), is kept once.
  EXPECT_TRUE(g.columns[index_of(Field::kPowerLimit)].is_constant());
  EXPECT_FALSE(g.columns[index_of(Field::kPower)].is_constant());
  for (int64_t row = 0; row < rows; ++row) {
    const auto i = static_cast<size_t>(row);
    ASSERT_DOUBLE_EQ(g.time_s[i], static_cast<double>(row) / 10) << row;
    if (row % 5 == 0)
      ASSERT_TRUE(std::isnan((*g.column(Field::kUtilGpu))[i])) << row;
    else
      ASSERT_EQ((*g.column(Field::kUtilGpu))[i], static_cast<double>(row % 101)) << row;
    ASSERT_EQ((*g.column(Field::kPower))[i], 100 + static_cast<double>(row) / 8) << row;
    ASSERT_EQ((*g.column(Field::kPowerLimit))[i], 700) << row;
  }
}

void expect_live_rows(const fs::path& path, int64_t rows) {
  auto rec = read_recording(path.string());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  check_live_rows(rec.value(), rows);
}

// Columns of one value are read back as that value once, every other column in full, and every
// value read back as written: one value in every block, blocks of one value each but not the same,
// one value and then another inside a block, no value at all, and a field that starts late or stops
// early (the live writer skips blocks with no value).
TEST(Store, ColumnsOfOneValueAreReadOnce) {
  const fs::path path = temp_db("uniform");
  const size_t rows = 3 * kRecordingBlockRows - 100;
  const size_t block = kRecordingBlockRows;
  Recording in;
  in.start_unix_ms = 1'700'000'000'000;
  in.gpus.resize(1);
  GpuSeries& g = in.gpus[0];
  for (size_t i = 0; i < rows; ++i) g.append_row(static_cast<double>(i) / 10);
  auto fill = [&](Field f, auto value_at) {
    auto& c = g.column_for_write(f);
    for (size_t i = 0; i < rows; ++i) c[i] = value_at(i);
  };
  fill(Field::kPowerLimit, [](size_t) { return 300.0; });
  fill(Field::kTemp, [&](size_t i) { return i < block ? 7.0 : 8.0; });
  fill(Field::kClockSm, [&](size_t i) { return i < block + 10 ? 1400.0 : 1410.0; });
  fill(Field::kMemTotal, [](size_t) { return kMissing; });
  fill(Field::kPower, [](size_t i) { return 100 + static_cast<double>(i % 17); });
  {
    auto w = RecordingWriter::create(path.string(), {}, std::vector<DeviceInfo>(1), "test",
                                     in.start_unix_ms);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE(w.value()->add_recording(in).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  auto out = read_recording(path.string());
  ASSERT_TRUE(out.ok()) << out.error().message;
  const GpuSeries& r = out->gpus.at(0);
  for (Field f :
       {Field::kPowerLimit, Field::kTemp, Field::kClockSm, Field::kMemTotal, Field::kPower}) {
    ASSERT_TRUE(r.has(f));
    expect_same_column(*g.column(f), *r.column(f), std::string(info(f).id));
  }
  EXPECT_TRUE(r.columns[index_of(Field::kPowerLimit)].is_constant());
  EXPECT_TRUE(r.columns[index_of(Field::kMemTotal)].is_constant());
  EXPECT_FALSE(r.columns[index_of(Field::kTemp)].is_constant());
  EXPECT_FALSE(r.columns[index_of(Field::kClockSm)].is_constant());
  EXPECT_FALSE(r.columns[index_of(Field::kPower)].is_constant());
  remove_db(path);

  // Live frames: the temperature from row 5000 on, the SM clock up to row 4000.
  const fs::path live = temp_db("uniform-live");
  auto w = RecordingWriter::create(live.string(), {}, std::vector<DeviceInfo>(1), "nvml",
                                   in.start_unix_ms);
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (int64_t row = 0; row < static_cast<int64_t>(rows); ++row) {
    Frame f = live_frame(row);
    if (row >= 5000) f.devices[0][Field::kTemp] = Reading::of(50);
    if (row < 4000) f.devices[0][Field::kClockSm] = Reading::of(1400);
    ASSERT_TRUE(w.value()->add(f).ok());
  }
  ASSERT_TRUE(w.value()->close().ok());
  auto lr = read_recording(live.string());
  ASSERT_TRUE(lr.ok()) << lr.error().message;
  const GpuSeries& l = lr->gpus.at(0);
  ASSERT_EQ(l.size(), rows);
  ASSERT_TRUE(l.has(Field::kTemp) && l.has(Field::kClockSm));
  EXPECT_FALSE(l.columns[index_of(Field::kTemp)].is_constant());
  EXPECT_FALSE(l.columns[index_of(Field::kClockSm)].is_constant());
  EXPECT_TRUE(l.columns[index_of(Field::kPowerLimit)].is_constant());
  for (size_t i = 0; i < rows; ++i) {
    ASSERT_EQ(std::isnan(l.column(Field::kTemp)[i]), i < 5000) << i;
    ASSERT_EQ(std::isnan(l.column(Field::kClockSm)[i]), i >= 4000) << i;
  }
  EXPECT_EQ(l.column(Field::kTemp)[rows - 1], 50);
  EXPECT_EQ(l.column(Field::kClockSm)[0], 1400);
  remove_db(live);
}

TEST(Store, LiveRowsAreReadableAtEveryCommitAndMergedAtClose) {
  const fs::path path = temp_db("live");
  const int64_t rows = kRecordingBlockRows + 500;
  auto w = RecordingWriter::create(path.string(), {}, std::vector<DeviceInfo>(1), "sim:healthy",
                                   1'700'000'000'000);
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (int64_t row = 0; row < rows; ++row) {
    ASSERT_TRUE(w.value()->add(live_frame(row)).ok());
    if (row % 7 == 6) {
      ASSERT_TRUE(w.value()->flush().ok());
    }
  }
  ASSERT_TRUE(w.value()->flush().ok());
  // What a killed recorder leaves: the first block merged, the rest in small blocks.
  EXPECT_EQ(query_int(path, "SELECT n FROM samples WHERE first_row = 0 AND field = 't_ms'"),
            kRecordingBlockRows);
  EXPECT_GT(query_int(path, "SELECT count(*) FROM samples WHERE field = 't_ms'"), 2);
  expect_live_rows(path, rows);
  ASSERT_TRUE(w.value()->close().ok());
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM samples WHERE field = 't_ms'"), 2);
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM samples"), 2 * 4);  // t_ms, util, power, limit
  // A block of one repeated value stores it once.
  EXPECT_EQ(query_int(path, "SELECT max(length(data)) FROM samples WHERE field = 'power_limit_w'"),
            8);
  expect_live_rows(path, rows);
  remove_db(path);
}

// GPUDOCTOR_THREADS=n while it lives (the columns of a recording are read on that many threads).
struct Threads {
  explicit Threads(const char* n) { ::setenv("GPUDOCTOR_THREADS", n, 1); }
  ~Threads() { ::unsetenv("GPUDOCTOR_THREADS"); }
};

// A recording's columns read on several threads (each on a connection of its own) are the ones
// read on one, to the bit, constant columns kept as one value alike.
TEST(Store, ColumnsReadOnSeveralThreadsAreTheOnesReadOnOne) {
  const fs::path path = temp_db("threads");
  const Recording in = every_field_recording();
  write_imported(path, in);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  Result<Recording> one = failure(""), four = failure("");
  {
    const Threads t("1");
    one = read_recording(path.string());
  }
  {
    const Threads t("4");
    four = read_recording(path.string());
  }
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_TRUE(four.ok()) << four.error().message;
  ASSERT_EQ(four->gpus.size(), in.gpus.size());
  for (size_t i = 0; i < in.gpus.size(); ++i) {
    const GpuSeries& a = one->gpus[i];
    const GpuSeries& b = four->gpus[i];
    expect_same_column(in.gpus[i].time_s.view(), b.time_s.view(), "time");
    expect_same_column(a.time_s.view(), b.time_s.view(), "time");
    for (const auto& fi : all_fields()) {
      const auto& ca = a.columns[index_of(fi.field)];
      const auto& cb = b.columns[index_of(fi.field)];
      ASSERT_EQ(static_cast<bool>(ca), static_cast<bool>(cb)) << fi.id;
      ASSERT_EQ(in.gpus[i].has(fi.field), static_cast<bool>(cb)) << fi.id;
      if (!ca) continue;
      EXPECT_EQ(ca.is_constant(), cb.is_constant()) << fi.id;
      expect_same_column(ca.view(), cb.view(), std::string(fi.id));
      expect_same_column(*in.gpus[i].column(fi.field), cb.view(), std::string(fi.id));
    }
  }
  remove_db(path);
}

// Read while a recorder writes it (committing every few rows, merging its small blocks at each
// block's end), on several threads: every read is the file at one moment, whatever the recorder
// did meanwhile to the blocks the threads read (a thread that meets a block merged away since
// leaves the reading to the connection that listed the blocks).
TEST(Store, ARecordingReadWhileItIsWrittenIsTheFileAtOneMoment) {
  const fs::path path = temp_db("live-read");
  const int64_t rows = 2 * kRecordingBlockRows + 700;
  auto w = RecordingWriter::create(path.string(), {}, std::vector<DeviceInfo>(1), "sim:healthy",
                                   1'700'000'000'000);
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (int64_t row = 0; row < 10; ++row) ASSERT_TRUE(w.value()->add(live_frame(row)).ok());
  ASSERT_TRUE(w.value()->flush().ok());
  std::atomic<bool> done{false}, stop{false};
  std::string writer_error;
  std::thread writer([&] {
    for (int64_t row = 10; row < rows && writer_error.empty() && !stop; ++row) {
      auto r = w.value()->add(live_frame(row));
      if (r.ok() && row % 7 == 6) r = w.value()->flush();
      if (!r.ok()) writer_error = r.error().message;
    }
    done = true;
  });
  struct Join {  // (a failed assertion returns: the writer stops and is joined first)
    std::thread& t;
    std::atomic<bool>& stop;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{writer, stop};
  const Threads t("4");
  int reads = 0;
  int64_t last_rows = 0;
  while (!done || reads < 3) {
    auto rec = read_recording(path.string());
    ASSERT_TRUE(rec.ok()) << rec.error().message;
    ASSERT_EQ(rec->gpus.size(), 1u);
    const auto n = static_cast<int64_t>(rec->gpus[0].size());
    ASSERT_GE(n, last_rows);
    check_live_rows(rec.value(), n);
    if (::testing::Test::HasFatalFailure()) break;
    last_rows = n;
    ++reads;
  }
  writer.join();
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(writer_error, "");
  EXPECT_GE(reads, 3);
  ASSERT_TRUE(w.value()->close().ok());
  expect_live_rows(path, rows);
  remove_db(path);
}

// A block whose data is not a BLOB of its size is damage, said with the block, whatever its
// length in characters; the same on one thread and on several.
TEST(Store, ABlockOfTextIsDamage) {
  const fs::path path = temp_db("text-block");
  write_imported(path, every_field_recording());
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    // As many characters as the block has bytes, but twice the bytes (two per character).
    const char* sql =
        "UPDATE samples SET data = (SELECT replace(hex(zeroblob(n * 8)), '00', 'é') FROM samples "
        "WHERE gpu = 0 AND field = 'power_w' AND first_row = 4096) WHERE gpu = 0 AND field = "
        "'power_w' AND first_row = 4096";
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  ASSERT_EQ(query_int(path,
                      "SELECT typeof(data) = 'text' FROM samples WHERE gpu = 0 AND field = "
                      "'power_w' AND first_row = 4096"),
            1);
  for (const char* threads : {"1", "4"}) {
    const Threads t(threads);
    const auto r = read_recording(path.string());
    ASSERT_FALSE(r.ok()) << threads;
    EXPECT_NE(r.error().message.find("damaged recording: block 4096 of GPU 0 has the wrong size"),
              std::string::npos)
        << r.error().message;
  }
  remove_db(path);
}

TEST(Store, KilledWriterKeepsEveryCommittedRow) {
  const fs::path path = temp_db("kill");
  const int64_t committed = kRecordingBlockRows + 1000;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the recorder: commits `committed` rows, then adds more and is killed
    close(ready[0]);
    auto w = RecordingWriter::create(path.string(), {}, std::vector<DeviceInfo>(1), "nvml",
                                     1'700'000'000'000);
    if (!w) _exit(2);
    for (int64_t row = 0; row < committed; ++row) {
      if (!w.value()->add(live_frame(row))) _exit(3);
      if (row % 10 == 9 && !w.value()->flush()) _exit(4);
    }
    if (!w.value()->flush()) _exit(5);
    for (int64_t row = committed; row < committed + 5; ++row)
      if (!w.value()->add(live_frame(row))) _exit(6);
    const char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(7);
    for (;;) pause();
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the recorder failed";
  close(ready[0]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto rec = read_recording(path.string());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->gpus.size(), 1u);
  // The rows added after the last commit may be lost (unless a second had passed), no others.
  const auto rows = static_cast<int64_t>(rec->gpus[0].size());
  EXPECT_GE(rows, committed);
  EXPECT_LE(rows, committed + 5);
  expect_live_rows(path, rows);
  remove_db(path);
}

TEST(Store, ClearErrors) {
  auto w = RecordingWriter::create("/nonexistent/dir/run.db", {}, {}, "nvml", 0);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("/nonexistent/dir/run.db"), std::string::npos);
  const fs::path junk = temp_db("junk");
  {
    std::FILE* f = std::fopen(junk.c_str(), "w");
    std::fputs("not a database", f);
    std::fclose(f);
  }
  auto r = read_recording(junk.string());
  EXPECT_FALSE(r.ok());
  fs::remove(junk);
}

TEST(Store, OtherSchemaVersionsAreAClearError) {
  for (const char* version : {"1", "99"}) {
    const fs::path path = temp_db("old");
    remove_db(path);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           fmt::format("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                                       "INSERT INTO meta VALUES('format', 'gpudoctor-recording'), "
                                       "('schema_version', '{}')",
                                       version)
                               .c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    auto r = read_recording(path.string());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find(fmt::format("recording schema {} was written by", version)),
              std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find(version[0] == '1' ? "an older" : "a newer"), std::string::npos)
        << r.error().message;
    remove_db(path);
  }
}

// Owners over time are part of a recording; a recording written before them (no owners table)
// still opens, with no owners.
TEST(Store, OwnersAreRecordedAndOlderRecordingsStillOpen) {
  const fs::path path = temp_db("owners");
  std::vector<DeviceInfo> devices(2);
  devices[1].index = 1;
  Owner job;
  job.kind = OwnerKind::kSlurmJob;
  job.id = "41877";
  job.step = "0";
  job.user = "alice";
  job.uid = 1000;
  job.source = "cgroup";
  Owner pod;
  pod.kind = OwnerKind::kK8sPod;
  pod.id = "3f1e7b2a-9c4d-4e8f-a1b2-c3d4e5f60718";
  pod.pod = "notebook-bob-0";
  pod.pod_namespace = "research";
  pod.container = "notebook";
  {
    auto w = RecordingWriter::create(path.string(), {"550", "12.4", "12.550", "node"}, devices,
                                     "nvml", 1'700'000'000'000);
    ASSERT_TRUE(w.ok()) << w.error().message;
    for (int k = 0; k < 3; ++k) {
      Frame f = frame(1'700'000'000'000 + k * 1000, 90);
      f.devices[0].owners = {job};
      if (k == 2) f.devices[1].owners = {pod};
      ASSERT_TRUE(w.value()->add(f).ok());
    }
    ASSERT_TRUE(w.value()->close().ok());
  }
  auto rec = read_recording(path.string());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->gpus[0].owners.size(), 1u);
  EXPECT_EQ(rec->gpus[0].owners[0].owner, job);
  EXPECT_DOUBLE_EQ(rec->gpus[0].owners[0].first_s, 0);
  EXPECT_DOUBLE_EQ(rec->gpus[0].owners[0].last_s, 2);
  ASSERT_EQ(rec->gpus[1].owners.size(), 1u);
  EXPECT_EQ(rec->gpus[1].owners[0].owner.pod, "notebook-bob-0");
  EXPECT_DOUBLE_EQ(rec->gpus[1].owners[0].first_s, 2);

  // The same recording as an older gpudoctor wrote it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE owners", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto old = read_recording(path.string());
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_TRUE(old->gpus[0].owners.empty());
  EXPECT_EQ(old->gpus[0].size(), 3u);
}

}  // namespace
}  // namespace gpudoctor
