#include "server/http/admin_access.h"

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

namespace keel::server::http {

namespace {

// Equal bytes, in time that depends on the lengths only (a key is not found byte by byte by timing).
bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool is_loopback_address(std::string_view ip) {
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(std::string(ip), ec);
  if (ec) return false;
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6()).is_loopback();
  }
  return addr.is_loopback();
}

AdminAccess admin_access(std::string_view admin_key, std::string_view authorization, std::string_view remote) {
  if (admin_key.empty()) return is_loopback_address(remote) ? AdminAccess::kAllowed : AdminAccess::kForbidden;
  constexpr std::string_view kBearer = "Bearer ";
  if (!authorization.starts_with(kBearer)) return AdminAccess::kUnauthorized;
  return equal_constant_time(authorization.substr(kBearer.size()), admin_key) ? AdminAccess::kAllowed
                                                                              : AdminAccess::kUnauthorized;
}

std::optional<AdminDenial> deny_admin(std::string_view admin_key, const HttpRequest& req, std::string_view what) {
  switch (admin_access(admin_key, req.header("Authorization"), req.remote)) {
    case AdminAccess::kAllowed: return std::nullopt;
    case AdminAccess::kUnauthorized:
      return AdminDenial{401, fmt::format("{} need 'Authorization: Bearer <admin key>'", what)};
    case AdminAccess::kForbidden:
      return AdminDenial{403, fmt::format("without --admin-key, {} are taken only from clients on this host", what)};
  }
  return AdminDenial{403, "denied"};
}

}  // namespace keel::server::http
