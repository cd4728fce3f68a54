// GPU model lookups. See gpu_models.hpp; the table itself is core/gpu_models.tsv (read by
// core/gpu_model_table.cpp), and docs/gpu-models.md says where its figures come from.
//
// Matching a name: both the name and each model's names (its NVML name, its aliases, and those
// without a leading family word: "3070 Ti" for "RTX 3070 Ti") are cut into lower-case tokens with
// the vendor words dropped; a model's name matches when its tokens appear consecutively in the name
// and are not followed by a token that makes it another board ("Ti", "SUPER", "Laptop", "12GB").
// The longest match wins. A name that says laptop ("Laptop GPU", "Mobile", "with Max-Q Design")
// matches laptop rows only, so a laptop is never taken for the desktop card of the same number.
#include "core/gpu_models.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/gpu_model_table.hpp"

namespace gpudoctor {
namespace {

using Tokens = std::vector<std::string>;

// Vendor and brand words that say nothing about which board it is.
constexpr std::array<std::string_view, 3> kNoiseWords{"nvidia", "tesla", "geforce"};

// A family word a person may leave out when a model number follows ("3070 Ti", "P4000").
constexpr std::array<std::string_view, 4> kFamilyWords{"rtx", "gtx", "gt", "quadro"};

// A token right after a matched name that makes it a different board: "RTX 3090 Ti",
// "RTX 4090 D", "RTX 4090 Laptop GPU", "GTX 1650 Max-Q", "H200 NVL", "H100 SXM5 94GB"
// (a name must then spell the size out itself).
constexpr std::array<std::string_view, 24> kVariantWords{
    "ti",   "super", "d",    "laptop", "mobile", "max",  "maxq", "nvl",
    "ada",  "pcie",  "sxm",  "sxm2",   "sxm3",   "sxm4", "sxm5", "sxm6",
    "hbm2", "hbm2e", "hbm3", "hbm3e",  "oem",    "with", "sff",  "blackwell",
};

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool has_digit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& words, std::string_view w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

// "NVIDIA A100-SXM4-80GB" -> {"a100", "sxm4", "80gb"}: lower case, anything but letters, digits
// and dots separates tokens, vendor words dropped, "80 GB" joined to "80gb", "Max-Q" to "maxq".
Tokens tokens_of(std::string_view name) {
  Tokens out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    if (cur == "gb" && !out.empty() && is_digits(out.back())) {
      out.back() += cur;
    } else if (cur == "q" && !out.empty() && out.back() == "max") {
      out.back() = "maxq";  // "with Max-Q Design" is read as "maxq" alone
      if (out.size() > 1 && out[out.size() - 2] == "with") out.erase(out.end() - 2);
    } else if (cur == "design" && !out.empty() && out.back() == "maxq") {
    } else if (!contains(kNoiseWords, cur)) {
      out.push_back(cur);
    }
    cur.clear();
  };
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '.') {
      cur.push_back(static_cast<char>(std::tolower(u)));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

bool is_size_token(const std::string& t) {
  return t.size() > 2 && t.ends_with("gb") &&
         is_digits(std::string_view(t).substr(0, t.size() - 2));
}

// "Laptop GPU", "Mobile", "Max-Q" (the laptops' "with Max-Q Design"): a laptop's name. The RTX PRO
// 6000 Blackwell Max-Q Workstation Edition is no laptop.
bool says_laptop(const Tokens& name) {
  const auto has = [&](std::string_view w) {
    return std::find(name.begin(), name.end(), w) != name.end();
  };
  return has("laptop") || has("mobile") || (has("maxq") && !has("workstation") && !has("pro"));
}

std::string joined(const Tokens& t) {
  return fmt::format("{}", fmt::join(t, " "));
}

// How well `candidate` names the board called `name`: 0 for no match, otherwise the candidate's
// length in characters (longer is more specific). A candidate matches when its tokens appear
// consecutively in the name and are not followed by a token that makes it another board.
std::size_t match_score(const Tokens& name, const Tokens& candidate) {
  if (candidate.empty() || candidate.size() > name.size()) return 0;
  std::size_t chars = 0;
  for (const auto& t : candidate) chars += t.size() + 1;
  for (std::size_t i = 0; i + candidate.size() <= name.size(); ++i) {
    bool same = true;
    for (std::size_t j = 0; j < candidate.size() && same; ++j) same = name[i + j] == candidate[j];
    if (!same) continue;
    const std::size_t next = i + candidate.size();
    if (next < name.size() && (contains(kVariantWords, name[next]) || is_size_token(name[next])))
      continue;
    return chars;
  }
  return 0;
}

struct Candidate {
  const GpuModel* model;
  Tokens tokens;
};

// Every name each model goes by, as tokens, built once beside the table.
const std::vector<Candidate>& candidates() {
  static const std::vector<Candidate> all = [] {
    std::vector<Candidate> out;
    for (const auto& m : detail::gpu_model_table().models) {
      std::vector<std::string_view> names{m.nvml_name};
      for (std::size_t pos = 0; pos <= m.aliases.size();) {
        const std::size_t semi = std::min(m.aliases.find(';', pos), m.aliases.size());
        const std::string_view alias = m.aliases.substr(pos, semi - pos);
        if (!alias.empty()) names.push_back(alias);
        pos = semi + 1;
      }
      for (const auto name : names) {
        Tokens t = tokens_of(name);
        if (t.empty()) continue;
        // Without the family word: "3070 Ti", "P4000", "RTX 8000" (from "Quadro RTX 8000").
        if (t.size() > 1 && contains(kFamilyWords, t.front()) &&
            std::any_of(t.begin() + 1, t.end(), [](const std::string& w) { return has_digit(w); }))
          out.push_back({&m, Tokens(t.begin() + 1, t.end())});
        out.push_back({&m, std::move(t)});
      }
    }
    return out;
  }();
  return all;
}

const GpuModel* find_by_key(std::string_view key) {
  for (const auto& m : detail::gpu_model_table().models)
    if (m.key == key) return &m;
  return nullptr;
}

// Edits from one text to the other: insertions, deletions, substitutions and swaps of two
// neighbouring characters ("3007" is one edit from "3070").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string_view gpu_kind_name(GpuKind kind) {
  switch (kind) {
    case GpuKind::kDatacenter:
      return "datacenter";
    case GpuKind::kWorkstation:
      return "workstation";
    case GpuKind::kConsumer:
      return "consumer";
    case GpuKind::kLaptop:
      return "laptop";
  }
  return "datacenter";
}

std::span<const GpuModel> gpu_models() {
  return detail::gpu_model_table().models;
}

std::span<const std::string> gpu_model_table_problems() {
  return detail::gpu_model_table().problems;
}

std::optional<GpuModel> gpu_model_by_key(std::string_view key) {
  if (const GpuModel* m = find_by_key(key)) return *m;
  return std::nullopt;
}

Result<GpuModel> find_gpu_model(std::string_view text) {
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string want = lower(text);
  std::vector<std::string_view> prefixed;
  for (const auto& m : gpu_models()) {
    if (m.key == want) return m;
    if (!want.empty() && m.key.starts_with(want)) prefixed.push_back(m.key);
  }
  if (prefixed.size() == 1) return *find_by_key(prefixed.front());
  if (!prefixed.empty())
    return usage_error(
        fmt::format("GPU model '{}' is ambiguous: {}", text, fmt::join(prefixed, ", ")));
  // Close keys: those sharing the longest leading part with the text (at least one character).
  std::size_t best = 0;
  std::vector<std::string_view> close;
  for (const auto& m : gpu_models()) {
    std::size_t k = 0;
    while (k < want.size() && k < m.key.size() && want[k] == m.key[k]) ++k;
    if (k == 0 || k < best) continue;
    if (k > best) close.clear();
    best = k;
    close.push_back(m.key);
  }
  if (close.empty())
    return usage_error(
        fmt::format("unknown GPU model '{}' (`gpudoctor sim --list` lists them)", text));
  return usage_error(
      fmt::format("unknown GPU model '{}'; close: {}", text, fmt::join(close, ", ")));
}

namespace {

const GpuModel* model_named(std::string_view name) {
  const Tokens tokens = tokens_of(name);
  if (tokens.empty()) return nullptr;
  const bool laptop = says_laptop(tokens);
  const GpuModel* best = nullptr;
  std::size_t best_score = 0;
  for (const auto& c : candidates()) {
    if (laptop && c.model->kind != GpuKind::kLaptop) continue;
    const std::size_t score = match_score(tokens, c.tokens);
    if (score > best_score) {
      best = c.model;
      best_score = score;
    }
  }
  return best;
}

}  // namespace

std::optional<GpuModel> gpu_model_by_name(std::string_view name) {
  // The last name this thread asked for and its model: a node's GPUs share a name, and the
  // diagnosis asks for it per GPU, again at each frame of the live views (matching the words
  // against every model's was a twelfth of a frame).
  thread_local std::string last_name;
  thread_local const GpuModel* last_model = nullptr;
  thread_local bool asked = false;
  if (!asked || name != last_name) {
    last_model = model_named(name);
    last_name.assign(name);
    asked = true;
  }
  if (last_model == nullptr) return std::nullopt;
  return *last_model;
}

std::vector<std::string_view> nearest_gpu_model_names(std::string_view name, std::size_t most) {
  const Tokens want = tokens_of(name);
  if (want.empty() || most == 0) return {};
  const std::string text = joined(want);
  // Nearest first: a model whose name holds every word given ("A100" -> the A100 boards) by how
  // many characters it adds; else the edit distance, when small for the name's length.
  struct Near {
    std::size_t distance;
    const GpuModel* model;
  };
  std::vector<Near> near;
  const std::size_t limit = std::max<std::size_t>(2, text.size() / 4);
  for (const auto& c : candidates()) {
    const std::string cand = joined(c.tokens);
    const bool holds = std::all_of(want.begin(), want.end(), [&](const std::string& w) {
      return std::find(c.tokens.begin(), c.tokens.end(), w) != c.tokens.end();
    });
    std::size_t d = 0;
    if (holds) {
      d = cand.size() > text.size() ? cand.size() - text.size() : 0;
    } else {
      d = edit_distance(text, cand);
      if (d > limit) continue;
      d += 100;  // after every name that holds the words given
    }
    auto it =
        std::find_if(near.begin(), near.end(), [&](const Near& n) { return n.model == c.model; });
    if (it == near.end())
      near.push_back({d, c.model});
    else
      it->distance = std::min(it->distance, d);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const Near& a, const Near& b) { return a.distance < b.distance; });
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < near.size() && i < most; ++i) out.push_back(near[i].model->nvml_name);
  return out;
}

