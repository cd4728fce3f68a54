// read_recording: a recording file into a Recording (the writer: sqlite_store.cpp).
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/parallel.hpp"
#include "store/sqlite_common.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor {

using namespace sqlite_common;

namespace {

// read_recording's steps, each a table of the file, on one open connection.
class RecordingReader {
 public:
  explicit RecordingReader(std::string path) : path_(std::move(path)) {}
  // _v2: a statement still open in a step's scope is finalized after this; the connection then
  // closes instead of leaking.
  ~RecordingReader() { sqlite3_close_v2(db_); }
  RecordingReader(const RecordingReader&) = delete;
  RecordingReader& operator=(const RecordingReader&) = delete;

  Result<Recording> read() {
    // One thread reads: no per-call mutex.
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK)
      return fail("cannot open the recording");
    // One read transaction: every table as the file was at one moment, while a recorder may be
    // writing it.
    in_one_view_ = sqlite3_exec(db_, "PRAGMA mmap_size=1073741824; BEGIN", nullptr, nullptr,
                                nullptr) == SQLITE_OK;
    for (auto step : {&RecordingReader::read_meta, &RecordingReader::read_devices,
                      &RecordingReader::size_rows, &RecordingReader::read_blocks})
      if (auto r = (this->*step)(); !r) return r.error();
    // Tables an older recording may lack: none of it then.
    read_field_status();
    read_processes();
    read_owners();
    read_lost();
    read_notes();
    read_run();
    return std::move(rec_);
  }

 private:
  Error fail(const std::string& what) const {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "cannot open";
    return usage_error(fmt::format("{}: {}: {}", path_, what, why));
  }
  Error damaged(const std::string& what) const {
    return usage_error(fmt::format("{}: damaged recording: {}", path_, what));
  }

  // The metadata: the format marker and schema version, where the recording came from.
  Result<Nothing> read_meta() {
    Stmt st;
    if (sqlite3_prepare_v2(db_, "SELECT key, value FROM meta", -1, &st.s, nullptr) != SQLITE_OK)
      return fail("not a gpudoctor recording");
    while (sqlite3_step(st.s) == SQLITE_ROW) meta_[text_col(st.s, 0)] = text_col(st.s, 1);
    if (meta_["format"] != "gpudoctor-recording")
      return fail("not a gpudoctor recording (no format marker)");
    const int version = std::atoi(meta_["schema_version"].c_str());
    if (version != kRecordingSchemaVersion)
      return usage_error(fmt::format(
          "{}: recording schema {} was written by {} gpudoctor; this one reads schema {}{}", path_,
          meta_["schema_version"], version > kRecordingSchemaVersion ? "a newer" : "an older",
          kRecordingSchemaVersion,
          version > kRecordingSchemaVersion
              ? ""
              : " (export it with the gpudoctor that wrote it, or record it again)"));
    rec_.source = meta_["source"];
    rec_.start_unix_ms = std::atoll(meta_["start_unix_ms"].c_str());
    rec_.system = {meta_["driver_version"], meta_["cuda_driver_version"], meta_["nvml_version"],
                   meta_["host"]};
    return kOk;
  }

