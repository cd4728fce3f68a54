#include "formats/load.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/csv_frame.hpp"
#include "formats/encoding.hpp"
#include "formats/finish.hpp"
#include "formats/input_bytes.hpp"
#include "formats/inputs.hpp"
#include "formats/kineto_trace.hpp"
#include "formats/run_folders.hpp"
#include "formats/wandb.hpp"
#include "store/sqlite_store.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

// A read-only memory mapping of a whole file (an empty file maps to an empty view).
class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return usage_error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return usage_error(fmt::format("cannot read {}: not a regular file", path));
    }
    MappedFile m;
    m.size_ = static_cast<size_t>(st.st_size);
    if (m.size_ > 0) {
      void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        return failure(fmt::format("cannot map {}: {}", path, std::strerror(err)));
      }
      ::madvise(p, m.size_, MADV_SEQUENTIAL);
      m.data_ = static_cast<const char*>(p);
    }
    ::close(fd);
    return m;
  }
  MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; }
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
  }
  std::string_view text() const { return {data_ ? data_ : "", data_ ? size_ : 0}; }

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::vector<std::string> input_formats() {
  std::vector<std::string> names{"auto"};
  for (const auto& r : input_readers()) names.emplace_back(r.name);
  return names;
}

namespace {

// Detection looks at this many bytes from the start of the input.
constexpr size_t kHeadBytes = 4096;

// A head of a text of `total` bytes, cut after its last line end where it is not all of the text
// (so that no character is cut at its end); where no line ends in it (a header longer than the
// head: HWiNFO's hundreds of sensors), cut before its last character, which its end may cut.
std::string_view whole_lines(std::string_view head, size_t total) {
  if (head.size() == total) return head;
  if (const size_t nl = head.rfind('\n'); nl != std::string_view::npos)
    return head.substr(0, nl + 1);
  auto byte = [&](size_t i) { return static_cast<unsigned char>(head[i]); };
  size_t k = head.size();
  // Back over up to three continuation bytes (10xxxxxx) and the lead byte before them.
  for (int back = 0; back < 3 && k > 0 && (byte(k - 1) & 0xC0) == 0x80; ++back) --k;
  if (k > 0 && byte(k - 1) >= 0xC0) --k;
  return head.substr(0, k);
}

// A header line of a delimited table (',' ';' or tab, at least two named cells, the next line with
// as many cells): its line number and cells. Only the first line that is not blank or a comment.
std::optional<std::pair<size_t, std::vector<std::string_view>>> unknown_header(
    std::string_view head) {
  text::LineReader lines(head);
  std::string_view line, next;
  while (lines.next(line) && (text::is_blank(line) || text::trim(line).front() == '#')) {
  }
  const size_t line_no = lines.line_number();
  if (!lines.next(next)) return std::nullopt;
  const char sep = csv::detect_separator(line);
  std::vector<std::string_view> cells, row;
  text::split_trimmed(line, sep, cells);
  text::split_trimmed(next, sep, row);
  if (cells.size() < 2 || row.size() != cells.size()) return std::nullopt;
  for (const auto c : cells)
    if (c.empty() || text::parse_double(c) || !text::valid_utf8(c)) return std::nullopt;
  return std::make_pair(line_no, cells);
}

// What every reader reads, for the error about a file none takes.
std::string every_format_read() {
  std::vector<std::string_view> what;
  for (const auto& r : input_readers())
    if (!r.what.empty()) what.push_back(r.what);
  return fmt::format("{}", fmt::join(what, ", "));
}

// The reader for an input whose first bytes are `head`: --input-format, else by content, in the
// registry's order.
Result<const InputReader*> choose_reader(std::string_view head, const std::string& origin,
                                         const LoadOptions& options) {
  const std::string& format = options.input_format;
  if (format != "auto") {
    if (const auto* r = find_input_reader(format)) return r;
    return usage_error(fmt::format("unknown input format '{}' (use {})", format,
                                   fmt::join(input_formats(), ", ")));
  }
  for (const auto& r : input_readers())
    if (r.recognise && r.recognise(head, options)) return &r;
  for (const auto& r : input_readers())
    if (r.last_resort && r.last_resort(head, options)) return &r;
  if (head.empty()) return usage_error(origin + ": the file is empty");
  // UTF-16, binary data or blank lines only: said as such.
  if (auto e = text::check_input(text::strip_bom(head), origin, "a format gpudoctor reads",
                                 std::nullopt))
    return std::move(*e);
  // A table whose header names nothing gpudoctor knows: say what it has and how to read it.
  if (auto header = unknown_header(head))
    return usage_error(fmt::format(
        "{}:{}: a table whose columns ({}) gpudoctor does not recognise; name them with --map "
        "COLUMN=FIELD (field ids: gpudoctor fields; known column names: gpudoctor formats), e.g. "
        "--map '{}=util_gpu_pct'",
        origin, header->first, log_reader::join_names(header->second), header->second.back()));
  return usage_error(fmt::format("{}: not a format gpudoctor reads ({}); --input-format forces one",
                                 origin, every_format_read()));
}

// --gpu-name, whatever the input was.
Result<Recording> with_gpu_name(Result<Recording> rec, const LoadOptions& options) {
  if (rec.ok() && !options.gpu_name.empty())
    log_reader::name_unnamed_gpus(rec.value(), options.gpu_name);
  return rec;
}

}  // namespace

