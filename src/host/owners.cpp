#include "host/owners.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>

#include <fmt/format.h>

namespace gpudoctor::host {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Reads a small file whole; err gets errno on failure (0 on success).
std::optional<std::string> read_small(const std::string& path, int& err) {
  err = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return std::nullopt;
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 20)) break;  // no /proc file we read is this large
  }
  ::close(fd);
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t next = std::min(s.find(sep, pos), s.size());
    out.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

bool all_of(std::string_view s, bool (*ok)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), ok);
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_id_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_uid_char(char c) {
  return is_id_char(c) || c == '-' || c == '_';
}

// Slurm 26.05's SLUID: "s" and 13 base-32 characters.
bool is_sluid(std::string_view id) {
  return id.size() == 14 && id[0] == 's' && all_of(id.substr(1), is_id_char) &&
         !all_of(id.substr(1), is_digit);
}

// A container runtime's scope name: "<prefix><id>.scope" (or without .scope under cgroupfs).
struct ScopePrefix {
  std::string_view prefix, runtime;
};
constexpr ScopePrefix kScopes[] = {
    {"cri-containerd-", "containerd"}, {"crio-", "cri-o"},    {"docker-", "docker"},
    {"cri-dockerd-", "docker"},        {"libpod-", "podman"},
};

std::optional<std::pair<std::string, std::string>> container_of(std::string_view c) {
  if (ends_with(c, ".scope")) c.remove_suffix(6);
  for (const auto& sp : kScopes) {
    if (!starts_with(c, sp.prefix)) continue;
    const std::string_view id = c.substr(sp.prefix.size());
    if (starts_with(id, "conmon-")) return std::nullopt;  // the runtime's monitor, not the payload
    if (id.size() >= 12 && all_of(id, is_id_char))
      return std::pair{std::string(id), std::string(sp.runtime)};
    return std::nullopt;
  }
  return std::nullopt;
}

std::string short_id(const std::string& id) {
  return id.substr(0, std::min<size_t>(12, id.size()));
}

// Ranks: the more specific owner wins when lines of a hybrid hierarchy disagree.
int rank_of(OwnerKind k) {
  return static_cast<int>(k);
}

