#include "grammar/json_formats.h"

namespace keel::grammar {
namespace {

std::string date_pattern() {
  const std::string leap_year = "(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
  return "(?:\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|"
         "02-(?:0[1-9]|1\\d|2[0-8]))|" +
         leap_year + "-02-29)";
}

std::string time_pattern() {
  return "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)";
}

std::string ipv4_pattern() {
  const std::string octet = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
  return "(?:" + octet + "\\.){3}" + octet;
}

std::string ipv6_pattern() {
  const std::string h = "[0-9a-fA-F]{1,4}";
  const std::string ls32 = "(?:" + h + ":" + h + "|" + ipv4_pattern() + ")";
  auto head = [&](int n) { return "(?:(?:" + h + ":){0," + std::to_string(n) + "}" + h + ")?"; };
  return "(?:(?:" + h + ":){6}" + ls32 + "|::(?:" + h + ":){5}" + ls32 + "|(?:" + h + ")?::(?:" + h + ":){4}" +
         ls32 + "|" + head(1) + "::(?:" + h + ":){3}" + ls32 + "|" + head(2) + "::(?:" + h + ":){2}" + ls32 + "|" +
         head(3) + "::" + h + ":" + ls32 + "|" + head(4) + "::" + ls32 + "|" + head(5) + "::" + h + "|" + head(6) +
         "::)";
}

// RFC 3986 relative-ref: a network path, an absolute or a relative path (first segment without
// ':'), or nothing; then query and fragment.
std::string relative_ref_pattern() {
  const std::string pct = "%[0-9A-Fa-f]{2}";
  const std::string unreserved_sub = "A-Za-z0-9\\-._~!$&'()*+,;=";
  const std::string pchar = "(?:[" + unreserved_sub + ":@]|" + pct + ")";
  const std::string nc = "(?:[" + unreserved_sub + "@]|" + pct + ")";
  const std::string userinfo = "(?:[" + unreserved_sub + ":]|" + pct + ")*";
  const std::string host = "(?:[" + unreserved_sub + "]|" + pct + ")*";
  const std::string segments = "(?:/" + pchar + "*)*";
  const std::string part = "(?://(?:" + userinfo + "@)?" + host + "(?::\\d*)?" + segments + "|/(?:" + pchar + "+" +
                           segments + ")?|" + nc + "+" + segments + "|)";
  const std::string query = "(?:" + pchar + "|[/?])*";
  return part + "(?:\\?" + query + ")?(?:#" + query + ")?";
}

std::string uri_pattern() {
  const std::string pct = "%[0-9A-Fa-f]{2}";
  const std::string unreserved_sub = "A-Za-z0-9\\-._~!$&'()*+,;=";
  const std::string pchar = "(?:[" + unreserved_sub + ":@]|" + pct + ")";
  const std::string userinfo = "(?:[" + unreserved_sub + ":]|" + pct + ")*";
  const std::string host = "(?:[" + unreserved_sub + "]|" + pct + ")*";
  const std::string segments = "(?:/" + pchar + "*)*";
  const std::string hier = "(?://(?:" + userinfo + "@)?" + host + "(?::\\d*)?" + segments + "|/(?:" + pchar + "+" +
                           segments + ")?|" + pchar + "+" + segments + "|)";
  const std::string query = "(?:" + pchar + "|[/?])*";
  return "[A-Za-z][A-Za-z0-9+.\\-]*:" + hier + "(?:\\?" + query + ")?(?:#" + query + ")?";
}

std::string email_pattern() {
  const std::string atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+";
  const std::string label = "[A-Za-z0-9](?:[A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?";
  return atext + "(?:\\." + atext + ")*@(?:" + label + "\\.)+[A-Za-z](?:[A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?";
}

}  // namespace

std::optional<std::string> format_pattern(std::string_view format) {
  if (format == "date") return "^" + date_pattern() + "$";
  if (format == "time") return "^" + time_pattern() + "$";
  if (format == "date-time") return "^" + date_pattern() + "T" + time_pattern() + "$";
  if (format == "email") return "^" + email_pattern() + "$";
  if (format == "uuid") return "^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$";
  if (format == "uri") return "^" + uri_pattern() + "$";
  if (format == "uri-reference") return "^(?:" + uri_pattern() + "|" + relative_ref_pattern() + ")$";
  if (format == "ipv4") return "^" + ipv4_pattern() + "$";
  if (format == "ipv6") return "^" + ipv6_pattern() + "$";
  return std::nullopt;
}

bool is_standard_format(std::string_view format) {
  static constexpr std::string_view kDefined[] = {
      "date-time", "date",    "time",          "duration",      "email",        "idn-email",
      "hostname",  "idn-hostname", "ipv4",     "ipv6",          "uri",          "uri-reference",
      "iri",       "iri-reference", "uuid",    "uri-template",  "json-pointer", "relative-json-pointer",
      "regex",     "color",   "host-name",     "ip-address",    "utc-millisec"};  // the last four: draft-03
  for (std::string_view f : kDefined)
    if (f == format) return true;
  return false;
}

}  // namespace keel::grammar
