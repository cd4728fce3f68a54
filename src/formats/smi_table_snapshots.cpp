// The nvidia-smi / nvitop table reader's snapshots: checked against the first one, placed in time
// (the date line's second, shared seconds spread over it), their GPU rows added to the table of
// cells the column catalogue's reader reads, their processes made spans; then the recording.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/finish.hpp"
#include "formats/generic_csv.hpp"
#include "formats/smi_table_reader.hpp"
#include "formats/smi_table_rows.hpp"
#include "text/text.hpp"

namespace gpudoctor::smi_table_reader {

namespace {

// The GPU a process or GPU index stands for (equal_range compares both).
unsigned gpu_of(const SnapProcess* p) {
  return p->gpu;
}
unsigned gpu_of(unsigned index) {
  return index;
}

}  // namespace

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
      st.index = g.index;
      st.name = std::string(g.name);
      st.bus_id = std::string(g.bus_id);
      gpus_.push_back(std::move(st));
    }
  } else {
    bool same = s.gpus.size() == gpus_.size();
    for (size_t i = 0; same && i < s.gpus.size(); ++i) {
      const GpuState& d = gpus_[i];
      same = s.gpus[i].index == d.index && s.gpus[i].name == d.name &&
             (s.gpus[i].bus_id.empty() || d.bus_id.empty() || s.gpus[i].bus_id == d.bus_id);
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
    // The header: without a date line, no time column (the catalogue's reader takes the rows
    // as rounds 1 s apart).
    std::vector<std::string_view> names(kColumnName.begin(), kColumnName.end());
    if (mode_ == Mode::kRelative) names.erase(names.begin());
    table_.set_header(names, s.line);
  }
  if (mode_ == Mode::kRelative) {
    commit(s, std::nullopt);
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
    commit(pending_[k],
           pending_ms_ + std::llround(1000.0 * static_cast<double>(k) / static_cast<double>(n)));
  last_ms_ = pending_ms_;
  pending_.clear();
}

// A snapshot at its time (Unix ms; none without date lines): its GPUs' rows go to the table, its
// processes to the GPUs' spans.
void Reader::commit(const Snapshot& s, std::optional<int64_t> ms) {
  ++snapshots_read_;
  const double t =
      ms ? static_cast<double>(*ms - start_ms_) / 1000.0 : static_cast<double>(relative_count_++);
  // (The time the catalogue's reader takes from the cell: (ms - first ms) / 1000, the same.)
  const std::string_view time =
      ms ? table_.own(text::format_timestamp_ms(*ms, '-')) : std::string_view();
  // The compute processes by GPU, so that each GPU finds its own without a scan of all.
  std::vector<const SnapProcess*> compute;
  for (const SnapProcess& p : s.processes)
    if (p.compute) compute.push_back(&p);
  std::stable_sort(compute.begin(), compute.end(),
                   [](const SnapProcess* a, const SnapProcess* b) { return a->gpu < b->gpu; });
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const SnapGpu& sg = s.gpus[i];
    GpuState& g = gpus_[i];
    row_.assign(sg.cell.begin() + (ms ? 0 : 1), sg.cell.end());
    if (ms) row_[kTime] = time;
    table_.add_row(row_, sg.values_line);
    const double prev_t = g.last_t;
    g.last_t = t;

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
      if (g.processes[o].last_s == prev_t) continued[g.processes[o].pid] = o;
    std::vector<size_t> open;
    for (const auto& [p, memory] : here) {
      size_t at = g.processes.size();
      if (const auto it = continued.find(p->pid); it != continued.end()) at = it->second;
      if (at == g.processes.size()) {
        ProcessSpan span;
        span.pid = p->pid;
        span.name = p->name;
        span.first_s = t;
        g.processes.push_back(std::move(span));
      }
      ProcessSpan& span = g.processes[at];
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

// The GPU rows read by the catalogue's reader (units, markers of no value, times, GPUs and their
// notes), then what only the table says: driver, processes, and the snapshots it skipped.
Result<Recording> Reader::finish() {
  const Tool tool = tool_.value_or(Tool::kNvidiaSmi);
  const std::string_view name_of_tool = tool_name(tool);
  const std::string label = fmt::format("{} table", name_of_tool);
  auto read =
      read_tool_table(table_, origin_, {name_of_tool, "N/A", label, opt_.power_limit_w, &opt_.map});
  if (!read.ok()) return read;
  Recording& rec = read.value();
  rec.system.driver_version = driver_;
  rec.system.cuda_driver_version = cuda_;
  auto note = [&](std::string n) { log_reader::add_note(rec, std::move(n)); };
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
  for (const auto& gpu : gpus_) {
    const std::string& name = gpu.name;
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

  // Processes: the table's own, by GPU index.
  std::vector<unsigned> no_list;
  for (GpuSeries& series : rec.gpus) {
    const auto it = std::find_if(gpus_.begin(), gpus_.end(),
                                 [&](const GpuState& s) { return s.index == series.info.index; });
    if (it == gpus_.end()) continue;
    series.processes = std::move(it->processes);
    series.processes_recorded = it->processes_known;
    if (!it->processes_known) no_list.push_back(it->index);
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
  return read;
}

}  // namespace gpudoctor::smi_table_reader
