// Structured output on the server side: turns a request's ResponseFormat (json_schema, json_object,
// regex, ebnf) into the sample::ConstraintFactory the scheduler runs. A grammar already compiled is
// found on the calling thread (lookup); a new one is compiled by the caller's choice of thread (the
// Api uses its compile threads, never an io thread or the scheduler's), bounded in time and size per
// request, through one
// grammar::GrammarStore per model (vocabulary trie built once; compiled grammars and their token-mask
// classifications cached by content hash, LRU-bounded). Errors are 400s naming the request field and,
// for schemas, the keyword and its JSON pointer. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "grammar/grammar_store.h"
#include "grammar/json_schema.h"
#include "sample/constraint.h"
#include "server/openai/errors.h"
#include "server/openai/request_parse.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

struct StructuredOutputConfig {
  size_t cache_capacity = 32;          // compiled grammars kept (with their token-mask caches)
  size_t cache_mb = 512;               // and at most this many MiB of them (0 = no byte bound)
  int64_t max_compile_ms = 2'000;      // per request; over it -> 400
  size_t max_grammar_symbols = 1'000'000;
  // Whitespace between JSON tokens when a request does not say (`grammar_whitespace`): compact, or
  // runs of at most max_whitespace of [ \t\n\r] (a model can never loop on whitespace either way).
  grammar::WhitespacePolicy whitespace = grammar::WhitespacePolicy::kCompact;
  int max_whitespace = 16;
  // keel serve's compile threads (new grammars; generation bodies over 64 KiB are parsed there too), and
  // the requests that may wait for one (beyond: 429, Retry-After).
  int compile_threads = 2;
  size_t max_compiles_waiting = 64;

  Status validate() const;
};

class StructuredOutput {
 public:
  StructuredOutput(const tokenizer::Tokenizer& tok, const StructuredOutputConfig& config);

  using FactoryPtr = std::shared_ptr<const sample::ConstraintFactory>;

  // What a request's format needs: a factory ready now (null for free text), or a spec to compile.
  struct Lookup {
    FactoryPtr factory;
    std::optional<grammar::GrammarSpec> to_compile;
  };
  // Cheap (no compile): the spec from the format, and the store's entry when it has one. `body` is the
  // request body the format was parsed from: a schema is re-read from it with its key order
  // (properties are generated in the order the schema lists them).
  openai::ApiResult<Lookup> lookup(const openai::ResponseFormat& format, std::string_view body);
  // Compiles (or finds, if another request did meanwhile) what lookup returned in to_compile.
  openai::ApiResult<FactoryPtr> compile(const openai::ResponseFormat& format, const grammar::GrammarSpec& spec);
  // Both, on the calling thread.
  openai::ApiResult<FactoryPtr> constraint_for(const openai::ResponseFormat& format, std::string_view body);

  const grammar::GrammarStore& store() const { return store_; }

 private:
  StructuredOutputConfig config_;
  grammar::GrammarStore store_;
};

}  // namespace keel::server
