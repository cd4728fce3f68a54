#include "formats/run_folders.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/duration.hpp"
#include "formats/finish.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// MLflow's GPU system metric files: "gpu_0_utilization_percentage" (no extension: a log per GPU
// named "gpu_0_power.csv" is not one).
bool is_gpu_metric_name(std::string_view n) {
  if (!n.starts_with("gpu_") || n.find('.') != std::string_view::npos) return false;
  size_t i = 4;
  while (i < n.size() && n[i] >= '0' && n[i] <= '9') ++i;
  return i > 4 && i + 1 < n.size() && n[i] == '_';
}

bool holds_gpu_metrics(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && is_gpu_metric_name(it->path().filename().string())) return true;
  return false;
}

std::string read_small_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Names with numbers in their order: gpu2.csv before gpu10.csv (one log per GPU keeps its GPUs
// in order when merged).
bool natural_less(const std::string& a, const std::string& b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      const std::string_view na = std::string_view(a).substr(i, ie - i);
      const std::string_view nb = std::string_view(b).substr(j, je - j);
      const size_t za = std::min(na.find_first_not_of('0'), na.size());
      const size_t zb = std::min(nb.find_first_not_of('0'), nb.size());
      const std::string_view ta = na.substr(za), tb = nb.substr(zb);
      if (ta.size() != tb.size()) return ta.size() < tb.size();
      if (ta != tb) return ta < tb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

}  // namespace

RunFolder classify_folder(const std::string& dir) {
  RunFolder r;
  const fs::path d(dir);
  std::error_code ec;
  std::vector<fs::path> runs;
  for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".wandb" && it->is_regular_file(ec)) runs.push_back(it->path());
  // A run folder by its name or its files/ folder: a .wandb file among other logs is one of them.
  const std::string name =
      d.filename().empty() ? d.parent_path().filename().string() : d.filename().string();
  const bool wandb_named =
      name.starts_with("run-") || name.starts_with("offline-run-") || is_dir(d / "files");
  if (!runs.empty() && wandb_named) {
    std::sort(runs.begin(), runs.end());
    r.kind = FolderKind::kWandbRun;
    r.run_file = runs.front().string();
    if (is_file(d / "files" / "wandb-metadata.json"))
      r.metadata = (d / "files" / "wandb-metadata.json").string();
    return r;
  }
  // The run (mlruns/EXP/RUN), its metrics folder, or metrics/system itself.
  for (const fs::path& m : {d / "metrics" / "system", d / "system", d}) {
    if (is_dir(m) && holds_gpu_metrics(m)) {
      r.kind = FolderKind::kMlflowRun;
      r.metrics_dir = m.string();
      return r;
    }
  }
  return r;
}

void apply_wandb_metadata(Recording& rec, const std::string& json, const std::string& origin) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    log_reader::add_note(rec, fmt::format("{}: not JSON, ignored", origin));
    return;
  }
  auto str = [](const nlohmann::json& o, const char* key) -> std::string {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (rec.system.hostname.empty()) rec.system.hostname = str(j, "host");
  // Per GPU: gpu_devices (SDKs to 0.15), gpu_nvidia (later SDKs); the one model name: gpu.
  std::vector<std::string> names;
  for (const char* key : {"gpu_devices", "gpu_nvidia"}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || !names.empty()) continue;
    for (const auto& d : *it) names.push_back(d.is_object() ? str(d, "name") : std::string());
  }
  const std::string model = str(j, "gpu");
  std::set<std::string> used;
  for (const auto& g : rec.gpus) {
    if (!g.info.name.empty()) continue;
    std::string n = g.info.index < names.size() ? names[g.info.index] : std::string();
    used.insert(n.empty() ? model : n);
  }
  used.erase("");
  if (used.size() == 1) {
    // One model: named as --gpu-name names it (and its limit from the model table), said as
    // coming from the metadata.
    const size_t first_new = rec.notes.size();
    log_reader::name_unnamed_gpus(rec, *used.begin());
    for (size_t i = first_new; i < rec.notes.size(); ++i) {
      replace_all(rec.notes[i], "from --gpu-name", "from " + origin);
      replace_all(rec.notes[i], "(--gpu-name)", "(" + origin + ")");
    }
  } else if (used.size() > 1) {
    for (auto& g : rec.gpus)
      if (g.info.name.empty() && g.info.index < names.size()) g.info.name = names[g.info.index];
    log_reader::add_note(rec, fmt::format("GPU names from {}: {}", origin, fmt::join(used, ", ")));
  }
  const auto count = j.find("gpu_count");
  if (count != j.end() && count->is_number_integer()) {
    const auto n = count->get<long long>();
    if (n > static_cast<long long>(rec.gpus.size()))
      log_reader::add_note(rec, fmt::format("{} counts {} GPUs; the run file has metrics of {}",
                                            origin, n, rec.gpus.size()));
  }
}

