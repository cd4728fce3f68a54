#include "formats/smi_table.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/reading.hpp"
#include "formats/finish.hpp"
#include "formats/log_time.hpp"
#include "formats/smi_table_rows.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using log_reader::Problem;
using namespace smi_table;  // NOLINT: the rows of this reader's tables
using text::iequals;

struct SnapGpu {
  unsigned index = 0;
  std::string name, bus_id;
  std::optional<bool> persistence, mig;
  std::array<double, kSlots> value{};
  std::array<Cell, kSlots> cell{};
  size_t line = 0;
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

struct GpuState {
  GpuSeries series;
  log_reader::FieldCounts counts;
  std::vector<size_t> open_spans;  // indexes into series.processes seen in the last snapshot
  bool processes_known = true;
};

// The GPU a process or GPU index stands for (equal_range compares both).
unsigned gpu_of(const SnapProcess* p) {
  return p->gpu;
}
unsigned gpu_of(unsigned index) {
  return index;
}

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
      : text_(text), origin_(origin), opt_(opt) {}

  Result<Recording> run();

 private:
  void line(std::string_view t, size_t line_no);
  void banner(std::string_view t, size_t line_no);
  void gpu_row(std::string_view t, size_t line_no);
  void process_row(std::string_view t, size_t line_no);
  void end_gpu_table();
  void begin_snapshot(size_t line_no, std::optional<int64_t> ms);
  void close_snapshot(bool at_eof);
  void accept(Snapshot&& s);
  void flush_pending();
  void commit(const Snapshot& s, double t);
  void finish();
  void broken(size_t line_no, std::string why) {
    if (!snap_.broken) {
      snap_.broken = true;
      snap_.broken_why = std::move(why);
      snap_.broken_line = line_no;
    }
  }
  void note(std::string n) { log_reader::add_note(rec_, std::move(n)); }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }
  void cell(SnapGpu& g, size_t slot, std::string_view v, size_t line_no);

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
  std::vector<std::string> graphics_only_;
  std::vector<unsigned> no_process_list_;
  Problem garbage_, cut_short_, garbled_, other_gpus_, no_date_, not_advancing_, bad_value_,
      err_values_, stray_process_;
  Recording rec_;
};

void Reader::cell(SnapGpu& g, size_t slot, std::string_view v, size_t line_no) {
  double x = 0;
  const Cell c = parse_cell(slot, v, x);
  g.cell[slot] = c;
  if (c == Cell::kValue) g.value[slot] = x;
  if (c == Cell::kBad)
    problem(bad_value_, line_no, "{}: cannot read \"{}\"", kSlotLabel[slot], text::trim(v));
  if (c == Cell::kErr) problem(err_values_, line_no, "{} of GPU {}", kSlotLabel[slot], g.index);
}

void Reader::begin_snapshot(size_t line_no, std::optional<int64_t> ms) {
  if (open_) close_snapshot(false);
  snap_ = Snapshot{};
  snap_.line = line_no;
  snap_.time_ms = ms;
  open_ = true;
  state_ = State::kOutside;
}

void Reader::close_snapshot(bool at_eof) {
  if (!open_) return;
  open_ = false;
  state_ = State::kOutside;
  if (snap_.broken) {
    problem(garbled_, snap_.broken_line, "{}", snap_.broken_why);
    return;
  }
  if (!snap_.table_done || !snap_.processes_done || snap_.gpus.empty()) {
    problem(cut_short_, snap_.line, "{}{}",
            !snap_.table_done ? "no complete GPU table" : "no complete process table",
            at_eof ? " at the end of the file" : "");
    return;
  }
  accept(std::move(snap_));
}

