// Recordings: gpudoctor's own telemetry files, in SQLite (schema: docs/recording-format.md).
// RecordingWriter appends frames from a live source in batched transactions (committed at least
// every second, WAL journal), so a killed process loses at most the last second and the file
// always opens. read_recording() loads a file into a Recording.
// Thread-safety: a writer is used by one thread.
#pragma once

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

inline constexpr int kRecordingSchemaVersion = 1;

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
  // Appends a whole Recording (import), in one transaction.
  Result<Nothing> add_recording(const Recording& rec);
  Result<Nothing> annotate(double t_s, const std::string& text);
  // Commits and closes; the writer is unusable afterwards. Also done by the destructor.
  Result<Nothing> close();
  size_t frames() const { return frames_; }

 private:
  RecordingWriter() = default;
  Result<Nothing> exec(const char* sql);
  Result<Nothing> begin_if_needed();
  Result<Nothing> commit();
  Result<Nothing> insert_row(unsigned gpu, int64_t t_ms, const double* values);
  Result<Nothing> note_process(unsigned gpu, const ProcessInfo& p, int64_t t_ms);
  Result<Nothing> note_status(unsigned gpu, Field f, int32_t code);
  Error sqlite_error(const std::string& what) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* process_ = nullptr;
  sqlite3_stmt* status_ = nullptr;
  sqlite3_stmt* event_ = nullptr;
  std::string path_;
  int64_t start_unix_ms_ = 0;
  bool in_tx_ = false;
  int64_t last_commit_ms_ = 0;
  size_t frames_ = 0;
  std::vector<unsigned> gpu_index_;  // frame position -> GPU index
  std::map<std::pair<unsigned, uint32_t>, int64_t> process_first_ms_;  // open process spans
  std::map<std::pair<unsigned, Field>, int32_t> status_seen_;
  std::vector<bool> lost_seen_;
};

bool looks_like_recording(std::string_view head);  // "SQLite format 3\0"
Result<Recording> read_recording(const std::string& path);

}  // namespace gpudoctor
