#include "store/sqlite_store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace gpudoctor {
namespace {

std::string samples_columns_sql() {
  std::string cols;
  for (const auto& f : all_fields()) cols += fmt::format(", \"{}\" REAL", f.id);
  return cols;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A statement that finalizes itself.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

std::string text_col(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

std::optional<bool> bool_col(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int(s, i) != 0;
}

}  // namespace

Error RecordingWriter::sqlite_error(const std::string& what) const {
  const int code = db_ ? sqlite3_errcode(db_) : SQLITE_ERROR;
  std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
  if (code == SQLITE_FULL) why = "the disk is full";
  if (code == SQLITE_READONLY) why = "the file or its directory is read-only";
  if (code == SQLITE_CANTOPEN) why = "cannot open it (does the directory exist, is it writable?)";
  return failure(fmt::format("recording {}: {}: {}", path_, what, why));
}

Result<Nothing> RecordingWriter::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    return sqlite_error("writing");
  }
  return kOk;
}

Result<std::unique_ptr<RecordingWriter>> RecordingWriter::create(
    const std::string& path, const SystemInfo& system, const std::vector<DeviceInfo>& devices,
    const std::string& source, int64_t start_unix_ms) {
  std::unique_ptr<RecordingWriter> w(new RecordingWriter());
  w->path_ = path;
  w->start_unix_ms_ = start_unix_ms;
  // A recording is written whole by one run: start from an empty file.
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  if (sqlite3_open_v2(path.c_str(), &w->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK)
    return w->sqlite_error("cannot create");
  sqlite3_busy_timeout(w->db_, 2000);
  const std::string schema = fmt::format(R"(
    PRAGMA journal_mode=WAL;
    PRAGMA synchronous=NORMAL;
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE devices(gpu INTEGER PRIMARY KEY, name TEXT, uuid TEXT, pci_bus_id TEXT,
                         serial TEXT, architecture TEXT, persistence_mode INTEGER,
                         mig_mode INTEGER, gpm_supported INTEGER);
    CREATE TABLE fields(id TEXT PRIMARY KEY, unit TEXT NOT NULL, meaning TEXT NOT NULL);
    CREATE TABLE samples(gpu INTEGER NOT NULL, t_ms INTEGER NOT NULL{},
                         PRIMARY KEY(gpu, t_ms)) WITHOUT ROWID;
    CREATE TABLE field_status(gpu INTEGER NOT NULL, field TEXT NOT NULL, code TEXT NOT NULL,
                              PRIMARY KEY(gpu, field));
    CREATE TABLE processes(gpu INTEGER NOT NULL, pid INTEGER NOT NULL, first_ms INTEGER NOT NULL,
                           last_ms INTEGER NOT NULL, name TEXT, max_memory_mib REAL,
                           PRIMARY KEY(gpu, pid, first_ms));
    CREATE TABLE events(t_ms INTEGER NOT NULL, gpu INTEGER, kind TEXT NOT NULL, detail TEXT);
    CREATE TABLE annotations(t_ms INTEGER NOT NULL, text TEXT NOT NULL);
  )",
                                         samples_columns_sql());
  if (auto r = w->exec(schema.c_str()); !r) return r.error();

  auto meta = [&](const std::string& k, const std::string& v) -> Result<Nothing> {
    Stmt st;
    sqlite3_prepare_v2(w->db_, "INSERT INTO meta VALUES(?, ?)", -1, &st.s, nullptr);
    sqlite3_bind_text(st.s, 1, k.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 2, v.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.s) != SQLITE_DONE) return w->sqlite_error("writing metadata");
    return kOk;
  };
  if (auto r = w->exec("BEGIN"); !r) return r.error();
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"format", "gpudoctor-recording"},
           {"schema_version", std::to_string(kRecordingSchemaVersion)},
           {"created_by", std::string("gpudoctor ") + GPUDOCTOR_VERSION},
           {"source", source},
           {"start_unix_ms", std::to_string(start_unix_ms)},
           {"host", system.hostname},
           {"driver_version", system.driver_version},
           {"cuda_driver_version", system.cuda_driver_version},
           {"nvml_version", system.nvml_version}})
    if (auto r = meta(k, v); !r) return r.error();
  for (const auto& f : all_fields()) {
    Stmt st;
    sqlite3_prepare_v2(w->db_, "INSERT INTO fields VALUES(?, ?, ?)", -1, &st.s, nullptr);
    sqlite3_bind_text(st.s, 1, f.id.data(), static_cast<int>(f.id.size()), SQLITE_STATIC);
    const auto unit = unit_name(f.unit);
    sqlite3_bind_text(st.s, 2, unit.data(), static_cast<int>(unit.size()), SQLITE_STATIC);
    sqlite3_bind_text(st.s, 3, f.meaning.data(), static_cast<int>(f.meaning.size()), SQLITE_STATIC);
    if (sqlite3_step(st.s) != SQLITE_DONE) return w->sqlite_error("writing the field list");
  }
  for (const auto& d : devices) {
    Stmt st;
    sqlite3_prepare_v2(w->db_, "INSERT INTO devices VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &st.s,
                       nullptr);
    sqlite3_bind_int(st.s, 1, static_cast<int>(d.index));
    sqlite3_bind_text(st.s, 2, d.name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 3, d.uuid.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 4, d.pci_bus_id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 5, d.serial.c_str(), -1, SQLITE_TRANSIENT);
    const std::string arch = architecture_name(d.architecture);
    sqlite3_bind_text(st.s, 6, arch.c_str(), -1, SQLITE_TRANSIENT);
    if (d.persistence_mode) sqlite3_bind_int(st.s, 7, *d.persistence_mode);
    if (d.mig_mode) sqlite3_bind_int(st.s, 8, *d.mig_mode);
    sqlite3_bind_int(st.s, 9, d.gpm_supported);
    if (sqlite3_step(st.s) != SQLITE_DONE) return w->sqlite_error("writing the device list");
    w->gpu_index_.push_back(d.index);
  }
  if (auto r = w->exec("COMMIT"); !r) return r.error();
  w->lost_seen_.assign(devices.size(), false);

  std::string insert = "INSERT OR REPLACE INTO samples VALUES(?, ?";
  for (size_t i = 0; i < kFieldCount; ++i) insert += ", ?";
  insert += ")";
  if (sqlite3_prepare_v2(w->db_, insert.c_str(), -1, &w->insert_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(w->db_,
                         "INSERT INTO processes VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(gpu, pid, "
                         "first_ms) DO UPDATE SET last_ms = excluded.last_ms, max_memory_mib = "
                         "max(coalesce(max_memory_mib, 0), coalesce(excluded.max_memory_mib, 0))",
                         -1, &w->process_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(w->db_, "INSERT OR REPLACE INTO field_status VALUES(?, ?, ?)", -1,
                         &w->status_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(w->db_, "INSERT INTO events VALUES(?, ?, ?, ?)", -1, &w->event_,
                         nullptr) != SQLITE_OK)
    return w->sqlite_error("preparing statements");
  return w;
}

RecordingWriter::~RecordingWriter() {
  (void)close();
}

Result<Nothing> RecordingWriter::begin_if_needed() {
  if (in_tx_) return kOk;
  if (auto r = exec("BEGIN"); !r) return r;
  in_tx_ = true;
  return kOk;
}

Result<Nothing> RecordingWriter::commit() {
  if (!in_tx_) return kOk;
  in_tx_ = false;
  last_commit_ms_ = now_ms();
  return exec("COMMIT");
}

Result<Nothing> RecordingWriter::insert_row(unsigned gpu, int64_t t_ms, const double* values) {
  sqlite3_reset(insert_);
  sqlite3_bind_int(insert_, 1, static_cast<int>(gpu));
  sqlite3_bind_int64(insert_, 2, t_ms);
  for (size_t i = 0; i < kFieldCount; ++i) {
    if (std::isnan(values[i]))
      sqlite3_bind_null(insert_, static_cast<int>(i) + 3);
    else
      sqlite3_bind_double(insert_, static_cast<int>(i) + 3, values[i]);
  }
  if (sqlite3_step(insert_) != SQLITE_DONE) return sqlite_error("writing samples");
  return kOk;
}

Result<Nothing> RecordingWriter::note_process(unsigned gpu, const ProcessInfo& p, int64_t t_ms) {
  auto key = std::make_pair(gpu, p.pid);
  auto it = process_first_ms_.find(key);
  if (it == process_first_ms_.end()) it = process_first_ms_.emplace(key, t_ms).first;
  sqlite3_reset(process_);
  sqlite3_bind_int(process_, 1, static_cast<int>(gpu));
  sqlite3_bind_int64(process_, 2, p.pid);
  sqlite3_bind_int64(process_, 3, it->second);
  sqlite3_bind_int64(process_, 4, t_ms);
  sqlite3_bind_text(process_, 5, p.name.c_str(), -1, SQLITE_TRANSIENT);
  if (p.used_memory_mib)
    sqlite3_bind_double(process_, 6, *p.used_memory_mib);
  else
    sqlite3_bind_null(process_, 6);
  if (sqlite3_step(process_) != SQLITE_DONE) return sqlite_error("writing processes");
  return kOk;
}

Result<Nothing> RecordingWriter::note_status(unsigned gpu, Field f, int32_t code) {
  auto [it, inserted] = status_seen_.emplace(std::make_pair(gpu, f), code);
  if (!inserted && it->second == code) return kOk;
  it->second = code;
  sqlite3_reset(status_);
  sqlite3_bind_int(status_, 1, static_cast<int>(gpu));
  const auto id = info(f).id;
  sqlite3_bind_text(status_, 2, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
  const std::string name = nvml_code_name(code);
  sqlite3_bind_text(status_, 3, name.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(status_) != SQLITE_DONE) return sqlite_error("writing field status");
  return kOk;
}

Result<Nothing> RecordingWriter::add(const Frame& frame) {
  if (!db_) return failure("recording " + path_ + " is closed");
  if (auto r = begin_if_needed(); !r) return r;
  const int64_t t_ms = frame.time_unix_ms - start_unix_ms_;
  std::array<double, kFieldCount> values;
  for (size_t i = 0; i < frame.devices.size() && i < gpu_index_.size(); ++i) {
    const DeviceSample& s = frame.devices[i];
    const unsigned gpu = gpu_index_[i];
    if (s.lost) {
      if (!lost_seen_[i]) {
        lost_seen_[i] = true;
        sqlite3_reset(event_);
        sqlite3_bind_int64(event_, 1, t_ms);
        sqlite3_bind_int(event_, 2, static_cast<int>(gpu));
        sqlite3_bind_text(event_, 3, "lost", -1, SQLITE_STATIC);
        sqlite3_bind_text(event_, 4, "GPU_IS_LOST", -1, SQLITE_STATIC);
        if (sqlite3_step(event_) != SQLITE_DONE) return sqlite_error("writing events");
      }
      continue;
    }
    for (const auto& fi : all_fields()) {
      const Reading& r = s[fi.field];
      values[index_of(fi.field)] = r.has_value() ? r.value() : kMissing;
      if (r.state() == Reading::State::kUnsupported)
        if (auto st = note_status(gpu, fi.field, r.code()); !st) return st;
    }
    if (auto r = insert_row(gpu, t_ms, values.data()); !r) return r;
    for (const auto& p : s.processes)
      if (auto r = note_process(gpu, p, t_ms); !r) return r;
  }
  ++frames_;
  if (now_ms() - last_commit_ms_ >= 1000) return commit();
  return kOk;
}

Result<Nothing> RecordingWriter::add_recording(const Recording& rec) {
  if (auto r = begin_if_needed(); !r) return r;
  std::array<double, kFieldCount> values;
  for (const auto& g : rec.gpus) {
    for (size_t row = 0; row < g.size(); ++row) {
      for (size_t f = 0; f < kFieldCount; ++f)
        values[f] = g.columns[f] ? (*g.columns[f])[row] : kMissing;
      if (auto r = insert_row(g.info.index, std::llround(g.time_s[row] * 1000), values.data()); !r)
        return r;
    }
    for (const auto& [f, code] : g.unsupported)
      if (auto r = note_status(g.info.index, f, code); !r) return r;
    for (const auto& p : g.processes) {
      sqlite3_reset(process_);
      sqlite3_bind_int(process_, 1, static_cast<int>(g.info.index));
      sqlite3_bind_int64(process_, 2, p.pid);
      sqlite3_bind_int64(process_, 3, std::llround(p.first_s * 1000));
      sqlite3_bind_int64(process_, 4, std::llround(p.last_s * 1000));
      sqlite3_bind_text(process_, 5, p.name.c_str(), -1, SQLITE_TRANSIENT);
      if (p.max_memory_mib)
        sqlite3_bind_double(process_, 6, *p.max_memory_mib);
      else
        sqlite3_bind_null(process_, 6);
      if (sqlite3_step(process_) != SQLITE_DONE) return sqlite_error("writing processes");
    }
    if (g.lost_at_s) {
      sqlite3_reset(event_);
      sqlite3_bind_int64(event_, 1, std::llround(*g.lost_at_s * 1000));
      sqlite3_bind_int(event_, 2, static_cast<int>(g.info.index));
      sqlite3_bind_text(event_, 3, "lost", -1, SQLITE_STATIC);
      sqlite3_bind_text(event_, 4, "GPU_IS_LOST", -1, SQLITE_STATIC);
      if (sqlite3_step(event_) != SQLITE_DONE) return sqlite_error("writing events");
    }
  }
  for (const auto& note : rec.notes)
    if (auto r = annotate(0, "import: " + note); !r) return r;
  return commit();
}

Result<Nothing> RecordingWriter::annotate(double t_s, const std::string& text) {
  Stmt st;
  sqlite3_prepare_v2(db_, "INSERT INTO annotations VALUES(?, ?)", -1, &st.s, nullptr);
  sqlite3_bind_int64(st.s, 1, std::llround(t_s * 1000));
  sqlite3_bind_text(st.s, 2, text.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("writing annotations");
  return kOk;
}

Result<Nothing> RecordingWriter::close() {
  if (!db_) return kOk;
  Result<Nothing> r = commit();
  for (sqlite3_stmt* s : {insert_, process_, status_, event_}) sqlite3_finalize(s);
  insert_ = process_ = status_ = event_ = nullptr;
  // Fold the WAL back into the main file so the recording is one self-contained file.
  if (r) sqlite3_exec(db_, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(db_);
  db_ = nullptr;
  return r;
}

bool looks_like_recording(std::string_view head) {
  return head.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
}

Result<Recording> read_recording(const std::string& path) {
  sqlite3* db = nullptr;
  auto fail = [&](const std::string& what) -> Error {
    std::string why = db ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return usage_error(fmt::format("{}: {}: {}", path, what, why));
  };
  // One thread reads: no per-call mutex (it was a sixth of the time of a large read).
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK)
    return fail("cannot open the recording");
  sqlite3_exec(db, "PRAGMA mmap_size=1073741824", nullptr, nullptr, nullptr);
  Recording rec;
  {
    Stmt st;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &st.s, nullptr) != SQLITE_OK)
      return fail("not a gpudoctor recording");
    std::map<std::string, std::string> meta;
    while (sqlite3_step(st.s) == SQLITE_ROW) meta[text_col(st.s, 0)] = text_col(st.s, 1);
    if (meta["format"] != "gpudoctor-recording")
      return fail("not a gpudoctor recording (no format marker)");
    if (std::atoi(meta["schema_version"].c_str()) > kRecordingSchemaVersion)
      return fail("written by a newer gpudoctor (schema " + meta["schema_version"] + ")");
    rec.source = meta["source"];
    rec.start_unix_ms = std::atoll(meta["start_unix_ms"].c_str());
    rec.system = {meta["driver_version"], meta["cuda_driver_version"], meta["nvml_version"],
                  meta["host"]};
  }
  std::map<unsigned, size_t> by_gpu;
  {
    Stmt st;
    if (sqlite3_prepare_v2(db,
                           "SELECT gpu, name, uuid, pci_bus_id, serial, architecture, "
                           "persistence_mode, mig_mode, gpm_supported FROM devices ORDER BY gpu",
                           -1, &st.s, nullptr) != SQLITE_OK)
      return fail("reading devices");
    while (sqlite3_step(st.s) == SQLITE_ROW) {
      GpuSeries g;
      g.info.index = static_cast<unsigned>(sqlite3_column_int(st.s, 0));
      g.info.name = text_col(st.s, 1);
      g.info.uuid = text_col(st.s, 2);
      g.info.pci_bus_id = text_col(st.s, 3);
      g.info.serial = text_col(st.s, 4);
      g.info.architecture = architecture_from_name(text_col(st.s, 5));
      g.info.persistence_mode = bool_col(st.s, 6);
      g.info.mig_mode = bool_col(st.s, 7);
      g.info.gpm_supported = sqlite3_column_int(st.s, 8) != 0;
      by_gpu[g.info.index] = rec.gpus.size();
      rec.gpus.push_back(std::move(g));
    }
  }
  {
    // Columns by name, so files from other versions of the catalogue still read.
    Stmt st;
    if (sqlite3_prepare_v2(db, "SELECT * FROM samples ORDER BY gpu, t_ms", -1, &st.s, nullptr) !=
        SQLITE_OK)
      return fail("reading samples");
    const int ncol = sqlite3_column_count(st.s);
    std::vector<std::optional<Field>> col_field(static_cast<size_t>(ncol));
    for (int c = 2; c < ncol; ++c)
      col_field[static_cast<size_t>(c)] = field_by_id(sqlite3_column_name(st.s, c));
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      const auto it = by_gpu.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
      if (it == by_gpu.end()) continue;
      GpuSeries& g = rec.gpus[it->second];
      const size_t row = g.append_row(static_cast<double>(sqlite3_column_int64(st.s, 1)) / 1000.0);
      for (int c = 2; c < ncol; ++c) {
        if (!col_field[static_cast<size_t>(c)] || sqlite3_column_type(st.s, c) == SQLITE_NULL)
          continue;
        g.column_for_write(*col_field[static_cast<size_t>(c)])[row] =
            sqlite3_column_double(st.s, c);
      }
    }
    if (rc != SQLITE_DONE) return fail("reading samples");
  }
  {
    Stmt st;
    if (sqlite3_prepare_v2(db, "SELECT gpu, field, code FROM field_status", -1, &st.s, nullptr) ==
        SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
        const auto f = field_by_id(text_col(st.s, 1));
        if (it != by_gpu.end() && f && !rec.gpus[it->second].has(*f))
          rec.gpus[it->second].unsupported[*f] = nvml_code_from_name(text_col(st.s, 2));
      }
  }
  {
    Stmt st;
    if (sqlite3_prepare_v2(db,
                           "SELECT gpu, pid, first_ms, last_ms, name, max_memory_mib FROM "
                           "processes ORDER BY gpu, first_ms",
                           -1, &st.s, nullptr) == SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
        if (it == by_gpu.end()) continue;
        ProcessSpan p;
        p.pid = static_cast<uint32_t>(sqlite3_column_int64(st.s, 1));
        p.first_s = static_cast<double>(sqlite3_column_int64(st.s, 2)) / 1000.0;
        p.last_s = static_cast<double>(sqlite3_column_int64(st.s, 3)) / 1000.0;
        p.name = text_col(st.s, 4);
        if (sqlite3_column_type(st.s, 5) != SQLITE_NULL)
          p.max_memory_mib = sqlite3_column_double(st.s, 5);
        rec.gpus[it->second].processes.push_back(std::move(p));
      }
  }
  {
    Stmt st;
    if (sqlite3_prepare_v2(db, "SELECT t_ms, gpu FROM events WHERE kind = 'lost'", -1, &st.s,
                           nullptr) == SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu.find(static_cast<unsigned>(sqlite3_column_int(st.s, 1)));
        if (it != by_gpu.end())
          rec.gpus[it->second].lost_at_s =
              static_cast<double>(sqlite3_column_int64(st.s, 0)) / 1000.0;
      }
  }
  sqlite3_close(db);
  return rec;
}

}  // namespace gpudoctor