// A complete snapshot: check its GPUs against the first one's, then place it in time.
void Reader::accept(Snapshot&& s) {
  if (s.gpus.size() > log_reader::kMaxGpus) {
    problem(garbled_, s.line, "more than {} GPUs in one table", log_reader::kMaxGpus);
    return;
  }
  std::sort(s.gpus.begin(), s.gpus.end(),
            [](const SnapGpu& a, const SnapGpu& b) { return a.index < b.index; });
  for (size_t i = 1; i < s.gpus.size(); ++i) {
    if (s.gpus[i].index == s.gpus[i - 1].index) {
      problem(garbled_, s.gpus[i].line, "GPU {} appears twice in one snapshot", s.gpus[i].index);
      return;
    }
  }
  if (gpus_.empty()) {
    for (const auto& g : s.gpus) {
      GpuState st;
      st.series.info.index = g.index;
      st.series.info.name = g.name;
      st.series.info.pci_bus_id = g.bus_id;
      gpus_.push_back(std::move(st));
    }
  } else {
    bool same = s.gpus.size() == gpus_.size();
    for (size_t i = 0; same && i < s.gpus.size(); ++i) {
      const DeviceInfo& d = gpus_[i].series.info;
      same = s.gpus[i].index == d.index && s.gpus[i].name == d.name &&
             (s.gpus[i].bus_id.empty() || d.pci_bus_id.empty() || s.gpus[i].bus_id == d.pci_bus_id);
    }
    if (!same) {
      std::vector<unsigned> idx;
      for (const auto& g : s.gpus) idx.push_back(g.index);
      problem(other_gpus_, s.line, "GPU(s) {} where the first snapshot has {} GPU(s)",
              fmt::join(idx, ", "), gpus_.size());
      return;
    }
  }

  if (mode_ == Mode::kUndecided) {
    mode_ = s.time_ms ? Mode::kDated : Mode::kRelative;
    if (s.time_ms) start_ms_ = *s.time_ms;
  }
  if (mode_ == Mode::kRelative) {
    commit(s, static_cast<double>(relative_count_++));
    return;
  }
  if (!s.time_ms) {
    problem(no_date_, s.line, "a table without the date line nvidia-smi prints above it");
    return;
  }
  const int64_t ms = *s.time_ms;
  if (!pending_.empty() && ms == pending_ms_) {
    pending_.push_back(std::move(s));
    return;
  }
  if (ms <= last_ms_ || (!pending_.empty() && ms < pending_ms_)) {
    problem(not_advancing_, s.line, "{} is not after the snapshot before",
            text::format_timestamp_ms(ms, '-'));
    return;
  }
  flush_pending();
  pending_ms_ = ms;
  pending_.push_back(std::move(s));
}

// The snapshots of one date second, spread evenly over it (nvidia-smi -lms prints several).
void Reader::flush_pending() {
  if (pending_.empty()) return;
  const size_t n = pending_.size();
  if (n > 1) shared_second_ += n;
  for (size_t k = 0; k < n; ++k)
    commit(pending_[k], static_cast<double>(pending_ms_ - start_ms_) / 1000.0 +
                            static_cast<double>(k) / static_cast<double>(n));
  last_ms_ = pending_ms_;
  pending_.clear();
}

