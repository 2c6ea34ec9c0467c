// Key-start classifications from the shared one of any key (session 9). A key that must be none of
// some names (SchemaCompiler::key_not_in: additionalProperties or patternProperties beside
// properties) has, after its opening quote, a kernel position whose sub-grammar holds the names, so
// its classification (~0.5 ms at 128k tokens) was never shared. Its language is that of any JSON
// string body with its closing quote (json_char* '"'), minus exactly the names' spellings followed by
// '"'; every prefix of a string body stays a viable prefix of a key (the names are finite). So a token
// is classified alike at both positions unless it starts with a name's spelling and '"': any key
// accepts that token when it ends there (the rule ended exactly) and has the tokens below it
// uncertain (the rule ended, then more bytes); the key rejects them all. Those are a trie walk of a
// few bytes per name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grammar/shared_classes.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

// Each name's one canonical JSON spelling (as emit_char_class writes kJsonString) followed by '"';
// nothing when a name has a character with two spellings (a control character written \u001A or
// \u001a) or is not UTF-8: such keys are classified by their own walk.
std::optional<std::vector<std::string>> key_closers(const std::vector<std::string>& names);

// The classification of `key ::= '"' . body` from `any_key`'s (`any_key ::= '"' . json_char* '"'`):
// the tokens spelling a closer taken out of the accepted ones, the uncertain subtrees below a closer
// dropped.
PositionMask key_start_from_any_key(const PositionMask& any_key, const VocabTrie& trie,
                                    const std::vector<std::string>& closers);

}  // namespace keel::grammar
