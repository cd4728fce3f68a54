#include "formats/wandb.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "formats/column_catalogue.hpp"
#include "formats/encoding.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/generic_csv.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

constexpr size_t kHeaderLen = 7;  // file header and record header alike
constexpr size_t kBlockLen = 32768;
constexpr uint8_t kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4;

// CRC-32 tables for slicing by 8 (8 bytes per step): t[0] is the bytewise table, t[k][i] the CRC
// of byte i followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  return t;
}
constexpr auto kCrc = make_crc_tables();

uint32_t le32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
  return v;
}

// A protobuf message, read field by field (proto3 wire format). Groups (wire types 3 and 4) are
// long deprecated and not written by wandb: they end the message as malformed.
class Proto {
 public:
  explicit Proto(std::string_view s) : s_(s) {}
  struct Field {
    uint64_t number = 0;
    int wire = 0;
    uint64_t varint = 0;    // wire type 0
    std::string_view data;  // wire type 2
  };
  // The next field, or nullopt at the end or on malformed bytes (bad() tells which).
  std::optional<Field> next() {
    if (pos_ >= s_.size()) return std::nullopt;
    Field f;
    uint64_t tag = 0;
    if (!varint(tag)) return fail();
    f.number = tag >> 3;
    f.wire = static_cast<int>(tag & 7);
    switch (f.wire) {
      case 0:
        if (!varint(f.varint)) return fail();
        break;
      case 1:
        if (s_.size() - pos_ < 8) return fail();
        pos_ += 8;
        break;
      case 2: {
        uint64_t len = 0;
        if (!varint(len) || len > s_.size() - pos_) return fail();
        f.data = s_.substr(pos_, static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        break;
      }
      case 5:
        if (s_.size() - pos_ < 4) return fail();
        pos_ += 4;
        break;
      default:
        return fail();
    }
    return f;
  }
  bool bad() const { return bad_; }

 private:
  bool varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64 && pos_ < s_.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(s_[pos_++]);
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  std::nullopt_t fail() {
    bad_ = true;
    pos_ = s_.size();
    return std::nullopt;
  }
  std::string_view s_;
  size_t pos_ = 0;
  bool bad_ = false;
};

// Field numbers of wandb_internal.proto.
constexpr uint64_t kRecordStats = 7, kRecordRun = 17;
constexpr uint64_t kStatsTimestamp = 2, kStatsItem = 3;
constexpr uint64_t kTimestampSeconds = 1, kTimestampNanos = 2;
constexpr uint64_t kItemKey = 1, kItemValueJson = 16;
constexpr uint64_t kRunHost = 13;
// Record.environment (SDK 0.19 and later): the metadata wandb-metadata.json holds in older runs.
// Its GPUs: gpu (a name for all), gpu_nvidia (one GpuNvidiaInfo each: name, ..., uuid).
constexpr uint64_t kRecordEnvironment = 26;
constexpr uint64_t kEnvGpu = 18, kEnvGpuNvidia = 24;
constexpr uint64_t kGpuInfoName = 1, kGpuInfoUuid = 5;

// A key of one GPU's figures: "gpu.0.powerWatts" (not "gpu.process.0.*", the run's own GPUs).
bool gpu_key(std::string_view key) {
  return key.size() > 4 && text::istarts_with(key, "gpu.") && key[4] >= '0' && key[4] <= '9';
}

// A table with constant columns added to every row (the GPUs' names, known once the whole file
// is read).
class WithColumns : public log_reader::CellRows {
 public:
  WithColumns(const log_reader::CellRows& base,
              const std::vector<std::pair<std::string, std::string>>& extra)
      : base_(base), extra_(extra) {}
  size_t columns() const override { return base_.columns() + extra_.size(); }
  std::string_view name(size_t c) const override {
    return c < base_.columns() ? base_.name(c)
                               : std::string_view(extra_[c - base_.columns()].first);
  }
  size_t rows() const override { return base_.rows(); }
  void row(size_t r, std::vector<std::string_view>& cells) const override {
    base_.row(r, cells);
    for (const auto& e : extra_) cells.push_back(e.second);
  }
  size_t header_line() const override { return base_.header_line(); }
  size_t line(size_t r) const override { return base_.line(r); }
  bool has_header_rows() const override { return base_.has_header_rows(); }
  void done_before(size_t r) const override { base_.done_before(r); }

