#include "formats/column_groups.hpp"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "text/text.hpp"

namespace gpudoctor::csv {

namespace {

using text::contains_ci;

bool is_quantity(Role r) {
  return r == Role::kField || r == Role::kReason;
}

// A group's GPU: "GPU [#1]: Intel UHD Graphics 770: Enhanced" -> key "GPU [#1]", number 1, name
// "Intel UHD Graphics 770"; a group without "[#N]" is its own key and name.
struct GroupId {
  std::string key, name;
  int number = -1;
};
GroupId group_id(std::string_view g) {
  GroupId id;
  const size_t hash = g.find("[#");
  const size_t close = hash == std::string_view::npos ? hash : g.find(']', hash);
  if (close == std::string_view::npos) {
    id.key = id.name = std::string(text::trim(g));
    return id;
  }
  id.key = std::string(g.substr(0, close + 1));
  if (const auto n = text::parse_int(g.substr(hash + 2, close - hash - 2));
      n && *n >= 0 && *n < 100000)
    id.number = static_cast<int>(*n);
  std::string_view rest = g.substr(close + 1);
  if (!rest.empty() && rest.front() == ':') rest.remove_prefix(1);
  rest = text::trim(rest);
  id.name = std::string(text::trim(rest.substr(0, rest.find(": "))));
  if (!id.name.empty() && id.name.back() == ':') id.name.pop_back();
  return id;
}

}  // namespace

SideBySide split_side_by_side(std::vector<Column>& cols, const std::vector<std::string>& groups) {
  SideBySide out;
  for (const auto& c : cols) {
    if (c.gpu >= 0 || c.bare) return out;
    if (c.m.role == Role::kGpu || c.m.role == Role::kUuid || c.m.role == Role::kBusId) return out;
  }
  auto numbered = [](Role r) { return is_quantity(r) || r == Role::kName || r == Role::kSerial; };
  if (!groups.empty()) {
    std::vector<GroupId> gpus;  // in order of appearance
    std::vector<int> of_col(cols.size(), -1);
    for (size_t i = 0; i < cols.size(); ++i) {
      if (!is_quantity(cols[i].m.role)) continue;
      GroupId id = group_id(groups[i]);
      auto it =
          std::find_if(gpus.begin(), gpus.end(), [&](const GroupId& g) { return g.key == id.key; });
      if (it == gpus.end()) {
        gpus.push_back(std::move(id));
        it = gpus.end() - 1;
      }
      of_col[i] = static_cast<int>(it - gpus.begin());
    }
    // Only groups that name a GPU are GPUs, where any does (not "Memory Timings").
    std::vector<bool> is_gpu(gpus.size(), true);
    const bool any_gpu = std::any_of(gpus.begin(), gpus.end(),
                                     [](const GroupId& g) { return contains_ci(g.key, "gpu"); });
    for (size_t k = 0; k < gpus.size(); ++k)
      is_gpu[k] = !any_gpu || contains_ci(gpus[k].key, "gpu");
    std::vector<int> number(gpus.size(), -1);
    std::set<int> seen;
    bool own_numbers = true;
    for (size_t k = 0; k < gpus.size(); ++k)
      if (is_gpu[k])
        own_numbers = own_numbers && gpus[k].number >= 0 && seen.insert(gpus[k].number).second;
    int next = 0;
    std::vector<std::string> parts;
    for (size_t k = 0; k < gpus.size(); ++k) {
      if (!is_gpu[k]) continue;
      number[k] = own_numbers ? gpus[k].number : next++;
      // (Named only by a group that says it is a GPU: not by "mean" under a summary.)
      if (!gpus[k].name.empty() && contains_ci(gpus[k].key, "gpu"))
        out.names[number[k]] = gpus[k].name;
      parts.push_back(gpus[k].name.empty() || gpus[k].name == gpus[k].key
                          ? fmt::format("GPU {} = {}", number[k], gpus[k].key)
                          : fmt::format("GPU {} = {} ({})", number[k], gpus[k].key, gpus[k].name));
    }
    for (size_t i = 0; i < cols.size(); ++i) {
      if (of_col[i] < 0) continue;
      const auto k = static_cast<size_t>(of_col[i]);
      if (is_gpu[k]) {
        cols[i].gpu = number[k];
      } else {
        out.ignored.push_back(
            fmt::format("column {} ignored: its group ({}) is not a GPU", cols[i].name, groups[i]));
        cols[i].m.role = Role::kIgnore;
      }
    }
    out.notes.push_back(fmt::format("the last line names each column's group: {} GPU(s), {}",
                                    parts.size(), fmt::join(parts, ", ")));
    return out;
  }
  std::map<std::string, int> count;
  bool repeats = false;
  for (const auto& c : cols)
    if (numbered(c.m.role)) repeats = ++count[text::lower(c.name)] > 1 || repeats;
  if (!repeats) return out;
  count.clear();
  int most = 0;
  for (auto& c : cols) {
    if (!numbered(c.m.role)) continue;
    c.gpu = count[text::lower(c.name)]++;
    most = std::max(most, c.gpu + 1);
  }
  out.notes.push_back(fmt::format(
      "column names repeat without a GPU number: read as {} GPUs side by side, the n-th column "
      "of a name being GPU n (name the columns with --map where that is wrong)",
      most));
  return out;
}

}  // namespace gpudoctor::csv
