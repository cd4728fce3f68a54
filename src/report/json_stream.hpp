// JSON documents written to a file as they are serialised (nlohmann's serialiser on a stream over
// the FILE*), not built as text first: a long run's diagnosis is megabytes of JSON, and its
// findings (thousands where an episode repeats for months) are most of its tree.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpudoctor {

// The document indented by 2, then a line end: the bytes of doc.dump(2), but that bytes which are
// not UTF-8 in its strings are written as U+FFFD (as the other JSON outputs write them).
void write_json(std::FILE* out, const nlohmann::json& doc);
void write_json(std::FILE* out, const nlohmann::ordered_json& doc);

// The same, with the array at the object's key `key` (held empty in doc, as a place) written
// element by element, each made when written and let go: the bytes of the document whose array
// held the `count` elements.
void write_json(std::FILE* out, const nlohmann::ordered_json& doc, std::string_view key,
                size_t count, const std::function<nlohmann::ordered_json(size_t)>& element);

}  // namespace gpudoctor
