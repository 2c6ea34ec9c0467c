#include "loadgen/runner.h"

#include <charconv>

namespace keel::loadgen {

Result<Target> parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme)
    return make_error(ErrorCode::kInvalidArgument, "--url must start with http:// (https is not supported): '{}'", url);
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  Target t;
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) {
    t.host = std::string(authority);
  } else {
    t.host = std::string(authority.substr(0, colon));
    std::string_view port = authority.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
      return make_error(ErrorCode::kInvalidArgument, "bad port in --url '{}'", url);
    t.port = static_cast<uint16_t>(value);
  }
  if (t.host.empty()) return make_error(ErrorCode::kInvalidArgument, "no host in --url '{}'", url);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.size() >= 3 && path.substr(path.size() - 3) == "/v1") path.remove_suffix(3);
  t.base_path = std::string(path);
  return t;
}

}  // namespace keel::loadgen
