#include "formats/load.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "formats/capture_reader.hpp"
#include "formats/dcgm.hpp"
#include "formats/dmon.hpp"
#include "formats/generic_csv.hpp"
#include "formats/smi_csv.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor {

std::vector<std::string> input_formats() {
  return {"auto", "recording",  "capture",   "smi-csv",
          "dmon", "dcgmi-dmon", "dcgm-dump", "generic-csv"};
}

Result<Recording> load_telemetry(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  char head_buf[4096];
  in.read(head_buf, sizeof head_buf);
  const std::string head(head_buf, static_cast<size_t>(in.gcount()));

  std::string format = options.input_format;
  if (format == "auto") {
    if (looks_like_recording(head))
      format = "recording";
    else if (looks_like_capture(head))
      format = "capture";
    else if (looks_like_dmon(head))
      format = "dmon";
    else if (looks_like_dcgmi_dmon(head))
      format = "dcgmi-dmon";
    else if (looks_like_dcgm_long(head))
      format = "dcgm-dump";
    // Home-made headers can share a name or two with nvidia-smi's (gpu_name, pstate): the
    // generic reader claims those, nvidia-smi's own dotted names stay with its reader.
    else if ((looks_like_smi_csv(head) && !looks_like_generic_csv(head)) ||
             !options.columns.empty())
      format = "smi-csv";
    else if (looks_like_generic_csv(head))
      format = "generic-csv";
    else if (head.empty())
      return usage_error(path + ": the file is empty");
    else
      return usage_error(fmt::format(
          "{}: not a format gpudoctor reads (recordings, captures, nvidia-smi --query-gpu CSV, "
          "nvidia-smi dmon, dcgmi dmon, DCGM field dumps, CSV with recognised column names); "
          "--input-format forces one",
          path));
  }
  if (format == "recording") return read_recording(path);
  in.clear();
  in.seekg(0);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (format == "capture") return read_capture(text, path);
  if (format == "smi-csv") {
    SmiCsvOptions o;
    o.columns = options.columns;
    o.power_limit_w = options.power_limit_w;
    return read_smi_csv(text, path, o);
  }
  if (format == "generic-csv") {
    GenericCsvOptions o;
    o.map = options.map;
    o.power_limit_w = options.power_limit_w;
    return read_generic_csv(text, path, o);
  }
  if (format == "dcgmi-dmon" || format == "dcgm-dump") {
    DcgmOptions o;
    o.power_limit_w = options.power_limit_w;
    return format == "dcgmi-dmon" ? read_dcgmi_dmon(text, path, o) : read_dcgm_long(text, path, o);
  }
  if (format == "dmon") {
    DmonOptions o;
    o.power_limit_w = options.power_limit_w;
    return read_dmon(text, path, o);
  }
  return usage_error(
      fmt::format("unknown input format '{}' (use {})", format, fmt::join(input_formats(), ", ")));
}

}  // namespace gpudoctor