std::optional<Owner> classify(const std::vector<std::string_view>& c) {
  // Slurm: /slurm/uid_U/job_J/step_S/task_T (v1); /system.slice/[NODE_]slurmstepd.scope/job_J/
  // step_S/user/task_T (v2).
  for (size_t k = 0; k < c.size(); ++k) {
    if (c[k] != "slurm" && !ends_with(c[k], "slurmstepd.scope")) continue;
    Owner o;
    o.kind = OwnerKind::kSlurmJob;
    for (size_t j = k + 1; j < c.size(); ++j) {
      if (starts_with(c[j], "job_") && all_of(c[j].substr(4), is_id_char))
        o.id = std::string(c[j].substr(4));
      else if (starts_with(c[j], "step_") && !o.id.empty() && all_of(c[j].substr(5), is_id_char))
        o.step = std::string(c[j].substr(5));
      else if (starts_with(c[j], "uid_") && all_of(c[j].substr(4), is_digit))
        o.uid =
            static_cast<uint32_t>(std::strtoul(std::string(c[j].substr(4)).c_str(), nullptr, 10));
    }
    if (o.id.empty()) break;
    if (is_sluid(o.id)) o.note = "Slurm SLUID (26.05 and later): kept as the job id";
    return o;
  }
  // Kubernetes: /kubepods[/QOS]/pod<uid>/<container> (cgroupfs; Guaranteed pods have no QoS
  // segment) or kubepods[-QOS]-pod<uid_with_underscores>.slice/<runtime>-<id>.scope (systemd).
  for (size_t k = 0; k < c.size(); ++k) {
    if (!starts_with(c[k], "kubepods")) continue;
    for (size_t j = k; j < c.size(); ++j) {
      std::string uid;
      if (starts_with(c[j], "pod") && all_of(c[j].substr(3), is_uid_char)) {
        uid = std::string(c[j].substr(3));
      } else if (ends_with(c[j], ".slice") && c[j].find("-pod") != std::string_view::npos) {
        std::string_view u = c[j].substr(c[j].find("-pod") + 4);
        u.remove_suffix(6);
        if (all_of(u, is_uid_char)) uid = std::string(u);
      }
      if (uid.empty()) continue;
      std::replace(uid.begin(), uid.end(), '_', '-');
      Owner o;
      o.kind = OwnerKind::kK8sPod;
      o.id = uid;
      if (j + 1 < c.size()) {
        if (auto ct = container_of(c[j + 1])) {
          o.container = short_id(ct->first);
          o.runtime = ct->second;
        } else if (c[j + 1].size() >= 12 && all_of(c[j + 1], is_id_char)) {
          o.container = short_id(std::string(c[j + 1]));
        }
      }
      return o;
    }
    break;
  }
  // Docker and Podman outside Kubernetes: /docker/<id> (cgroupfs), docker-<id>.scope,
  // libpod-<id>.scope, /libpod_parent/libpod-<id>.
  for (size_t k = 0; k < c.size(); ++k) {
    std::optional<std::pair<std::string, std::string>> ct = container_of(c[k]);
    if (!ct && c[k] == "docker" && k + 1 < c.size() && c[k + 1].size() >= 12 &&
        all_of(c[k + 1], is_id_char))
      ct = std::pair{std::string(c[k + 1]), std::string("docker")};
    if (!ct) continue;
    Owner o;
    o.kind = OwnerKind::kContainer;
    o.id = ct->first;
    o.container = short_id(ct->first);
    o.runtime = ct->second;
    return o;
  }
  // systemd: the innermost service or scope (a service, `systemd-run --scope`, a login session).
  for (size_t k = c.size(); k-- > 0;) {
    if (!ends_with(c[k], ".service") && !ends_with(c[k], ".scope")) continue;
    if (c[k] == "init.scope") break;  // PID 1 itself
    Owner o;
    o.kind = OwnerKind::kSystemdUnit;
    o.id = std::string(c[k]);
    return o;
  }
  return std::nullopt;
}

uint32_t to_u32(std::string_view s) {
  uint32_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

std::optional<Owner> owner_from_cgroup(std::string_view text) {
  std::optional<Owner> best;
  for (std::string_view line : split(text, '\n')) {
    // hierarchy-ID:controller-list:cgroup-path; the path may itself hold ':'.
    const size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view path = line.substr(b + 1);
    if (path.empty() || path[0] != '/') continue;
    std::vector<std::string_view> comps;
    // A cgroup namespace makes paths relative ("/../../kubepods/..."): the dots are skipped.
    for (std::string_view part : split(path, '/'))
      if (!part.empty() && part != "." && part != "..") comps.push_back(part);
    auto o = classify(comps);
    if (o && (!best || rank_of(o->kind) > rank_of(best->kind))) best = std::move(o);
  }
  if (best) best->source = "cgroup";
  return best;
}

std::optional<uint32_t> uid_from_status(std::string_view text) {
  for (std::string_view line : split(text, '\n')) {
    if (!starts_with(line, "Uid:")) continue;
    line.remove_prefix(4);
    while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
    uint32_t v = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc{} || p == line.data()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

std::optional<uint64_t> start_time_from_stat(std::string_view line) {
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  // After "(comm)": state is field 3, starttime field 22, i.e. the 20th token after ')'.
  size_t pos = close + 1;
  for (int field = 3; field <= 22; ++field) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    const size_t end = std::min(line.find(' ', pos), line.size());
    if (pos >= end) return std::nullopt;
    if (field == 22) {
      uint64_t v = 0;
      const auto [p, ec] = std::from_chars(line.data() + pos, line.data() + end, v);
      if (ec != std::errc{} || p != line.data() + end) return std::nullopt;
      return v;
    }
    pos = end;
  }
  return std::nullopt;
}

std::optional<std::string> system_user_name(uint32_t uid) {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(static_cast<size_t>(size > 0 ? size : 16384));
  passwd pw{};
  passwd* res = nullptr;
  if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &res) != 0 || !res)
    return std::nullopt;
  return std::string(pw.pw_name);
}

