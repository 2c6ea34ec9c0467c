// Regular expressions for the JSON Schema `format` values keel asserts (date, time, date-time,
// email, uuid, uri, ipv4, ipv6). Each is at least as strict as the RFC the format names, so a
// generated string always validates; a few valid but rare spellings (leap seconds, IP-literal URI
// hosts, quoted email local parts) are not produced. Used by the JSON Schema compiler.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace keel::grammar {

// The anchored pattern for `format`, or nullopt when keel does not support that format.
std::optional<std::string> format_pattern(std::string_view format);

}  // namespace keel::grammar