Result<Recording> load_text(std::string_view bytes, const std::string& origin,
                            const LoadOptions& options) {
  // Decoded once, here: every reader sees UTF-8 and every output stays valid UTF-8. Binary data
  // is decoded too (its NULs stay, so it is still refused as binary, and no invalid byte reaches a
  // message if a reader takes part of it); only W&B run files, binary by design, are left as is.
  text::Encoding enc = text::Encoding::kUtf8;
  std::string decoded;
  std::string_view utf8 = bytes;
  const std::string_view head = bytes.substr(0, kHeadBytes);
  // An 8-bit text, for a reader that decodes as it reads (the CSV reader): no pass over the whole
  // text first, and no copy of it. Where its head is UTF-8, the reader checks the rest is; where
  // the head's whole lines are not UTF-8, the text is Windows-1252, and the reader decodes the
  // lines that need it. Where the rest is not UTF-8, or the reader fails, what follows reads it
  // as ever (a failure's message comes from the decoded text).
  if (!head.empty() && !looks_like_wandb_run(head) && !text::encoding_by_head(bytes)) {
    LoadOptions as_read = options;
    std::string decoded_head;
    std::string_view utf8_head = head;
    if (const std::string_view lines = whole_lines(head, bytes.size()); text::valid_utf8(lines)) {
      as_read.read_as = text::ReadAs::kCheckUtf8;
      if (!text::valid_utf8(head)) utf8_head = lines;  // (a character its end cut, left out)
    } else {
      as_read.read_as = text::ReadAs::kWindows1252;
      // (What a reader is chosen by: the decoded text's first kHeadBytes, as below.)
      utf8_head = text::decode_to_utf8(head, text::Encoding::kWindows1252, decoded_head)
                      .substr(0, kHeadBytes);
    }
    if (as_read.read_as != text::ReadAs::kUtf8) {
      auto reader = choose_reader(utf8_head, origin, options);
      if (reader && reader.value()->decodes_as_it_reads) {
        auto rec = reader.value()->read(bytes, origin, as_read);
        if (rec.ok() && as_read.read_as == text::ReadAs::kWindows1252)
          log_reader::add_note(rec.value(),
                               fmt::format("the file is {} text: decoded to UTF-8",
                                           text::encoding_name(text::Encoding::kWindows1252)));
        if (rec.ok()) return with_gpu_name(std::move(rec), options);
      }
    }
  }
  if (!head.empty() && !looks_like_wandb_run(head)) {
    enc = text::detect_encoding(bytes);
    utf8 = text::decode_to_utf8(bytes, enc, decoded);
    if (options.texts_decoded_whole && utf8.data() == decoded.data())
      ++*options.texts_decoded_whole;
  }
  auto reader = choose_reader(utf8.substr(0, kHeadBytes), origin, options);
  if (!reader) return reader.error();
  auto rec = reader.value()->read(utf8, origin, options);
  if (rec.ok() && enc != text::Encoding::kUtf8 && enc != text::Encoding::kUtf8Bom)
    log_reader::add_note(rec.value(), fmt::format("the file is {} text: decoded to UTF-8",
                                                  text::encoding_name(enc)));
  return with_gpu_name(std::move(rec), options);
}

