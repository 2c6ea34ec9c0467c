// Incremental parser for a text/event-stream body (the SSE framing OpenAI streams use): bytes go in
// as they arrive, complete events' data come out. Handles "\n", "\r\n" and "\r" line ends split
// anywhere, multi-line data (joined with "\n"), comments and other fields (ignored). One instance per
// stream; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace keel::loadgen {

class SseParser {
 public:
  // Feeds bytes; appends the data of every event they complete to `events`.
  void feed(std::string_view bytes, std::vector<std::string>& events);
  // Bytes of an unfinished event are pending.
  bool has_pending() const { return !line_.empty() || has_data_; }

 private:
  void end_line(std::vector<std::string>& events);

  std::string line_;  // the current, unfinished line
  std::string data_;  // data of the current event so far
  bool has_data_ = false;
  bool last_cr_ = false;  // the previous byte was '\r' (a following '\n' belongs to it)
};

}  // namespace keel::loadgen
