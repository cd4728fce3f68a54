// JSON read in place, for the JSON samples reader (formats/json_samples): a tree of views into
// the text, no copy of a key or a value, built in one pass. It takes the JSON that loggers write
// (W&B's wandb-events.jsonl, json.dump(samples), gpustat --json) and refuses, so that the caller
// reads it with nlohmann's DOM instead, whatever it could not give as the DOM and cell_of would:
// strings with escapes, numbers with exponents or that fmt's shortest form would write otherwise
// (more than 15 significant digits in a decimal, below 1e-4, integers of more than 18 digits),
// nesting deeper than 32. It refuses what is not JSON as the DOM does (control characters and
// invalid UTF-8 in strings, leading zeros, a missing comma ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gpudoctor::json_scan {

enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

struct Node {
  Type type = Type::kNull;
  std::string_view key;   // its name, in an object
  std::string_view cell;  // a scalar as the JSON reader writes its cell: the number's text without
                          // trailing fraction zeros ("400.0" is "400", "-0" is "0"), the string's
                          // content, "1"/"0" for booleans
  uint32_t first = 0, count = 0;  // arrays and objects: their elements, Scan::nodes()[first...]
};

class Scan {
 public:
  // The value at s[pos] (after any space), read whole; end: just past it. false: refused.
  bool value(std::string_view s, size_t pos, size_t& end);
  const Node& root() const { return root_; }
  const Node& child(const Node& n, size_t i) const { return nodes_[n.first + i]; }
  // An object's members in key order, a key given twice as its last (as a std::map-based DOM
  // holds them): indexes of child().
  void members(const Node& object, std::vector<uint32_t>& out) const;

 private:
  bool parse(Node& out, int depth);
  bool container(Node& out, int depth, bool object);
  bool string(std::string_view& out);
  bool number(std::string_view& out);
  bool literal(std::string_view word);
  void space();
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }

  std::string_view s_;
  size_t i_ = 0;
  Node root_;
  std::vector<Node> nodes_;                 // every container's elements, contiguous
  std::vector<std::vector<Node>> pending_;  // per depth: the elements of the open container
};

}  // namespace gpudoctor::json_scan
