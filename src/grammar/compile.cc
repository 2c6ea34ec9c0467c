#include "grammar/compile.h"

#include <xxhash.h>

#include "grammar/gbnf.h"
#include "grammar/regex.h"

namespace keel::grammar {

uint64_t GrammarSpec::content_hash() const {
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|", static_cast<int>(kind), static_cast<int>(json.whitespace),
                                json.max_whitespace, json.additional_properties_default, limits.max_symbols,
                                limits.max_compile_ms);
  key += source;
  return XXH3_64bits(key.data(), key.size());
}

Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(const GrammarSpec& spec) {
  Result<Grammar> g = Status();
  switch (spec.kind) {
    case GrammarSpec::Kind::kJsonSchema: {
      nlohmann::ordered_json schema;
      try {
        schema = nlohmann::ordered_json::parse(spec.source);
      } catch (const nlohmann::json::exception& e) {
        return make_error(ErrorCode::kInvalidArgument, "JSON Schema is not valid JSON: {}", e.what());
      }
      g = json_schema_grammar(schema, spec.json, spec.limits);
      break;
    }
    case GrammarSpec::Kind::kJsonValue: g = any_json_grammar(spec.json, spec.limits); break;
    case GrammarSpec::Kind::kRegex: {
      GrammarBuilder b(spec.limits);
      RuleId root = b.add_rule("root");
      KEEL_ASSIGN_OR_RETURN(Symbol body, regex_to_symbol(b, spec.source, {}));
      b.add_alt(root, {body});
      g = b.finish(root);
      break;
    }
    case GrammarSpec::Kind::kGbnf: g = gbnf_grammar(spec.source, spec.limits); break;
  }
  if (!g.ok()) return g.status();
  return std::shared_ptr<const CompiledGrammar>(std::make_shared<CompiledGrammar>(std::move(g).value()));
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get_or_compile(const GrammarSpec& spec) {
  const uint64_t key = spec.content_hash();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = map_.find(key); it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.second);
      ++hits_;
      return it->second.first;
    }
    ++misses_;
  }
  KEEL_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> g, compile_grammar(spec));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(key); it != map_.end()) return it->second.first;
  lru_.push_front(key);
  map_.emplace(key, std::make_pair(g, lru_.begin()));
  while (map_.size() > capacity_) {
    map_.erase(lru_.back());
    lru_.pop_back();
  }
  return g;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

}  // namespace keel::grammar
