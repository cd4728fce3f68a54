// The step every log reader ends with, in one place so that behaviour and notes are the same
// whatever the format: fields the log had but never with a value (recorded as unsupported where the
// log said so, listed in a note otherwise), GPM support, the architecture and the power limit
// (from the log itself, else --power-limit, else the GPU model table by name) with
// GpuSeries::power_limit_source, and the notes on skipped lines and unreadable values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/gpu_models.hpp"
#include "core/recording.hpp"
#include "core/result.hpp"
#include "text/text.hpp"

namespace gpudoctor::log_reader {

// What a reader saw in the cells of one GPU, per field.
struct FieldCounts {
  std::array<uint32_t, kFieldCount> value{};          // a number
  std::array<uint32_t, kFieldCount> not_supported{};  // "[Not Supported]" and the like
  std::array<uint32_t, kFieldCount> no_permission{};  // "[Insufficient Permissions]"
  std::array<uint32_t, kFieldCount> other{};          // any other "no value" or unreadable cell
};

// The most GPUs one log may hold. A log of a whole cluster stays well under it; a file that names
// another GPU on every line cannot take all memory. Readers skip and count the rows of the others.
inline constexpr size_t kMaxGpus = 16384;
// What note_skipped says of those rows.
inline constexpr std::string_view kTooManyGpus = "of GPUs beyond the first 16384";

// One kind of line or value a reader skipped: how many, and where the first one was.
struct Problem {
  size_t count = 0;
  std::string first;
};

// A message cut to at most `most` bytes (at a UTF-8 character boundary, "..." added): a line or
// cell quoted in a message may be megabytes long.
std::string shorten(std::string s, size_t most = 200);

// Counts a problem; the first one's message is "ORIGIN:LINE: MESSAGE" (MESSAGE shortened).
template <class... Args>
void count_problem(Problem& p, std::string_view origin, size_t line_no,
                   fmt::format_string<Args...> f, Args&&... args) {
  if (p.count++ == 0)
    p.first = fmt::format("{}:{}: {}", origin, line_no,
                          shorten(fmt::format(f, std::forward<Args>(args)...)));
}

// Names for a note (unknown columns, fields), each kept once in order of first appearance; a hash
// set, not a scan, finds repeats, as a file may name thousands.
struct UniqueNames {
  std::vector<std::string_view> list;
  std::unordered_set<std::string_view> seen;
  void add(std::string_view name) {
    if (seen.insert(name).second) list.push_back(name);
  }
  bool empty() const { return list.empty(); }
};

// "a, b, c" and, past `most` names, " and N more".
std::string join_names(const std::vector<std::string_view>& names, size_t most = 20);

// Adds a note unless the recording has the same one already.
void add_note(Recording& rec, std::string note);
// "skipped N line(s) WHAT (first: ORIGIN:LINE: ...)", when p.count > 0; `unit` names what was
// skipped when it is not lines ("snapshot(s)").
void note_skipped(Recording& rec, const Problem& p, std::string_view what,
                  std::string_view unit = "line(s)");
// "N unreadable value(s) taken as missing (first: ...)", when p.count > 0.
void note_unreadable(Recording& rec, const Problem& p);
// Every reader's error for a log of which no row was read: "ORIGIN:LINE: HEADER but no data
// rows" (and "cut short" when the file ends inside its last line) when no data line followed the
// header at `header_line`, else "ORIGIN: no readable rows (FIRST PROBLEM)" with the first of
// `problems` that was counted, in the order given.
Error no_readable_rows(std::string_view origin, std::string_view header,
                       std::string_view header_line, size_t data_lines, std::string_view text,
                       std::initializer_list<const Problem*> problems);

// A GPU name as a log wrote it, matched against the model table. Names that end in "..." were cut
// short by the tool that wrote them (nvidia-smi's table, dcgmi dmon): they match the boards whose
// name starts with what is left, and count only when those boards agree. Names that start with
// ".." were cut on the left (nvitop: "..000 Ada Generation"): the boards whose name ends so.
struct ModelMatch {
  std::optional<GpuModel> model;  // the board, or one of the boards that agree
  bool truncated = false;
  std::vector<std::string_view> candidates;  // truncated names: every board what is left fits
};
ModelMatch match_model(std::string_view name);

struct GpuToFinish {
  GpuSeries* series = nullptr;
  const FieldCounts* counts = nullptr;  // null: the reader counted nothing (no unsupported marks)
};

struct FinishOptions {
  std::optional<double> power_limit_w;  // --power-limit
  // The log's columns that map to a field, with the name the log gave each (several may share a
  // field); the note on fields without values lists them in this order.
  std::vector<std::pair<Field, std::string>> columns;
  // What the log writes for "no value" ("[N/A]", "'-'"), named in that note; "" names none.
  std::string_view placeholder;
};

// Marks fields that had only "not supported" / "no permission" cells as unsupported, notes the
// fields that never had a value, sets gpm_supported and the architecture, and gives each GPU a
// power limit: the log's own (a limit column with a value: source "log"), else --power-limit
// ("flag"), else the model table's TDP by the GPU's name ("model-table"); each fills
// power_limit_default_w. A GPU without any gets source "" and a note saying efficiency cannot be
// computed. Notes go to rec.notes in a fixed order.
void finish_gpus(Recording& rec, const std::vector<GpuToFinish>& gpus, const FinishOptions& opt);
// finish_gpus for inputs made of series (Prometheus answers and snapshots): every GPU, no cell
// counts, no column names.
void finish_series_gpus(Recording& rec, std::optional<double> power_limit_w);

// Runs a reader: an exception (out of memory, a bug) becomes a failure that names the input and
// the format ("run.csv: cannot read the CSV log: ..."), never a crash. Every reader's entry point.
template <class Read>
Result<Recording> guarded_read(const std::string& origin, std::string_view what, Read&& read) {
  try {
    return read();
  } catch (const std::exception& e) {
    Error err = failure(fmt::format("{}: cannot read the {}: {}", origin, what, e.what()));
    err.code = Error::Code::kInternal;
    return err;
  }
}
// Runs a format check: an exception means "not this format".
template <class Check>
bool guarded_check(Check&& check) noexcept {
  try {
    return check();
  } catch (const std::exception&) {
    return false;
  }
}

// A format check by a text's first lines: `look` sees each of the first `most` lines that are not
// blank (trimmed) of a head that is text (its byte order mark dropped, not binary) and answers
// true or false once it knows, nothing to read on. No answer is "no", and so is an exception.
template <class Look>
bool by_first_lines(std::string_view head, size_t most, Look&& look) noexcept {
  return guarded_check([&] {
    head = text::strip_bom(head);
    if (head.empty() || text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view line;
    for (size_t seen = 0; seen < most && lines.next(line);) {
      const std::string_view t = text::trim(line);
      if (t.empty()) continue;
      ++seen;
      if (const std::optional<bool> answer = look(t)) return *answer;
    }
    return false;
  });
}

// --gpu-name: names the GPUs the log left unnamed (nvidia-smi dmon names none), sets their
// architecture, and gives those without a power limit the model table's, noting both.
void name_unnamed_gpus(Recording& rec, const std::string& name);

// True when any power limit column of the GPU has a value.
bool has_logged_power_limit(const GpuSeries& g);
// Sets power_limit_source to "log" on every GPU whose limit columns have a value and that has no
// source yet (live sources, captures, recordings).
void mark_logged_power_limits(Recording& rec);

}  // namespace gpudoctor::log_reader
