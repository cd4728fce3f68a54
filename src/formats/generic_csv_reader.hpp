// The reader of CSV logs by column name (formats/generic_csv.hpp), inside: the framing layer
// (csv_frame) or a table of cells (flat_table) gives records, the column catalogue
// (column_catalogue) says what each header cell means, log_time and log_units read times and
// units. Three files: the header and the columns it makes (generic_csv_layout.cpp), the rows, their
// cells and times (generic_csv_rows.cpp), and the notes and GPUs of the recording
// (generic_csv.cpp). Not part of the library's interface.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/generic_csv.hpp"
#include "text/text.hpp"

namespace gpudoctor::generic_csv_reader {

using namespace csv;  // NOLINT: this reader is the catalogue's client
using text::iequals;

enum class Cell : uint8_t { kValue, kMissing, kNotSupported, kNoPermission, kBad };

// Markers of "no value" that loggers, pandas and nvidia-smi write ("", "N/A", "[Not Supported]",
// "nan", "-" ...): kMissing, kNotSupported or kNoPermission; kBad for anything else.
Cell classify_marker(std::string_view v);

// A few bytes of text (a cell, a time) copied into a buffer kept in place, for a memo to
// compare the next with (text::equal_small): fixed-size copies, overlapping where the size is
// not a multiple, no call to memcpy (and none with an empty view's null data).
inline void copy_small(char* to, std::string_view v) {
  const size_t n = v.size();
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) std::memcpy(to + i, v.data() + i, 8);
    std::memcpy(to + n - 8, v.data() + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(to, v.data(), 4);
    std::memcpy(to + n - 4, v.data() + n - 4, 4);
  } else {
    for (size_t i = 0; i < n; ++i) to[i] = v[i];
  }
}

static_assert(kFieldCount <= 256, "GpuState::present holds field indices as bytes");

struct GpuState {
  std::string host, id;  // the key: host ("" without a host column) and GPU id or number
  int wide = -1;         // one column per GPU: the position of its number in wide_numbers_
  bool index_known = false;
  GpuSeries series;
  // The fields whose column series has: the columns a row appends to.
  std::vector<uint8_t> present;
  double last_t = 0;
  uint32_t seen_round = 0;
  log_reader::FieldCounts counts;
  std::array<bool, kFieldCount> scaled{};
};

using log_reader::Problem;

// Per field, for the rules that tell units apart by the values.
struct Stats {
  size_t n = 0, over_3000 = 0;
  double max = -std::numeric_limits<double>::infinity();
  bool fraction = false;
  bool cell_unit = false;  // some cell gave its unit: no guessing
};

enum class TimeMode : uint8_t { kUndecided, kDateTime, kDateAndTod, kTimeOfDay, kEpoch, kElapsed };

// Identity columns that fill in a GPU's details.
inline bool is_info(Role r) {
  return r == Role::kName || r == Role::kUuid || r == Role::kBusId || r == Role::kSerial ||
         r == Role::kPersistence || r == Role::kMigMode;
}

struct FieldCol {
  size_t col;
  Field field;
  int wide;  // -1, or the position of the column's GPU number in wide_numbers_
  Unit unit = info(field).unit;
};

struct InfoCol {
  size_t col;
  Role role;
  int wide;
};

// What a reader of one chunk of a text says back (generic_csv_chunks.cpp).
struct ChunkState {
  bool stopped = false;   // a header changed the columns inside the chunk, or a line has a quote
  std::string_view text;  // the chunk: what its rows' room is guessed from (rows_ahead)
};

class Reader {
 public:
  Reader(std::string_view text, const std::string& origin, const GenericCsvOptions& opt)
      : text_(text), origin_(origin), opt_(opt) {}
  // A table already split into cells (flattened JSON, W&B run files, the framing variants): read
  // as its CSV text would be, without the text.
  Reader(const log_reader::CellRows& table, const std::string& origin, const GenericCsvOptions& opt)
      : origin_(origin), opt_(opt), table_(&table) {}

  Result<Recording> run();