 private:
  const log_reader::CellRows& base_;
  const std::vector<std::pair<std::string, std::string>>& extra_;
};

struct Reader {
  std::string origin;
  log_reader::FlatTable table;
  std::string host;
  std::string env_gpu;                 // the environment record's name for every GPU
  std::vector<std::string> gpu_names;  // its GPUs' own names, in index order
  std::vector<std::string> gpu_uuids;  // and UUIDs
  log_reader::UniqueNames other_keys;  // keys of system-metrics records without GPU figures
  size_t stats = 0, other_stats = 0, malformed = 0, bad_crc = 0, broken_chains = 0,
         process_items = 0;
  bool truncated = false;
  std::vector<std::pair<std::string_view, std::string_view>> items;  // a record's, reused
  char stamp[64];                                                    // a record's time, as text

  void record(std::string_view data) {
    Proto rec(data);
    while (auto f = rec.next()) {
      if (f->wire != 2) continue;
      if (f->number == kRecordStats) stats_record(f->data);
      if (f->number == kRecordRun) run_record(f->data);
      if (f->number == kRecordEnvironment) environment_record(f->data);
    }
    if (rec.bad()) ++malformed;
  }

  void run_record(std::string_view data) {
    Proto run(data);
    while (auto f = run.next())
      if (f->number == kRunHost && f->wire == 2 && host.empty()) host = std::string(f->data);
  }

  void environment_record(std::string_view data) {
    Proto env(data);
    std::vector<std::string> names, uuids;
    std::string gpu;
    while (auto f = env.next()) {
      if (f->wire != 2) continue;
      if (f->number == kEnvGpu) gpu = std::string(text::trim(f->data));
      if (f->number == kEnvGpuNvidia) {
        Proto info(f->data);
        std::string name, uuid;
        while (auto g = info.next()) {
          if (g->wire != 2) continue;
          if (g->number == kGpuInfoName) name = std::string(text::trim(g->data));
          if (g->number == kGpuInfoUuid) uuid = std::string(text::trim(g->data));
        }
        if (info.bad()) return;
        names.push_back(std::move(name));
        uuids.push_back(std::move(uuid));
      }
    }
    if (env.bad() || !gpu_names.empty() || !env_gpu.empty()) return;  // (the first one counts)
    env_gpu = std::move(gpu);
    gpu_names = std::move(names);
    gpu_uuids = std::move(uuids);
  }

  // The names as columns: "gpu.N.name" (and "gpu.N.uuid") for each GPU the record lists, else
  // "name" for all.
  std::vector<std::pair<std::string, std::string>> name_columns() const {
    std::vector<std::pair<std::string, std::string>> cols;
    for (size_t i = 0; i < gpu_names.size(); ++i) {
      if (!gpu_names[i].empty() && text::valid_utf8(gpu_names[i]))
        cols.emplace_back(fmt::format("gpu.{}.name", i), gpu_names[i]);
      if (!gpu_uuids[i].empty() && text::valid_utf8(gpu_uuids[i]))
        cols.emplace_back(fmt::format("gpu.{}.uuid", i), gpu_uuids[i]);
    }
    if (gpu_names.empty() && !env_gpu.empty() && text::valid_utf8(env_gpu))
      cols.emplace_back("name", env_gpu);
    return cols;
  }

