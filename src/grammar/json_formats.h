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
// Whether the JSON Schema specification (2020-12 and earlier drafts) defines `format`. A name it does
// not define asserts nothing (validators ignore unknown formats), so the compiler treats it as an
// annotation; a defined format keel has no pattern for stays unsupported.
bool is_standard_format(std::string_view format);

}  // namespace keel::grammar
