// The one registry of inputs: every reader's name (`--input-format NAME`), what it reads (named in
// the error for a file no reader takes), how it recognises a file by its first bytes and how it
// reads one. `load.cpp` chooses by content from it, `--input-format` and its help list it; adding
// a reader is adding one row (inputs.cpp), as node_exporter registers one collector.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

struct InputReader {
  std::string_view name;  // --input-format NAME
  // What it reads, for the error naming every format read ("nvidia-smi dmon"); "" when another
  // row already names it (nvitop: the table snapshots).
  std::string_view what;
  // True when a text starting with `head` (at most 4 KiB, UTF-8) is this reader's. nullptr: the
  // reader is only forced (`--input-format`), another row recognises its files.
  bool (*recognise)(std::string_view head, const LoadOptions& options);
  // Asked after every row's recognise said no: the reader takes what no other recognised
  // (generic CSV with --map). nullptr: never.
  bool (*last_resort)(std::string_view head, const LoadOptions& options);
  // Reads the whole text (UTF-8; W&B run files: the bytes as they are).
  Result<Recording> (*read)(std::string_view text, const std::string& origin,
                            const LoadOptions& options);
  // The reader takes the text's bytes as LoadOptions::read_as says: checks that it is UTF-8, or
  // decodes Windows-1252, as it reads it, which spares load_text a pass over a large text before
  // it (and a decoded copy of it).
  bool decodes_as_it_reads = false;
};

// Every reader, in the order content is tried (the first whose recognise says yes reads it).
std::span<const InputReader> input_readers();
// The row named `name`, nullptr when none.
const InputReader* find_input_reader(std::string_view name);

}  // namespace gpudoctor