  void stats_record(std::string_view data) {
    Proto st(data);
    std::optional<std::pair<int64_t, int64_t>> time;  // seconds and nanoseconds
    items.clear();
    while (auto f = st.next()) {
      if (f->wire != 2) continue;
      if (f->number == kStatsTimestamp) {
        Proto ts(f->data);
        int64_t secs = 0, nanos = 0;
        while (auto t = ts.next()) {
          if (t->wire != 0) continue;
          if (t->number == kTimestampSeconds) secs = static_cast<int64_t>(t->varint);
          if (t->number == kTimestampNanos) nanos = static_cast<int64_t>(t->varint);
        }
        if (!ts.bad()) time = {secs, nanos};
      } else if (f->number == kStatsItem) {
        Proto item(f->data);
        std::string_view key, value;
        while (auto i = item.next()) {
          if (i->wire != 2) continue;
          if (i->number == kItemKey) key = i->data;
          if (i->number == kItemValueJson) value = i->data;
        }
        if (!item.bad() && !key.empty()) items.emplace_back(key, value);
      }
    }
    if (st.bad() || !time) {
      ++malformed;
      return;
    }
    // SDKs from 2024 on write the GPUs' figures in records of their own, and the CPU's, disk's,
    // network's and memory's each in another at nearly the same time: a row is a record with
    // GPU figures, or the rows would be apart by milliseconds and mostly empty.
    if (std::none_of(items.begin(), items.end(),
                     [](const auto& kv) { return gpu_key(kv.first); })) {
      ++other_stats;
      for (const auto& kv : items) other_keys.add(kv.first);
      return;
    }
    ++stats;
    table.begin_row();
    table.set("_timestamp", timestamp_cell(time->first, time->second));
    for (const auto& [key, value] : items) {
      // The same figures again for the GPUs the run's own process used: left out, the per-GPU
      // ones are there.
      if (text::istarts_with(key, "gpu.process.")) {
        ++process_items;
        continue;
      }
      // (The record's bytes outlive the table: the file's, or a chain kept in chains.)
      const std::string_view v = text::trim(value);
      if (!v.empty() && v.front() == '"')
        table.set(key, string_cell(v));
      else
        table.set_view(key, v);
    }
  }

  // Seconds to the microsecond, written from the integers with the nanoseconds rounded, where
  // they are a timestamp's (the sum as a double, formatted to six places, was 3 % of reading a
  // run file, and is itself a quarter of a microsecond off at today's times).
  std::string_view timestamp_cell(int64_t secs, int64_t nanos) {
    char* const b = stamp;
    if (secs >= 0 && nanos >= 0 && nanos < 1'000'000'000) {
      int64_t us = (nanos + 500) / 1000;
      if (us == 1'000'000) ++secs, us = 0;
      return {b, fmt::format_to_n(b, sizeof stamp, "{}.{:06}", secs, us).out};
    }
    const double t = static_cast<double>(secs) + static_cast<double>(nanos) * 1e-9;
    return {b, fmt::format_to_n(b, sizeof stamp, "{:.6f}", t).out};
  }

  // A value_json that is a JSON string: unquoted (anything else as its text).
  static std::string string_cell(std::string_view v) {
    auto j = nlohmann::json::parse(v.begin(), v.end(), nullptr, false);
    if (j.is_string()) return j.get<std::string>();
    return std::string(v);
  }
};

}  // namespace

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// a * x^(the fold's distance) + b: a's halves multiplied by the two constants of k.
__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i a, __m128i b, __m128i k) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), b);
}

// The CRC register (not inverted) after `n` bytes at `p` (n >= 64, a multiple of 16), by folding:
// four 16-byte lanes multiplied forward 64 bytes at a time with carry-less multiplication, then
// folded into one, to 64 bits, and reduced to 32 (Barrett). The method and the constants of the
// bit-reflected polynomial 0x04C11DB7 (x^k mod P(x) for the fold distances, and P and floor(x^64
// / P) for the reduction) are those of V. Gopal, E. Ozturk et al., "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction", Intel, 2009.
__attribute__((target("pclmul,sse4.1"))) uint32_t crc_folded(const unsigned char* p, size_t n,
                                                             uint32_t crc) {
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
  const auto load = [](const unsigned char* q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  };
  __m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);
  p += 64, n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x1 = fold(x1, load(p), k1k2);
    x2 = fold(x2, load(p + 16), k1k2);
    x3 = fold(x3, load(p + 32), k1k2);
    x4 = fold(x4, load(p + 48), k1k2);
  }
  x1 = fold(fold(fold(x1, x2, k3k4), x3, k3k4), x4, k3k4);
  for (; n >= 16; p += 16, n -= 16) x1 = fold(x1, load(p), k3k4);
  // 128 bits to 64, then 64 to 32 (in the low half of x1, shifted), then the reduction.
  const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(x1, k3k4, 0x10));
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 4),
                     _mm_clmulepi64_si128(_mm_and_si128(x1, low32), k5, 0x00));
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x1, t), 1));
}

