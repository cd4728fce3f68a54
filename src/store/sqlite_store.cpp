#include "store/sqlite_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/sqlite_common.hpp"

namespace gpudoctor {
namespace {

using namespace sqlite_common;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool has_limit(const DeviceSample& s) {
  for (Field f : {Field::kPowerLimitEnforced, Field::kPowerLimit, Field::kPowerLimitDefault})
    if (s[f].has_value()) return true;
  return false;
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
  if (auto r = w->exec(R"(
    PRAGMA journal_mode=WAL;
    PRAGMA synchronous=NORMAL;
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE devices(gpu INTEGER PRIMARY KEY, name TEXT, uuid TEXT, pci_bus_id TEXT,
                         serial TEXT, architecture TEXT, persistence_mode INTEGER,
                         mig_mode INTEGER, gpm_supported INTEGER, power_limit_source TEXT,
                         processes_recorded INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE fields(id TEXT PRIMARY KEY, unit TEXT NOT NULL, meaning TEXT NOT NULL);
    CREATE TABLE samples(gpu INTEGER NOT NULL, first_row INTEGER NOT NULL, field TEXT NOT NULL,
                         n INTEGER NOT NULL, data BLOB NOT NULL,
                         UNIQUE(gpu, first_row, field));
    CREATE TABLE field_status(gpu INTEGER NOT NULL, field TEXT NOT NULL, code TEXT NOT NULL,
                              PRIMARY KEY(gpu, field));
    CREATE TABLE processes(gpu INTEGER NOT NULL, pid INTEGER NOT NULL, first_ms INTEGER NOT NULL,
                           last_ms INTEGER NOT NULL, name TEXT, max_memory_mib REAL,
                           PRIMARY KEY(gpu, pid, first_ms));
    CREATE TABLE events(t_ms INTEGER NOT NULL, gpu INTEGER, kind TEXT NOT NULL, detail TEXT);
    CREATE TABLE owners(gpu INTEGER NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,
                        step TEXT NOT NULL, pod TEXT, namespace TEXT, container TEXT NOT NULL,
                        runtime TEXT, user TEXT, uid INTEGER, source TEXT,
                        first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,
                        PRIMARY KEY(gpu, kind, id, step, container, first_ms));
    CREATE TABLE annotations(t_ms INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL);
    CREATE TABLE host(t_ms INTEGER NOT NULL, cpu_pct REAL, iowait_pct REAL, job_cpu_cores REAL,
                      job_processes REAL, job_read_mibs REAL, job_ctx_switches_per_s REAL);
  )");
      !r)
    return r.error();

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
    sqlite3_prepare_v2(w->db_, "INSERT INTO devices VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0)", -1,
                       &st.s, nullptr);
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
    w->gpus_.push_back({});
    w->gpus_.back().gpu = d.index;
  }
  if (auto r = w->exec("COMMIT"); !r) return r.error();

  if (sqlite3_prepare_v2(w->db_, "INSERT INTO samples VALUES(?, ?, ?, ?, ?)", -1, &w->block_,
                         nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(w->db_,
                         "INSERT INTO processes VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(gpu, pid, "
                         "first_ms) DO UPDATE SET last_ms = excluded.last_ms, max_memory_mib = "
                         "max(coalesce(max_memory_mib, 0), coalesce(excluded.max_memory_mib, 0))",
                         -1, &w->process_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(w->db_,
                         "INSERT INTO owners VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON "
                         "CONFLICT(gpu, kind, id, step, container, first_ms) DO UPDATE SET "
                         "last_ms = excluded.last_ms",
                         -1, &w->owner_, nullptr) != SQLITE_OK ||
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

// Writes the pending rows of every GPU, then commits. `final`: also merges each GPU's last,
// partly filled block.
Result<Nothing> RecordingWriter::commit(bool final) {
  for (auto& g : gpus_)
    if (!g.t_ms.empty() || (final && g.pieces)) {
      if (auto r = begin_if_needed(); !r) return r;
      if (auto r = flush_gpu(g, final); !r) return r;
    }
  if (!in_tx_) return kOk;
  in_tx_ = false;
  last_commit_ms_ = now_ms();
  return exec("COMMIT");
}

// Writes a GPU's pending rows as blocks that never cross a multiple of kRecordingBlockRows. A
// block completed from its first row is written whole; otherwise the rows go in as a small block
// and, once the block is complete (or at the end), its small blocks are merged into one.
Result<Nothing> RecordingWriter::flush_gpu(GpuState& g, bool final) {
  const size_t n = g.t_ms.size();
  std::array<Strided, kFieldCount> cols;
  for (size_t off = 0; off < n;) {
    const int64_t block_first = g.rows_written / kRecordingBlockRows * kRecordingBlockRows;
    const size_t take =
        std::min(n - off, static_cast<size_t>(block_first + kRecordingBlockRows - g.rows_written));
    for (size_t f = 0; f < kFieldCount; ++f)
      cols[f] = {g.values.data() + off * kFieldCount + f, kFieldCount};
    if (auto r = write_rows(g.gpu, g.rows_written, take, g.t_ms.data() + off, cols, false); !r)
      return r;
    g.rows_written += static_cast<int64_t>(take);
    off += take;
    const bool complete = g.rows_written == block_first + kRecordingBlockRows;
    if (g.pieces && (complete || (final && off == n))) {
      if (auto r = merge_block(g.gpu, block_first, g.rows_written - block_first); !r) return r;
      g.pieces = false;
    } else {
      g.pieces = !complete && !(final && off == n);
    }
  }
  if (final && g.pieces) {  // nothing pending, small blocks left from earlier commits
    const int64_t block_first = g.rows_written / kRecordingBlockRows * kRecordingBlockRows;
    if (auto r = merge_block(g.gpu, block_first, g.rows_written - block_first); !r) return r;
    g.pieces = false;
  }
  g.t_ms.clear();
  g.values.clear();
  return kOk;
}

// Replaces the small blocks of rows [block_first, block_first + rows) of a GPU by one per field.
Result<Nothing> RecordingWriter::merge_block(unsigned gpu, int64_t block_first, int64_t rows) {
  std::map<std::string, std::vector<double>> merged;
  {
    Stmt st;
    if (sqlite3_prepare_v2(db_,
                           "SELECT field, first_row, n, data FROM samples WHERE gpu = ? AND "
                           "first_row >= ? AND first_row < ?",
                           -1, &st.s, nullptr) != SQLITE_OK)
      return sqlite_error("merging blocks");
    sqlite3_bind_int(st.s, 1, static_cast<int>(gpu));
    sqlite3_bind_int64(st.s, 2, block_first);
    sqlite3_bind_int64(st.s, 3, block_first + kRecordingBlockRows);
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      auto& v = merged[text_col(st.s, 0)];
      if (v.empty()) v.assign(static_cast<size_t>(rows), kMissing);
      const int64_t at = sqlite3_column_int64(st.s, 1) - block_first;
      const int64_t count = sqlite3_column_int64(st.s, 2);
      if (at < 0 || count < 0 || at + count > rows ||
          !decode_block(sqlite3_column_blob(st.s, 3), sqlite3_column_bytes(st.s, 3), count,
                        v.data() + at))
        return failure(fmt::format("recording {}: damaged block while merging", path_));
    }
    if (rc != SQLITE_DONE) return sqlite_error("merging blocks");
  }
  {
    Stmt st;
    sqlite3_prepare_v2(db_,
                       "DELETE FROM samples WHERE gpu = ? AND first_row >= ? AND first_row < ?", -1,
                       &st.s, nullptr);
    sqlite3_bind_int(st.s, 1, static_cast<int>(gpu));
    sqlite3_bind_int64(st.s, 2, block_first);
    sqlite3_bind_int64(st.s, 3, block_first + kRecordingBlockRows);
    if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("merging blocks");
  }
  for (const auto& [field, v] : merged)
    if (auto r = insert_block(gpu, block_first, field, v.data(), v.size()); !r) return r;
  return kOk;
}

// Writes rows [first_row, first_row + n) of a GPU: the time column, and each field column that
// has a value there (keep_empty: each column given, so an imported column without values stays).
Result<Nothing> RecordingWriter::write_rows(unsigned gpu, int64_t first_row, size_t n,
                                            const double* t_ms,
                                            const std::array<Strided, kFieldCount>& cols,
                                            bool keep_empty) {
  if (auto r = insert_block(gpu, first_row, kTimeColumn, t_ms, n); !r) return r;
  scratch_.resize(n);
  for (size_t f = 0; f < kFieldCount; ++f) {
    if (!cols[f].p) continue;
    bool any = keep_empty;
    for (size_t i = 0; i < n; ++i) {
      scratch_[i] = cols[f].p[i * cols[f].stride];
      any = any || !std::isnan(scratch_[i]);
    }
    if (any)
      if (auto r = insert_block(gpu, first_row, all_fields()[f].id, scratch_.data(), n); !r)
        return r;
  }
  return kOk;
}

Result<Nothing> RecordingWriter::insert_block(unsigned gpu, int64_t first_row,
                                              std::string_view field, const double* v, size_t n) {
  sqlite3_reset(block_);
  sqlite3_bind_int(block_, 1, static_cast<int>(gpu));
  sqlite3_bind_int64(block_, 2, first_row);
  sqlite3_bind_text(block_, 3, field.data(), static_cast<int>(field.size()), SQLITE_STATIC);
  sqlite3_bind_int64(block_, 4, static_cast<int64_t>(n));
  // A block whose values are all the same (static fields, limits, idle clocks) is stored once.
  const bool same = n > 0 && std::all_of(v + 1, v + n, [&](const double& x) {
                      return std::memcmp(&x, v, sizeof x) == 0;
                    });
  sqlite3_bind_blob(block_, 5, v, static_cast<int>((same ? 1 : n) * sizeof(double)), SQLITE_STATIC);
  const int rc = sqlite3_step(block_);
  sqlite3_clear_bindings(block_);
  if (rc != SQLITE_DONE) return sqlite_error("writing samples");
  return kOk;
}

Result<Nothing> RecordingWriter::note_process(unsigned gpu, const ProcessInfo& p, int64_t t_ms) {
  if (auto r = begin_if_needed(); !r) return r;
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

Result<Nothing> RecordingWriter::write_owner(unsigned gpu, const Owner& o, int64_t first_ms,
                                             int64_t last_ms) {
  sqlite3_reset(owner_);
  int k = 0;
  auto text = [&](const std::string& v) {
    sqlite3_bind_text(owner_, ++k, v.c_str(), -1, SQLITE_TRANSIENT);
  };
  sqlite3_bind_int(owner_, ++k, static_cast<int>(gpu));
  text(std::string(owner_kind_code(o.kind)));
  text(o.id);
  text(o.step);
  text(o.pod);
  text(o.pod_namespace);
  text(o.container);
  text(o.runtime);
  text(o.user);
  if (o.uid)
    sqlite3_bind_int64(owner_, ++k, *o.uid);
  else
    sqlite3_bind_null(owner_, ++k);
  text(o.source);
  sqlite3_bind_int64(owner_, ++k, first_ms);
  sqlite3_bind_int64(owner_, ++k, last_ms);
  if (sqlite3_step(owner_) != SQLITE_DONE) return sqlite_error("writing owners");
  return kOk;
}

Result<Nothing> RecordingWriter::note_status(unsigned gpu, Field f, int32_t code) {
  auto [it, inserted] = status_seen_.emplace(std::make_pair(gpu, f), code);
  if (!inserted && it->second == code) return kOk;
  it->second = code;
  if (auto r = begin_if_needed(); !r) return r;
  sqlite3_reset(status_);
  sqlite3_bind_int(status_, 1, static_cast<int>(gpu));
  const auto id = info(f).id;
  sqlite3_bind_text(status_, 2, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
  const std::string name = nvml_code_name(code);
  sqlite3_bind_text(status_, 3, name.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(status_) != SQLITE_DONE) return sqlite_error("writing field status");
  return kOk;
}

Result<Nothing> RecordingWriter::note_lost(unsigned gpu, int64_t t_ms) {
  sqlite3_reset(event_);
  sqlite3_bind_int64(event_, 1, t_ms);
  sqlite3_bind_int(event_, 2, static_cast<int>(gpu));
  sqlite3_bind_text(event_, 3, "lost", -1, SQLITE_STATIC);
  sqlite3_bind_text(event_, 4, "GPU_IS_LOST", -1, SQLITE_STATIC);
  if (sqlite3_step(event_) != SQLITE_DONE) return sqlite_error("writing events");
  return kOk;
}

Result<Nothing> RecordingWriter::set_power_limit_source(unsigned gpu, const std::string& source) {
  Stmt st;
  sqlite3_prepare_v2(db_, "UPDATE devices SET power_limit_source = ? WHERE gpu = ?", -1, &st.s,
                     nullptr);
  sqlite3_bind_text(st.s, 1, source.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st.s, 2, static_cast<int>(gpu));
  if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("writing the device list");
  return kOk;
}

Result<Nothing> RecordingWriter::set_processes_recorded(unsigned gpu) {
  Stmt st;
  sqlite3_prepare_v2(db_, "UPDATE devices SET processes_recorded = 1 WHERE gpu = ?", -1, &st.s,
                     nullptr);
  sqlite3_bind_int(st.s, 1, static_cast<int>(gpu));
  if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("writing the device list");
  return kOk;
}

Result<Nothing> RecordingWriter::add(const Frame& frame) {
  if (!db_) return failure("recording " + path_ + " is closed");
  const int64_t t_ms = frame.time_unix_ms - start_unix_ms_;
  for (size_t i = 0; i < frame.devices.size() && i < gpus_.size(); ++i) {
    const DeviceSample& s = frame.devices[i];
    GpuState& g = gpus_[i];
    if (s.lost) {
      if (!g.lost_seen) {
        g.lost_seen = true;
        if (auto r = begin_if_needed(); !r) return r;
        if (auto r = note_lost(g.gpu, t_ms); !r) return r;
      }
      continue;
    }
    g.t_ms.push_back(static_cast<double>(t_ms));
    for (const auto& fi : all_fields()) {
      const Reading& r = s[fi.field];
      g.values.push_back(r.has_value() ? r.value() : kMissing);
      if (r.state() == Reading::State::kUnsupported)
        if (auto st = note_status(g.gpu, fi.field, r.code()); !st) return st;
    }
    for (const auto& p : s.processes)
      if (auto r = note_process(g.gpu, p, t_ms); !r) return r;
    for (const auto& o : s.owners) {
      if (auto r = begin_if_needed(); !r) return r;
      auto it = owner_first_ms_.try_emplace({g.gpu, owner_key(o)}, t_ms).first;
      if (auto r = write_owner(g.gpu, o, it->second, t_ms); !r) return r;
    }
    if (!g.processes_seen && s.processes_supported) {  // an empty list now means none ran
      g.processes_seen = true;
      if (auto r = begin_if_needed(); !r) return r;
      if (auto r = set_processes_recorded(g.gpu); !r) return r;
    }
    if (!g.limit_seen && has_limit(s)) {  // a live source reads the limit itself
      g.limit_seen = true;
      if (auto r = begin_if_needed(); !r) return r;
      if (auto r = set_power_limit_source(g.gpu, "log"); !r) return r;
    }
  }
  ++frames_;
  if (now_ms() - last_commit_ms_ >= 1000) return commit(false);
  return kOk;
}

Result<Nothing> RecordingWriter::add_recording(const Recording& rec) {
  if (auto r = begin_if_needed(); !r) return r;
  std::vector<double> t_ms;
  std::array<Strided, kFieldCount> cols;
  std::vector<double> decoded;  // a block of each column held as decimals, as doubles
  for (const auto& g : rec.gpus) {
    const unsigned gpu = g.info.index;
    t_ms.resize(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      t_ms[i] = static_cast<double>(std::llround(g.time_s[i] * 1000));
    for (size_t first = 0; first < g.size(); first += kRecordingBlockRows) {
      const size_t n = std::min(g.size() - first, static_cast<size_t>(kRecordingBlockRows));
      decoded.resize(kFieldCount * n);
      for (size_t f = 0; f < kFieldCount; ++f) {
        const ColumnView c = g.columns[f].view();
        if (c.decimal()) c.copy_to(first, first + n, decoded.data() + f * n);
        cols[f] = !c             ? Strided{}
                  : c.constant() ? Strided{c.data(), 0}
                  : c.decimal()  ? Strided{decoded.data() + f * n, 1}
                                 : Strided{c.data() + first, 1};
      }
      if (auto r = write_rows(gpu, static_cast<int64_t>(first), n, t_ms.data() + first, cols, true);
          !r)
        return r;
    }
    for (const auto& [f, code] : g.unsupported)
      if (auto r = note_status(gpu, f, code); !r) return r;
    for (const auto& p : g.processes) {
      sqlite3_reset(process_);
      sqlite3_bind_int(process_, 1, static_cast<int>(gpu));
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
    for (const auto& o : g.owners)
      if (auto r = write_owner(gpu, o.owner, std::llround(o.first_s * 1000),
                               std::llround(o.last_s * 1000));
          !r)
        return r;
    if (g.lost_at_s)
      if (auto r = note_lost(gpu, std::llround(*g.lost_at_s * 1000)); !r) return r;
    if (!g.power_limit_source.empty())
      if (auto r = set_power_limit_source(gpu, g.power_limit_source); !r) return r;
    if (g.processes_recorded)
      if (auto r = set_processes_recorded(gpu); !r) return r;
  }
  for (const auto& note : rec.notes)
    if (auto r = add_annotation(0, "note", note); !r) return r;
  if (!rec.command.empty() || rec.host || !rec.audit.empty())
    if (auto r = set_run_info(rec.command, rec.host ? rec.host->cores : 0, rec.audit); !r) return r;
  if (rec.host)
    for (const auto& h : rec.host->samples)
      if (auto r = add_host(h); !r) return r;
  for (const auto& m : rec.markers)
    if (auto r = add_marker(m); !r) return r;
  return commit(false);
}

Result<Nothing> RecordingWriter::add_annotation(int64_t t_ms, const char* kind,
                                                const std::string& text) {
  Stmt st;
  sqlite3_prepare_v2(db_, "INSERT INTO annotations VALUES(?, ?, ?)", -1, &st.s, nullptr);
  sqlite3_bind_int64(st.s, 1, t_ms);
  sqlite3_bind_text(st.s, 2, kind, -1, SQLITE_STATIC);
  sqlite3_bind_text(st.s, 3, text.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("writing annotations");
  return kOk;
}

Result<Nothing> RecordingWriter::add_host(const HostSample& h) {
  if (!db_) return failure("recording " + path_ + " is closed");
  if (auto r = begin_if_needed(); !r) return r;
  Stmt st;
  sqlite3_prepare_v2(db_, "INSERT INTO host VALUES(?, ?, ?, ?, ?, ?, ?)", -1, &st.s, nullptr);
  sqlite3_bind_int64(st.s, 1, std::llround(h.time_s * 1000));
  int i = 2;
  for (double v : {h.cpu_pct, h.iowait_pct, h.job_cpu_cores, h.job_processes, h.job_read_mibs,
                   h.job_ctx_switches_per_s}) {
    if (std::isnan(v))
      sqlite3_bind_null(st.s, i++);
    else
      sqlite3_bind_double(st.s, i++, v);
  }
  if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("writing host samples");
  return kOk;
}

Result<Nothing> RecordingWriter::add_marker(const StepMarker& m) {
  if (!db_) return failure("recording " + path_ + " is closed");
  if (auto r = begin_if_needed(); !r) return r;
  std::string text = m.event;
  if (!std::isnan(m.samples)) text += fmt::format(" samples={}", m.samples);
  return add_annotation(std::llround(m.time_s * 1000), "marker", text);
}

Result<Nothing> RecordingWriter::set_run_info(const std::vector<std::string>& command, int cores,
                                              const std::vector<AuditItem>& audit) {
  if (!db_) return failure("recording " + path_ + " is closed");
  if (auto r = begin_if_needed(); !r) return r;
  auto meta = [&](const char* k, const std::string& v) -> Result<Nothing> {
    Stmt st;
    sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO meta VALUES(?, ?)", -1, &st.s, nullptr);
    sqlite3_bind_text(st.s, 1, k, -1, SQLITE_STATIC);
    sqlite3_bind_text(st.s, 2, v.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.s) != SQLITE_DONE) return sqlite_error("writing metadata");
    return kOk;
  };
  if (auto r = meta("command", nlohmann::json(command).dump()); !r) return r;
  if (auto r = meta("host_cores", std::to_string(cores)); !r) return r;
  for (const auto& a : audit) {
    const nlohmann::json j = {
        {"level", a.level}, {"code", a.code}, {"message", a.message}, {"fix", a.fix}};
    if (auto r = add_annotation(0, "audit", j.dump()); !r) return r;
  }
  return kOk;
}

Result<Nothing> RecordingWriter::annotate(double t_s, const std::string& text) {
  if (!db_) return failure("recording " + path_ + " is closed");
  return add_annotation(std::llround(t_s * 1000), "user", text);
}

Result<Nothing> RecordingWriter::close() {
  if (!db_) return kOk;
  Result<Nothing> r = commit(true);
  for (sqlite3_stmt* s : {block_, process_, owner_, status_, event_}) sqlite3_finalize(s);
  block_ = process_ = owner_ = status_ = event_ = nullptr;
  // Fold the WAL back into the main file so the recording is one self-contained file.
  if (r) sqlite3_exec(db_, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(db_);
  db_ = nullptr;
  return r;
}

bool looks_like_recording(std::string_view head) {
  return head.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
}

}  // namespace gpudoctor
