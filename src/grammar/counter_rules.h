// The names GrammarBuilder gives the rules of a repetition (grammar.cc: opt, star, plus, repeat and
// the counter's exactly / up_to / block chain). Passes that recognise a counter's structure in the
// compiled grammar (counter_prefill.cc, counter_runs.cc, repeat_runs.cc) read these names, so they are
// spelt once, here.
#pragma once

#include <string_view>

namespace keel::grammar::counter_rules {

inline constexpr std::string_view kEmpty = "empty";
inline constexpr std::string_view kOpt = "opt";
inline constexpr std::string_view kStar = "star";
inline constexpr std::string_view kPlus = "plus";
inline constexpr std::string_view kRepeat = "repeat";
// exactly[c] ::= exactly[c-1] item: c items, counted left-linearly.
inline constexpr std::string_view kExactly = "exactly";
// The choice of a count (up to n items).
inline constexpr std::string_view kUpTo = "up_to";
// block ::= item x 16, for bounds over 32.
inline constexpr std::string_view kBlock = "block";

}  // namespace keel::grammar::counter_rules
