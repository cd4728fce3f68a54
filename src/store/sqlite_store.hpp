// Recordings: gpudoctor's own telemetry files, in SQLite (schema: docs/recording-format.md).
// Samples are stored in column blocks: per GPU, per field, a BLOB of float64 values (NaN = no
// value) for a run of rows, plus the time column. RecordingWriter keeps the rows since the last
// commit in memory and writes them as small blocks at each commit (at least every second, WAL
// journal), so a killed process loses at most the last second and the file always opens; every
// kRecordingBlockRows rows, and at close, the small blocks of a GPU are merged into one block per
// field. read_recording() loads a file into a Recording.
// Thread-safety: a writer is used by one thread.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/recording.hpp"
#include "core/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace gpudoctor {

// 2: column blocks (1 had one row per GPU per sample; it is refused with a clear error).
inline constexpr int kRecordingSchemaVersion = 2;
// Rows per merged block (a block never crosses a multiple of this).
inline constexpr int64_t kRecordingBlockRows = 4096;

class RecordingWriter {
 public:
  ~RecordingWriter();
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  // Creates (or replaces) path. Fails with a clear message on a read-only or missing directory.
  static Result<std::unique_ptr<RecordingWriter>> create(const std::string& path,
                                                         const SystemInfo& system,
                                                         const std::vector<DeviceInfo>& devices,
                                                         const std::string& source,
                                                         int64_t start_unix_ms);
  // Appends one frame (times relative to start_unix_ms). Commits when a second has passed.
  Result<Nothing> add(const Frame& frame);
  // Writes a whole Recording (import) into a fresh writer, in one transaction: samples, field
  // status, processes, lost GPUs, power limit sources and notes.
  Result<Nothing> add_recording(const Recording& rec);
  Result<Nothing> annotate(double t_s, const std::string& text);
  // `gpudoctor run`: one host sample, a step marker, and (once) the job's command line, the CPU
  // cores it may use and the environment audit.
  Result<Nothing> add_host(const HostSample& h);
  Result<Nothing> add_marker(const StepMarker& m);
  Result<Nothing> set_run_info(const std::vector<std::string>& command, int cores,
                               const std::vector<AuditItem>& audit);
  // Commits now what add() would commit within the next second.
  Result<Nothing> flush() { return commit(false); }
  // Commits, merges the last blocks and closes; the writer is unusable afterwards. Also done by
  // the destructor.
  Result<Nothing> close();
  size_t frames() const { return frames_; }

 private:
  // A GPU of add(): rows not yet written, row-major (time, then kFieldCount values per row).
  struct GpuState {
    unsigned gpu = 0;
    int64_t rows_written = 0;  // rows in the file (committed or in the open transaction)
    bool pieces = false;       // the block rows_written is in has small blocks to merge
    bool lost_seen = false;
    bool limit_seen = false;
    bool processes_seen = false;
    std::vector<double> t_ms;
    std::vector<double> values;  // t_ms.size() * kFieldCount
  };
  // A column to write: values p[0], p[stride], ... or none.
  struct Strided {
    const double* p = nullptr;
    size_t stride = 1;
  };

  RecordingWriter() = default;
  Result<Nothing> exec(const char* sql);
  Result<Nothing> begin_if_needed();
  Result<Nothing> commit(bool final);
  Result<Nothing> flush_gpu(GpuState& g, bool final);
  Result<Nothing> merge_block(unsigned gpu, int64_t block_first, int64_t rows);
  Result<Nothing> write_rows(unsigned gpu, int64_t first_row, size_t n, const double* t_ms,
                             const std::array<Strided, kFieldCount>& cols, bool keep_empty);
  Result<Nothing> insert_block(unsigned gpu, int64_t first_row, std::string_view field,
                               const double* v, size_t n);
  Result<Nothing> note_process(unsigned gpu, const ProcessInfo& p, int64_t t_ms);
  Result<Nothing> note_status(unsigned gpu, Field f, int32_t code);
  Result<Nothing> note_lost(unsigned gpu, int64_t t_ms);
  Result<Nothing> set_power_limit_source(unsigned gpu, const std::string& source);
  Result<Nothing> set_processes_recorded(unsigned gpu);
  Result<Nothing> add_annotation(int64_t t_ms, const char* kind, const std::string& text);
  Error sqlite_error(const std::string& what) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* block_ = nullptr;
  sqlite3_stmt* process_ = nullptr;
  sqlite3_stmt* owner_ = nullptr;
  sqlite3_stmt* status_ = nullptr;
  sqlite3_stmt* event_ = nullptr;
  std::string path_;
  int64_t start_unix_ms_ = 0;
  bool in_tx_ = false;
  int64_t last_commit_ms_ = 0;
  size_t frames_ = 0;
  std::vector<GpuState> gpus_;  // in frame order
  std::vector<double> scratch_;
  std::map<std::pair<unsigned, uint32_t>, int64_t> process_first_ms_;   // open process spans
  std::map<std::pair<unsigned, std::string>, int64_t> owner_first_ms_;  // open owner spans
  Result<Nothing> write_owner(unsigned gpu, const Owner& o, int64_t first_ms, int64_t last_ms);
  std::map<std::pair<unsigned, Field>, int32_t> status_seen_;
};

bool looks_like_recording(std::string_view head);  // "SQLite format 3\0"
Result<Recording> read_recording(const std::string& path);

}  // namespace gpudoctor
