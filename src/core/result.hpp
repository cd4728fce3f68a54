// Result<T>: a value or an error, returned across library boundaries instead of throwing.
// An Error carries a message meant for a person, an exit-code class for the CLI and, where a
// caller decides on what went wrong, a code (the message is never parsed for that).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpudoctor {

struct Error {
  // Values are the CLI exit codes: 1 something failed, 2 bad usage, bad input or no driver.
  enum class Kind { kFailure = 1, kUsage = 2 };
  Kind kind = Kind::kFailure;
  std::string message;
  // What went wrong, for callers that decide on it.
  enum class Code {
    kOther,
    kNoData,    // the input (a log, a server's span) holds no GPU telemetry at all
    kInternal,  // an exception inside a reader: a bug, not the input's fault
    kNotUtf8,   // a reader asked to check the text's encoding found it is not UTF-8 (load_text
                // then decodes the text and reads it again: never shown)
  };
  Code code = Code::kOther;
};

inline Error failure(std::string message) {
  return {Error::Kind::kFailure, std::move(message)};
}
inline Error usage_error(std::string message) {
  return {Error::Kind::kUsage, std::move(message)};
}
inline Error no_data_error(std::string message) {
  return {Error::Kind::kFailure, std::move(message), Error::Code::kNoData};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Nothing {};  // Result<Nothing> for operations with no value
inline constexpr Nothing kOk{};

}  // namespace gpudoctor