 private:
  Result<Recording> finish_reading();
  std::optional<Error> find_header();
  void table_header();
  bool skipped_as_in_csv(const std::vector<std::string_view>& cells) const;
  bool is_header_again(const std::vector<std::string_view>& cells) const;
  std::optional<Error> make_layout();
  bool is_new_header(const std::vector<std::string_view>& cells) const;
  bool change_header(const std::vector<std::string_view>& cells, std::string_view raw,
                     size_t line_no);
  void restore_first_header();
  // The rows a GPU with `n` rows read so far will have when the text (a chunk's reader: its chunk)
  // is read, by how much of it is read (at least `need`): what its times are reserved for, so that
  // its columns grow once.
  size_t rows_ahead(size_t n, size_t need) const;
  void find_footer();
  void split_side_by_side();
  void read_rows();
  // Reads the records of `rows` (the body, or a part of it after line `line_before`); `last`: the
  // part ends the file. Returns the number of the last line read. A chunk's reader stops at a
  // header that changes the columns or at a line with a quote (chunk_->stopped).
  size_t read_span(std::string_view rows, size_t line_before, bool last);
  void after_rows();
  // The timed rows' times (a log without a GPU column); and the row of time t not read into the
  // series that holds the times so far: they are kept from here on.
  const TimeColumn& row_times() const;
  void time_not_in_series(double t);
  // No pass over the rows can follow this one, whatever its rows hold, but one that after_rows()
  // makes when no GPU has two rows: a table may let the rows read go (CellRows::done_before).
  bool no_pass_after_this() const;
  // The rows of a large text read by several threads, in chunks cut at line ends and merged in
  // order (generic_csv_chunks.cpp): the same result as one pass. False, nothing read, when the
  // text is read in one pass instead (one thread, a small text, quotes, no GPU or time column).
  bool read_in_chunks(std::string_view rows);
  // A reader of one chunk: this reader's layout and time form, none of its rows.
  Reader for_chunk() const;
  // Appends a chunk reader's rows (its lines counted after `line_base`) to this one's; false, and
  // nothing changed, when they depend on the rows before the chunk (a GPU's first time there not
  // after its last one here; GPUs past the limit).
  bool merge(Reader& part, size_t line_base);
  void reset_rows();
  bool row_time(const std::vector<std::string_view>& cells, size_t line_no, double& ms);
  bool row_time_of(const std::vector<std::string_view>& cells, std::string_view v, size_t line_no,
                   double& ms);
  void decide_time(const std::vector<std::string_view>& cells);
  size_t slot_for(std::string_view host, std::string_view id, int wide);
  // Reads a row's cells and appends the row at time t to the GPU's series.
  void read_cells(GpuState& g, double t, int wide, const std::vector<std::string_view>& cells,
                  size_t line_no);
  Cell parse_cell(size_t col, Unit u, std::string_view v, double& out, bool& cell_unit);
  bool cell_with_unit(size_t col, Unit u, std::string_view v, double& out, bool& cell_unit);
  bool same_unit_cell(size_t col, Unit u, std::string_view v, double& out) const;
  bool parse_num(std::string_view v, double& out);
  void finish();
  void note(std::string n) { log_reader::add_note(rec_, std::move(n)); }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, file_line(line_no), f, std::forward<Args>(args)...);
  }
  // The file's line of a record (a table's rows carry the file's own lines already).
  static size_t file_line(size_t n) { return n; }
  // How the lines before and after the rows (header, comments, footer) are framed: decoded where
  // the text is Windows-1252 (the rows: as opt_.read_as says, checked for UTF-8 there too).
  text::ReadAs decoding() const {
    return opt_.read_as == text::ReadAs::kWindows1252 ? opt_.read_as : text::ReadAs::kUtf8;
  }

  std::string_view text_;
  const std::string& origin_;
  const GenericCsvOptions& opt_;
  const log_reader::CellRows* table_ = nullptr;  // set: the rows come from it, not from text_

  // Header and layout.
  std::string_view body_;
  char sep_ = ',';
  size_t rows_offset_ = 0, rows_line_before_ = 0, header_line_no_ = 0;
  std::vector<std::string> header_;
  std::string header_raw_;
  std::vector<Column> cols_;
  int time_col_ = -1, date_col_ = -1, key_col_ = -1, host_col_ = -1, driver_col_ = -1;
  Role key_role_ = Role::kUnknown;
  bool wide_ = false;
  std::vector<int> wide_numbers_;  // ascending
  std::vector<FieldCol> fields_;
  std::vector<InfoCol> infos_;
  // The fields_ and infos_ each GPU position of one column per GPU reads (index position + 1;
  // index 0: files with one GPU per row), so that a row of thousands of GPUs costs its cells.
  std::vector<std::vector<size_t>> fields_of_, infos_of_;
  // The row being read, per field (NaN between rows): appended whole, so that a column of one
  // value stays one (core/column.hpp).
  std::array<double, kFieldCount> row_ = [] {
    std::array<double, kFieldCount> a;
    a.fill(kMissing);
    return a;
  }();
  // Per field column (fields_), its last cell read and what it gave: a cell of the same text is
  // that again, not parsed anew (limits, maximum clocks, names and N/A repeat on every row). Bad
  // cells are not kept. Cleared by a new layout (a cell's value depends on its column's unit and
  // scale) and by reading the rows again (parsing sets reader state: decimal commas).
  // The text is kept in place (no allocation, no call to copy it): cells longer than that are
  // parsed each time.
  struct LastCell {
    static constexpr size_t kMaxText = 38;
    size_t col = SIZE_MAX;  // SIZE_MAX: none kept
    double x = 0;
    Cell kind = Cell::kMissing;
    bool cell_unit = false;
    uint8_t size = 0;
    char text[kMaxText];
    std::string_view view() const { return {text, size}; }
    void keep(size_t c, std::string_view v, Cell k, double value, bool unit) {
      if (v.size() > kMaxText) {
        col = SIZE_MAX;
        return;
      }
      col = c, kind = k, x = value, cell_unit = unit;
      size = static_cast<uint8_t>(v.size());
      copy_small(text, v);
    }
  };
  std::vector<LastCell> last_cells_;
  std::vector<std::string> unknown_, ignored_notes_;
  std::vector<std::pair<std::string, std::string>> duplicates_;  // (ignored, kept)
  bool key_is_row_number_ = false;
  // The footer line naming each column's group (HWiNFO's sensor groups), and the names of the
  // GPUs read from side-by-side columns of the same name (by GPU number).
  std::string footer_raw_;
  size_t footer_row_ = SIZE_MAX;  // a table's footer row
  std::vector<std::string> groups_;
  std::map<int, std::string> group_names_;

  // Rows.
  std::vector<std::string_view> cells_;
  std::vector<GpuState> gpus_;
  std::unordered_map<std::string, size_t> slots_;  // host '\0' GPU id -> gpus_
  std::string lookup_;
  size_t last_slot_ = 0;
  std::string cached_host_;
  std::vector<size_t> wide_slots_;
  bool wide_slots_valid_ = false;
  TimeMode mode_ = TimeMode::kUndecided;
  // The last row's time, and the text it was read from, kept in place (no allocation per row:
  // the rows of one GPU per line each have a time of their own).
  struct TimeText {
    static constexpr size_t kMax = 48;
    char text[kMax];
    uint8_t size = 0;
    std::string_view view() const { return {text, size}; }
    bool keep(std::string_view v) {  // false, nothing kept, where v is too long
      if (v.size() > kMax) return false;
      copy_small(text, v);
      size = static_cast<uint8_t>(v.size());
      return true;
    }
  };
  bool have_last_time_ = false;
  TimeText last_time_text_, last_date_text_;
  double last_time_ms_ = 0;
  double ms_per_unit_ = 1000;
  bool time_unit_named_ = false;  // the time column's name says its unit ("timestamp_us")
  bool have_first_ = false;
  double first_ms_ = 0;
  double tod_offset_ms_ = 0, tod_last_ms_ = 0;
  bool have_tod_ = false;
  bool any_unzoned_ = false, decimal_comma_ = false;
  // The last date-time read without a zone, up to its seconds ("2024/03/14 10:15:"), and the
  // milliseconds of that minute: a time that differs only in its seconds is read from them.
  char minute_text_[32] = {};
  size_t minute_len_ = 0;
  int64_t minute_ms_ = 0;
  uint32_t round_ = 0;
  size_t data_lines_ = 0, rows_read_ = 0, header_repeats_ = 0;
  Problem wrong_count_, malformed_, bad_time_, bad_gpu_, not_increasing_, bad_cell_, too_many_gpus_,
      truncated_;
  std::array<Stats, kFieldCount> stats_{};
  std::vector<std::pair<std::string, const UnitToken*>> cell_units_;  // per column: the last unit
  std::array<bool, kFieldCount> field_in_log_{};
  // Logs without a GPU column: each timed row's time in seconds since the first (the first pass),
  // then each one's position in its sampling round when rounds show (formats/sampling_rounds), by
  // timed row. While every timed row is a row of one GPU's series (times_slot_; npos: none yet),
  // its times are that series' and none is kept twice (times_in_series_; row_times() gives
  // them).
  // The header changed mid-file (nvidia-smi restarted with other columns): the first one, to
  // read the rows again from the top, how often and the line of the first change.
  std::vector<std::string> first_header_;
  std::string first_header_raw_;
  size_t header_changes_ = 0, header_change_line_ = 0;
  TimeColumn row_times_;
  bool times_in_series_ = true;
  size_t times_slot_ = std::string_view::npos;
  std::vector<uint32_t> positions_;
  std::optional<ChunkState> chunk_;  // set: this reader reads one chunk of a text for another
  // How far the rows read so far reach, for rows_ahead(): into body_, or a table's rows read.
  const char* read_to_ = nullptr;
  size_t table_read_ = 0;
  bool invalid_utf8_ = false;  // ReadAs::kCheckUtf8: some text read is not UTF-8
  std::vector<std::string> position_ids_;
  size_t timed_rows_ = 0;
  Recording rec_;
};

inline bool is_quantity(Role r) {
  return r == Role::kField || r == Role::kReason;
}

}  // namespace gpudoctor::generic_csv_reader
