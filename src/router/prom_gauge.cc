#include "router/prom_gauge.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace keel::router {

int64_t prom_gauge(std::string_view text, std::string_view name) {
  constexpr double kMaxCount = 1099511627776.0;  // 2^40: far above any replica's queue or KV slots
  size_t at = 0;
  while ((at = text.find(name, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    const size_t after = at + name.size();
    if (line_start && after < text.size() && text[after] == ' ') {
      const std::string field(text.substr(after + 1, 32));
      char* end = nullptr;
      const double v = std::strtod(field.c_str(), &end);
      // A Prometheus value may be NaN or ±Inf: not a count, and casting it to an integer is undefined.
      if (end == field.c_str() || !std::isfinite(v) || v < 0 || v > kMaxCount) return -1;
      return static_cast<int64_t>(v);
    }
    at = after;
  }
  return -1;
}

}  // namespace keel::router
