// The parsed form of a regular expression (regex.cc's parser), shared with regex_length.cc, which
// intersects a pattern with a length range. Internal to src/grammar/.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/char_class.h"

namespace keel::grammar::regex_detail {

struct Node {
  enum class Kind { kClass, kSeq, kAlt, kRepeat, kBegin, kEnd };
  Kind kind = Kind::kSeq;
  CharClass cls;
  std::vector<Node> kids;
  int64_t min = 0, max = 0;  // kRepeat; max < 0: unbounded
};

// ECMA-262 syntax as documented in regex.h; kUnsupported / kInvalidArgument naming the construct.
Result<Node> parse_regex(std::string_view pattern);

}  // namespace keel::grammar::regex_detail
