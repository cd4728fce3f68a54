// read_recording: a recording file into a Recording (the writer: sqlite_store.cpp).
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
    sqlite3_exec(db_, "PRAGMA mmap_size=1073741824", nullptr, nullptr, nullptr);
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
      rec_.gpus[it->second].time_s.assign(static_cast<size_t>(rows), kMissing);
    }
    return kOk;
  }

  // A field column while its blocks come: the same value over rows [0, covered) so far, or built
  // out (a constant column is never built out: it stays one value and its length).
  struct Uniform {
    bool seen = false, uniform = true;
    double v = kMissing;
    int64_t covered = 0;
  };

  Result<Nothing> read_blocks() {
    // Blocks in file order; each lands at its first_row. Fields by name, so files written with
    // an older or newer catalogue still read (unknown fields are skipped).
    std::vector<std::array<Uniform, kFieldCount>> so_far(rec_.gpus.size());
    std::vector<double> scratch;
    Stmt st;
    if (sqlite3_prepare_v2(db_, "SELECT gpu, field, first_row, n, data FROM samples", -1, &st.s,
                           nullptr) != SQLITE_OK)
      return fail("reading samples");
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      const auto it = by_gpu_.find(static_cast<unsigned>(sqlite3_column_int(st.s, 0)));
      if (it == by_gpu_.end()) continue;
      GpuSeries& g = rec_.gpus[it->second];
      const auto* id = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 1));
      const std::string_view field = id ? id : "";
      const int64_t first = sqlite3_column_int64(st.s, 2);
      const int64_t n = sqlite3_column_int64(st.s, 3);
      if (first < 0 || n < 0 || first + n > static_cast<int64_t>(g.size()))
        return damaged(fmt::format("block {} of GPU {} is out of range", first, g.info.index));
      const void* blob = sqlite3_column_blob(st.s, 4);
      const int bytes = sqlite3_column_bytes(st.s, 4);
      auto wrong_size = [&] {
        return damaged(fmt::format("block {} of GPU {} has the wrong size", first, g.info.index));
      };
      if (field == kTimeColumn) {
        double* out = g.time_s.data() + first;
        if (!decode_block(blob, bytes, n, out)) return wrong_size();
        for (int64_t i = 0; i < n; ++i) out[i] /= 1000.0;
        continue;
      }
      const auto f = field_by_id(field);
      if (!f) continue;
      auto& col = g.columns[index_of(*f)];
      Uniform& u = so_far[it->second][index_of(*f)];
      if (u.uniform) {
        // The block's one value, if it has one (stored once, or n equal values).
        std::optional<double> one;
        if (n > 0 && bytes == static_cast<int>(sizeof(double))) {
          double v;
          std::memcpy(&v, blob, sizeof v);
          one = v;
        } else {
          scratch.resize(static_cast<size_t>(n));
          if (!decode_block(blob, bytes, n, scratch.data())) return wrong_size();
          if (n == 0 || std::all_of(scratch.begin(), scratch.end(),
                                    [&](double x) { return same_bits(x, scratch[0]); }))
            one = n == 0 ? (u.seen ? u.v : kMissing) : scratch[0];
        }
        if (one && first == u.covered && (!u.seen || same_bits(*one, u.v))) {
          u.seen = true, u.v = *one, u.covered += n;
          continue;
        }
        // Not one value after all: the column built out with what came before.
        auto& values = g.column_for_write(*f);
        if (u.seen) std::fill(values.begin(), values.begin() + u.covered, u.v);
        u.uniform = false;
        if (!one) {  // decoded already
          std::copy(scratch.begin(), scratch.end(), values.begin() + first);
          continue;
        }
      }
      if (!decode_block(blob, bytes, n, col.values().data() + first)) return wrong_size();
    }
    if (rc != SQLITE_DONE) return fail("reading samples");
    // Columns that held one value: that value once where it covers every row (or the rows after
    // it are missing too), built out where missing rows follow it.
    for (size_t gi = 0; gi < rec_.gpus.size(); ++gi) {
      GpuSeries& g = rec_.gpus[gi];
      for (size_t fi = 0; fi < kFieldCount; ++fi) {
        const Uniform& u = so_far[gi][fi];
        if (!u.seen || !u.uniform) continue;
        const auto rows = static_cast<int64_t>(g.size());
        if (u.covered == rows || same_bits(u.v, kMissing)) {
          g.columns[fi] = GpuSeries::Column::constant(u.v, g.size());
        } else {
          auto& values = g.column_for_write(static_cast<Field>(fi));
          std::fill(values.begin(), values.begin() + u.covered, u.v);
        }
      }
    }
    for (const auto& g : rec_.gpus)
      if (std::any_of(g.time_s.begin(), g.time_s.end(), [](double t) { return std::isnan(t); }))
        return damaged(fmt::format("GPU {} has rows without a time", g.info.index));
    return kOk;
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
};

}  // namespace

Result<Recording> read_recording(const std::string& path) {
  return RecordingReader(path).read();
}

}  // namespace gpudoctor