namespace {

// The decompressed text's size, as the notes say it.
std::string text_size(uint64_t n) {
  return n < (1 << 20) ? fmt::format("{} KiB", (n + 1023) / 1024)
                       : fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
}

// A compressed input, decompressed, then read as text (a recording is SQLite: read from a file).
Result<Recording> load_compressed(std::string_view bytes, Compression c, const std::string& origin,
                                  const LoadOptions& options) {
  auto text = decompress(bytes, c, origin, max_decompressed_bytes());
  if (!text) return text.error();
  if (looks_like_recording(std::string_view(text.value()).substr(0, kHeadBytes)))
    return usage_error(fmt::format(
        "{}: a compressed gpudoctor recording; decompress it to a file and read that", origin));
  auto rec = load_text(text.value(), origin, options);
  if (rec.ok())
    log_reader::add_note(rec.value(), fmt::format("{} archive decompressed ({} of text)",
                                                  compression_name(c), text_size(text->size())));
  return rec;
}

// Whether the input whose first decompressed bytes are `text_head` is read as a profiler trace,
// as a stream: a trace by its members (or --input-format trace), and not UTF-16 (decoded whole by
// load_text).
bool trace_head(std::string_view text_head, const LoadOptions& options) {
  if (options.input_format != "auto" && options.input_format != "trace") return false;
  const text::Encoding enc = text::detect_encoding(text_head.substr(0, 64));
  if (enc == text::Encoding::kUtf16Le || enc == text::Encoding::kUtf16Be) return false;
  return options.input_format == "trace" || looks_like_kineto_trace(text::strip_bom(text_head));
}

// Up to n bytes of the stream: fewer at its end, or where a read fails (said in `error` where
// given; a decompressed head of a cut archive keeps what decoded).
std::string read_head(ByteStream& in, size_t n, std::optional<Error>* error = nullptr) {
  std::string head(n, '\0');
  size_t got = 0;
  while (got < n) {
    auto r = in.read(head.data() + got, n - got);
    if (!r && error) *error = r.error();
    if (!r || r.value() == 0) break;
    got += r.value();
  }
  head.resize(got);
  return head;
}

// A profiler trace, plain or compressed, is read as a stream (formats/kineto_trace): memory holds
// its kept events and a window of a chunk or two, not the file nor its decompressed text. Nothing
// when the input is not one (by its first decompressed bytes, or --input-format) or is UTF-16
// (decoded whole by load_text).
std::optional<Result<Recording>> load_trace_stream(const std::string& path, std::string_view head,
                                                   const LoadOptions& options) {
  std::string text_head(head);
  const Compression c = detect_compression(head);
  if (c != Compression::kNone) {
    auto in = ByteStream::open_file(path);
    if (!in) return std::nullopt;
    text_head = read_head(*in.value(), kHeadBytes);
  }
  if (!trace_head(text_head, options)) return std::nullopt;
  auto in = ByteStream::open_file(path);
  if (!in) return in.error();
  auto rec = read_kineto_trace(*in.value(), path, options);
  if (rec.ok() && c != Compression::kNone)
    log_reader::add_note(rec.value(),
                         fmt::format("{} archive decompressed ({} of text)", compression_name(c),
                                     text_size(in.value()->bytes_read())));
  return with_gpu_name(std::move(rec), options);
}

// Standard input: a profiler trace (by its first bytes, decompressed) is read as a stream, as a
// file is (load_trace_stream); anything else is read to its end (or to a Ctrl-C, keeping what
// arrived) and then as a file's text.
Result<Recording> load_stdin(const LoadOptions& options) {
  const std::string origin = "standard input";
  StreamBytes in;
  {
    const auto raw = ByteStream::of_descriptor(STDIN_FILENO, origin, "", options.stop_reading,
                                               /*decompress=*/false);
    std::optional<Error> error;
    in.bytes = read_head(*raw, kHeadBytes, &error);
    if (error) return *error;
    in.interrupted = raw->interrupted();
  }
  const Compression c = detect_compression(in.bytes);
  const std::string text_head =
      c == Compression::kNone
          ? in.bytes
          : read_head(*ByteStream::of_descriptor(-1, origin, in.bytes, {}), kHeadBytes);
  if (!text_head.empty() && trace_head(text_head, options)) {
    const auto stream =
        ByteStream::of_descriptor(STDIN_FILENO, origin, in.bytes, options.stop_reading);
    auto rec = read_kineto_trace(*stream, origin, options);
    if (rec.ok() && c != Compression::kNone)
      log_reader::add_note(rec.value(),
                           fmt::format("{} archive decompressed ({} of text)", compression_name(c),
                                       text_size(stream->bytes_read())));
    if (rec.ok() && stream->interrupted())
      log_reader::add_note(rec.value(),
                           "standard input: interrupted (Ctrl-C); read what had arrived");
    return with_gpu_name(std::move(rec), options);
  }
  if (!in.interrupted && in.bytes.size() == kHeadBytes) {
    auto rest = read_to_end(STDIN_FILENO, origin, options.stop_reading,
                            max_decompressed_bytes() - kHeadBytes);
    if (!rest) return rest.error();
    in.bytes += rest->bytes;
    in.interrupted = rest->interrupted;
  }
  std::string& bytes = in.bytes;
  // A Ctrl-C keeps whole lines of text (read_to_end's rule, over the head and the rest).
  if (in.interrupted && !bytes.empty() && bytes.back() != '\n' && c == Compression::kNone) {
    const size_t nl = bytes.rfind('\n');
    bytes.resize(nl == std::string::npos ? 0 : nl + 1);
  }
  if (bytes.empty())
    return usage_error(in.interrupted ? "standard input: interrupted before any line arrived"
                                      : "standard input: nothing arrived (empty)");
  if (options.input_format == "recording" || looks_like_recording(bytes))
    return usage_error("standard input: a gpudoctor recording (SQLite) is read from a file");
  auto rec = c != Compression::kNone ? load_compressed(bytes, c, origin, options)
                                     : load_text(bytes, origin, options);
  if (rec.ok() && in.interrupted)
    log_reader::add_note(rec.value(),
                         "standard input: interrupted (Ctrl-C); read what had arrived");
  return rec;
}

Result<Recording> load_as_read(const std::string& path, const LoadOptions& options) {
  if (path == "-") return load_stdin(options);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    const RunFolder run = classify_folder(path);
    if (run.kind != FolderKind::kLogs) return load_run_folder(path, run, options);
    return usage_error(fmt::format(
        "{} is a folder of logs, not a W&B or MLflow run: name a log file in it (gpudoctor "
        "diagnose reads a whole folder, each log in turn or --merge as one run)",
        path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  char head_buf[kHeadBytes];
  in.read(head_buf, sizeof head_buf);
  const std::string head(head_buf, static_cast<size_t>(in.gcount()));
  in.close();
  // A recording is SQLite, read from the file; anything else is text, decoded in load_text.
  if (options.input_format == "recording" ||
      (options.input_format == "auto" && looks_like_recording(head))) {
    auto rec = read_recording(path);
    if (rec.ok()) log_reader::mark_logged_power_limits(rec.value());
    return with_gpu_name(std::move(rec), options);
  }
  if (auto trace = load_trace_stream(path, head, options)) return std::move(*trace);
  // The whole file, mapped rather than copied: the readers make one pass over it, and memory
  // then holds the kept series, not the text (a 5 GB log costs address space, not RAM). Read as
  // text, through the same detection (of the same first bytes) as any text; an archive is
  // decompressed into memory first.
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  if (const Compression c = detect_compression(head); c != Compression::kNone)
    return load_compressed(mapped->text(), c, path, options);
  const text::ReleasePassed release(mapped->text());
  return load_text(mapped->text(), path, options);
}

}  // namespace

Result<Recording> load_telemetry(const std::string& path, const LoadOptions& options) {
  auto rec = load_as_read(path, options);
  // A field with one value throughout (a limit, a maximum clock, the memory size: most of a full
  // nvidia-smi log's fields) is kept once, not once per sample.
  if (rec.ok())
    for (auto& g : rec.value().gpus) g.compact();
  return rec;
}

}  // namespace gpudoctor