Result<std::string> mlflow_system_table(const std::string& metrics_dir,
                                        std::vector<std::string>& skipped) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(metrics_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (is_gpu_metric_name(name))
      files.push_back(it->path());
    else
      skipped.push_back(name);
  }
  if (ec) return usage_error(fmt::format("cannot read {}: {}", metrics_dir, ec.message()));
  if (files.empty())
    return usage_error(
        fmt::format("{}: no GPU metric files (gpu_N_...) in this MLflow run", metrics_dir));
  std::sort(files.begin(), files.end());
  std::sort(skipped.begin(), skipped.end());
  // timestamp -> one cell per file; MLflow logs a sample's metrics with one timestamp.
  std::map<long long, std::vector<std::string>> rows;
  for (size_t c = 0; c < files.size(); ++c) {
    const std::string body = read_small_file(files[c]);
    text::LineReader lines(body);
    std::string_view line;
    std::vector<std::string_view> cells;
    while (lines.next(line)) {
      cells.clear();
      text::split_trimmed(text::trim(line), ' ', cells);
      std::erase(cells, std::string_view());
      if (cells.size() < 2) continue;
      const auto t = text::parse_double(cells[0]);
      if (!t) continue;
      auto& row = rows[static_cast<long long>(*t)];
      row.resize(files.size());
      row[c] = std::string(cells[1]);
    }
  }
  std::string csv = "timestamp";
  for (const auto& f : files) csv += ",system/" + f.filename().string();
  csv += '\n';
  for (auto& [t, cells] : rows) {
    cells.resize(files.size());
    csv += fmt::format("{},{}\n", t, fmt::join(cells, ","));
  }
  return csv;
}

Result<Recording> load_run_folder(const std::string& dir, const RunFolder& run,
                                  const LoadOptions& options) {
  LoadOptions o = options;
  o.gpu_name.clear();  // the metadata's names first, --gpu-name for what they leave unnamed
  Result<Recording> rec = failure("");
  if (run.kind == FolderKind::kWandbRun) {
    rec = load_telemetry(run.run_file, o);
    if (!rec) return rec;
    log_reader::add_note(rec.value(),
                         fmt::format("read as a W&B run folder: {}{}", run.run_file,
                                     run.metadata.empty() ? " (no files/wandb-metadata.json)"
                                                          : " with " + run.metadata));
    if (!run.metadata.empty())
      apply_wandb_metadata(rec.value(), read_small_file(run.metadata), run.metadata);
  } else if (run.kind == FolderKind::kMlflowRun) {
    std::vector<std::string> skipped;
    auto table = mlflow_system_table(run.metrics_dir, skipped);
    if (!table) return table.error();
    if (o.input_format == "auto") o.input_format = "generic-csv";
    rec = load_text(table.value(), dir, o);
    if (!rec) return rec;
    log_reader::add_note(
        rec.value(), fmt::format("read as an MLflow run's system metrics ({}){}", run.metrics_dir,
                                 skipped.empty() ? std::string()
                                                 : fmt::format("; not GPU metrics, not read: {}",
                                                               fmt::join(skipped, ", "))));
  } else {
    return usage_error(fmt::format("{} is not a W&B or MLflow run folder", dir));
  }
  if (!options.gpu_name.empty()) log_reader::name_unnamed_gpus(rec.value(), options.gpu_name);
  return rec;
}

Result<std::vector<std::string>> folder_logs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename().string().starts_with(".")) continue;
    if (it->is_directory(ec)) {
      if (!it->is_symlink(ec) && classify_folder(p.string()).kind != FolderKind::kLogs)
        out.push_back(p.string());
      continue;
    }
    if (it->is_regular_file(ec)) out.push_back(p.string());
  }
  if (ec) return usage_error(fmt::format("cannot read {}: {}", dir, ec.message()));
  std::sort(out.begin(), out.end(), natural_less);
  if (out.empty()) return usage_error(fmt::format("{}: an empty folder (no logs in it)", dir));
  return out;
}

namespace {

std::string gpu_range(unsigned first, unsigned count) {
  if (count == 0) return "no GPU";
  if (count == 1) return fmt::format("GPU {}", first);
  return fmt::format("GPUs {}-{}", first, first + count - 1);
}

}  // namespace

