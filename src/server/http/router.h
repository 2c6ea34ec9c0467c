// Maps (method, path) to a handler. Built once before the server starts, then read concurrently by
// the io threads (immutable while serving). Unknown path -> 404; known path, other method -> 405
// with an Allow header; both rendered by the server's error renderer.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/exchange.h"
#include "server/http/message.h"

namespace keel::server::http {

// Runs on an io thread; must not block (answers later through the exchange if it has to wait).
using Handler = std::function<void(HttpRequest&&, const ExchangePtr&)>;

class Router {
 public:
  // Later registrations of the same (method, path) replace earlier ones.
  void add(std::string method, std::string path, Handler handler);

  enum class Match { kFound, kNoPath, kNoMethod };
  struct Lookup {
    Match match = Match::kNoPath;
    const Handler* handler = nullptr;  // when kFound
    std::string allow;                 // when kNoMethod: "GET, POST"
  };
  Lookup find(std::string_view method, std::string_view path) const;

 private:
  std::map<std::string, std::map<std::string, Handler>, std::less<>> routes_;  // path -> method -> handler
};

}  // namespace keel::server::http
