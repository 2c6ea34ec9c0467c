#include "server/http/sse.h"

namespace keel::server::http {

std::string sse_event(std::string_view data, std::string_view event) {
  std::string out;
  out.reserve(data.size() + 16);
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  size_t start = 0;
  while (true) {
    size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (data[end] == '\r' && start < data.size() && data[start] == '\n') ++start;
  }
  out += '\n';
  return out;
}

std::string_view sse_done() { return "data: [DONE]\n\n"; }

}  // namespace keel::server::http
