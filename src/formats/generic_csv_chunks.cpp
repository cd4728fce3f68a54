// The generic CSV reader's rows on several threads: the text after a head read in order is cut
// into chunks at line ends; each chunk is read by a reader of its own (the layout and the time's
// form of this one, no rows), and the chunks' rows are merged in file order. A chunk's reading
// assumes nothing of the rows before it except what the head fixed (the layout, the time's form,
// the first time); where the merge finds that it depended on them (a GPU's first time in the
// chunk not after its last one before, too many GPUs), that chunk is read again in order here,
// and where the layout changes inside a chunk (a new header) or a quote may span a cut, the rest
// of the text is. So the recording is the one a single pass makes, bit for bit
// (tests/unit/generic_csv_chunks_test.cpp).

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/parallel.hpp"
#include "formats/generic_csv_reader.hpp"
#include "text/text.hpp"

namespace gpudoctor::generic_csv_reader {
namespace {

constexpr size_t kChunkBytes = size_t{8} << 20;
// The head, read before the other threads start (it fixes the time's form): no longer than it
// needs, as the other CPUs wait for it.
constexpr size_t kHeadBytes = size_t{1} << 20;

// The end of the line at or after `pos` (past its '\n'), or the text's end.
size_t line_end(std::string_view text, size_t pos) {
  if (pos >= text.size()) return text.size();
  const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
  return nl == nullptr ? text.size()
                       : static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
}

// A problem counted by a chunk's reader, whose first message counts lines from the chunk's start
// ("ORIGIN:LINE: ..."), added to this reader's.
void add_problem(Problem& into, const Problem& part, const std::string& origin, size_t line_base) {
  if (part.count == 0) return;
  if (into.count == 0) {
    const size_t b = origin.size() + 1, colon = part.first.find(':', b);
    const auto line = text::parse_int(std::string_view(part.first).substr(b, colon - b));
    into.first = line ? fmt::format("{}:{}{}", origin, static_cast<size_t>(*line) + line_base,
                                    std::string_view(part.first).substr(colon))
                      : part.first;
  }
  into.count += part.count;
}

// A GPU's rows of a chunk appended to its rows before: columns either lacks are NaN there.
// `room`: the rows `into` is reserved for when it must grow.
void append_series(GpuSeries& into, GpuSeries& part, size_t room) {
  const size_t n0 = into.size(), n1 = part.size();
  if (n0 + n1 > into.time_s.capacity()) into.time_s.reserve(std::max(room, n0 + n1));
  room = into.time_s.capacity();
  for (size_t fi = 0; fi < kFieldCount; ++fi) {
    auto& c = into.columns[fi];
    auto& pc = part.columns[fi];
    if (!c && !pc) continue;
    if (!c) c = GpuSeries::Column::constant(kMissing, n0);
    if (pc)
      c.append(pc, room);
    else
      c.append(ColumnView::constant(&kMissing, n1), room);
  }
  into.time_s.append(part.time_s, room);
  DeviceInfo& d = into.info;
  const DeviceInfo& s = part.info;
  for (auto [a, b] : {std::pair{&d.name, &s.name}, std::pair{&d.uuid, &s.uuid},
                      std::pair{&d.serial, &s.serial}, std::pair{&d.pci_bus_id, &s.pci_bus_id}})
    if (a->empty()) *a = *b;
  if (!d.persistence_mode) d.persistence_mode = s.persistence_mode;
  if (!d.mig_mode) d.mig_mode = s.mig_mode;
}

void add_counts(log_reader::FieldCounts& into, const log_reader::FieldCounts& part) {
  for (size_t fi = 0; fi < kFieldCount; ++fi) {
    into.value[fi] += part.value[fi];
    into.not_supported[fi] += part.not_supported[fi];
    into.no_permission[fi] += part.no_permission[fi];
    into.other[fi] += part.other[fi];
  }
}

}  // namespace

Reader Reader::for_chunk() const {
  Reader r(text_, origin_, opt_);
  // The layout and the time's form: everything but the rows (reset_rows() clears those).
  r.body_ = body_;
  r.sep_ = sep_;
  r.header_ = header_;
  r.header_raw_ = header_raw_;
  r.cols_ = cols_;
  r.time_col_ = time_col_;
  r.date_col_ = date_col_;
  r.key_col_ = key_col_;
  r.host_col_ = host_col_;
  r.driver_col_ = driver_col_;
  r.key_role_ = key_role_;
  r.wide_ = wide_;
  r.wide_numbers_ = wide_numbers_;
  r.fields_ = fields_;
  r.infos_ = infos_;
  r.fields_of_ = fields_of_;
  r.infos_of_ = infos_of_;
  r.key_is_row_number_ = key_is_row_number_;
  r.footer_raw_ = footer_raw_;
  r.cell_units_ = cell_units_;
  r.mode_ = mode_;
  r.ms_per_unit_ = ms_per_unit_;
  r.time_unit_named_ = time_unit_named_;
  r.have_first_ = have_first_;
  r.first_ms_ = first_ms_;
  r.chunk_.emplace();
  return r;
}

bool Reader::merge(Reader& part, size_t line_base) {
  invalid_utf8_ = invalid_utf8_ || part.invalid_utf8_;  // the text's, merged or not
  // What the chunk's reader could not know: the rows before it.
  size_t added = 0;
  for (const GpuState& pg : part.gpus_) {
    lookup_.assign(pg.host);
    lookup_ += '\0';
    lookup_ += pg.id;
    const auto it = slots_.find(lookup_);
    if (it == slots_.end()) {
      ++added;
      continue;
    }
    const GpuState& g = gpus_[it->second];
    if (!g.series.time_s.empty() && !(pg.series.time_s.front() > g.last_t)) return false;
  }
  if (gpus_.size() + added > log_reader::kMaxGpus || part.too_many_gpus_.count > 0) return false;

  // A log without a GPU column: every timed row's time, for the rounds (finish_reading). Both
  // parts' times in the series of one GPU: in it still once merged; else kept, the part's after.
  auto key = [](const GpuState& g) {
    return std::pair<std::string_view, std::string_view>(g.host, g.id);
  };
  const size_t none = std::string_view::npos;
  const bool one_series = times_in_series_ && part.times_in_series_ &&
                          (times_slot_ == none || part.times_slot_ == none ||
                           key(gpus_[times_slot_]) == key(part.gpus_[part.times_slot_]));
  std::string times_key;  // the part's GPU whose series holds the times, where ours has none yet
  if (one_series && times_slot_ == none && part.times_slot_ != none) {
    const GpuState& pg = part.gpus_[part.times_slot_];
    times_key = pg.host + '\0' + pg.id;
  }
  if (!one_series) {
    const TimeColumn& theirs = part.row_times();
    if (times_in_series_) {
      row_times_ = row_times();
      times_in_series_ = false;
    }
    row_times_.append(theirs);
  }

  for (GpuState& pg : part.gpus_) {
    lookup_.assign(pg.host);
    lookup_ += '\0';
    lookup_ += pg.id;
    const auto [it, created] = slots_.emplace(lookup_, gpus_.size());
    if (created) {
      gpus_.push_back(std::move(pg));
      continue;
    }
    GpuState& g = gpus_[it->second];
    const size_t rows = g.series.size() + pg.series.size();
    append_series(g.series, pg.series, rows_ahead(rows, rows));
    g.present.clear();
    for (size_t fi = 0; fi < kFieldCount; ++fi)
      if (g.series.columns[fi]) g.present.push_back(static_cast<uint8_t>(fi));
    add_counts(g.counts, pg.counts);
    g.last_t = pg.last_t;
  }
  for (size_t fi = 0; fi < kFieldCount; ++fi) {
    Stats& s = stats_[fi];
    const Stats& p = part.stats_[fi];
    s.n += p.n;
    s.over_3000 += p.over_3000;
    s.max = std::max(s.max, p.max);
    s.fraction = s.fraction || p.fraction;
    s.cell_unit = s.cell_unit || p.cell_unit;
  }
  for (auto [into, from] :
       {std::pair{&wrong_count_, &part.wrong_count_}, std::pair{&malformed_, &part.malformed_},
        std::pair{&bad_time_, &part.bad_time_}, std::pair{&bad_gpu_, &part.bad_gpu_},
        std::pair{&not_increasing_, &part.not_increasing_}, std::pair{&bad_cell_, &part.bad_cell_},
        std::pair{&truncated_, &part.truncated_}})
    add_problem(*into, *from, origin_, line_base);
  data_lines_ += part.data_lines_;
  rows_read_ += part.rows_read_;
  if (!times_key.empty()) times_slot_ = slots_.at(times_key);
  timed_rows_ += part.timed_rows_;
  header_repeats_ += part.header_repeats_;
  any_unzoned_ = any_unzoned_ || part.any_unzoned_;
  decimal_comma_ = decimal_comma_ || part.decimal_comma_;
  if (rec_.system.driver_version.empty())
    rec_.system.driver_version = std::move(part.rec_.system.driver_version);
  return true;
}

bool Reader::read_in_chunks(std::string_view rows) {
  // Inside work already spread (a fleet worker's log), one pass: its own threads would only take
  // turns with the others' (core/parallel).
  const unsigned threads =
      opt_.threads != 0 ? opt_.threads : (in_spread_work() ? 1 : default_threads());
  const size_t chunk = opt_.chunk_bytes != 0 ? opt_.chunk_bytes : kChunkBytes;
  // (Without a GPU column, the rows are one GPU's on the first reading; on a second, by their
  // place in the sampling rounds, each row's GPU is its rank among all rows: read in order.)
  const bool by_position = key_col_ < 0 && !positions_.empty();
  if (threads < 2 || chunk_ || wide_ || by_position || time_col_ < 0 || rows.size() < 2 * chunk)
    return false;
  // The head, read here: it fixes the time's form and the first time the others count from. A
  // quote in it may open a cell that holds line ends: then all is read in one pass.
  const size_t head = line_end(rows, std::min(chunk, kHeadBytes));
  if (std::memchr(rows.data(), '"', head) != nullptr) return false;
  size_t line = read_span(rows.substr(0, head), rows_line_before_, head == rows.size());
  if (head == rows.size()) return true;
  if (header_changes_ > 0 || !have_first_ || wide_ ||
      !(mode_ == TimeMode::kDateTime || mode_ == TimeMode::kDateAndTod ||
        mode_ == TimeMode::kEpoch || mode_ == TimeMode::kElapsed)) {
    // (A time of day needs the rows before it: past midnight it goes back.)
    read_span(rows.substr(head), line, true);
    return true;
  }
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) in rows
  for (size_t b = head; b < rows.size();) {
    const size_t e = line_end(rows, b + chunk);
    spans.emplace_back(b, e);
    b = e;
  }
  const size_t n = spans.size();
  // What every chunk's reader starts from, made once: the threads copy it while this one merges.
  const Reader proto = for_chunk();
  struct Part {
    std::unique_ptr<Reader> reader;
    size_t lines = 0;
    bool stopped = false;  // a quote or a new header: the rest is read in one pass
    std::exception_ptr error;
  };
  std::vector<Part> parts(n);
  std::vector<char> ready(n, 0);
  // Chunks are taken in order, at most `window` ahead of the last one merged: memory holds a few
  // chunks' rows beside the merged ones, however fast the threads read.
  const size_t window = 2 * static_cast<size_t>(threads);
  size_t next = 0, merged = 0;
  bool cancel = false;
  std::mutex m;
  std::condition_variable cv;
  auto work = [&](size_t i) {
    Part p;
    try {
      const std::string_view text = rows.substr(spans[i].first, spans[i].second - spans[i].first);
      p.reader = std::make_unique<Reader>(proto);
      p.reader->chunk_->text = text;
      p.lines = p.reader->read_span(text, 0, spans[i].second == rows.size());
      p.stopped = p.reader->chunk_->stopped;
    } catch (...) {
      p.error = std::current_exception();
    }
    std::unique_lock lock(m);
    if (cancel) {  // (read again in one pass, or not needed: dropped, outside the lock)
      lock.unlock();
      return;
    }
    parts[i] = std::move(p);
    ready[i] = 1;
    cv.notify_all();
  };
  // The next chunk to read, or n when there is none (now, for this thread: `wait` false).
  auto take = [&](std::unique_lock<std::mutex>& lock, bool wait) -> size_t {
    while (!cancel && next < n) {
      if (next < merged + window) return next++;
      if (!wait) break;
      cv.wait(lock);
    }
    return n;
  };
  std::vector<std::thread> pool;
  struct Join {
    std::vector<std::thread>& pool;
    std::mutex& m;
    std::condition_variable& cv;
    bool& cancel;
    ~Join() {
      {
        const std::lock_guard lock(m);
        cancel = true;
      }
      cv.notify_all();
      for (auto& t : pool) t.join();
    }
  } join{pool, m, cv, cancel};
  try {
    const WorkerSignals mask;
    for (unsigned t = 1; t < threads && t <= n; ++t)
      pool.emplace_back([&] {
        while (true) {
          std::unique_lock lock(m);
          const size_t i = take(lock, true);
          if (i >= n) return;
          lock.unlock();
          work(i);
        }
      });
  } catch (const std::system_error&) {  // no more threads: this one reads what they leave
  }

