// The grammar front door: a GrammarSpec (JSON Schema, any JSON value, regex or GBNF, with options)
// compiles to a shared CompiledGrammar, and GrammarCache memoises compilations by a content hash of
// the spec (xxh3 over kind, options and source). Requests compile on the thread that admits them;
// the cache is thread-safe and its grammars are immutable.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"

namespace keel::grammar {

struct GrammarSpec {
  enum class Kind { kJsonSchema, kJsonValue, kRegex, kGbnf };
  Kind kind = Kind::kJsonValue;
  std::string source;  // schema text, regex (whole output must match) or GBNF; unused for kJsonValue
  JsonGrammarOptions json;
  BuildLimits limits;

  uint64_t content_hash() const;
};

Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(const GrammarSpec& spec);

class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 256) : capacity_(capacity) {}

  // Compiles on a miss (outside the lock); errors are returned, not cached.
  Result<std::shared_ptr<const CompiledGrammar>> get_or_compile(const GrammarSpec& spec);
  size_t size() const;
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  std::list<uint64_t> lru_;  // most recent first
  std::unordered_map<uint64_t, std::pair<std::shared_ptr<const CompiledGrammar>, std::list<uint64_t>::iterator>> map_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace keel::grammar
