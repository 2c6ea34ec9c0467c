// The router's access log: one line per request, written by a thread of its own. The io threads only
// append to a buffer (under a short lock); the writer empties it every flush_ms, or at once when it
// passes flush_bytes, and when the log is destroyed. So a request costs no write(2) on its io thread
// (to a pipe such as journald's, each write also wakes the reader). Lines reach the output up to
// flush_ms late and may interleave late with other log lines; a crash loses at most that much. A
// stalled output never blocks the io threads: past max_buffered bytes waiting, lines are dropped,
// counted and reported by the next write.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace keel::router {

struct AccessLogConfig {
  int64_t flush_ms = 200;
  size_t flush_bytes = 64 << 10;
  size_t max_buffered = 16 << 20;
};

class AccessLog {
 public:
  explicit AccessLog(std::FILE* out, AccessLogConfig config = {});
  ~AccessLog();  // writes what is buffered and joins the writer
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // Appends `line` and a newline. Any thread.
  void write(std::string_view line);
  // Lines dropped because the output fell behind by max_buffered bytes.
  int64_t dropped() const;

 private:
  void run();

  std::FILE* out_;
  AccessLogConfig config_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string buf_;       // guarded by mu_
  int64_t dropped_ = 0;   // guarded by mu_: all time
  int64_t reported_ = 0;  // writer thread: dropped lines already reported
  bool stop_ = false;     // guarded by mu_
  std::thread writer_;    // last: starts once the members above exist
};

}  // namespace keel::router