bool cpu_folds() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return yes;
}
#endif

}  // namespace

uint32_t crc32_ieee(std::string_view data, uint32_t crc) {
  crc = ~crc;
  size_t i = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // (Slicing by 8 below was 13 % of reading a run file: 2 GB/s; this is several times that.)
  if (data.size() >= 64 && cpu_folds()) {
    i = data.size() & ~size_t{15};
    crc = crc_folded(reinterpret_cast<const unsigned char*>(data.data()), i, crc);
  }
#endif
  // (The records' checksums were a third of the reading time a byte at a time.)
  for (; i + 8 <= data.size(); i += 8) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(data[i + k]); };
    const uint32_t lo =
        crc ^ (uint32_t{b(0)} | uint32_t{b(1)} << 8 | uint32_t{b(2)} << 16 | uint32_t{b(3)} << 24);
    crc = kCrc[7][lo & 0xff] ^ kCrc[6][(lo >> 8) & 0xff] ^ kCrc[5][(lo >> 16) & 0xff] ^
          kCrc[4][lo >> 24] ^ kCrc[3][b(4)] ^ kCrc[2][b(5)] ^ kCrc[1][b(6)] ^ kCrc[0][b(7)];
  }
  for (; i < data.size(); ++i)
    crc = kCrc[0][(crc ^ static_cast<uint8_t>(data[i])) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool looks_like_wandb_run(std::string_view head) {
  return head.size() >= kHeaderLen && head.substr(0, 4) == ":W&B" &&
         static_cast<uint8_t>(head[4]) == 0xE1 && static_cast<uint8_t>(head[5]) == 0xBE;
}

namespace {

Result<Recording> read_wandb_run_unguarded(std::string_view bytes, const std::string& origin,
                                           const LoadOptions& options) {
  if (!looks_like_wandb_run(bytes))
    return usage_error(fmt::format("{}: not a W&B run file (no ':W&B' header)", origin));
  if (bytes[6] != 0)
    return usage_error(fmt::format(
        "{}: W&B run file of format version {}, which gpudoctor does not know (it reads version "
        "0)",
        origin, static_cast<int>(static_cast<uint8_t>(bytes[6]))));
  Reader r;
  r.origin = origin;
  if (options.map.empty()) r.table.unread_columns(csv::never_read);
  std::string chain;               // a record split over blocks: FIRST, MIDDLE..., LAST
  std::deque<std::string> chains;  // the whole ones, kept: the table holds views of their cells
  bool in_chain = false;
  size_t pos = kHeaderLen;
  while (pos < bytes.size()) {
    const size_t left_in_block = kBlockLen - pos % kBlockLen;
    if (left_in_block < kHeaderLen) {  // the block's zero trailer
      pos += left_in_block;
      continue;
    }
    if (bytes.size() - pos < kHeaderLen) {
      r.truncated = bytes.substr(pos).find_first_not_of('\0') != std::string_view::npos;
      break;
    }
    const uint32_t crc = le32(bytes, pos);
    const size_t len = static_cast<uint8_t>(bytes[pos + 4]) |
                       (static_cast<size_t>(static_cast<uint8_t>(bytes[pos + 5])) << 8);
    const auto type = static_cast<uint8_t>(bytes[pos + 6]);
    if (crc == 0 && len == 0 && type == 0) {  // zeros: space a writer reserved, not a record
      pos += left_in_block;
      continue;
    }
    if (len > left_in_block - kHeaderLen || bytes.size() - pos - kHeaderLen < len) {
      // Past the block or the file: a record cut short at the end, or garbage in the middle.
      if (bytes.size() - pos - kHeaderLen < len && len <= left_in_block - kHeaderLen) {
        r.truncated = true;
        break;
      }
      ++r.bad_crc;
      in_chain = false;
      pos += left_in_block;
      continue;
    }
    const std::string_view data = bytes.substr(pos + kHeaderLen, len);
    pos += kHeaderLen + len;
    const char type_byte = static_cast<char>(type);
    if (crc32_ieee(data, crc32_ieee(std::string_view(&type_byte, 1))) != crc) {
      ++r.bad_crc;
      in_chain = false;
      continue;
    }
    switch (type) {
      case kFull:
        if (in_chain) ++r.broken_chains;
        in_chain = false;
        r.record(data);
        break;
      case kFirst:
        if (in_chain) ++r.broken_chains;
        chain.assign(data);
        in_chain = true;
        break;
      case kMiddle:
      case kLast:
        if (!in_chain) {
          ++r.broken_chains;
          break;
        }
        chain.append(data);
        if (type == kLast) {
          r.record(chains.emplace_back(std::move(chain)));
          chain.clear();
          in_chain = false;
        }
        break;
      default:
        ++r.bad_crc;
        in_chain = false;
    }
  }
  if (in_chain) r.truncated = true;

  if (r.table.rows() == 0 && r.other_stats > 0)
    return failure(fmt::format(
        "{}: no GPU metric in this W&B run file: its {} system-metrics record(s) hold {} (no "
        "gpu.N.* key; was the run on a machine without an NVIDIA GPU, or GPU monitoring off?)",
        origin, r.other_stats, log_reader::join_names(r.other_keys.list, 10)));
  if (r.table.rows() == 0)
    return usage_error(fmt::format(
        "{}: a W&B run file without system metrics (no stats records{}); W&B writes them every "
        "15 s while a run lasts unless system monitoring was turned off",
        origin, r.bad_crc ? fmt::format(", {} damaged record(s)", r.bad_crc) : ""));
  GenericCsvOptions o;
  o.map = options.map;
  o.power_limit_w = options.power_limit_w;
  const auto names = r.name_columns();
  const WithColumns table(r.table, names);
  auto rec = read_generic_csv(table, origin, o);
  if (!rec) return rec;
  Recording& out = rec.value();
  out.source = "W&B run file: " + origin;
  if (!r.host.empty()) out.system.hostname = r.host;
  if (r.other_stats > 0)
    out.notes.insert(out.notes.begin(),
                     fmt::format("{} system-metrics record(s) without GPU figures (CPU, disk, "
                                 "network, memory: {}) not read",
                                 r.other_stats, log_reader::join_names(r.other_keys.list, 6)));
  if (!names.empty())
    out.notes.insert(out.notes.begin(), "GPU names from the run's environment record");
  out.notes.insert(out.notes.begin(),
                   fmt::format("read as a W&B run file: {} system-metrics record(s) with GPU "
                               "figures",
                               r.stats));
  if (r.process_items)
    log_reader::add_note(out,
                         "W&B's gpu.process.* copies of the figures (the GPUs of the run's "
                         "own process) left out: the per-GPU figures are read");
  if (r.bad_crc || r.malformed || r.broken_chains)
    log_reader::add_note(
        out, fmt::format("{} damaged record(s) skipped (bad checksum, broken chain or malformed "
                         "message)",
                         r.bad_crc + r.malformed + r.broken_chains));
  if (r.truncated)
    log_reader::add_note(out,
                         "the file ends inside a record (a run still being written, or a "
                         "copy cut short): read up to the last whole record");
  return rec;
}

}  // namespace

Result<Recording> read_wandb_run(std::string_view bytes, const std::string& origin,
                                 const LoadOptions& options) {
  return log_reader::guarded_read(origin, "W&B run file",
                                  [&] { return read_wandb_run_unguarded(bytes, origin, options); });
}

}  // namespace gpudoctor