  for (size_t k = 0; k < n; ++k) {
    {
      std::unique_lock lock(m);
      while (!ready[k]) {
        if (const size_t i = take(lock, false); i < n) {  // this thread reads one too meanwhile
          lock.unlock();
          {
            const text::PassedPause pause;
            work(i);
          }
          lock.lock();
        } else {
          cv.wait(lock);
        }
      }
    }
    Part& p = parts[k];
    if (p.error) std::rethrow_exception(p.error);
    const std::string_view text = rows.substr(spans[k].first, spans[k].second - spans[k].first);
    if (p.stopped) {
      // The rest in one pass; the chunks read ahead are not held while it is read.
      std::vector<Part> ahead;
      {
        const std::lock_guard lock(m);
        cancel = true;
        ahead.swap(parts);
      }
      cv.notify_all();
      ahead.clear();
      read_span(rows.substr(spans[k].first), line, true);
      return true;
    }
    read_to_ = text.data() + text.size();
    if (merge(*p.reader, line)) {
      line += p.lines;
      if (opt_.chunks_merged) ++*opt_.chunks_merged;
    } else {
      line = read_span(text, line, spans[k].second == rows.size());
    }
    p.reader.reset();
    {
      const std::lock_guard lock(m);
      merged = k + 1;
    }
    cv.notify_all();
    text::passed(text.data() + text.size());
  }
  return true;
}

}  // namespace gpudoctor::generic_csv_reader
