// Matchers walked along one text, token by token, with the mask compared to the reference walk
// (mask_reference.h), each token checked in its mask before it is accepted, and the end checked allowed:
// walk_once (one matcher, its statistics left for the caller) and walk_and_compare (cold, then warm).
// Shared by the tests of walk shortcuts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"

namespace keel::grammar::test {

// Walks `m` along `text`, comparing its mask with the reference at every `every`-th step (counted in
// *n_compared). A difference, a refused token or a refused end fails the test.
inline void walk_once(GrammarMatcher& m, const TokenMaskCache& masks, const RealVocab& v, const std::string& text,
                      const std::string& label, int every, int* n_compared) {
  const std::vector<int32_t> ids = v.tok->encode(text, {.add_special = false, .parse_special = false});
  std::vector<uint32_t> mask(masks.n_mask_words());
  std::string prefix;
  for (size_t i = 0; i <= ids.size(); ++i) {
    m.fill_mask(mask);
    if (i % static_cast<size_t>(every) == 0) {
      const int diff = count_differences(mask, reference_mask(masks.grammar(), *v.trie, prefix));
      ++*n_compared;
      ASSERT_EQ(diff, 0) << label << " step " << i << " after '" << prefix << "'";
    }
    if (i == ids.size()) break;
    ASSERT_TRUE(mask[ids[i] >> 5] >> (ids[i] & 31) & 1u) << label << " " << text << " step " << i;
    ASSERT_TRUE(m.accept_token(ids[i])) << label << " " << text << " step " << i;
    prefix += v.trie->vocab().token_bytes[ids[i]];
  }
  EXPECT_TRUE(m.can_end()) << label << " " << text;
}

// Cold (tables and masks built on the way, every step compared), then warm (finished masks loaded, every
// 4th step compared). Adds the number of masks compared to *n_compared.
inline void walk_and_compare(const std::shared_ptr<TokenMaskCache>& masks, const RealVocab& v, const std::string& text,
                             const std::string& label, int* n_compared) {
  for (int pass = 0; pass < 2; ++pass) {
    GrammarMatcher m(masks);
    walk_once(m, *masks, v, text, label + " pass " + std::to_string(pass), pass == 0 ? 1 : 4, n_compared);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace keel::grammar::test
