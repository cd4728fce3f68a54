#include "report/json_stream.hpp"

#include <ostream>
#include <streambuf>

namespace gpudoctor {

namespace {

// A FILE* as a stream buffer: what the serialiser writes goes into the FILE's own buffer.
class FileBuffer : public std::streambuf {
 public:
  explicit FileBuffer(std::FILE* f) : f_(f) {}

 protected:
  int_type overflow(int_type c) override {
    return traits_type::eq_int_type(c, traits_type::eof()) ? traits_type::not_eof(c)
                                                           : std::fputc(c, f_);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    return static_cast<std::streamsize>(std::fwrite(s, 1, static_cast<size_t>(n), f_));
  }

 private:
  std::FILE* f_;
};

template <class Json>
using Serializer = nlohmann::detail::serializer<Json>;

template <class Json>
Serializer<Json> serializer_on(std::ostream& out) {
  return Serializer<Json>(nlohmann::detail::output_adapter<char>(out), ' ',
                          nlohmann::detail::error_handler_t::replace);
}

template <class Json>
void write_whole(std::FILE* f, const Json& doc) {
  FileBuffer buffer(f);
  std::ostream out(&buffer);
  serializer_on<Json>(out).dump(doc, true, false, 2);
  out.put('\n');
}

}  // namespace

void write_json(std::FILE* out, const nlohmann::json& doc) {
  write_whole(out, doc);
}

void write_json(std::FILE* out, const nlohmann::ordered_json& doc) {
  write_whole(out, doc);
}

void write_json(std::FILE* f, const nlohmann::ordered_json& doc, std::string_view key, size_t count,
                const std::function<nlohmann::ordered_json(size_t)>& element) {
  using Json = nlohmann::ordered_json;
  if (!doc.is_object() || doc.empty() || count == 0) return write_whole(f, doc);
  FileBuffer buffer(f);
  std::ostream out(&buffer);
  auto s = serializer_on<Json>(out);
  // As the serialiser lays out an object and an array, indented by 2 (the top object at 0, its
  // values at 2, the streamed array's elements at 4).
  out << "{\n";
  size_t i = 0;
  for (auto it = doc.begin(); it != doc.end(); ++it, ++i) {
    out << "  ";
    s.dump(Json(it.key()), true, false, 2, 2);
    out << ": ";
    if (it.key() == key) {
      out << "[\n";
      for (size_t k = 0; k < count; ++k) {
        out << "    ";
        s.dump(element(k), true, false, 2, 4);
        out << (k + 1 < count ? ",\n" : "\n");
      }
      out << "  ]";
    } else {
      s.dump(it.value(), true, false, 2, 2);
    }
    out << (i + 1 < doc.size() ? ",\n" : "\n");
  }
  out << "}\n";
}

}  // namespace gpudoctor