void Reader::commit(const Snapshot& s, double t) {
  ++snapshots_read_;
  // The compute processes by GPU, so that each GPU finds its own without a scan of all.
  std::vector<const SnapProcess*> compute;
  for (const SnapProcess& p : s.processes)
    if (p.compute) compute.push_back(&p);
  std::stable_sort(compute.begin(), compute.end(),
                   [](const SnapProcess* a, const SnapProcess* b) { return a->gpu < b->gpu; });
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const SnapGpu& sg = s.gpus[i];
    GpuState& g = gpus_[i];
    DeviceInfo& d = g.series.info;
    if (sg.persistence) d.persistence_mode = sg.persistence;
    if (sg.mig) d.mig_mode = sg.mig;
    const double prev_t = g.series.size() ? g.series.time_s.back() : -1;
    const size_t row = g.series.append_row(t);
    for (size_t slot = 0; slot < kSlots; ++slot) {
      const size_t fi = index_of(kSlotField[slot]);
      switch (sg.cell[slot]) {
        case Cell::kValue:
          g.series.column_for_write(kSlotField[slot])[row] = sg.value[slot];
          ++g.counts.value[fi];
          break;
        case Cell::kNotSupported:
          ++g.counts.not_supported[fi];
          break;
        case Cell::kNone:
          break;
        case Cell::kNa:
        case Cell::kErr:
        case Cell::kBad:
          ++g.counts.other[fi];
          break;
      }
    }

    // Processes: one span per pid while it is seen in consecutive snapshots.
    if (std::find(s.processes_unsupported.begin(), s.processes_unsupported.end(), sg.index) !=
        s.processes_unsupported.end())
      g.processes_known = false;
    // Entries of one pid in one snapshot (several MIG instances) add up.
    const auto [b, e] =
        std::equal_range(compute.begin(), compute.end(), sg.index,
                         [](const auto& x, const auto& y) { return gpu_of(x) < gpu_of(y); });
    std::vector<std::pair<const SnapProcess*, std::optional<double>>> here;
    std::unordered_map<uint32_t, size_t> here_at;  // pid -> here
    for (auto it = b; it != e; ++it) {
      const SnapProcess& p = **it;
      const auto [at, added] = here_at.emplace(p.pid, here.size());
      if (added)
        here.emplace_back(&p, p.memory_mib);
      else if (p.memory_mib)
        here[at->second].second = here[at->second].second.value_or(0) + *p.memory_mib;
    }
    std::unordered_map<uint32_t, size_t> continued;  // pid -> its span seen in the last snapshot
    for (const size_t o : g.open_spans)
      if (g.series.processes[o].last_s == prev_t) continued[g.series.processes[o].pid] = o;
    std::vector<size_t> open;
    for (const auto& [p, memory] : here) {
      size_t at = g.series.processes.size();
      if (const auto it = continued.find(p->pid); it != continued.end()) at = it->second;
      if (at == g.series.processes.size()) {
        ProcessSpan span;
        span.pid = p->pid;
        span.name = p->name;
        span.first_s = t;
        g.series.processes.push_back(std::move(span));
      }
      ProcessSpan& span = g.series.processes[at];
      span.last_s = t;
      if (memory) span.max_memory_mib = std::max(span.max_memory_mib.value_or(0), *memory);
      open.push_back(at);
    }
    g.open_spans = std::move(open);
  }
  for (const SnapProcess& p : s.processes) {
    // s.gpus is in index order (accept sorted it).
    const auto it =
        std::lower_bound(s.gpus.begin(), s.gpus.end(), p.gpu,
                         [](const SnapGpu& g, unsigned index) { return g.index < index; });
    if (it == s.gpus.end() || it->index != p.gpu) {
      problem(stray_process_, p.line, "pid {} on GPU {}", p.pid, p.gpu);
      continue;
    }
    if (!p.compute && !p.name.empty() &&
        std::find(graphics_only_.begin(), graphics_only_.end(), p.name) == graphics_only_.end() &&
        graphics_only_.size() < 64)
      graphics_only_.push_back(p.name);
  }
}

void Reader::banner(std::string_view t, size_t line_no) {
  // A banner starts a snapshot; one that follows a table without a date line of its own starts
  // the next (undated) snapshot.
  if (!open_ || state_ != State::kOutside || !snap_.gpus.empty() || snap_.table_done)
    begin_snapshot(line_no, std::nullopt);
  ++banners_;
  // "| NVITOP 1.3.2   Driver Version: 550.54.14   CUDA Driver Version: 12.4 |"
  snap_.tool = t.find("NVITOP") != std::string_view::npos ? Tool::kNvitop : Tool::kNvidiaSmi;
  if (!tool_) tool_ = snap_.tool;
  const std::string_view driver = value_after(t, "Driver Version:");
  const std::string_view cuda =
      value_after(t, snap_.tool == Tool::kNvitop ? "CUDA Driver Version:" : "CUDA Version:");
  if (!driver.empty() && !iequals(driver, "N/A")) {
    if (rec_.system.driver_version.empty()) rec_.system.driver_version = std::string(driver);
    if (std::find(drivers_.begin(), drivers_.end(), driver) == drivers_.end())
      drivers_.emplace_back(driver);
  }
  if (!cuda.empty() && !iequals(cuda, "N/A") && rec_.system.cuda_driver_version.empty())
    rec_.system.cuda_driver_version = std::string(cuda);
  state_ = State::kGpuHeader;
}

