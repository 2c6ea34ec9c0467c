// Fuzzes the JSON Schema front end: any bytes are parsed as a schema (invalid JSON and unsupported
// keywords must come back as a Status), and a compiled grammar is driven over a few JSON texts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grammar/compile.h"
#include "grammar/earley.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keel::grammar;
  GrammarSpec spec{.kind = GrammarSpec::Kind::kJsonSchema,
                   .source = std::string(reinterpret_cast<const char*>(data), size),
                   .limits = {.max_symbols = 200'000, .max_compile_ms = 500}};
  spec.json.whitespace = size % 2 ? WhitespacePolicy::kBounded : WhitespacePolicy::kCompact;
  auto g = compile_grammar(spec);
  if (!g.ok()) return 0;
  for (const char* text : {"{}", "[]", "\"a\"", "1", "-2.5e3", "null", "true", "{\"a\":[1,{\"b\":\"x\"}]}", "[\"\\u0041\"]"}) {
    EarleyParser p(**g);
    if (p.push_bytes(text)) (void)p.can_end();
    (void)p.next_bytes();
  }
  return 0;
}
