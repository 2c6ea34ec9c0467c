// Who may call an admin endpoint (the router's /admin/* and peer feed, keel serve's /flush_cache). With
// an admin key (--admin-key): a request whose Authorization header is "Bearer <key>" (compared in
// constant time), from anywhere. Without one: only clients on the loopback interface (127.0.0.0/8,
// ::1, and IPv4-mapped loopback), so an unconfigured process listening on a public address does not
// let anyone who can reach it change its state. Pure: any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/http/message.h"

namespace keel::server::http {

enum class AdminAccess { kAllowed, kUnauthorized, kForbidden };

// `remote`: the client's IP address as text ("" when unknown: not loopback).
AdminAccess admin_access(std::string_view admin_key, std::string_view authorization, std::string_view remote);

bool is_loopback_address(std::string_view ip);

// Why `req` may not make an admin call, as the answer's status and message (401 without the key, 403
// from another host when no key is set); nullopt when it may. `what` names the calls ("admin calls").
struct AdminDenial {
  int status = 0;
  std::string message;
};
std::optional<AdminDenial> deny_admin(std::string_view admin_key, const HttpRequest& req, std::string_view what);

}  // namespace keel::server::http
