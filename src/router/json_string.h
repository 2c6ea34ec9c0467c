// A string as a JSON string literal, appended to `out`: quotes, backslashes and control bytes escaped
// (invalid UTF-8 replaced). Replica URLs, the usual input, need none of it and are appended as they are.
#pragma once

#include <string>
#include <string_view>

namespace keel::router {

void append_json_string(std::string& out, std::string_view text);

}  // namespace keel::router
