// Generic CSV logs: home-made pynvml / DCGM-exporter style loggers, spreadsheets, pandas output,
// and gpudoctor's own `export --format csv`.
//
// Columns are recognised by name through one alias table (generic_csv.cpp): every field id, the
// nvidia-smi and DCGM names, and common home-made names (power_w, gpu_util, sm_active, temp ...),
// compared case-insensitively after normalising ("Power Draw (mW)" -> power_draw in mW). Units come
// from the name ("power_mw", "mem_used_bytes", "util (%)"), the cells ("152 W"), or, where neither
// says, from the values (percent or 0-1 ratio, W or mW, MiB or bytes) with a note. Times: epoch
// s / ms / us / ns by magnitude, ISO 8601 with or without a zone, elapsed seconds, time of day.
// GPUs: a GPU id column (index, uuid, bus id; several hosts in one file too) or one column per GPU
// ("GPU0,GPU1", "gpu0_power", "power_gpu1"). `--map COLUMN=FIELD` overrides any of it. Separator
// ',' ';' or tab, RFC 4180 quotes. Unknown columns are ignored and named in a note; what the reader
// assumed goes into Recording::notes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/encoding.hpp"
#include "formats/flat_table.hpp"

namespace gpudoctor {

struct GenericCsvOptions {
  // --map COLUMN=FIELD: COLUMN is a header name (case-insensitive; '*' and '?' wildcards), FIELD a
  // field id ("power_w"), any name of the alias table ("power_mw" reads mW), or one of time, gpu,
  // uuid, pci_bus_id, name, host, ignore.
  std::vector<std::pair<std::string, std::string>> map;
  // --power-limit: the limit in W for GPUs whose log has no power limit column.
  std::optional<double> power_limit_w;
  // The names of a headerless file's columns, in order (nvidia-smi's noheader and --columns):
  // its first line is a row. An entry may hold several comma-separated names.
  std::vector<std::string> header;
  // The tool whose own layout chose this reader ("nvidia-smi"), named in the notes; its column
  // names say what they are, so no note lists how they were read.
  std::string_view tool;
  // How the log writes "no value" where that is one placeholder ("'-'" for dmon), for the note
  // about columns that never hold a value ("('-' throughout)").
  std::string_view placeholder;
  // Threads that read the rows of a large text (0: core/parallel's default_threads(), one per
  // CPU the process may run on unless GPUDOCTOR_THREADS says), and the bytes of text each chunk
  // holds (0: 8 MiB). Any values give the same recording;
  // tests cut small files into many chunks.
  unsigned threads = 0;
  size_t chunk_bytes = 0;
  // Set (tests, the bench): counts the chunks read by other readers and merged as they were.
  size_t* chunks_merged = nullptr;
  // How the text's bytes are taken (text::ReadAs, as load_text says): UTF-8; UTF-8 checked as
  // read (this reader reads every byte anyway: no pass over the text before it); Windows-1252
  // decoded as read.
  text::ReadAs read_as = text::ReadAs::kUtf8;
};

// True when the text looks like a CSV whose header names columns gpudoctor recognises through the
// alias table. False for nvidia-smi --query-gpu CSV (the same reader, chosen as nvidia-smi's: see
// smi_csv.hpp), dmon, JSON and binary data.
bool looks_like_generic_csv(std::string_view head);

// Parses a whole file. origin names the input in messages and notes ("run.csv").
Result<Recording> read_generic_csv(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt);
// Reads a table a reader has split already (formats/flat_table) as its CSV text would be read,
// without writing the text: flattened JSON samples, W&B run files, the framing variants.
Result<Recording> read_generic_csv(const log_reader::CellRows& rows, const std::string& origin,
                                   const GenericCsvOptions& opt);

// A tool's own layout framed as a table (nvidia-smi dmon, dcgmi dmon, DCGM field dumps, the
// tools' tables): read under the tool's name (GenericCsvOptions::tool) with its placeholder for no
// value, the recording's source "LABEL: origin". The framing adds its own notes after.
struct ToolTable {
  std::string_view tool;         // "nvidia-smi dmon"
  std::string_view placeholder;  // "'-'"
  std::string_view label;        // the source's label ("dcgm dump"); the tool's name when empty
  std::optional<double> power_limit_w;
  const std::vector<std::pair<std::string, std::string>>* map = nullptr;  // --map
};
Result<Recording> read_tool_table(const log_reader::CellRows& rows, const std::string& origin,
                                  const ToolTable& t);

}  // namespace gpudoctor