void Reader::gpu_row(std::string_view t, size_t line_no) {
  row_cells(t, cells_);
  if (cells_.size() < 3) {
    broken(line_no, fmt::format("cannot read the GPU table row \"{}\"", t));
    return;
  }
  text::split_ws(cells_[0], tokens_);
  const bool blank = tokens_.empty();
  // nvitop: "| 1:0      3g.40gb @ GI/CI: 1/0 | ..." a MIG device of the GPU above (skipped, as
  // nvidia-smi's MIG devices table is).
  if (snap_.tool == Tool::kNvitop && !blank && is_mig_device_index(tokens_[0]) &&
      expect_ != Expect::kRow2) {
    expect_ = Expect::kRow1;
    return;
  }
  const bool index_first = !blank && text::parse_int(tokens_[0]).has_value() &&
                           tokens_[0].find_first_not_of("0123456789") == std::string_view::npos;
  if (expect_ == Expect::kRow3 && blank) {
    // The third row: MIG mode in the last cell.
    SnapGpu& g = snap_.gpus.back();
    text::split_ws(cells_.back(), tokens_);
    if (!tokens_.empty()) g.mig = text::parse_enabled(tokens_[0]);
    expect_ = Expect::kRow1;
    return;
  }
  if (index_first && expect_ != Expect::kRow2) {
    // "   0  NVIDIA A100-SXM4-40GB          On  | 00000000:07:00.0 Off |    0 |"
    SnapGpu g;
    g.line = line_no;
    g.index = static_cast<unsigned>(*text::parse_int(tokens_[0]));
    g.cell.fill(Cell::kNone);
    const std::string_view c0 = text::trim(cells_[0]);
    std::string_view rest = text::trim(c0.substr(tokens_[0].size()));
    if (tokens_.size() >= 3) {
      const std::string_view last = tokens_.back();
      if (iequals(last, "On") || iequals(last, "Off") || iequals(last, "N/A") ||
          iequals(last, "WDDM") || iequals(last, "TCC") || iequals(last, "MCDM")) {
        g.persistence = text::parse_enabled(last);
        rest = text::trim(rest.substr(0, rest.size() - last.size()));
      }
    }
    g.name = std::string(rest);
    text::split_ws(cells_[1], tokens_);
    if (!tokens_.empty() && !iequals(tokens_[0], "N/A")) g.bus_id = std::string(tokens_[0]);
    if (snap_.mig_in_row1) {  // nvitop: "| Disabled           0 |" (MIG M., Uncorr. ECC)
      text::split_ws(cells_[2], tokens_);
      if (!tokens_.empty()) g.mig = text::parse_enabled(tokens_[0]);
    }
    snap_.gpus.push_back(std::move(g));
    expect_ = Expect::kRow2;
    return;
  }
  if (expect_ == Expect::kRow2 && !blank) {
    // " N/A   44C    P0   231W / 300W |  15847MiB / 32480MiB |     99%      Default |"
    SnapGpu& g = snap_.gpus.back();
    text::split_ws(cells_[0], tokens_);
    // Fan, temperature and P-state, then "usage / cap" (or "usage/cap" in one token).
    std::string_view pwr, cap;
    size_t slash = tokens_.size();
    for (size_t i = 0; i < tokens_.size(); ++i)
      if (tokens_[i] == "/") slash = i;
    size_t n = slash;
    if (slash < tokens_.size()) {
      if (n > 0) pwr = tokens_[--n];
      if (slash + 1 < tokens_.size()) cap = tokens_[slash + 1];
    } else if (n > 0 && tokens_[n - 1].find('/') != std::string_view::npos) {
      const std::string_view both = tokens_[--n];
      pwr = both.substr(0, both.find('/'));
      cap = both.substr(both.find('/') + 1);
    }
    if (n != 3 || pwr.empty()) {
      broken(line_no, fmt::format("cannot read the GPU table row \"{}\"", t));
      return;
    }
    cell(g, kFan, tokens_[0], line_no);
    cell(g, kTemp, tokens_[1], line_no);
    cell(g, kPerf, tokens_[2], line_no);
    cell(g, kPwr, pwr, line_no);
    cell(g, kCap, cap, line_no);
    const std::string_view mem = text::trim(cells_[1]);
    if (const size_t sl = mem.find('/'); sl != std::string_view::npos) {
      cell(g, kMemUsed, mem.substr(0, sl), line_no);
      cell(g, kMemTotal, mem.substr(sl + 1), line_no);
    } else {
      cell(g, kMemUsed, mem, line_no);
      cell(g, kMemTotal, mem, line_no);
    }
    text::split_ws(cells_[2], tokens_);
    cell(g, kUtil, tokens_.empty() ? std::string_view() : tokens_[0], line_no);
    expect_ = Expect::kRow3;
    return;
  }
  broken(line_no, fmt::format("cannot read the GPU table row \"{}\"", t));
}

