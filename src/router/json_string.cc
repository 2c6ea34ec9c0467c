#include "router/json_string.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace keel::router {

void append_json_string(std::string& out, std::string_view text) {
  if (text.find_first_of("\"\\") == std::string_view::npos &&
      std::none_of(text.begin(), text.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20; })) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace keel::router