std::optional<Owner> owner_from_allocation(std::string_view text, const UserLookup& users) {
  for (std::string_view line : split(text, '\n')) {
    std::vector<std::string_view> tok;
    for (std::string_view t : split(line, ' '))
      if (!t.empty()) tok.push_back(t);
    if (tok.empty()) continue;
    while (!tok.back().empty() && tok.back().back() == '\r') tok.back().remove_suffix(1);
    if (!all_of(tok[0], is_id_char)) return std::nullopt;
    Owner o;
    o.kind = OwnerKind::kSlurmJob;
    o.id = std::string(tok[0]);
    o.source = "job-mapping";
    if (tok.size() >= 2 && all_of(tok[1], is_digit)) {
      o.source = "gpustat";
      o.uid = to_u32(tok[1]);
      auto name = users ? users(*o.uid) : std::nullopt;
      o.user = name ? *name : fmt::format("uid {}", *o.uid);
    }
    if (is_sluid(o.id)) o.note = "Slurm SLUID (26.05 and later): kept as the job id";
    return o;
  }
  return std::nullopt;
}

OwnerResolver::OwnerResolver(Options o) : o_(std::move(o)) {
  int err = 0;
  // hidepid=1/2 (or noaccess/invisible) hides other users' /proc/PID: said once, owner unknown.
  if (auto mi = read_small(o_.proc_root + "/self/mountinfo", err))
    for (std::string_view line : split(*mi, '\n'))
      if (line.find(" - proc ") != std::string_view::npos &&
          (line.find("hidepid=1") != std::string_view::npos ||
           line.find("hidepid=2") != std::string_view::npos ||
           line.find("hidepid=invisible") != std::string_view::npos ||
           line.find("hidepid=noaccess") != std::string_view::npos))
        hidepid_ = true;
}

void OwnerResolver::note_once(const std::string& text) {
  if (std::find(said_.begin(), said_.end(), text) != said_.end()) return;
  said_.push_back(text);
  notes_.push_back(text);
}

std::vector<std::string> OwnerResolver::take_notes() {
  return std::exchange(notes_, {});
}

std::optional<Owner> OwnerResolver::resolve(uint32_t pid) {
  const std::string dir = fmt::format("{}/{}", o_.proc_root, pid);
  auto unknown = [&] {
    note_once(
        "/proc is mounted with hidepid: owners of other users' processes are unknown (run "
        "gpudoctor as root or in the proc mount's gid= group)");
    Owner u;
    u.id = fmt::format("{}", pid);
    u.source = "hidden";
    return u;
  };
  int err = 0;
  ++reads_;
  const auto stat = read_small(dir + "/stat", err);
  if (!stat) {
    if (err == EACCES || err == EPERM || (err == ENOENT && hidepid_)) return unknown();
    cache_.erase(pid);
    return std::nullopt;  // exited between listing and reading
  }
  const uint64_t start = start_time_from_stat(*stat).value_or(0);
  if (auto it = cache_.find(pid); it != cache_.end() && it->second.start == start) {
    it->second.seen = true;
    return it->second.owner;
  }
  ++reads_;
  const auto cgroup = read_small(dir + "/cgroup", err);
  if (!cgroup && (err == EACCES || err == EPERM)) return unknown();
  ++reads_;
  const auto status = read_small(dir + "/status", err);
  if (!cgroup || !status) {
    cache_.erase(pid);
    return std::nullopt;
  }
  Owner o;
  if (auto c = owner_from_cgroup(*cgroup)) {
    o = std::move(*c);
  } else {
    o.kind = OwnerKind::kProcess;
    o.id = fmt::format("{}", pid);
    o.source = "proc";
  }
  if (!o.note.empty()) note_once(o.note);
  if (auto uid = uid_from_status(*status)) {
    o.uid = *uid;
    auto name = o_.users ? o_.users(*uid) : std::nullopt;
    o.user = name ? *name : fmt::format("uid {}", *uid);
  }
  cache_[pid] = Cached{start, o, true};
  return o;
}