void Reader::process_row(std::string_view t, size_t line_no) {
  std::string_view inner;
  if (snap_.tool == Tool::kNvitop) {
    // The whole row between its outer bars (a command line may hold a '|').
    inner = t.substr(1);
    if (!inner.empty() && inner.back() == '|') inner.remove_suffix(1);
  } else {
    row_cells(t, cells_);
    inner = cells_.empty() ? std::string_view() : cells_[0];
  }
  SnapProcess p;
  switch (parse_process_row(snap_.tool, inner, snap_.numeric_columns, p, tokens_)) {
    case ProcessRow::kNone:
      return;
    case ProcessRow::kNotSupported:
      snap_.processes_unsupported.push_back(p.gpu);
      return;
    case ProcessRow::kBad:
      broken(line_no, fmt::format("cannot read the process table row \"{}\"", t));
      return;
    case ProcessRow::kProcess:
      p.line = line_no;
      snap_.processes.push_back(std::move(p));
      return;
  }
}

void Reader::end_gpu_table() {
  if (expect_ == Expect::kRow2)
    broken(snap_.gpus.empty() ? snap_.line : snap_.gpus.back().line,
           "a GPU of the table has only its first row");
  expect_ = Expect::kRow1;
  snap_.table_done = !snap_.gpus.empty();
  state_ = State::kAfterGpu;
}

void Reader::line(std::string_view t, size_t line_no) {
  if (t.empty()) {
    if (state_ == State::kGpuBody) end_gpu_table();
    if (state_ == State::kMig) state_ = State::kAfterGpu;
    return;
  }
  if (const auto ms = csv::parse_ctime(t)) {  // nvidia-smi's date line
    if (state_ == State::kGpuBody) end_gpu_table();
    begin_snapshot(line_no, ms);
    return;
  }
  const char c = t.front();
  if (c == '|' &&
      (t.find("NVIDIA-SMI") != std::string_view::npos ||
       t.find("NVITOP") != std::string_view::npos) &&
      t.find("Driver Version") != std::string_view::npos) {
    if (state_ == State::kGpuBody) end_gpu_table();
    banner(t, line_no);
    return;
  }
  const bool nvitop = snap_.tool == Tool::kNvitop;
  const bool table_line = c == '|' || c == '+';
  const bool processes = c == '|' && text::istarts_with(text::trim(t.substr(1)), "Processes:");
  const bool mig = c == '|' && text::istarts_with(text::trim(t.substr(1)), "MIG devices:");
  switch (state_) {
    case State::kOutside:
      if (c == '+') return;  // the border above the banner or below the process table
      problem(garbage_, line_no, "\"{}\"", t.substr(0, 60));
      return;
    case State::kGpuHeader:
      if (t.starts_with("|=")) {
        state_ = State::kGpuBody;
        expect_ = Expect::kRow1;
      } else if (nvitop && table_line && t.find("MIG M.") != std::string_view::npos) {
        snap_.mig_in_row1 = true;  // "| GPU  Name ... | Bus-Id  Disp.A | MIG M.   Uncorr. ECC |"
      } else if (!table_line) {
        broken(line_no, "the GPU table's header is cut short");
        state_ = State::kOutside;
      }
      return;
    case State::kGpuBody:
      if (processes || mig) {
        end_gpu_table();
        break;  // read below as the next table
      }
      if (nvitop && c == '+') {  // "╘═══╧═══╧═══╛": the end of nvitop's GPU table
        end_gpu_table();
        return;
      }
      if (c == '+' || (nvitop && is_inner_rule(t))) {  // between GPUs ("├───┼───┤" in nvitop)
        if (expect_ == Expect::kRow2) broken(line_no, "a GPU of the table has only its first row");
        expect_ = Expect::kRow1;
        return;
      }
      if (c == '|') {
        gpu_row(t, line_no);
        return;
      }
      end_gpu_table();
      problem(garbage_, line_no, "\"{}\"", t.substr(0, 60));
      return;
    case State::kAfterGpu:
    case State::kMig:
    case State::kProcHeader:
    case State::kProcBody:
      break;
  }
  switch (state_) {
    case State::kAfterGpu:
    case State::kMig:
      if (processes) {
        state_ = State::kProcHeader;
      } else if (nvitop && c == '[' && state_ == State::kAfterGpu) {
        // nvitop's host bars between the tables: "[ CPU: ███▍ 12.3% ... ]  ( Load Average: ... )"
      } else if (mig) {
        state_ = State::kMig;
      } else if (!table_line) {
        state_ = State::kAfterGpu;
        problem(garbage_, line_no, "\"{}\"", t.substr(0, 60));
      } else if (state_ == State::kAfterGpu && c == '|') {
        problem(garbage_, line_no, "\"{}\"", t.substr(0, 60));
      }
      return;
    case State::kProcHeader:
      if (t.starts_with("|=")) {
        state_ = State::kProcBody;
      } else if (nvitop && c == '|') {
        // "| GPU     PID      USER  GPU-MEM %SM %GMBW  %CPU  %MEM  TIME  COMMAND |"
        if (const auto n = nvitop_numeric_columns(t.substr(1), tokens_)) snap_.numeric_columns = *n;
      } else if (!table_line) {
        broken(line_no, "the process table's header is cut short");
        state_ = State::kOutside;
      }
      return;
    case State::kProcBody:
      if (c == '+') {
        snap_.processes_done = true;
        state_ = State::kOutside;
      } else if (nvitop && is_inner_rule(t)) {
        // "├──────┤": the next GPU's processes
      } else if (c == '|') {
        process_row(t, line_no);
      } else {
        broken(line_no, "the process table is cut short");
        state_ = State::kOutside;
        problem(garbage_, line_no, "\"{}\"", t.substr(0, 60));
      }
      return;
    default:
      return;
  }
}

