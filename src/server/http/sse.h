// Server-sent events framing (text/event-stream): what a stream handler pushes to an Exchange.
// Pure functions: any thread.
#pragma once

#include <string>
#include <string_view>

namespace keel::server::http {

// One event: "data: <line>\n" per line of `data` (split at \n, \r\n or \r), then a blank line.
// `event` (optional) adds an "event: <name>" line first.
std::string sse_event(std::string_view data, std::string_view event = {});

// OpenAI's end-of-stream marker: "data: [DONE]\n\n".
std::string_view sse_done();

}  // namespace keel::server::http
