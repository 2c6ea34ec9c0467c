// A matcher walked along one text, token by token, twice — cold (tables and masks built on the way),
// then warm (finished masks loaded) — with its mask compared to the reference walk (mask_reference.h)
// at every step of the cold pass and every 4th of the warm one, each token checked in its mask before
// it is accepted, and the end checked allowed. Shared by the tests of walk shortcuts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"

namespace keel::grammar::test {

// Adds the number of masks compared to *n_compared; a difference or a refused token fails the test.
inline void walk_and_compare(const std::shared_ptr<TokenMaskCache>& masks, const RealVocab& v, const std::string& text,
                             const std::string& label, int* n_compared) {
  const std::vector<int32_t> ids = v.tok->encode(text, {.add_special = false, .parse_special = false});
  std::vector<uint32_t> mask(masks->n_mask_words());
  for (int pass = 0; pass < 2; ++pass) {  // cold, then warm
    GrammarMatcher m(masks);
    std::string prefix;
    for (size_t i = 0; i <= ids.size(); ++i) {
      m.fill_mask(mask);
      if (pass == 0 || i % 4 == 0) {
        const int diff = count_differences(mask, reference_mask(masks->grammar(), *v.trie, prefix));
        ++*n_compared;
        ASSERT_EQ(diff, 0) << label << " pass " << pass << " step " << i << " after '" << prefix << "'";
      }
      if (i == ids.size()) break;
      ASSERT_TRUE(mask[ids[i] >> 5] >> (ids[i] & 31) & 1u) << label << " " << text << " step " << i;
      ASSERT_TRUE(m.accept_token(ids[i])) << label << " " << text << " step " << i;
      prefix += v.trie->vocab().token_bytes[ids[i]];
    }
    EXPECT_TRUE(m.can_end()) << label << " " << text;
  }
}

}  // namespace keel::grammar::test