std::string gpu_name_suggestion(std::string_view name) {
  const auto near = nearest_gpu_model_names(name, 3);
  if (near.empty()) return {};
  if (near.size() == 1) return fmt::format("did you mean {}?", near.front());
  return fmt::format("did you mean {} or {}?", fmt::join(near.begin(), near.end() - 1, ", "),
                     near.back());
}

std::string gpu_name_not_found(std::string_view name) {
  const std::string hint = gpu_name_suggestion(name);
  return fmt::format("not in the model table{}{} (`gpudoctor models` lists it)",
                     hint.empty() ? "" : "; ", hint);
}

std::string gpu_name_for_column(std::string_view name, std::size_t width) {
  if (name.size() <= width) return std::string(name);
  std::string out;
  std::size_t pos = 0;
  while (pos < name.size()) {
    const std::size_t space = std::min(name.find(' ', pos), name.size());
    const std::string_view word = name.substr(pos, space - pos);
    std::string low(word);
    for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!word.empty() && !contains(kNoiseWords, low)) {
      if (!out.empty()) out += ' ';
      out += word;
    }
    pos = space + 1;
  }
  if (out.empty()) out = std::string(name);
  if (out.size() <= width) return out;
  if (width < 5) return out.substr(0, width);
  const std::size_t keep = width - 3;
  const std::size_t head = (keep + 1) / 2;
  return out.substr(0, head) + "..." + out.substr(out.size() - (keep - head));
}

}  // namespace gpudoctor