Result<Recording> Reader::run() {
  const std::string_view body = text::strip_bom(text_);
  if (auto e = text::check_input(body, origin_, "nvidia-smi table output", opt_.power_limit_w))
    return std::move(*e);
  text::LineReader lines(body);
  std::string_view l;
  const bool cut = text::ends_inside_a_line(body);
  while (lines.next(l)) {
    // nvidia-smi ends every line: a last line without an end was cut (a row half there would
    // read as garbled), so the snapshot it belongs to is cut short.
    if (cut && lines.rest().empty()) break;
    line(text::trim(as_ascii(l, ascii_)), lines.line_number());
  }
  close_snapshot(true);  // a GPU table still open at the end is cut short, not garbled
  flush_pending();

  if (banners_ == 0)
    return usage_error(fmt::format(
        "{}: no nvidia-smi table (\"| NVIDIA-SMI ... Driver Version: ... |\" and the GPU table "
        "below it); is this the output of plain nvidia-smi?",
        origin_));
  if (snapshots_read_ == 0) {
    const std::string_view tool = tool_name(tool_.value_or(Tool::kNvidiaSmi));
    for (const Problem* p : {&cut_short_, &garbled_, &other_gpus_, &no_date_, &not_advancing_})
      if (p->count > 0)
        return usage_error(
            fmt::format("{}: no complete {} snapshot ({})", origin_, tool, p->first));
    return usage_error(fmt::format("{}: no complete {} snapshot", origin_, tool));
  }
  finish();
  return std::move(rec_);
}

