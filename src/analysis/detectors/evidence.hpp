// What a detector saw in one window: named values in the order it set them, from which a
// finding's evidence is merged (merge_evidence). Internal to src/analysis.
//
// One is made per judged window (tens of thousands for a week of samples), so it is small: a name
// is the string literal the detector wrote (not copied), a value 8 bytes, and the rare words (a
// pattern, a reason, a limit's source) kept aside. What a JSON object of the same values held
// per window (a map node per value) was the second largest part of a dense log's diagnosis.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpudoctor::diag {

class Evidence {
 public:
  enum class Kind : uint8_t { kNull, kNumber, kInteger, kUnsigned, kText };
  struct Entry {
    const char* key = nullptr;  // the literal the detector wrote: it outlives every window
    Kind kind = Kind::kNull;
    union {
      double number = 0;  // kNumber
      int64_t integer;    // kInteger
      uint64_t whole;     // kUnsigned
      uint32_t text;      // kText: its index among the texts
    };
  };

  // evidence["key"] = value: a number (kept as given, a whole number as one), words, or nullptr
  // for a value unknown. Setting a name again replaces its value where it stands.
  class Value {
   public:
    Value& operator=(double v) { return set(Kind::kNumber).number = v, *this; }
    template <std::integral I>
    Value& operator=(I v) {
      if constexpr (std::is_unsigned_v<I>)
        set(Kind::kUnsigned).whole = v;
      else
        set(Kind::kInteger).integer = v;
      return *this;
    }
    Value& operator=(std::string_view v) {
      Entry& e = set(Kind::kText);
      e.text = static_cast<uint32_t>(ev_.texts_.size());
      ev_.texts_.emplace_back(v);
      return *this;
    }
    Value& operator=(const char* v) { return *this = std::string_view(v); }
    Value& operator=(const std::string& v) { return *this = std::string_view(v); }
    Value& operator=(std::nullptr_t) { return set(Kind::kNull), *this; }
    Value& operator=(bool) = delete;  // (a finding's evidence has numbers or words)

   private:
    friend class Evidence;
    Value(Evidence& ev, size_t k) : ev_(ev), k_(k) {}
    Entry& set(Kind kind) {
      Entry& e = ev_.entries_[k_];
      e.kind = kind;
      return e;
    }
    Evidence& ev_;
    size_t k_;
  };

  Value operator[](const char* key) {
    for (size_t k = 0; k < entries_.size(); ++k)
      if (std::strcmp(entries_[k].key, key) == 0) return {*this, k};
    if (entries_.empty()) entries_.reserve(8);  // (what most detectors write, in one go)
    Entry& e = entries_.emplace_back();
    e.key = key;
    return {*this, entries_.size() - 1};
  }

  // Hands back the room no entry took: for evidence kept (a judged window's), once written.
  void trim() { entries_.shrink_to_fit(); }

  std::span<const Entry> entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // An entry's value as JSON: a number, a whole number, a string or null.
  nlohmann::ordered_json json(const Entry& e) const {
    switch (e.kind) {
      case Kind::kNumber:
        return e.number;
      case Kind::kInteger:
        return e.integer;
      case Kind::kUnsigned:
        return e.whole;
      case Kind::kText:
        return texts_[e.text];
      case Kind::kNull:
        break;
    }
    return nullptr;
  }
  // Every value by name, in order (tests, and where a whole object is wanted).
  nlohmann::ordered_json json() const {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const Entry& e : entries_) out[e.key] = json(e);
    return out;
  }

 private:
  std::vector<Entry> entries_;
  std::vector<std::string> texts_;
};

}  // namespace gpudoctor::diag
