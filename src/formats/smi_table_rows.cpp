#include "formats/smi_table_rows.hpp"

#include <algorithm>
#include <limits>

#include "formats/log_units.hpp"
#include "text/text.hpp"

namespace gpudoctor::smi_table {

using text::iequals;

namespace {

using text::contains_ci;

// The ASCII character nvitop --ascii prints for a box-drawing or block character, or 0.
char ascii_of(unsigned cp) {
  switch (cp) {
    case 0x2550:  // ═
      return '=';
    case 0x2500:  // ─
    case 0x2574:  // ╴
      return '-';
    case 0x2552:  // ╒
    case 0x2564:  // ╤
    case 0x2555:  // ╕
    case 0x256A:  // ╪
    case 0x2558:  // ╘
    case 0x2567:  // ╧
    case 0x255B:  // ╛
    case 0x250C:  // ┌
    case 0x252C:  // ┬
    case 0x2510:  // ┐
    case 0x253C:  // ┼
    case 0x2514:  // └
    case 0x2534:  // ┴
    case 0x2518:  // ┘
      return '+';
    case 0x2502:  // │
    case 0x255E:  // ╞
    case 0x2561:  // ╡
    case 0x251C:  // ├
    case 0x2524:  // ┤
    case 0x2591:  // ░
      return '|';
    case 0x25B2:  // ▲
      return '^';
    case 0x25BC:  // ▼
      return 'v';
    default:
      return cp >= 0x2588 && cp <= 0x258F ? '|' : '\0';  // █ ▉ ▊ ▋ ▌ ▍ ▎ ▏
  }
}

// nvitop writes these where a process' command line cannot be read.
bool is_nvitop_marker(std::string_view command) {
  return iequals(command, "No Such Process") || iequals(command, "No Permissions") ||
         iequals(command, "Zombie Process") || iequals(command, "N/A");
}

ProcessRow nvitop_row(size_t numeric_columns, SnapProcess& p,
                      const std::vector<std::string_view>& tokens) {
  // "0   48213 C   alice 20.93GiB  97    41 100.3   2.1   1:02:17  python train.py ..", the
  // GPU "1:0" for a MIG device (its GPU is 1), TIME "3.2 days" in two words.
  if (tokens.size() < 5) return ProcessRow::kBad;
  std::string_view gpu = tokens[0];
  if (const size_t colon = gpu.find(':'); colon != std::string_view::npos) {
    if (!is_mig_device_index(gpu)) return ProcessRow::kBad;
    gpu = gpu.substr(0, colon);
  }
  const auto g = text::parse_int(gpu);
  const auto pid = text::parse_int(tokens[1]);
  if (!g || *g < 0 || *g > std::numeric_limits<int32_t>::max() || !pid || *pid <= 0 ||
      *pid > std::numeric_limits<uint32_t>::max() || !is_process_type(tokens[2]))
    return ProcessRow::kBad;
  p.gpu = static_cast<unsigned>(*g);
  p.pid = static_cast<uint32_t>(*pid);
  p.compute = tokens[2].find('C') != std::string_view::npos;
  p.memory_mib = memory_mib(tokens[4]);
  size_t at = 5 + numeric_columns;  // TIME
  if (at < tokens.size()) {
    ++at;
    if (at < tokens.size() && (iequals(tokens[at], "days") || iequals(tokens[at], "day"))) ++at;
  }
  if (at < tokens.size()) {
    const char* b = tokens[at].data();
    const std::string_view command(
        b, static_cast<size_t>(tokens.back().data() + tokens.back().size() - b));
    if (!is_nvitop_marker(command)) p.name = std::string(command);
  }
  return ProcessRow::kProcess;
}

}  // namespace

std::string_view tool_name(Tool t) {
  return t == Tool::kNvitop ? "nvitop" : "nvidia-smi";
}

std::string_view as_ascii(std::string_view line, std::string& buf) {
  if (line.find('\xE2') == std::string_view::npos && line.find('\x1b') == std::string_view::npos)
    return line;
  buf.clear();
  buf.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {  // "\x1b[1;32m"
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
      continue;
    }
    if (c == '\xE2' && i + 2 < line.size()) {
      const auto b1 = static_cast<unsigned char>(line[i + 1]);
      const auto b2 = static_cast<unsigned char>(line[i + 2]);
      if (b1 >= 0x94 && b1 <= 0x96 && (b2 & 0xC0) == 0x80) {
        const unsigned cp = 0x2000U | ((b1 & 0x3FU) << 6) | (b2 & 0x3FU);
        if (const char a = ascii_of(cp)) {
          buf.push_back(a);
          i += 2;
          continue;
        }
      }
    }
    buf.push_back(c);
  }
  return buf;
}

