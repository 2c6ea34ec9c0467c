// Fuzzes the regex front end: the first line of the input is a pattern (compiled both as a whole-text
// regex and as a JSON Schema pattern inside a string); the rest is matched against the grammar.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/regex.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keel::grammar;
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string pattern = in.substr(0, nl);
  std::string subject = nl == std::string::npos ? "" : in.substr(nl + 1);
  for (bool json : {false, true}) {
    GrammarBuilder b({.max_symbols = 200'000, .max_compile_ms = 500});
    RuleId root = b.add_rule("root");
    auto sym = regex_to_symbol(b, pattern, {.encoding = json ? CharEncoding::kJsonString : CharEncoding::kUtf8,
                                            .search = json});
    if (!sym.ok()) continue;
    b.add_alt(root, {*sym});
    auto g = b.finish(root);
    if (!g.ok()) continue;
    CompiledGrammar cg(std::move(g).value());
    EarleyParser p(cg);
    for (char c : subject) {
      if (!p.push_byte(static_cast<uint8_t>(c))) break;
    }
    (void)p.can_end();
  }
  return 0;
}
