#include "core/owner.hpp"

#include <algorithm>
#include <array>

namespace gpudoctor {
namespace {

constexpr std::array<std::string_view, 5> kCodes = {"process", "systemd_unit", "container",
                                                    "k8s_pod", "slurm_job"};

}  // namespace

std::string_view owner_kind_code(OwnerKind k) {
  return kCodes[static_cast<size_t>(k)];
}

std::optional<OwnerKind> owner_kind_from_code(std::string_view code) {
  for (size_t i = 0; i < kCodes.size(); ++i)
    if (kCodes[i] == code) return static_cast<OwnerKind>(i);
  return std::nullopt;
}

std::string owner_label(const Owner& o) {
  std::string s;
  switch (o.kind) {
    case OwnerKind::kSlurmJob:
      s = "job " + o.id + (o.step.empty() ? "" : "." + o.step);
      break;
    case OwnerKind::kK8sPod:
      if (!o.pod.empty())
        s = "pod " + (o.pod_namespace.empty() ? "" : o.pod_namespace + "/") + o.pod;
      else
        s = "pod " + o.id.substr(0, 8);
      break;
    case OwnerKind::kContainer:
      s = "container " + (o.container.empty() ? o.id.substr(0, 12) : o.container);
      break;
    case OwnerKind::kSystemdUnit:
      s = "unit " + o.id;
      break;
    case OwnerKind::kProcess:
      s = o.id.empty() ? "process" : "pid " + o.id;  // a process whose PID was not kept
      break;
  }
  if (!o.user.empty()) s += " (" + o.user + ")";
  return s;
}

nlohmann::json owner_to_json(const Owner& o) {
  nlohmann::json j = {{"kind", owner_kind_code(o.kind)}, {"id", o.id}, {"label", owner_label(o)}};
  auto opt = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  opt("step", o.step);
  opt("pod", o.pod);
  opt("namespace", o.pod_namespace);
  opt("container", o.container);
  opt("runtime", o.runtime);
  opt("user", o.user);
  if (o.uid) j["uid"] = *o.uid;
  opt("source", o.source);
  opt("note", o.note);
  return j;
}

std::optional<Owner> owner_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  auto str = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const auto kind = owner_kind_from_code(str("kind"));
  if (!kind || str("id").empty()) return std::nullopt;
  Owner o;
  o.kind = *kind;
  o.id = str("id");
  o.step = str("step");
  o.pod = str("pod");
  o.pod_namespace = str("namespace");
  o.container = str("container");
  o.runtime = str("runtime");
  o.user = str("user");
  if (const auto it = j.find("uid"); it != j.end() && it->is_number_unsigned())
    o.uid = static_cast<uint32_t>(std::min<uint64_t>(it->get<uint64_t>(), UINT32_MAX));
  o.source = str("source");
  o.note = str("note");
  return o;
}

std::string owner_key(const Owner& o) {
  std::string k(owner_kind_code(o.kind));
  k += ':';
  k += o.id;
  if (o.kind == OwnerKind::kSlurmJob) k += "." + o.step;
  if (o.kind == OwnerKind::kK8sPod) k += "/" + o.container;
  return k;
}

}  // namespace gpudoctor
