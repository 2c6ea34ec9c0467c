// Fuzzes the GBNF parser: any bytes are parsed as a grammar; a grammar that compiles is driven over
// the input itself byte by byte.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keel::grammar;
  std::string src(reinterpret_cast<const char*>(data), size);
  auto g = gbnf_grammar(src, {.max_symbols = 200'000, .max_compile_ms = 500});
  if (!g.ok()) return 0;
  CompiledGrammar cg(std::move(g).value());
  EarleyParser p(cg);
  for (char c : src) {
    if (!p.push_byte(static_cast<uint8_t>(c))) break;
  }
  (void)p.can_end();
  return 0;
}
