// Python str semantics over UTF-8 bytes, for the template evaluator, filters and methods: code point
// length and slicing, Unicode whitespace (str.isspace), strip/split, and the text forms Python
// prints (float repr, string repr, json.dumps as transformers' tojson calls it). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::tokenizer::jinja {

// Decodes one code point at `pos` and advances it. Invalid bytes decode as themselves (U+0080..U+00FF
// range is not used for them: they map to 0xDC80+byte, Python's surrogateescape).
char32_t next_code_point(std::string_view s, size_t& pos);
void append_utf8(std::string& out, char32_t cp);

bool is_ascii(std::string_view s);
// Byte offset of every code point, plus s.size() at the end.
std::vector<size_t> code_point_offsets(std::string_view s);
size_t code_point_count(std::string_view s);

// Python str.isspace() for one code point.
bool is_py_space(char32_t cp);

// str.strip()/lstrip()/rstrip(): without chars, Unicode whitespace; with chars, any of its code points.
std::string_view py_strip(std::string_view s, bool left, bool right);
std::string_view py_strip_chars(std::string_view s, std::string_view chars, bool left, bool right);
// str.split(sep=None, maxsplit=-1) and str.split(sep, maxsplit) (sep non-empty); rsplit likewise.
std::vector<std::string> py_split_whitespace(std::string_view s, int64_t maxsplit);
std::vector<std::string> py_split(std::string_view s, std::string_view sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, std::string_view sep, int64_t maxsplit);
// str.splitlines() (\n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029), without line ends.
std::vector<std::string> py_splitlines(std::string_view s);
// str.replace(old, new, count) (count < 0: all). An empty `old` inserts between code points.
std::string py_replace(std::string_view s, std::string_view old_sub, std::string_view new_sub, int64_t count);
// str.upper()/lower() (ASCII letters plus Latin-1/Greek/Cyrillic basic ranges), capitalize(), title().
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_title(std::string_view s);

// markupsafe.escape: & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(std::string_view s);
// repr(float): shortest round-trip digits, '1.0', '1e+16', '1e-05', 'inf', 'nan'.
std::string py_float_repr(double d);
// repr(str): quoted with ' (or " when the text holds ' but no "), escapes as Python writes them.
std::string py_str_repr(std::string_view s);
// json.dumps string escaping (quotes included); ensure_ascii writes \uXXXX for non-ASCII.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace keel::tokenizer::jinja
