// Minimal leveled logging to stderr, thread-safe (one write per line). Level from KEEL_LOG
// (debug|info|warn|error) or set_log_level(). Any thread may log.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace keel {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level < log_level()) return;
  log_line(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace keel

#define KEEL_LOG_DEBUG(...) ::keel::log(::keel::LogLevel::kDebug, __VA_ARGS__)
#define KEEL_LOG_INFO(...) ::keel::log(::keel::LogLevel::kInfo, __VA_ARGS__)
#define KEEL_LOG_WARN(...) ::keel::log(::keel::LogLevel::kWarn, __VA_ARGS__)
#define KEEL_LOG_ERROR(...) ::keel::log(::keel::LogLevel::kError, __VA_ARGS__)
