// Who may call the admin API (/admin/*). With --admin-key: a request whose Authorization header is
// "Bearer <key>" (compared in constant time), from anywhere. Without one: only clients on the
// loopback interface (127.0.0.0/8, ::1, and IPv4-mapped loopback), so an unconfigured router listening
// on a public address does not let anyone who can reach it add or remove replicas. Pure: any thread.
#pragma once

#include <string_view>

namespace keel::router {

enum class AdminAccess { kAllowed, kUnauthorized, kForbidden };

// `remote`: the client's IP address as text ("" when unknown: not loopback).
AdminAccess admin_access(std::string_view admin_key, std::string_view authorization, std::string_view remote);

bool is_loopback_address(std::string_view ip);

}  // namespace keel::router
