// One accepted connection of the HTTP server, private to server/http: what every connection shares
// (Shared), and the calls server.cc makes on a connection. The state machine itself, the Exchange it
// hands to route handlers and every Beast include live in connection.cc, the only translation unit
// that includes Boost.Beast (it compiles slowly).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>

#include "server/http/server.h"

namespace keel::server::http {

class Connection;

// What every connection shares: configuration, routes, and the registry stop() walks.
struct Shared {
  ServerConfig config;
  Router router;
  ServerHooks hooks;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> live;  // guarded by mu

  HttpResponse error_response(int status, std::string_view message) const {
    if (hooks.render_error) return hooks.render_error(status, message);
    return HttpResponse{.status = status, .content_type = "text/plain", .body = std::string(message) + "\n"};
  }
};

// Serves an accepted socket (bound to one io thread's context) until it closes; registers it in
// shared.live until then.
void start_connection(boost::asio::ip::tcp::socket&& socket, Shared& shared);
// Posted to the connection's thread: on_server_stop closes it if idle (a busy one closes after its
// answer); force_close closes it now, firing an open exchange's disconnect callback.
void post_server_stop(const std::shared_ptr<Connection>& c);
void post_force_close(const std::shared_ptr<Connection>& c);
// After the io threads are joined (nothing runs on the connection): drops the self-reference of an
// exchange that was never answered.
void abandon(const std::shared_ptr<Connection>& c);

}  // namespace keel::server::http
