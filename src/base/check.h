// Invariant checks. KEEL_CHECK aborts with file:line and a message in every build; KEEL_DCHECK only
// in debug builds. Never use these on anything external input can trigger: return a Status instead.
#pragma once

#include <fmt/format.h>

namespace keel::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);
}  // namespace keel::detail

#define KEEL_CHECK(cond, ...)                                                          \
  do {                                                                                 \
    if (!(cond)) [[unlikely]]                                                          \
      ::keel::detail::check_failed(__FILE__, __LINE__, #cond, ::fmt::format("" __VA_ARGS__)); \
  } while (0)

#ifdef NDEBUG
#define KEEL_DCHECK(cond, ...) \
  do {                         \
  } while (0)
#else
#define KEEL_DCHECK(cond, ...) KEEL_CHECK(cond, __VA_ARGS__)
#endif
