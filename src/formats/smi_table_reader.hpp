// The nvidia-smi / nvitop table reader (formats/smi_table.hpp), inside: the framing of a file's
// lines into snapshots (smi_table.cpp), and the snapshots placed in time, their GPU rows handed to
// the column catalogue's reader and their processes made spans (smi_table_snapshots.cpp). Not part
// of the library's interface.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/smi_table.hpp"
#include "formats/smi_table_rows.hpp"

namespace gpudoctor::smi_table_reader {

using log_reader::Problem;
using namespace smi_table;  // NOLINT: the rows of this reader's tables

// A GPU of one snapshot: its cells under the catalogue's names (kColumnName), views of the text or
// of copies the table keeps; the time cell is written when the snapshot is placed in time.
struct SnapGpu {
  unsigned index = 0;
  std::string_view name, bus_id;
  std::array<std::string_view, kColumns> cell{};
  size_t line = 0;         // its first row's
  size_t values_line = 0;  // the row of its values
};

struct Snapshot {
  size_t line = 0;                 // where it starts (its date line or banner)
  std::optional<int64_t> time_ms;  // from the date line, whole seconds
  Tool tool = Tool::kNvidiaSmi;    // the banner's
  bool mig_in_row1 = false;        // nvitop: "MIG M." heads the first row's third cell
  size_t numeric_columns = 4;      // nvitop: columns between GPU-MEM and TIME (%SM %GMBW %CPU %MEM)
  std::vector<SnapGpu> gpus;
  std::vector<SnapProcess> processes;
  std::vector<unsigned> processes_unsupported;  // GPUs whose process list says "Not Supported"
  bool table_done = false, processes_done = false;
  bool broken = false;
  std::string broken_why;
  size_t broken_line = 0;
};

// A GPU of the first accepted snapshot: who it is, and its processes (the table's own part; the
// GPU rows go to the catalogue's reader).
struct GpuState {
  unsigned index = 0;
  std::string name, bus_id;
  std::vector<ProcessSpan> processes;
  std::vector<size_t> open_spans;  // indexes into processes seen in the last snapshot
  double last_t = -1;              // the time of its last snapshot
  bool processes_known = true;
};

// ---------------------------------------------------------------------------------------------
// Reader

enum class State : uint8_t {
  kOutside,     // between snapshots
  kGpuHeader,   // after the banner, before the GPU table's "|===" line
  kGpuBody,     // GPU rows
  kAfterGpu,    // after the GPU table: MIG devices or the process table may follow
  kMig,         // the MIG devices table (skipped)
  kProcHeader,  // after "| Processes:", before its "|===" line
  kProcBody,    // process rows
};

enum class Expect : uint8_t { kRow1, kRow2, kRow3 };

class Reader {
 public:
  Reader(std::string_view text, const std::string& origin, const SmiTableOptions& opt)
      : text_(text), origin_(origin), opt_(opt) {
    table_.rows_follow_the_text();  // (a snapshot's rows after the one before's)
  }

  Result<Recording> run();

 private:
  // The framing of lines into snapshots (smi_table.cpp).
  void line(std::string_view t, size_t line_no);
  void banner(std::string_view t, size_t line_no);
  void gpu_row(std::string_view t, size_t line_no);
  void process_row(std::string_view t, size_t line_no);
  void end_gpu_table();
  // The snapshots, their time, rows and processes; the recording (smi_table_snapshots.cpp).
  void begin_snapshot(size_t line_no, std::optional<int64_t> ms);
  void close_snapshot(bool at_eof);
  void accept(Snapshot&& s);
  void flush_pending();
  void commit(const Snapshot& s, std::optional<int64_t> ms);
  Result<Recording> finish();
  void broken(size_t line_no, std::string why) {
    if (!snap_.broken) {
      snap_.broken = true;
      snap_.broken_why = std::move(why);
      snap_.broken_line = line_no;
    }
  }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }
  void cell(SnapGpu& g, size_t column, std::string_view v);
  // A view that outlives the line: the text's own, or a copy the table keeps (a line nvitop drew
  // in box drawing is read from a buffer the next line overwrites).
  std::string_view keep(std::string_view v) {
    if (v.empty() ||
        (v.data() >= text_.data() && v.data() + v.size() <= text_.data() + text_.size()))
      return v;
    return table_.own(v);
  }

  std::string_view text_;
  const std::string& origin_;
  const SmiTableOptions& opt_;

  State state_ = State::kOutside;
  Expect expect_ = Expect::kRow1;
  bool open_ = false;
  Snapshot snap_;
  std::vector<std::string_view> cells_, tokens_;
  std::string ascii_;         // a line of box drawing, as ASCII
  std::optional<Tool> tool_;  // the first snapshot's: names the recording and its notes

  // Timing: snapshots of one date second wait in pending_ and are spread over that second.
  enum class Mode : uint8_t { kUndecided, kDated, kRelative } mode_ = Mode::kUndecided;
  int64_t start_ms_ = 0, pending_ms_ = 0, last_ms_ = std::numeric_limits<int64_t>::min();
  std::vector<Snapshot> pending_;
  size_t shared_second_ = 0, relative_count_ = 0;

  std::vector<GpuState> gpus_;  // the first accepted snapshot's GPUs, in index order
  size_t banners_ = 0, snapshots_read_ = 0;
  std::vector<std::string> drivers_;
  std::string driver_, cuda_;
  std::vector<std::string> graphics_only_;
  Problem garbage_, cut_short_, garbled_, other_gpus_, no_date_, not_advancing_, err_values_,
      stray_process_;
  // The accepted snapshots' GPU rows under the catalogue's names, for read_generic_csv.
  log_reader::CellTable table_;
  std::vector<std::string_view> row_;
};

}  // namespace gpudoctor::smi_table_reader
