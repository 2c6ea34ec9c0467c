#include "server/structured_output.h"

#include <nlohmann/json.hpp>

#include "sched/grammar_constraint.h"

namespace keel::server {

using openai::ApiError;
using openai::ResponseFormat;

namespace {

// The schema text as the client wrote it (key order kept): the request's own json type sorts keys.
// `param` is the dotted path the parser recorded ("response_format.json_schema.schema").
std::string ordered_schema_text(std::string_view body, const std::string& param, const std::string& fallback) {
  nlohmann::ordered_json node = nlohmann::ordered_json::parse(body, nullptr, false);
  size_t begin = 0;
  while (!node.is_discarded() && begin <= param.size()) {
    size_t end = param.find('.', begin);
    if (end == std::string::npos) end = param.size();
    const std::string key = param.substr(begin, end - begin);
    if (!node.is_object() || !node.contains(key)) return fallback;
    nlohmann::ordered_json child = std::move(node[key]);
    node = std::move(child);
    begin = end + 1;
  }
  if (node.is_discarded()) return fallback;
  if (node.is_string()) return node.get<std::string>();  // /generate's json_schema may be JSON text
  return node.dump();
}

ApiError compile_error(const ResponseFormat& f, const Status& st) {
  // Too large or too slow to compile is the request's fault, not a rate limit: 400, not 429.
  const ErrorCode code = st.code() == ErrorCode::kUnsupported ? ErrorCode::kUnsupported : ErrorCode::kInvalidArgument;
  return ApiError{.status = Status(code, fmt::format("{}: {}", f.param, st.message())), .param = f.param};
}

}  // namespace

Status StructuredOutputConfig::validate() const {
  if (cache_capacity < 1) return make_error(ErrorCode::kInvalidArgument, "structured output cache_capacity must be >= 1");
  if (max_compile_ms < 1) return make_error(ErrorCode::kInvalidArgument, "structured output max_compile_ms must be >= 1");
  if (max_whitespace < 1 || max_whitespace > 64)
    return make_error(ErrorCode::kInvalidArgument, "structured output max_whitespace must be in [1, 64]");
  if (max_grammar_symbols < 1024)
    return make_error(ErrorCode::kInvalidArgument, "structured output max_grammar_symbols must be >= 1024");
  if (compile_threads < 1 || compile_threads > 256)
    return make_error(ErrorCode::kInvalidArgument, "structured output compile_threads must be in [1, 256]");
  if (max_compiles_waiting < 1)
    return make_error(ErrorCode::kInvalidArgument, "structured output max_compiles_waiting must be >= 1");
  return {};
}

StructuredOutput::StructuredOutput(const tokenizer::Tokenizer& tok, const StructuredOutputConfig& config)
    : config_(config),
      store_(std::make_shared<const grammar::VocabTrie>(sched::grammar_vocabulary(tok)), config.cache_capacity,
             config.cache_mb << 20) {}

namespace {

// The factory for a compiled grammar, or the 400 for one that admits nothing.
openai::ApiResult<StructuredOutput::FactoryPtr> factory_for(const ResponseFormat& format,
                                                            std::shared_ptr<grammar::TokenMaskCache> masks) {
  if (masks->grammar().language_empty()) {
    return compile_error(format, Status(ErrorCode::kInvalidArgument, "admits no output at all (unsatisfiable)"));
  }
  return StructuredOutput::FactoryPtr(std::make_shared<sched::GrammarConstraintFactory>(std::move(masks)));
}

}  // namespace

openai::ApiResult<StructuredOutput::FactoryPtr> StructuredOutput::constraint_for(const ResponseFormat& format,
                                                                                 std::string_view body) {
  auto found = lookup(format, body);
  if (!found.ok()) return found.error();
  if (!found.value().to_compile) return std::move(found.value().factory);
  return compile(format, *found.value().to_compile);
}

openai::ApiResult<StructuredOutput::FactoryPtr> StructuredOutput::compile(const ResponseFormat& format,
                                                                          const grammar::GrammarSpec& spec) {
  auto masks = store_.get_or_compile(spec);
  if (!masks.ok()) return compile_error(format, masks.status());
  return factory_for(format, std::move(masks).value());
}

openai::ApiResult<StructuredOutput::Lookup> StructuredOutput::lookup(const ResponseFormat& format,
                                                                     std::string_view body) {
  grammar::GrammarSpec spec;
  spec.limits = grammar::BuildLimits{.max_symbols = config_.max_grammar_symbols, .max_compile_ms = config_.max_compile_ms};
  using Ws = ResponseFormat::Whitespace;
  spec.json.whitespace = format.whitespace == Ws::kDefault  ? config_.whitespace
                         : format.whitespace == Ws::kCompact ? grammar::WhitespacePolicy::kCompact
                                                             : grammar::WhitespacePolicy::kBounded;
  spec.json.max_whitespace = config_.max_whitespace;
  switch (format.kind) {
    case ResponseFormat::Kind::kText: return Lookup{};
    case ResponseFormat::Kind::kJsonObject:  // OpenAI's JSON mode: an object, not any JSON value
      spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
      spec.source = R"({"type":"object"})";
      break;
    case ResponseFormat::Kind::kJsonSchema:
      spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
      spec.source = ordered_schema_text(body, format.param, format.spec);
      spec.json.additional_properties_default = !format.strict;
      break;
    case ResponseFormat::Kind::kRegex:
      spec.kind = grammar::GrammarSpec::Kind::kRegex;
      spec.source = format.spec;
      break;
    case ResponseFormat::Kind::kEbnf:
      spec.kind = grammar::GrammarSpec::Kind::kGbnf;
      spec.source = format.spec;
      break;
  }
  if (auto masks = store_.find(spec)) {
    auto factory = factory_for(format, std::move(masks));
    if (!factory.ok()) return factory.error();
    return Lookup{.factory = std::move(factory).value()};
  }
  return Lookup{.to_compile = std::move(spec)};
}

}  // namespace keel::server