std::optional<double> memory_mib(std::string_view v) {
  const auto nu = text::parse_number_with_unit(text::trim(v));
  if (!nu) return std::nullopt;
  const auto k = csv::unit_factor(Unit::kMebibyte, nu->unit);  // the one unit table (log_units)
  if (!k) return std::nullopt;
  return text::scaled(nu->value, *k);
}

bool is_process_type(std::string_view t) {
  if (t.empty() || t.size() > 5) return false;
  bool letter = false;
  for (const char c : t) {
    if (c == 'C' || c == 'G' || c == 'M') {
      if (letter) return false;
      letter = true;
    } else if (c == '+') {
      if (!letter) return false;
      letter = false;
    } else {
      return false;
    }
  }
  return letter;
}

std::string_view value_after(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = text::trim_left(line.substr(at + key.size()));
  size_t e = 0;
  while (e < rest.size() && !text::is_space(rest[e]) && rest[e] != '|') ++e;
  return rest.substr(0, e);
}

void row_cells(std::string_view t, std::vector<std::string_view>& out) {
  out.clear();
  if (t.empty() || t.front() != '|') return;
  t.remove_prefix(1);
  if (!t.empty() && t.back() == '|') t.remove_suffix(1);
  text::split(t, '|', out);
}

bool is_inner_rule(std::string_view t) {
  return t.size() > 2 && t[0] == '|' && t[1] == '-' &&
         t.find_first_not_of("-+|", 1) == std::string_view::npos;
}

bool is_mig_device_index(std::string_view token) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size()) return false;
  const auto digits = [](std::string_view s) {
    return s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return digits(token.substr(0, colon)) && digits(token.substr(colon + 1));
}

ProcessRow parse_process_row(Tool tool, std::string_view inner, size_t numeric_columns,
                             SnapProcess& p, std::vector<std::string_view>& tokens) {
  inner = text::trim(inner);
  if (inner.empty() || text::istarts_with(inner, "No running processes")) return ProcessRow::kNone;
  text::split_ws(inner, tokens);
  if (tool == Tool::kNvitop) return nvitop_row(numeric_columns, p, tokens);
  // "0   N/A  N/A   3375095      C   /usr/bin/python   18430MiB" (GI/CI) or
  // "0      4910      C   /usr/bin/xmr-stak      2203MiB" (R440 and older).
  size_t type_at = 0;
  if (tokens.size() >= 6 && is_process_type(tokens[4]))
    type_at = 4;
  else if (tokens.size() >= 4 && is_process_type(tokens[2]))
    type_at = 2;
  const auto gpu = text::parse_int(tokens[0]);
  if (contains_ci(inner, "Not Supported") && type_at == 0) {
    if (!gpu || *gpu < 0) return ProcessRow::kNone;
    p.gpu = static_cast<unsigned>(*gpu);
    return ProcessRow::kNotSupported;
  }
  int64_t pid = 0;
  if (type_at > 0)
    if (const auto v = text::parse_int(tokens[type_at - 1])) pid = *v;
  if (!gpu || *gpu < 0 || pid <= 0 || pid > std::numeric_limits<uint32_t>::max())
    return ProcessRow::kBad;
  p.gpu = static_cast<unsigned>(*gpu);
  p.pid = static_cast<uint32_t>(pid);
  const std::string_view type = tokens[type_at];
  const std::string_view mem = tokens.back();
  if (tokens.size() > type_at + 2) {
    const char* b = tokens[type_at + 1].data();
    const char* e = tokens[tokens.size() - 2].data() + tokens[tokens.size() - 2].size();
    p.name = std::string(b, static_cast<size_t>(e - b));
  }
  if (text::parse_number_with_unit(mem)) {
    p.memory_mib = memory_mib(mem);
  } else if (tokens.size() == type_at + 2 && !iequals(mem, "N/A")) {
    p.name = std::string(mem);  // a name and no memory column
  }
  // Compute work: type C, or C+G (Windows lists desktop programs, browsers and games so) only
  // with GPU memory of its own beyond what a desktop client holds.
  p.compute = type == "C" || (type.find('C') != std::string_view::npos &&
                              p.memory_mib.value_or(0) >= kDesktopClientMemoryMib);
  return ProcessRow::kProcess;
}

std::optional<size_t> nvitop_numeric_columns(std::string_view header,
                                             std::vector<std::string_view>& tokens) {
  text::split_ws(header, tokens);
  const auto mem = std::find(tokens.begin(), tokens.end(), "GPU-MEM");
  const auto time = std::find(tokens.begin(), tokens.end(), "TIME");
  if (mem == tokens.end() || time == tokens.end() || time < mem) return std::nullopt;
  return static_cast<size_t>(time - mem - 1);
}

}  // namespace gpudoctor::smi_table
