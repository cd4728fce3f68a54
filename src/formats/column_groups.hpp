// Several GPUs side by side under the same column names, with no GPU number in them: a whole
// node's log (HWiNFO's "GPU Core Load [%]" of the NVIDIA GPU, then of the integrated one). Each
// column gets the GPU number it belongs to, and the reader (formats/generic_csv) reads the file
// as one column per GPU. Which GPU: the column's group, where a footer line names each column's
// group (HWiNFO writes each column's sensor group, "GPU [#0]: NVIDIA GeForce RTX 4090", on a line
// under the data), else the order of appearance of its name (the n-th "GPU Core Load [%]" is
// GPU n).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "formats/column_catalogue.hpp"

namespace gpudoctor::csv {

struct SideBySide {
  std::map<int, std::string> names;  // GPU number -> its name, from its group
  std::vector<std::string> notes;    // how the columns were split
  std::vector<std::string> ignored;  // "column X ignored: ..." for columns of groups not a GPU
};

// groups: the footer's cell of each column, empty without a footer. With a footer, the groups
// that name a GPU (all groups, where none does) are the GPUs, numbered by their "[#N]" where each
// has its own, else in order; quantities of other groups ("Memory Timings") are ignored. Without
// one, only where a quantity's or a name's column name repeats. Files with a GPU column (a GPU per
// row) or GPU numbers in their names are left as they are.
SideBySide split_side_by_side(std::vector<Column>& cols, const std::vector<std::string>& groups);

}  // namespace gpudoctor::csv
