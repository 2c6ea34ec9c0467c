#include "server/http/router.h"

#include <utility>

namespace keel::server::http {

void Router::add(std::string method, std::string path, Handler handler) {
  routes_[std::move(path)][std::move(method)] = std::move(handler);
}

Router::Lookup Router::find(std::string_view method, std::string_view path) const {
  Lookup out;
  auto it = routes_.find(path);
  if (it == routes_.end()) return out;
  for (const auto& [m, h] : it->second) {
    if (m == method) {
      out.match = Match::kFound;
      out.handler = &h;
      return out;
    }
    if (!out.allow.empty()) out.allow += ", ";
    out.allow += m;
  }
  out.match = Match::kNoMethod;
  return out;
}

}  // namespace keel::server::http
