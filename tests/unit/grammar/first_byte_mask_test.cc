// Keys of objects with additionalProperties: the key complement ("a key other than these names",
// emitted left-linear) converges to one parser state once a key leaves the names, and the masks built
// from that state by first byte (GrammarMatcher::fill_by_first_byte) equal the plain Earley walk of
// the vocabulary trie (mask_reference.h) with SmolLM2's and Llama 3's tokenizers, on key-heavy
// MaskBench schemas and on a schema whose names share prefixes and hold non-ASCII characters.
#include <memory>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/earley.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

const char* kPrefixSchema = R"({"type": "object", "properties": {
  "alpha": {"type": "integer"}, "alphabet": {"type": "string"}, "beta": {"type": "boolean"},
  "gamma_ray": {"type": "integer"}, "\u00e9p\u00e9e": {"type": "integer"}},
  "additionalProperties": {"type": "integer"}})";

TEST(KeyComplement, OtherKeysConvergeToOneState) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = kPrefixSchema});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  StateTable table;
  auto state_after = [&](const std::string& text) {
    EarleyParser p(**g, &table);
    EXPECT_TRUE(p.push_bytes(text)) << text;
    return p.state();
  };
  // After `"alpha":1,` every other key, wherever it left the names' trie, stands in one state once
  // it has left (the character that left it) and in one other state from the next character on.
  const std::string at = R"({"alpha":1,")";
  const StateTable::State left = state_after(at + "q"), tail = state_after(at + "qq");
  ASSERT_NE(left, StateTable::kNone);
  ASSERT_NE(tail, StateTable::kNone);
  for (const char* key : {"alphx", "gamma_rays", "betas", "\\n", "\xc3\xa9p\xc3\xa9x", "\xe6\x97\xa5", "\xc3\xa9x"})
    EXPECT_EQ(state_after(at + key), left) << key;
  for (const char* key : {"zz", "alphxyz", "gamma_raysq", "\\\"x", "\xe6\x97\xa5\xe6\x9c\xac", "\xc3\xa9p\xc3\xa9xx", "qqqqqqqq"})
    EXPECT_EQ(state_after(at + key), tail) << key;
  // Prefixes of names are states of their own, and a listed name is not an other key.
  for (const char* key : {"alph", "alpha", "beta", "gam", "\xc3\xa9"}) {
    EXPECT_NE(state_after(at + key), left) << key;
    EXPECT_NE(state_after(at + key), tail) << key;
  }
  EarleyParser p(**g, &table), q(**g, &table);
  EXPECT_FALSE(p.push_bytes(R"({"alpha":1,"alpha":)"));  // alpha was given; no other key spells it
  EXPECT_TRUE(q.push_bytes(R"({"alpha":1,"alphab":2})"));
}

// The instance's masks (both passes) the first-byte path filled against the reference walk; returns
// how many were compared.
int check_instance(const RealVocab& v, GrammarStore& store, const std::string& schema, const std::string& text,
                        const std::string& what) {
  auto masks = store.get_or_compile({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema});
  EXPECT_TRUE(masks.ok()) << what;
  if (!masks.ok()) return 0;
  EXPECT_TRUE(accepts((*masks)->grammar(), text)) << what;
  const std::vector<int32_t> ids = v.tok->encode(text, {.add_special = false, .parse_special = false});
  std::vector<uint32_t> mask((*masks)->n_mask_words());
  int compared = 0;
  for (int pass = 0; pass < 2; ++pass) {
    GrammarMatcher m(*masks);
    std::string prefix;
    for (size_t i = 0; i <= ids.size(); ++i) {
      const uint64_t before = (*masks)->first_byte_masks();
      m.fill_mask(mask);
      // Compared where the first-byte path ran (every such mask of the first pass, a sample of the
      // second), and at the end.
      const bool ran = (*masks)->first_byte_masks() != before;
      if ((ran && (pass == 0 || i % 5 == 0)) || i == ids.size()) {
        const int diff = count_differences(mask, reference_mask((*masks)->grammar(), *v.trie, prefix));
        compared += ran;
        EXPECT_EQ(diff, 0) << what << " pass " << pass << " step " << i << " after '" << prefix << "'";
        if (diff != 0) return 0;
      }
      if (i == ids.size()) break;
      EXPECT_TRUE(mask[ids[i] >> 5] >> (ids[i] & 31) & 1u) << what << " step " << i;
      if (!m.accept_token(ids[i])) {
        ADD_FAILURE() << what << " step " << i;
        return 0;
      }
      prefix += v.trie->vocab().token_bytes[ids[i]];
    }
  }
  return compared;
}

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  GrammarStore store(v.trie, 64);
  // Listed names in order, then other keys: sharing a name's prefix, non-ASCII, escaped.
  const std::string text =
      R"({"alpha":1,"alphabet":"x","beta":true,"gamma_ray":2,"épée":3,"alphx":4,"gam":5,"zeta_function":6,)"
      R"("é":7,"épéx":8,"a\"b\\c":9,"日本語":10,"alphabetical_order_of_things":11})";
  int used = check_instance(v, store, kPrefixSchema, text, name + " prefixes");
  int n_schemas = 0;
  for (const char* file : {"Github_hard---o57503.json", "Github_hard---o73021.json"}) {
    const Json doc = load_json(shared_data_dir() + "/maskbench-dev/" + file);
    for (const Json& t : doc.value("tests", Json::array())) {
      if (!t.value("valid", false)) continue;
      used += check_instance(v, store, doc["schema"].dump(), t["data"].dump(), name + " " + file);
      ++n_schemas;
      break;
    }
  }
  std::printf("%s: %d MaskBench schemas and one synthetic, %d masks by first byte equal the reference walk\n",
              name.c_str(), n_schemas, used);
  EXPECT_EQ(n_schemas, 2);
  EXPECT_GT(used, 40);  // the path under test ran
}

TEST(FirstByteMask, MasksEqualParserWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(FirstByteMask, MasksEqualParserWalkLlama3) { check_vocabulary("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