void Reader::finish() {
  Recording& rec = rec_;
  const Tool tool = tool_.value_or(Tool::kNvidiaSmi);
  const std::string_view name_of_tool = tool_name(tool);
  rec.source = fmt::format("{} table: {}", name_of_tool, origin_);
  rec.start_unix_ms = mode_ == Mode::kDated ? start_ms_ : 0;
  if (mode_ == Mode::kDated)
    note(fmt::format(
        "the date line above each table is the local time of the machine that ran {}, read as UTC "
        "(the log does not say its time zone), to the whole second",
        name_of_tool));
  else
    note(
        "no date line above the first table: snapshots taken as 1 s apart; the start time is "
        "unknown");
  if (shared_second_ > 0)
    note(fmt::format(
        "{} snapshots share their date second with another ({}, or a late sample): spread evenly "
        "over that second",
        shared_second_,
        tool == Tool::kNvitop ? "a loop faster than once a second" : "nvidia-smi -lms"));
  if (drivers_.size() > 1)
    note(fmt::format("the driver version changes mid-file ({}): each table read by its own layout",
                     fmt::join(drivers_, ", then ")));

  // GPU names cut short (nvidia-smi: "NVIDIA A100-SXM...", nvitop: "..000 Ada Generation"):
  // which boards of the model table they fit.
  for (const auto& g : gpus_) {
    const std::string& name = g.series.info.name;
    const bool left = name.starts_with("..") && !name.ends_with("...");
    if (!name.ends_with("...") && !left) continue;
    const log_reader::ModelMatch m = log_reader::match_model(name);
    note(fmt::format(
        "GPU name \"{}\" is cut short in {}'s table: {}", name, name_of_tool,
        m.candidates.empty()
            ? fmt::format("no board of the model table {} so", left ? "ends" : "starts")
            : fmt::format("it fits {}{}", fmt::join(m.candidates, ", "),
                          m.model ? "" : " (which differ: no architecture or power limit taken)")));
  }

  log_reader::FinishOptions fo;
  fo.power_limit_w = opt_.power_limit_w;
  fo.placeholder = "N/A";
  for (size_t slot = 0; slot < kSlots; ++slot)
    fo.columns.emplace_back(kSlotField[slot], std::string(kSlotLabel[slot]));
  std::vector<log_reader::GpuToFinish> to_finish;
  for (auto& g : gpus_) to_finish.push_back({&g.series, &g.counts});
  log_reader::finish_gpus(rec, to_finish, fo);

  std::vector<unsigned> no_list;
  for (auto& g : gpus_) {
    g.series.processes_recorded = g.processes_known;
    if (!g.processes_known) no_list.push_back(g.series.info.index);
  }
  if (!no_list.empty())
    note(fmt::format(
        "nvidia-smi could not list the processes of GPU(s) {} (Not Supported): no process spans",
        fmt::join(no_list, ", ")));
  if (!graphics_only_.empty())
    note(fmt::format(
        "graphics processes (type G, and C+G desktop clients without GPU memory of their own) are "
        "not compute work and are left out of the process "
        "spans: {}",
        fmt::join(graphics_only_, ", ")));
  if (err_values_.count > 0)
    note(fmt::format(
        "{} value(s) {} showed as ERR! (its reading failed) taken as missing (first: {})",
        err_values_.count, name_of_tool, err_values_.first));
  log_reader::note_skipped(rec, cut_short_, "cut short", "snapshot(s)");
  log_reader::note_skipped(rec, garbled_, "with a table gpudoctor cannot read", "snapshot(s)");
  log_reader::note_skipped(rec, other_gpus_, "with other GPUs than the first snapshot",
                           "snapshot(s)");
  log_reader::note_skipped(rec, no_date_, "without a date line", "snapshot(s)");
  log_reader::note_skipped(rec, not_advancing_, "whose time did not advance", "snapshot(s)");
  log_reader::note_skipped(rec, garbage_,
                           fmt::format("that are not part of an {} table", name_of_tool));
  log_reader::note_skipped(rec, stray_process_, "of processes on a GPU not in the table",
                           "process row(s)");
  log_reader::note_unreadable(rec, bad_value_);

  rec.gpus.reserve(gpus_.size());
  for (auto& g : gpus_) rec.gpus.push_back(std::move(g.series));
}

}  // namespace

bool looks_like_smi_table(std::string_view head) {
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view l;
    std::string ascii;
    while (lines.next(l)) {
      const std::string_view t = text::trim(as_ascii(l, ascii));
      if (t.empty()) continue;
      if (t.front() == '|' &&
          (t.find("NVIDIA-SMI") != std::string_view::npos ||
           t.find("NVITOP") != std::string_view::npos) &&
          t.find("Driver Version") != std::string_view::npos)
        return true;
      if (t.front() == '|' && t.find("Pwr:Usage/Cap") != std::string_view::npos) return true;
    }
    return false;
  });
}

Result<Recording> read_smi_table(std::string_view text, const std::string& origin,
                                 const SmiTableOptions& opt) {
  return log_reader::guarded_read(origin, "nvidia-smi table", [&] {
    Reader reader(text, origin, opt);
    return reader.run();
  });
}

}  // namespace gpudoctor