  // One GpuSeries per device row, in GPU order.
  Result<Nothing> read_devices() {
    Stmt st;
    if (sqlite3_prepare_v2(db_,
                           "SELECT gpu, name, uuid, pci_bus_id, serial, architecture, "
                           "persistence_mode, mig_mode, gpm_supported, power_limit_source, "
                           "processes_recorded FROM devices ORDER BY gpu",
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
      g.power_limit_source = text_col(st.s, 9);
      g.processes_recorded = sqlite3_column_int(st.s, 10) != 0;
      by_gpu_[g.info.index] = rec_.gpus.size();
      rec_.gpus.push_back(std::move(g));
    }
    return kOk;
  }

  // Rows per GPU: the end of its last time block (every time NaN until its block is read).
  Result<Nothing> size_rows() {
    Stmt st;
    if (sqlite3_prepare_v2(db_,
                           "SELECT gpu, max(first_row + n) FROM samples WHERE field = 't_ms' "
                           "GROUP BY gpu",
                           -1, &st.s, nullptr) != SQLITE_OK)
      return fail("reading samples");
    while (sqlite3_step(st.s) == SQLITE_ROW) {
      const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
      const int64_t rows = sqlite3_column_int64(st.s, 1);
      if (it == by_gpu_.end()) continue;
      if (rows < 0 || rows > (int64_t{1} << 32)) return damaged("bad row count");
      rec_.gpus[it->second].time_s.assign_doubles(static_cast<size_t>(rows), kMissing);
    }
    return kOk;
  }

  // A block of the samples table: rows [first, first + n) of one GPU's column, `bytes` long (n
  // float64 values, or 8: one value for all n, then `one`).
  struct Block {
    int64_t rowid = 0, first = 0, n = 0, bytes = 0;
    double one = kMissing;
  };
  // One GPU's column (its times: field -1) and its blocks in file order.
  struct ColumnBlocks {
    size_t gpu = 0;
    int field = -1;
    std::vector<Block> blocks;
    int64_t bytes = 0;
  };

  // The samples' blocks: first the list (no data but the one-value blocks', each checked against
  // the GPU's rows, in file order), then each column read from its blocks, the columns spread
  // over the CPUs (each thread on a read-only connection of its own). Fields by name, so files
  // written with an older or newer catalogue still read (unknown fields are skipped).
  Result<Nothing> read_blocks() {
    std::vector<ColumnBlocks> columns;
    {
      std::map<std::pair<size_t, int>, size_t> slot;  // (GPU, field) -> columns
      Stmt st;
      if (sqlite3_prepare_v2(db_,
                             "SELECT rowid, gpu, field, first_row, n, length(data), CASE WHEN "
                             "length(data) = 8 THEN data END, typeof(data) FROM samples",
                             -1, &st.s, nullptr) != SQLITE_OK)
        return fail("reading samples");
      int rc;
      while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
        const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 1)));
        if (it == by_gpu_.end()) continue;
        const GpuSeries& g = rec_.gpus[it->second];
        const auto* id = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 2));
        const std::string_view field = id ? id : "";
        Block b;
        b.rowid = sqlite3_column_int64(st.s, 0);
        b.first = sqlite3_column_int64(st.s, 3);
        b.n = sqlite3_column_int64(st.s, 4);
        b.bytes = sqlite3_column_int64(st.s, 5);
        if (b.first < 0 || b.n < 0 || b.first + b.n > static_cast<int64_t>(g.size()))
          return damaged(fmt::format("block {} of GPU {} is out of range", b.first, g.info.index));
        int fi = -1;
        if (field != kTimeColumn) {
          const auto f = field_by_id(field);
          if (!f) continue;
          fi = static_cast<int>(index_of(*f));
        }
        // (Data other than a BLOB or NULL is damage too: its length is not its size in bytes.)
        const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 7));
        const std::string_view data_type = type ? type : "";
        if ((data_type != "blob" && data_type != "null") ||
            (b.bytes != b.n * static_cast<int64_t>(sizeof(double)) && b.bytes != sizeof(double)))
          return damaged(
              fmt::format("block {} of GPU {} has the wrong size", b.first, g.info.index));
        if (b.bytes == sizeof(double))
          std::memcpy(&b.one, sqlite3_column_blob(st.s, 6), sizeof(double));
        const auto [at, added] = slot.emplace(std::pair{it->second, fi}, columns.size());
        if (added) columns.push_back({it->second, fi, {}, 0});
        ColumnBlocks& c = columns[at->second];
        c.blocks.push_back(b);
        c.bytes += b.bytes;
      }
      if (rc != SQLITE_DONE) return fail("reading samples");
    }
    // The largest first, so that no thread is left with one at the end.
    std::stable_sort(
        columns.begin(), columns.end(),
        [](const ColumnBlocks& a, const ColumnBlocks& b) { return a.bytes > b.bytes; });

    // (Threads of their own need the list's view held, and an SQLite built for threads.)
    const bool spread = in_one_view_ && sqlite3_threadsafe() != 0 && default_threads() > 1 &&
                        !in_spread_work() && columns.size() > 1;
    if (spread && read_columns_spread(columns)) return times_complete();
    if (spread) {
      // The file changed under a thread's connection (a recorder writing it merged blocks): the
      // columns again, all on this one, in its view of the file.
      for (auto& g : rec_.gpus) {
        g.time_s.assign_doubles(g.size(), kMissing);
        for (auto& c : g.columns) c.reset();
      }
    }
    // On the list's own connection a block is as listed: one it cannot read is damage.
    if (const Block* bad = read_columns(db_, columns, 0, columns.size()))
      return damaged(fmt::format("the block of rows from {} cannot be read{}", bad->first,
                                 sqlite3_errcode(db_) == SQLITE_OK
                                     ? std::string(" (not the size it says)")
                                     : fmt::format(": {}", sqlite3_errmsg(db_))));
    return times_complete();
  }

  // Every row of every GPU has its time (a time block missing is damage).
  Result<Nothing> times_complete() const {
    for (const auto& g : rec_.gpus)
      if (std::any_of(g.time_s.begin(), g.time_s.end(), [](double t) { return std::isnan(t); }))
        return damaged(fmt::format("GPU {} has rows without a time", g.info.index));
    return kOk;
  }

  // The columns [b, e) read on connection `db` (this reader's, or a thread's own in a read
  // transaction of its own). Returns the block that is not what the list said (gone, or another:
  // only a connection that sees the file as it is now, not as the list was read, meets that, or
  // a damaged file), or null when all were read.
  const Block* read_columns(sqlite3* db, std::vector<ColumnBlocks>& columns, size_t b, size_t e) {
    struct Blob {  // (closed however this returns: an open one keeps its connection open)
      sqlite3_blob* p = nullptr;
      ~Blob() { sqlite3_blob_close(p); }
    } blob;
    Stmt check;
    const bool own_view = db != db_;
    static const Block kNone;
    if (own_view && sqlite3_prepare_v2(db,
                                       "SELECT gpu, field, first_row, n, length(data) FROM "
                                       "samples WHERE rowid = ?",
                                       -1, &check.s, nullptr) != SQLITE_OK)
      return &kNone;
    // A block's n values into out (8 bytes: its one value n times).
    auto read = [&](const ColumnBlocks& c, const Block& k, double* out) {
      if (k.n == 0) return true;
      if (k.bytes == sizeof(double)) {
        std::fill(out, out + k.n, k.one);
        return true;
      }
      if (own_view) {
        sqlite3_reset(check.s);
        sqlite3_bind_int64(check.s, 1, k.rowid);
        if (sqlite3_step(check.s) != SQLITE_ROW ||
            static_cast<unsigned>(sqlite3_column_int(check.s, 0)) != rec_.gpus[c.gpu].info.index ||
            sqlite3_column_int64(check.s, 2) != k.first ||
            sqlite3_column_int64(check.s, 3) != k.n || sqlite3_column_int64(check.s, 4) != k.bytes)
          return false;
        const auto* id = reinterpret_cast<const char*>(sqlite3_column_text(check.s, 1));
        const std::string_view field = id ? id : "";
        const auto f = field_by_id(field);
        if (c.field < 0 ? field != kTimeColumn : !f || static_cast<int>(index_of(*f)) != c.field)
          return false;
      }
      // Straight into the column (no copy of the blob in between).
      const bool opened = blob.p ? sqlite3_blob_reopen(blob.p, k.rowid) == SQLITE_OK
                                 : sqlite3_blob_open(db, "main", "samples", "data", k.rowid, 0,
                                                     &blob.p) == SQLITE_OK;
      return opened && sqlite3_blob_bytes(blob.p) == k.bytes &&
             sqlite3_blob_read(blob.p, out, static_cast<int>(k.bytes), 0) == SQLITE_OK;
    };
    const Block* failed = nullptr;
    bool ok = true;
    std::vector<double> scratch;
    for (size_t ci = b; ci < e && ok; ++ci) {
      ColumnBlocks& c = columns[ci];
      GpuSeries& g = rec_.gpus[c.gpu];
      if (c.field < 0) {
        for (const Block& k : c.blocks) {
          double* out = g.time_s.doubles() + k.first;
          if (!(ok = read(c, k, out))) failed = &k;
          if (!ok) break;
          for (int64_t i = 0; i < k.n; ++i) out[i] /= 1000.0;
        }
        continue;
      }
      const auto f = static_cast<Field>(c.field);
      // The column holds one value over rows [0, covered) while its blocks say so: kept as that
      // value and a length, never built out, where it covers every row (or NaN follows it).
      bool uniform = true, seen = false;
      double v = kMissing;
      int64_t covered = 0;
      for (const Block& k : c.blocks) {
        if (uniform) {
          // The block's one value, if it has one (stored once, or n equal values).
          std::optional<double> one;
          if (k.n > 0 && k.bytes == sizeof(double)) {
            one = k.one;
          } else {
            scratch.resize(static_cast<size_t>(k.n));
            if (!(ok = read(c, k, scratch.data()))) failed = &k;
            if (!ok) break;
            if (k.n == 0 || std::all_of(scratch.begin(), scratch.end(),
                                        [&](double x) { return same_bits(x, scratch[0]); }))
              one = k.n == 0 ? (seen ? v : kMissing) : scratch[0];
          }
          if (one && k.first == covered && (!seen || same_bits(*one, v))) {
            seen = true, v = *one, covered += k.n;
            continue;
          }
          // Not one value after all: the column built out with what came before.
          auto& values = g.column_for_write(f);
          if (seen) std::fill(values.begin(), values.begin() + covered, v);
          uniform = false;
          if (!one) {  // read already
            std::copy(scratch.begin(), scratch.end(), values.begin() + k.first);
            continue;
          }
        }
        if (!(ok = read(c, k, g.columns[index_of(f)].values().data() + k.first))) failed = &k;
        if (!ok) break;
      }
      if (!ok || !seen || !uniform) continue;
      const auto rows = static_cast<int64_t>(g.size());
      if (covered == rows || same_bits(v, kMissing)) {
        g.columns[index_of(f)] = GpuSeries::Column::constant(v, g.size());
      } else {
        auto& values = g.column_for_write(f);
        std::fill(values.begin(), values.begin() + covered, v);
      }
    }
    return failed;
  }

  // read_columns spread over the CPUs: this thread on this reader's connection, the others each
  // on a read-only connection of its own, in a read transaction. False where one of those saw
  // the file other than this one's list (then nothing of what was read may be kept).
  bool read_columns_spread(std::vector<ColumnBlocks>& columns) {
    const auto me = std::this_thread::get_id();
    std::mutex m;
    struct Connections {  // every one opened, closed however this returns (an exception too)
      std::vector<sqlite3*> all, idle;  // idle: between columns
      ~Connections() {
        for (sqlite3* db : all) sqlite3_close_v2(db);
      }
    } conns;
    std::atomic<bool> ok{true};
    parallel_for(columns.size(), 0, [&](size_t ci) {
      if (!ok) return;
      if (std::this_thread::get_id() == me) {
        if (read_columns(db_, columns, ci, ci + 1)) ok = false;
        return;
      }
      sqlite3* db = nullptr;
      {
        const std::lock_guard lock(m);
        if (!conns.idle.empty()) {
          db = conns.idle.back();
          conns.idle.pop_back();
        }
      }
      if (db == nullptr) {
        const int opened = sqlite3_open_v2(path_.c_str(), &db,
                                           SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
        {
          const std::lock_guard lock(m);
          conns.all.push_back(db);  // (a failed open's handle too: closing it frees it)
        }
        if (opened != SQLITE_OK || sqlite3_exec(db, "PRAGMA mmap_size=1073741824; BEGIN", nullptr,
                                                nullptr, nullptr) != SQLITE_OK) {
          ok = false;
          return;
        }
      }
      if (read_columns(db, columns, ci, ci + 1)) ok = false;
      const std::lock_guard lock(m);
      conns.idle.push_back(db);
    });
    return ok;
  }

  // Fields the GPU did not support, with the NVML code.
  void read_field_status() {
    Stmt st;
    if (sqlite3_prepare_v2(db_, "SELECT gpu, field, code FROM field_status", -1, &st.s, nullptr) ==
        SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
        const auto f = field_by_id(text_col(st.s, 1));
        if (it != by_gpu_.end() && f && !rec_.gpus[it->second].has(*f))
          rec_.gpus[it->second].unsupported[*f] = nvml_code_from_name(text_col(st.s, 2));
      }
  }

  void read_processes() {
    Stmt st;
    if (sqlite3_prepare_v2(db_,
                           "SELECT gpu, pid, first_ms, last_ms, name, max_memory_mib FROM "
                           "processes ORDER BY gpu, first_ms, pid",
                           -1, &st.s, nullptr) == SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
        if (it == by_gpu_.end()) continue;
        ProcessSpan p;
        p.pid = static_cast<uint32_t>(sqlite3_column_int64(st.s, 1));
        p.first_s = static_cast<double>(sqlite3_column_int64(st.s, 2)) / 1000.0;
        p.last_s = static_cast<double>(sqlite3_column_int64(st.s, 3)) / 1000.0;
        p.name = text_col(st.s, 4);
        if (sqlite3_column_type(st.s, 5) != SQLITE_NULL)
          p.max_memory_mib = sqlite3_column_double(st.s, 5);
        rec_.gpus[it->second].processes.push_back(std::move(p));
      }
  }

  void read_owners() {
    // Recordings written before owners were recorded have no such table: no owners.
    Stmt st;
    if (sqlite3_prepare_v2(db_,
                           "SELECT gpu, kind, id, step, pod, namespace, container, runtime, user, "
                           "uid, source, first_ms, last_ms FROM owners ORDER BY gpu, first_ms",
                           -1, &st.s, nullptr) == SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
        const auto kind = owner_kind_from_code(text_col(st.s, 1));
        if (it == by_gpu_.end() || !kind) continue;
        OwnerSpan o;
        o.owner.kind = *kind;
        o.owner.id = text_col(st.s, 2);
        o.owner.step = text_col(st.s, 3);
        o.owner.pod = text_col(st.s, 4);
        o.owner.pod_namespace = text_col(st.s, 5);
        o.owner.container = text_col(st.s, 6);
        o.owner.runtime = text_col(st.s, 7);
        o.owner.user = text_col(st.s, 8);
        if (sqlite3_column_type(st.s, 9) != SQLITE_NULL)
          o.owner.uid = static_cast<uint32_t>(sqlite3_column_int64(st.s, 9));
        o.owner.source = text_col(st.s, 10);
        o.first_s = static_cast<double>(sqlite3_column_int64(st.s, 11)) / 1000.0;
        o.last_s = static_cast<double>(sqlite3_column_int64(st.s, 12)) / 1000.0;
        rec_.gpus[it->second].owners.push_back(std::move(o));
      }
  }

  // GPUs that fell off the bus.
  void read_lost() {
    Stmt st;
    if (sqlite3_prepare_v2(db_, "SELECT t_ms, gpu FROM events WHERE kind = 'lost'", -1, &st.s,
                           nullptr) == SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) {
        const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 1)));
        if (it != by_gpu_.end())
          rec_.gpus[it->second].lost_at_s =
              static_cast<double>(sqlite3_column_int64(st.s, 0)) / 1000.0;
      }
  }

  void read_notes() {
    Stmt st;
    if (sqlite3_prepare_v2(db_, "SELECT text FROM annotations WHERE kind = 'note' ORDER BY rowid",
                           -1, &st.s, nullptr) == SQLITE_OK)
      while (sqlite3_step(st.s) == SQLITE_ROW) rec_.notes.push_back(text_col(st.s, 0));
  }

  // `gpudoctor run`: command, host series, markers, audit.
  void read_run() {
    if (!meta_["command"].empty()) {
      const auto j = nlohmann::json::parse(meta_["command"], nullptr, false);
      if (j.is_array())
        for (const auto& a : j)
          if (a.is_string()) rec_.command.push_back(a.get<std::string>());
    }
    {
      Stmt st;
      if (sqlite3_prepare_v2(db_,
                             "SELECT t_ms, cpu_pct, iowait_pct, job_cpu_cores, job_processes, "
                             "job_read_mibs, job_ctx_switches_per_s FROM host ORDER BY t_ms",
                             -1, &st.s, nullptr) == SQLITE_OK) {
        auto num = [&](int c) {
          return sqlite3_column_type(st.s, c) == SQLITE_NULL ? kMissing
                                                             : sqlite3_column_double(st.s, c);
        };
        while (sqlite3_step(st.s) == SQLITE_ROW) {
          if (!rec_.host)
            rec_.host.emplace(), rec_.host->cores = std::atoi(meta_["host_cores"].c_str());
          HostSample h;
          h.time_s = static_cast<double>(sqlite3_column_int64(st.s, 0)) / 1000.0;
          h.cpu_pct = num(1), h.iowait_pct = num(2), h.job_cpu_cores = num(3);
          h.job_processes = num(4), h.job_read_mibs = num(5), h.job_ctx_switches_per_s = num(6);
          rec_.host->samples.push_back(h);
        }
      }
    }
    {
      Stmt st;
      if (sqlite3_prepare_v2(db_,
                             "SELECT t_ms, kind, text FROM annotations WHERE kind IN ('marker', "
                             "'audit') ORDER BY rowid",
                             -1, &st.s, nullptr) == SQLITE_OK)
        while (sqlite3_step(st.s) == SQLITE_ROW) {
          const std::string kind = text_col(st.s, 1), text = text_col(st.s, 2);
          if (kind == "marker") {
            StepMarker m;
            m.time_s = static_cast<double>(sqlite3_column_int64(st.s, 0)) / 1000.0;
            const auto sp = text.find(' ');
            m.event = text.substr(0, sp);
            if (sp != std::string::npos && text.compare(sp + 1, 8, "samples=") == 0)
              m.samples = std::strtod(text.c_str() + sp + 9, nullptr);
            rec_.markers.push_back(std::move(m));
          } else {
            const auto j = nlohmann::json::parse(text, nullptr, false);
            auto str = [&](const char* key) {
              const auto it = j.find(key);
              return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
            };
            if (j.is_object())
              rec_.audit.push_back({str("level"), str("code"), str("message"), str("fix")});
          }
        }
    }
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  Recording rec_;
  std::map<std::string, std::string> meta_;
  std::map<unsigned, size_t> by_gpu_;  // GPU index -> rec_.gpus
  bool in_one_view_ = false;           // db_ reads in one read transaction
};

}  // namespace

Result<Recording> read_recording(const std::string& path) {
  return RecordingReader(path).read();
}

}  // namespace gpudoctor