std::vector<Owner> OwnerResolver::allocation_owners(const DeviceInfo& d) {
  std::vector<Owner> out;
  if (o_.job_mapping_dir.empty()) return out;
  DIR* dir = opendir(o_.job_mapping_dir.c_str());
  if (!dir) {
    note_once(fmt::format("job mapping directory {} cannot be read: owners from processes only",
                          o_.job_mapping_dir));
    return out;
  }
  const std::string index = fmt::format("{}", d.index);
  std::vector<std::string> names;
  while (dirent* e = readdir(dir)) {
    const std::string_view n = e->d_name;
    // "<index>", "<index>.<gpu-instance>" (dcgm-exporter), "<UUID>" (jobstats).
    if (n == index ||
        (starts_with(n, index + ".") && all_of(n.substr(index.size() + 1), is_digit)) ||
        (!d.uuid.empty() && n == d.uuid))
      names.emplace_back(n);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    int err = 0;
    const auto text = read_small(o_.job_mapping_dir + "/" + n, err);
    if (!text) continue;
    auto o = owner_from_allocation(*text, o_.users);
    if (!o) continue;
    if (!o->note.empty()) note_once(o->note);
    const bool dup = std::any_of(out.begin(), out.end(),
                                 [&](const Owner& x) { return owner_key(x) == owner_key(*o); });
    if (!dup) out.push_back(std::move(*o));
  }
  return out;
}

void OwnerResolver::add_kubelet_owners(Frame& frame, const std::vector<DeviceInfo>& devices,
                                       const std::vector<bool>& skip) {
  if (o_.kubelet_socket.empty()) return;
  if (!kubelet_) {
    // No kubelet here (yet): one stat() every kubelet_refresh, and nothing said.
    const auto now = std::chrono::steady_clock::now();
    if (now < next_kubelet_look_) return;
    next_kubelet_look_ = now + o_.kubelet_refresh;
    struct stat st {};
    if (::stat(o_.kubelet_socket.c_str(), &st) != 0 && errno != EACCES) return;
    kubelet_ = std::make_unique<PodResourcesWatcher>(
        PodResourcesWatcher::Options{o_.kubelet_socket, o_.kubelet_deadline, o_.kubelet_refresh});
  }
  const auto snap = kubelet_->latest();
  for (const auto& n : kubelet_->take_notes()) note_once(n);
  if (snap->generation != kubelet_generation_) {
    kubelet_owners_.set_devices(snap->devices, devices, o_.mig_parent);
    kubelet_generation_ = snap->generation;
  }
  kubelet_owners_.merge(frame, skip);
}

void OwnerResolver::annotate(Frame& frame, const std::vector<DeviceInfo>& devices) {
  for (auto& [pid, c] : cache_) c.seen = false;
  std::vector<bool> skip(frame.devices.size(), false);
  for (size_t i = 0; i < frame.devices.size(); ++i) {
    DeviceSample& d = frame.devices[i];
    if (!d.owners.empty()) {
      skip[i] = true;
      continue;
    }
    std::set<std::string> keys;
    for (auto& p : d.processes) {
      if (!o_.resolve_processes) break;
      p.owner = resolve(p.pid);
      if (p.owner && keys.insert(owner_key(*p.owner)).second) d.owners.push_back(*p.owner);
    }
  }
  add_kubelet_owners(frame, devices, skip);
  for (size_t i = 0; i < frame.devices.size(); ++i) {
    DeviceSample& d = frame.devices[i];
    if (skip[i]) continue;
    if (i < devices.size())
      for (auto& a : allocation_owners(devices[i])) {
        // A job already known from its processes' cgroups is not listed twice.
        const bool known = std::any_of(d.owners.begin(), d.owners.end(), [&](const Owner& x) {
          return x.kind == OwnerKind::kSlurmJob && x.id == a.id;
        });
        if (!known) d.owners.push_back(std::move(a));
      }
  }
  std::erase_if(cache_, [](const auto& kv) { return !kv.second.seen; });
}

}  // namespace gpudoctor::host
