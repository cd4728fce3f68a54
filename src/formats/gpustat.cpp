// gpustat's text snapshots (`gpustat` in a loop, or `gpustat -i`): a host line with the time, then
// one line per GPU. See formats/text_layouts.hpp.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "formats/column_catalogue.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/log_time.hpp"
#include "formats/text_layouts.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

using text::iequals;

// Text without ANSI colour codes ("\x1b[1m"): s itself when it has none, else a copy in buf.
std::string_view strip_ansi(std::string_view s, std::string& buf) {
  size_t esc = s.find('\x1b');
  if (esc == std::string_view::npos) return s;
  buf.clear();
  buf.reserve(s.size());
  size_t from = 0;
  while (esc != std::string_view::npos) {
    buf.append(s.substr(from, esc - from));
    size_t i = esc + 1;
    if (i < s.size() && s[i] == '[') {
      ++i;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      if (i < s.size()) ++i;
    } else {
      buf.push_back('\x1b');  // (not a colour code: kept)
    }
    from = i;
    esc = s.find('\x1b', from);
  }
  buf.append(s.substr(std::min(from, s.size())));
  return buf;
}

// Whether a line is a host line with the time: "host  Tue Dec  1 10:00:00 2026  535.104.05"; the
// time into *out where given, "2026-12-01 10:00:00". words: room for the line's words.
bool gpustat_time(std::string_view line, std::vector<std::string_view>& t,
                  std::string* out = nullptr) {
  static constexpr std::string_view kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                                 "jul", "aug", "sep", "oct", "nov", "dec"};
  text::split_ws(line, t);
  for (size_t i = 0; i + 3 < t.size(); ++i) {
    for (size_t m = 0; m < 12; ++m) {
      if (!iequals(t[i], kMonths[m])) continue;
      const auto day = text::parse_int(t[i + 1]);
      const auto year = text::parse_int(t[i + 3]);
      if (!day || !year || *day < 1 || *day > 31 || *year < 1970 || *year > 9999 ||
          !csv::parse_time_of_day(t[i + 2]))
        continue;
      if (out != nullptr) {
        out->clear();
        fmt::format_to(std::back_inserter(*out), "{:04d}-{:02d}-{:02d} {}", *year, m + 1, *day,
                       t[i + 2]);
      }
      return true;
    }
  }
  return false;
}

bool gpustat_gpu_line(std::string_view l) {
  l = text::trim(l);
  return l.size() > 4 && l.front() == '[' && l.find(']') != std::string_view::npos &&
         l.find('|') != std::string_view::npos;
}

// A GPU line (gpustat_gpu_line) with its three parts: "[0] NAME | temp, util, power | memory |
// processes" (at least two bars after the index).
bool has_three_parts(std::string_view gpu_line) {
  const std::string_view l = text::trim(gpu_line);
  const std::string_view after = l.substr(l.find(']') + 1);
  return std::count(after.begin(), after.end(), '|') >= 2;
}

constexpr std::string_view kColumns[] = {"time",
                                         "gpu",
                                         "name",
                                         "temperature.gpu",
                                         "utilization.gpu",
                                         "power.draw [W]",
                                         "enforced.power.limit [W]",
                                         "memory.used [MiB]",
                                         "memory.total [MiB]"};
constexpr size_t kColumnCount = std::size(kColumns);

// A gpustat log's rows: its GPU lines, kept as lines (16 bytes each: a table of their nine cells
// held 144) and cut into cells when read, each under the host line of its snapshot, whose time is
// read once for the snapshot's rows. A line with colour codes is read without them, copied.
class GpustatRows : public log_reader::CellRows {
 public:
  // A snapshot's host line (its time read): the GPU lines added after it are its rows.
  void add_snapshot(std::string_view host, size_t file_line) {
    snapshots_.push_back({rows_.size(), file_line, host.data(), host.size()});
  }
  void add_row(std::string_view gpu_line, size_t file_line) {
    if (file_line - snapshots_.back().line > UINT32_MAX) {  // (the host line again, nearer)
      const Snapshot s = snapshots_.back();
      snapshots_.push_back({rows_.size(), file_line, s.host, s.host_size});
    }
    rows_.push_back({gpu_line.data(),
                     static_cast<uint32_t>(std::min<size_t>(gpu_line.size(), UINT32_MAX)),
                     static_cast<uint32_t>(file_line - snapshots_.back().line)});
  }
  // The header stands at the first GPU line (the file has none).
  void set_header_line(size_t file_line) { header_line_ = file_line; }

  size_t columns() const override { return kColumnCount; }
  std::string_view name(size_t column) const override { return kColumns[column]; }
  size_t rows() const override { return rows_.size(); }
  size_t header_line() const override { return header_line_; }
  size_t line(size_t r) const override { return snapshots_[snapshot_of(r)].line + rows_[r].after; }
  void row(size_t r, std::vector<std::string_view>& cells) const override;

