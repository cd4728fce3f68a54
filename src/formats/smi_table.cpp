#include "formats/smi_table.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/finish.hpp"
#include "formats/log_time.hpp"
#include "formats/no_value.hpp"
#include "formats/smi_table_reader.hpp"
#include "formats/smi_table_rows.hpp"
#include "text/text.hpp"

namespace gpudoctor::smi_table_reader {

using text::iequals;

void Reader::cell(SnapGpu& g, size_t column, std::string_view v) {
  v = text::trim(v);
  // nvitop: "MAX" for a fan at 100 % or more.
  if (column == kFan && iequals(v, "MAX")) v = "100%";
  g.cell[column] = keep(v);
  // (Read as missing by the catalogue's reader, as every marker of no value; said in a note.)
  if (csv::no_value(v) == csv::NoValue::kError)
    problem(err_values_, g.values_line, "{} of GPU {}", kColumnName[column], g.index);
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
    if (driver_.empty()) driver_ = std::string(driver);
    if (std::find(drivers_.begin(), drivers_.end(), driver) == drivers_.end())
      drivers_.emplace_back(driver);
  }
  if (!cuda.empty() && !iequals(cuda, "N/A") && cuda_.empty()) cuda_ = std::string(cuda);
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
    if (!tokens_.empty()) g.cell[kMig] = keep(tokens_[0]);
    expect_ = Expect::kRow1;
    return;
  }
  if (index_first && expect_ != Expect::kRow2) {
    // "   0  NVIDIA A100-SXM4-40GB          On  | 00000000:07:00.0 Off |    0 |"
    SnapGpu g;
    g.line = line_no;
    g.index = static_cast<unsigned>(*text::parse_int(tokens_[0]));
    g.cell[kIndex] = keep(tokens_[0]);
    const std::string_view c0 = text::trim(cells_[0]);
    std::string_view rest = text::trim(c0.substr(tokens_[0].size()));
    if (tokens_.size() >= 3) {
      const std::string_view last = tokens_.back();
      if (iequals(last, "On") || iequals(last, "Off") || iequals(last, "N/A") ||
          iequals(last, "WDDM") || iequals(last, "TCC") || iequals(last, "MCDM")) {
        g.cell[kPersistence] = keep(last);
        rest = text::trim(rest.substr(0, rest.size() - last.size()));
      }
    }
    g.name = g.cell[kName] = keep(rest);
    text::split_ws(cells_[1], tokens_);
    if (!tokens_.empty()) {
      g.cell[kBusId] = keep(tokens_[0]);
      if (!iequals(tokens_[0], "N/A")) g.bus_id = g.cell[kBusId];
    }
    if (snap_.mig_in_row1) {  // nvitop: "| Disabled           0 |" (MIG M., Uncorr. ECC)
      text::split_ws(cells_[2], tokens_);
      if (!tokens_.empty()) g.cell[kMig] = keep(tokens_[0]);
    }
    snap_.gpus.push_back(g);
    expect_ = Expect::kRow2;
    return;
  }
  if (expect_ == Expect::kRow2 && !blank) {
    // " N/A   44C    P0   231W / 300W |  15847MiB / 32480MiB |     99%      Default |"
    SnapGpu& g = snap_.gpus.back();
    g.values_line = line_no;
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
    cell(g, kFan, tokens_[0]);
    cell(g, kTemp, tokens_[1]);
    cell(g, kPerf, tokens_[2]);
    cell(g, kPwr, pwr);
    cell(g, kCap, cap);
    const std::string_view mem = text::trim(cells_[1]);
    if (const size_t sl = mem.find('/'); sl != std::string_view::npos) {
      cell(g, kMemUsed, mem.substr(0, sl));
      cell(g, kMemTotal, mem.substr(sl + 1));
    } else {
      cell(g, kMemUsed, mem);
      cell(g, kMemTotal, mem);
    }
    text::split_ws(cells_[2], tokens_);
    cell(g, kUtil, tokens_.empty() ? std::string_view() : tokens_[0]);
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
  return finish();
}

}  // namespace gpudoctor::smi_table_reader

namespace gpudoctor {

bool looks_like_smi_table(std::string_view head) {
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view l;
    std::string ascii;
    while (lines.next(l)) {
      const std::string_view t = text::trim(smi_table::as_ascii(l, ascii));
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
    smi_table_reader::Reader reader(text, origin, opt);
    return reader.run();
  });
}

}  // namespace gpudoctor
