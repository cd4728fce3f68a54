#include "formats/load.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "formats/capture_reader.hpp"
#include "formats/dcgm.hpp"
#include "formats/dmon.hpp"
#include "formats/finish.hpp"
#include "formats/generic_csv.hpp"
#include "formats/smi_csv.hpp"
#include "formats/smi_table.hpp"
#include "formats/text.hpp"
#include "store/sqlite_store.hpp"

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
  return {"auto", "recording",  "capture",   "smi-csv",    "smi-table",
          "dmon", "dcgmi-dmon", "dcgm-dump", "generic-csv"};
}

namespace {

// Detection looks at this many bytes from the start of the input.
constexpr size_t kHeadBytes = 4096;

bool known_format(const std::string& format) {
  const auto all = input_formats();
  return std::find(all.begin(), all.end(), format) != all.end();
}

// The reader for an input whose first bytes are `head`: --input-format, else by content.
Result<std::string> choose_format(std::string_view head, const std::string& origin,
                                  const LoadOptions& options) {
  const std::string& format = options.input_format;
  if (!known_format(format))
    return usage_error(fmt::format("unknown input format '{}' (use {})", format,
                                   fmt::join(input_formats(), ", ")));
  if (format != "auto") return format;
  if (looks_like_recording(head)) return std::string("recording");
  if (looks_like_capture(head)) return std::string("capture");
  if (looks_like_smi_table(head)) return std::string("smi-table");
  if (looks_like_dmon(head)) return std::string("dmon");
  if (looks_like_dcgmi_dmon(head)) return std::string("dcgmi-dmon");
  if (looks_like_dcgm_long(head)) return std::string("dcgm-dump");
  // Home-made headers can share a name or two with nvidia-smi's (gpu_name, pstate): the generic
  // reader claims those, nvidia-smi's own dotted names stay with its reader.
  if ((looks_like_smi_csv(head) && !looks_like_generic_csv(head)) || !options.columns.empty())
    return std::string("smi-csv");
  if (looks_like_generic_csv(head)) return std::string("generic-csv");
  if (head.empty()) return usage_error(origin + ": the file is empty");
  // UTF-16, binary data or blank lines only: said as such.
  if (auto e = text::check_input(text::strip_bom(head), origin, "a format gpudoctor reads",
                                 std::nullopt))
    return std::move(*e);
  return usage_error(fmt::format(
      "{}: not a format gpudoctor reads (recordings, captures, nvidia-smi --query-gpu CSV, "
      "nvidia-smi table snapshots, nvidia-smi dmon, dcgmi dmon, DCGM field dumps, CSV with "
      "recognised column names); --input-format forces one",
      origin));
}

Result<Recording> read_text(std::string_view text, const std::string& origin,
                            const std::string& format, const LoadOptions& options) {
  if (format == "capture") return read_capture(text, origin);
  if (format == "smi-csv") {
    SmiCsvOptions o;
    o.columns = options.columns;
    o.power_limit_w = options.power_limit_w;
    return read_smi_csv(text, origin, o);
  }
  if (format == "smi-table") {
    SmiTableOptions o;
    o.power_limit_w = options.power_limit_w;
    return read_smi_table(text, origin, o);
  }
  if (format == "generic-csv") {
    GenericCsvOptions o;
    o.map = options.map;
    o.power_limit_w = options.power_limit_w;
    return read_generic_csv(text, origin, o);
  }
  if (format == "dcgmi-dmon" || format == "dcgm-dump") {
    DcgmOptions o;
    o.power_limit_w = options.power_limit_w;
    return format == "dcgmi-dmon" ? read_dcgmi_dmon(text, origin, o)
                                  : read_dcgm_long(text, origin, o);
  }
  if (format == "dmon") {
    DmonOptions o;
    o.power_limit_w = options.power_limit_w;
    return read_dmon(text, origin, o);
  }
  return usage_error(fmt::format("{}: a gpudoctor recording (SQLite) is read from a file", origin));
}

// --gpu-name, whatever the input was.
Result<Recording> with_gpu_name(Result<Recording> rec, const LoadOptions& options) {
  if (rec.ok() && !options.gpu_name.empty())
    log_reader::name_unnamed_gpus(rec.value(), options.gpu_name);
  return rec;
}

}  // namespace

Result<Recording> load_text(std::string_view text, const std::string& origin,
                            const LoadOptions& options) {
  auto format = choose_format(text.substr(0, kHeadBytes), origin, options);
  if (!format) return format.error();
  return with_gpu_name(read_text(text, origin, *format, options), options);
}

Result<Recording> load_telemetry(const std::string& path, const LoadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return usage_error(fmt::format("{} is a directory: name a log file in it", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  char head_buf[kHeadBytes];
  in.read(head_buf, sizeof head_buf);
  const std::string head(head_buf, static_cast<size_t>(in.gcount()));
  in.close();
  auto format = choose_format(head, path, options);
  if (!format) return format.error();
  if (*format == "recording") {
    auto rec = read_recording(path);
    if (rec.ok()) log_reader::mark_logged_power_limits(rec.value());
    return with_gpu_name(std::move(rec), options);
  }
  // The whole file, mapped rather than copied: the readers make one pass over it, and memory
  // then holds the kept series, not the text (a 5 GB log costs address space, not RAM). Read as
  // text, through the same detection (of the same first bytes) as any text.
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  return load_text(mapped->text(), path, options);
}

}  // namespace gpudoctor