 private:
  struct Snapshot {
    size_t first_row, line;  // its first row, the file's line that lines after are counted from
    const char* host;        // its host line
    size_t host_size;
  };
  struct Row {  // (no initialisers: a block of them is not written until used)
    const char* text;
    uint32_t size;   // (a line of 4 GiB or more is read as its first 4 GiB)
    uint32_t after;  // the file's line, from its snapshot's
  };
  size_t snapshot_of(size_t r) const;
  std::vector<Snapshot> snapshots_;
  log_reader::StableBlocks<Row> rows_;
  size_t header_line_ = 0;
  // What reading a row holds: the snapshot found last and its time, the line without colours,
  // its parts.
  mutable std::atomic<size_t> hint_{0};
  mutable size_t time_of_ = SIZE_MAX;
  mutable std::string time_, plain_;
  mutable std::vector<std::string_view> parts_, fields_;
};

size_t GpustatRows::snapshot_of(size_t r) const {
  return log_reader::run_holding(snapshots_, r, hint_,
                                 [](const Snapshot& s) { return s.first_row; });
}

void GpustatRows::row(size_t r, std::vector<std::string_view>& cells) const {
  const size_t s = snapshot_of(r);
  if (s != time_of_) {
    const Snapshot& snap = snapshots_[s];
    if (!gpustat_time(strip_ansi({snap.host, snap.host_size}, plain_), parts_, &time_))
      time_.clear();
    time_of_ = s;
  }
  const Row& x = rows_[r];
  text::passed(x.text);  // the rows are read in order: the lines behind may go
  const std::string_view l = text::trim(strip_ansi({x.text, x.size}, plain_));
  const size_t close = l.find(']');
  const std::string_view gpu = l.substr(1, close - 1);
  text::split_trimmed(l.substr(close + 1), '|', parts_);
  if (parts_.size() < 3) parts_.resize(3);  // (a line of 4 GiB or more: read as its first 4 GiB)
  std::string_view temp, util, power, limit, used, total;
  text::split_trimmed(parts_[1], ',', fields_);
  for (auto f : fields_) {
    // "0 % (E:   0 %  D:   0 %)": GPU-Util followed by the codecs' (--show-codec).
    if (const size_t codec = f.find(" ("); codec != std::string_view::npos)
      f = text::trim(f.substr(0, codec));
    if (f.ends_with("C")) {
      temp = f.substr(0, f.find_first_not_of("0123456789.- "));
    } else if (f.ends_with("%")) {
      // "temp, util %", or with --show-fan "temp, fan %, util %": the last is GPU-Util.
      util = f.substr(0, f.size() - 1);
    } else if (f.ends_with("W")) {
      const size_t slash = f.find('/');
      power = f.substr(0, slash);
      if (slash != std::string_view::npos) limit = f.substr(slash + 1, f.size() - slash - 2);
    }
  }
  const std::string_view mem = parts_[2];
  if (const size_t slash = mem.find('/'); slash != std::string_view::npos) {
    used = mem.substr(0, slash);
    total = text::trim(mem.substr(slash + 1));
    if (total.ends_with("MB")) total = total.substr(0, total.size() - 2);
  }
  cells.assign({time_, gpu, parts_[0], temp, util, power, limit, used, total});
  for (std::string_view& c : cells) c = text::trim(c);
}

Result<Recording> gpustat(std::string_view text, const std::string& origin,
                          const GenericCsvOptions& opt) {
  GpustatRows rows;
  text::LineReader lines(text);
  std::string_view line;
  std::string plain;
  std::vector<std::string_view> words;
  // A host line with a time not yet followed by a GPU line: its snapshot starts at that line.
  std::string_view host;
  size_t host_line = 0;
  while (lines.next(line)) {
    if (text::is_blank(line)) continue;
    const std::string_view l = strip_ansi(line, plain);
    if (!gpustat_gpu_line(l)) {
      if (gpustat_time(l, words)) {
        host = line;
        host_line = lines.line_number();
      }
      continue;
    }
    if (!has_three_parts(l)) continue;
    if (host_line == 0 && rows.rows() == 0) continue;  // (no time yet)
    if (rows.rows() == 0) rows.set_header_line(lines.line_number());
    if (host_line != 0) {
      rows.add_snapshot(host, host_line);
      host_line = 0;
    }
    rows.add_row(line, lines.line_number());
  }
  if (rows.rows() == 0)
    return usage_error(
        fmt::format("{}: no gpustat snapshot (a host line with the time, then "
                    "\"[0] NAME | ...\" lines)",
                    origin));
  return read_layout_rows(rows, origin, opt, "gpustat");
}

}  // namespace

bool looks_like_gpustat(std::string_view head) {
  return log_reader::guarded_check([&] {
    std::string plain;
    std::vector<std::string_view> words;
    text::LineReader lines(text::strip_bom(head));
    std::string_view line;
    bool timed = false;
    while (lines.next(line)) {
      if (text::is_blank(line)) continue;
      line = strip_ansi(line, plain);
      if (gpustat_gpu_line(line)) return timed;
      timed = gpustat_time(line, words);
      if (!timed) return false;
    }
    return false;
  });
}

Result<Recording> read_gpustat(std::string_view text, const std::string& origin,
                               const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "gpustat log",
                                  [&] { return gpustat(text::strip_bom(text), origin, opt); });
}

}  // namespace gpudoctor
