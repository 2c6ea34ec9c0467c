// Defaults both loaders (gguf_vocab.cc, hf_json.cc) apply to a VocabSpec: the end-of-generation set
// llama.cpp derives from token texts. Pure functions over the spec.
#pragma once

#include <string_view>

#include "tokenizer/tokenizer.h"

namespace keel::tokenizer {

// Adds every control/user-defined token whose text ends a turn in some model family (<|eot_id|>,
// <|im_end|>, <|end_of_text|>, <|eom_id|>, <end_of_turn>, <|endoftext|>, ...) to spec.eog_ids.
void add_named_eog_ids(VocabSpec& spec);

// Id of the token spelled `text`, or -1.
int32_t find_token(const VocabSpec& spec, std::string_view text);

}  // namespace keel::tokenizer
