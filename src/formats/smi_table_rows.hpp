// What one line of an nvidia-smi style table says, for the table reader (formats/smi_table): the
// cells of the GPU table's rows, the date line above a table, the process table's rows, for each
// tool that prints such tables:
//   - nvidia-smi (plain `nvidia-smi`, `nvidia-smi -l N` / `-lms N`): ASCII borders, processes as
//     "GPU [GI CI] PID Type Process-name GPU-Memory";
//   - nvitop (`nvitop -1` / `nvitop --once`, also `--ascii`): the same GPU table drawn in
//     box-drawing characters ("│", "╞═╪═╡", "├─┼─┤", "╘═╧═╛"), GPU names without "NVIDIA " and
//     cut on the left ("..orce GTX 1080 Ti"), an "MIG M." cell in the first row, MEM / UTL bars
//     beside the table on wide terminals, MIG devices as "1:0" rows, host bars ("[ CPU: ... ]")
//     between the tables, and processes as "GPU PID Type USER GPU-MEM %SM %GMBW %CPU %MEM TIME
//     COMMAND".
// Box drawing is read as nvitop --ascii prints it (as_ascii), so both of nvitop's outputs are read
// by one set of rules.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpudoctor::smi_table {

enum class Tool : uint8_t { kNvidiaSmi, kNvitop };
std::string_view tool_name(Tool t);

// What the GPU table shows, as the column catalogue names it (the nvidia-smi query names): the
// table reader (formats/smi_table) writes each GPU's cells under these names for the catalogue's
// reader (read_generic_csv), which reads their units, markers of no value and times.
constexpr size_t kTime = 0, kIndex = 1, kName = 2, kBusId = 3, kPersistence = 4, kMig = 5, kFan = 6,
                 kTemp = 7, kPerf = 8, kPwr = 9, kCap = 10, kMemUsed = 11, kMemTotal = 12,
                 kUtil = 13, kColumns = 14;
constexpr std::array<std::string_view, kColumns> kColumnName{"timestamp",
                                                             "index",
                                                             "name",
                                                             "pci.bus_id",
                                                             "persistence_mode",
                                                             "mig.mode.current",
                                                             "fan.speed [%]",
                                                             "temperature.gpu",
                                                             "pstate",
                                                             "power.draw [W]",
                                                             "enforced.power.limit [W]",
                                                             "memory.used [MiB]",
                                                             "memory.total [MiB]",
                                                             "utilization.gpu [%]"};

// A C+G process (Windows lists desktop programs so) with less GPU memory than this is a desktop
// client, not compute work.
inline constexpr double kDesktopClientMemoryMib = 1024;

struct SnapProcess {
  unsigned gpu = 0;
  uint32_t pid = 0;
  bool compute = false;
  std::string name;
  std::optional<double> memory_mib;
  size_t line = 0;
};

// The line as nvitop --ascii prints it: box drawing as '+', '|', '=', '-', bar blocks as '|',
// ANSI colour codes removed. Returns line itself when there is nothing to change, else a view of
// buf.
std::string_view as_ascii(std::string_view line, std::string& buf);

// A memory size in MiB ("4MiB", "18.75GiB", "512KiB", "0B").
std::optional<double> memory_mib(std::string_view v);
// "C", "G", "C+G", "M", "M+C": the process table's Type column.
bool is_process_type(std::string_view t);
// The text after "KEY:" up to the next run of spaces ("Driver Version: 535.104.05   CUDA ...").
std::string_view value_after(std::string_view line, std::string_view key);
// The cells of a table row "| a | b | c |" (without the outer bars; kept untrimmed).
void row_cells(std::string_view t, std::vector<std::string_view>& out);
// A rule inside a table: "|----+----|" (nvitop's "├──┼──┤").
bool is_inner_rule(std::string_view t);
// "0:1": a MIG device's row of nvitop's GPU table (its GPU and instance).
bool is_mig_device_index(std::string_view token);

enum class ProcessRow : uint8_t {
  kNone,          // blank, or "No running processes found"
  kProcess,       // read into the process
  kNotSupported,  // nvidia-smi: the GPU's process list is "Not Supported" (gpu is set)
  kBad,
};
// One row of the process table, its text between the outer bars. nvitop: numeric_columns is the
// number of columns between GPU-MEM and TIME its header names (%SM %GMBW %CPU %MEM: 4).
ProcessRow parse_process_row(Tool tool, std::string_view inner, size_t numeric_columns,
                             SnapProcess& p, std::vector<std::string_view>& tokens);
// nvitop's process header "GPU PID USER GPU-MEM %SM %GMBW %CPU %MEM TIME COMMAND": the number of
// columns between GPU-MEM and TIME; nullopt when the line is not that header.
std::optional<size_t> nvitop_numeric_columns(std::string_view header,
                                             std::vector<std::string_view>& tokens);

}  // namespace gpudoctor::smi_table
