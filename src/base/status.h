// Status and Result<T>: keel's one error type for failures that external input can cause
// (files, requests, flags). Invariant violations use KEEL_CHECK (base/check.h) instead.
// Mapped to the wire in one place (server/openai/errors.cc) and to exit codes in cli/.
// Plain values: any thread may create, copy and move them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace keel {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,   // bad flag, parameter or request field
  kNotFound,          // missing file, tensor, key, model
  kOutOfRange,        // index or length past a limit
  kUnsupported,       // valid input keel does not implement (names the construct)
  kCorruptFile,       // malformed or truncated model/tokenizer file
  kIo,                // OS-level read/write/mmap failure
  kResourceExhausted, // memory, queue or KV pool full
  kUnavailable,       // loading, draining, replica down
  kCancelled,         // client went away
  kInternal,          // a bug surfaced as an error instead of an abort
};

std::string_view error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code>: <message>", for logs and CLI errors.
  std::string to_string() const;
  // Prepends context: "reading foo.gguf: <message>".
  Status with_context(std::string_view context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                      // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}               // NOLINT(implicit)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace keel

#define KEEL_CONCAT_INNER_(a, b) a##b
#define KEEL_CONCAT_(a, b) KEEL_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` (a Status) is not ok.
#define KEEL_RETURN_IF_ERROR(expr)            \
  do {                                        \
    ::keel::Status keel_status_ = (expr);     \
    if (!keel_status_.ok()) return keel_status_; \
  } while (0)

// `KEEL_ASSIGN_OR_RETURN(auto x, f());` unwraps a Result or returns its Status.
#define KEEL_ASSIGN_OR_RETURN(lhs, expr) \
  KEEL_ASSIGN_OR_RETURN_IMPL_(KEEL_CONCAT_(keel_result_, __LINE__), lhs, expr)
#define KEEL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
