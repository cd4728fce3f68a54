// The column catalogue: what the columns of GPU logs mean, whichever tool wrote them. One data
// table (column_catalogue.cpp, kEntries): each entry a normalised name, the field (or role: time,
// GPU id, host ...) it stands for, how its unit is found, and the tool it comes from. Besides the
// table, every field id ("power_w"), its stem ("power"), every nvidia-smi --query-gpu name, every
// DCGM name and every gpudoctor Prometheus name of the field catalogue (core/fields.def) are names
// too. A unit may follow any name as a suffix ("power_mw") or in brackets ("power (mW)"); one
// column per GPU is spelt with a GPU number before or after the quantity ("gpu0_power",
// "power_gpu1", W&B's "system.gpu.0.powerWatts", MLflow's "system/gpu_0_power_usage_watts").
// `gpudoctor formats` and docs/formats.md list the table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/fields.hpp"
#include "formats/log_units.hpp"

namespace gpudoctor::csv {

enum class Role : uint8_t {
  kUnknown,  // not a name gpudoctor reads: ignored, listed in a note
  kIgnore,   // --map COLUMN=ignore, or made redundant by another column
  kField,
  kTime,
  kDate,  // a date that may go with a time-of-day column
  kGpu,   // a GPU index or other GPU id
  kUuid,
  kBusId,
  kName,
  kHost,
  kReason,       // one clock-event reason (a flag column) or a tool's own reason code: ORed into
                 // clock_event_reasons
  kSerial,       // the board's serial number
  kDriver,       // the driver version
  kPersistence,  // persistence mode: "Enabled"/"Disabled"
  kMigMode,      // MIG mode: "Enabled"/"Disabled"
};

// How a column's numbers become the field's unit when neither its name nor its cells say.
enum class Rule : uint8_t {
  kAsIs,            // in the field's unit
  kPercentOrRatio,  // % unless every value lies in 0..1 and some have a fraction: a ratio, x100
  kWattsOrMilli,    // W unless most values exceed 3000 (no GPU draws that many W): mW, x1e-3
  kMibOrBytes,      // MiB unless a value exceeds 1e6 (976 GiB, more than any GPU has): bytes
  kMhzOrGhz,        // MHz unless every value lies below 10 and some have a fraction: GHz, x1000
  kEpochOnly,       // time columns: a time only when its values are Unix times ("epoch" may be
                    // a training epoch: 0, 1, 2 ...)
};

// How a reason column's cells become clock-event reason bits.
enum class Reasons : uint8_t {
  kNone,
  kFlag,         // "Active"/"Not Active", "Yes"/"No", 1/0, true/false: the entry's reason bit
  kGpuzPerfCap,  // GPU-Z's PerfCap Reason: 1 Pwr, 2 Thrm, 4 VRel, 8 VOp, 16 Util, or those words
};

struct CatalogueEntry {
  std::string_view name;  // normalised: lower case, '_' between words (see normalise())
  Role role;
  Field field;
  Rule rule;
  std::string_view tool;  // the tool whose logs use the name
  double factor = 1;      // not 1: the name fixes the unit, value x factor is the field's unit
  bool per_gpu = false;   // only after a GPU number ("gpu.0.gpu": W&B's GPU utilisation)
  Reasons reasons = Reasons::kNone;
  std::string_view reason = {};  // kFlag: the core/clock_reasons code of the bit
};

// The table, for `gpudoctor formats` and the docs.
std::span<const CatalogueEntry> catalogue();

// A dcgmi dmon column header, DCGM's short tag ("POWER", "SMACT", "UUID#"): its entry in the
// table (the "dcgmi dmon" rows, and the rows power and uuid that other tools share: the one list
// of short tags, which the dcgmi dmon reader looks up here); nullptr when it has none.
const CatalogueEntry* dcgm_short_tag(std::string_view tag);

// What a column name means.
struct Meaning {
  Role role = Role::kUnknown;
  Field field{};
  Rule rule = Rule::kAsIs;
  double factor = 1;
  bool unit_named = false;  // the name fixes the unit (field id, smi / DCGM name, unit suffix)
  bool dcgm = false;
  double time_unit_s = 0;  // time columns: seconds per unit, where the name says; 0: by the values
  bool utc = false;
  Reasons reasons = Reasons::kNone;
  uint64_t bit = 0;  // Reasons::kFlag
  std::string_view unit_label;
  std::string_view tool;  // the catalogue entry's tool, "" for the field catalogue's own names
};

Meaning field_meaning(Field f, Rule rule, double factor, bool unit_named);
// Applies a unit (from a suffix, a bracket or --map) to what a name means; false when it does
// not fit (a time unit on a power column, "%" on a temperature).
bool apply_unit(Meaning& m, const UnitToken& u);
// A normalised name, with an optional unit suffix of one or two words ("power_draw_mw",
// "mem_used_mi_b", "pcie_tx_mib_s", "elapsed_ms").
std::optional<Meaning> lookup(std::string_view n, bool after_gpu = false);

// "power (W)" -> base "power", annotation "W"; also "power [mW]".
void split_annotation(std::string_view s, std::string_view& base, std::string_view& ann);

// One header cell, resolved.
struct Column {
  Meaning m;
  int gpu = -1;  // the GPU number the name gives (one column per GPU); -1: none
  // The GPU number of a per-GPU name whose quantity is not known ("per_gpu.0"): what a --map
  // naming the quantity makes it one column of a GPU.
  int unknown_wide_gpu = -1;
  bool bare = false;  // "GPU0": a GPU number and no quantity
  bool mapped = false;
  bool unit_mismatch = false;
  const UnitToken* ann_unit = nullptr;  // the unit in brackets
  std::string name;                     // as written, trimmed and unquoted
  std::string base;                     // name without the bracket annotation
};
Column resolve(std::string_view raw);
// A column the CSV reader reads nothing from, whatever its cells hold, by its name alone: a name
// the catalogue does not know (no quantity, time, GPU or other role, no GPU number; it is only
// named in the reader's notes). A table made for the reader (JSON samples, W&B runs) keeps no
// cells of it where no --map may name it.
bool never_read(std::string_view name);

// Time, date, GPU id, uuid, bus id, host or name.
bool is_identity(Role r);
// Case-insensitive glob with '*' and '?'.
bool glob_match(std::string_view pat, std::string_view s);
bool has_wildcard(std::string_view s);
// "GPU0" -> "GPU*": the --map pattern a message suggests for one-column-per-GPU names.
std::string wide_pattern(std::string_view name);

// "Role" in words for listings: "field", "time", "GPU id" ...
std::string_view role_name(Role r);

}  // namespace gpudoctor::csv