Recording merge_recordings(std::vector<std::pair<std::string, Recording>> parts) {
  Recording out;
  if (parts.empty()) return out;
  const bool absolute = std::all_of(parts.begin(), parts.end(),
                                    [](const auto& p) { return p.second.start_unix_ms > 0; });
  int64_t start = 0;
  if (absolute) {
    start = parts.front().second.start_unix_ms;
    for (const auto& p : parts) start = std::min(start, p.second.start_unix_ms);
  }
  std::set<std::string> hosts;
  for (const auto& p : parts) hosts.insert(p.second.system.hostname);
  const bool several_hosts = hosts.size() > 1;
  out.system = parts.front().second.system;
  if (several_hosts) out.system.hostname.clear();
  out.start_unix_ms = start;
  out.source = fmt::format("{} logs merged", parts.size());
  std::vector<std::string> what;
  std::vector<std::string> notes;
  unsigned next = 0;
  int64_t last_start = 0, first_end = std::numeric_limits<int64_t>::max();
  for (const auto& [name, rec] : parts) {
    double end_s = 0;
    for (const auto& g : rec.gpus)
      if (!g.time_s.empty()) end_s = std::max(end_s, g.time_s.back());
    last_start = std::max(last_start, rec.start_unix_ms);
    first_end = std::min(first_end, rec.start_unix_ms + static_cast<int64_t>(end_s * 1000));
  }
  for (auto& [name, rec] : parts) {
    const double shift = absolute ? static_cast<double>(rec.start_unix_ms - start) / 1000.0 : 0;
    const unsigned first = next;
    for (auto& g : rec.gpus) {
      g.info.index = next++;
      if (several_hosts && g.host.empty()) g.host = rec.system.hostname;
      g.time_s.shift(shift);
      for (auto& s : g.processes) s.first_s += shift, s.last_s += shift;
      for (auto& s : g.owners) s.first_s += shift, s.last_s += shift;
      if (g.lost_at_s) *g.lost_at_s += shift;
      out.gpus.push_back(std::move(g));
    }
    std::string host = several_hosts && !rec.system.hostname.empty()
                           ? fmt::format(", host {}", rec.system.hostname)
                           : std::string();
    what.push_back(fmt::format("{} ({}{})", name, gpu_range(first, next - first), host));
    for (auto& n : rec.notes) notes.push_back(fmt::format("{}: {}", name, n));
    // Profiler traces keep their own wall-clock times: one run's ranks side by side.
    for (auto& t : rec.traces) out.traces.push_back(std::move(t));
  }
  out.notes.push_back(fmt::format("merged {} logs as one run, GPUs renumbered: {}; {}",
                                  parts.size(), fmt::join(what, ", "),
                                  absolute ? "times aligned by their absolute times"
                                           : "not every log has absolute times: each starts at 0"));
  // One job's logs overlap in time; logs days apart are likely not one job's.
  if (absolute && last_start > first_end + 60 * 1000)
    out.notes.push_back(fmt::format(
        "the merged logs do not all overlap in time (one starts {} after another ends): are they "
        "one job's GPUs?",
        human_duration(static_cast<double>(last_start - first_end) / 1000.0)));
  for (auto& n : notes) out.notes.push_back(std::move(n));
  return out;
}

std::string error_gist(std::string message, const std::string& origin) {
  if (message.starts_with(origin + ":")) message = message.substr(origin.size() + 1);
  if (message.starts_with(' ')) message.erase(0, 1);
  const size_t cut = std::min(message.find(" ("), message.find(';'));
  return cut == std::string::npos ? message : message.substr(0, cut);
}

Result<Recording> load_merged_folder(const std::string& dir, const std::vector<std::string>& files,
                                     const LoadOptions& options) {
  std::vector<std::pair<std::string, Recording>> parts;
  std::vector<std::string> unread;
  for (const auto& f : files) {
    auto r = load_telemetry(f, options);
    if (r)
      parts.emplace_back(f, std::move(r.value()));
    else
      unread.push_back(fmt::format("{} ({})", f, error_gist(r.error().message, f)));
  }
  if (parts.empty())
    return usage_error(fmt::format("{}: none of its {} files could be read (first: {})", dir,
                                   files.size(), unread.front()));
  Recording rec = merge_recordings(std::move(parts));
  if (!unread.empty())
    rec.notes.insert(rec.notes.begin() + 1,
                     fmt::format("not merged, not read: {}", fmt::join(unread, "; ")));
  return rec;
}

}  // namespace gpudoctor
