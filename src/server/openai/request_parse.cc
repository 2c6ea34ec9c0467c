#include "server/openai/request_parse.h"

#include <charconv>
#include <limits>

namespace keel::server::openai {

using nlohmann::json;

namespace {

constexpr int64_t kMaxTokensCap = std::numeric_limits<int32_t>::max();

int64_t vocab_hi(const ParseLimits& limits) {
  return limits.n_vocab > 0 ? limits.n_vocab - 1 : std::numeric_limits<int32_t>::max();
}

MaybeError read_logit_bias(FieldReader& r, const ParseLimits& limits, GenerationParams& p) {
  if (!r.has("logit_bias")) return {};
  const json& v = r.at("logit_bias");
  std::string field = r.name("logit_bias");
  if (!v.is_object())
    return param_error(field, "must be an object mapping token ids to biases, got {}", json_type_name(v));
  for (const auto& [key, bias] : v.items()) {
    int64_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    std::string entry = fmt::format("{}[\"{}\"]", field, key);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > vocab_hi(limits)) {
      return param_error(entry, "key must be a token id in [0, {}]", vocab_hi(limits));
    }
    if (!bias.is_number()) return param_error(entry, "bias must be a number, got {}", json_type_name(bias));
    double b = bias.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) return param_error(entry, "bias must be in [-100, 100], got {}", b);
    p.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
  }
  return {};
}

MaybeError read_response_format(FieldReader& r, GenerationParams& p) {
  if (!r.has("response_format")) return {};
  const json& v = r.at("response_format");
  std::string field = r.name("response_format");
  if (!v.is_object()) return param_error(field, "must be an object, got {}", json_type_name(v));
  FieldReader f(v, field);
  std::string type;
  KEEL_API_TRY(f.read_string("type", type));
  using Kind = ResponseFormat::Kind;
  ResponseFormat& rf = p.response_format;
  rf.param = field;
  if (type == "text") {
    rf.kind = Kind::kText;
  } else if (type == "json_object") {
    rf.kind = Kind::kJsonObject;
  } else if (type == "json_schema") {
    rf.kind = Kind::kJsonSchema;
    if (!f.has("json_schema") || !f.at("json_schema").is_object()) {
      return param_error(f.name("json_schema"), "must be an object {{\"name\", \"schema\", \"strict\"}}");
    }
    FieldReader s(f.at("json_schema"), f.name("json_schema"));
    std::string name;
    KEEL_API_TRY(s.read_string("name", name));
    KEEL_API_TRY(s.read_string("description", name));
    KEEL_API_TRY(s.read_bool("strict", rf.strict));
    if (!s.has("schema") || !(s.at("schema").is_object() || s.at("schema").is_boolean()))
      return param_error(s.name("schema"), "must be a JSON Schema (an object or a boolean)");
    rf.spec = s.at("schema").dump();
    rf.param = s.name("schema");
    KEEL_API_TRY(s.finish());
  } else if (type == "regex" || type == "ebnf") {
    rf.kind = type == "regex" ? Kind::kRegex : Kind::kEbnf;
    KEEL_API_TRY(f.read_string(type, rf.spec));
    if (rf.spec.empty()) return param_error(f.name(type), "must be a non-empty string");
    rf.param = f.name(type);
  } else if (type.empty()) {
    return param_error(f.name("type"), "is required");
  } else {
    return param_error(f.name("type"), "must be one of text, json_object, json_schema, regex, ebnf; got '{}'", type);
  }
  return f.finish();
}

// stream, stream_options.include_usage.
MaybeError read_stream_fields(FieldReader& r, GenerationParams& p) {
  KEEL_API_TRY(r.read_bool("stream", p.stream));
  if (!r.has("stream_options")) return {};
  const json& v = r.at("stream_options");
  if (!p.stream) return param_error(r.name("stream_options"), "is only allowed when stream is true");
  if (!v.is_object()) return param_error(r.name("stream_options"), "must be an object, got {}", json_type_name(v));
  FieldReader s(v, r.name("stream_options"));
  KEEL_API_TRY(s.read_bool("include_usage", p.include_usage));
  return s.finish();
}

// Fields sglang-router 0.3.2 adds to every request it forwards (it re-serialises SGLang's own request
// type). Each is accepted only at the value that asks for what keel does anyway; any other value is a
// 400 naming the field, and every other unknown field stays a 400 (docs/api.md, "Peer-router fields").
MaybeError read_peer_router_fields(FieldReader& r, bool chat) {
  struct Peer {
    const char* key;
    bool keel_behaviour;
    bool chat_only;
  };
  static constexpr Peer kPeers[] = {{"no_stop_trim", false, false},         {"skip_special_tokens", true, false},
                                    {"return_hidden_states", false, false}, {"continue_final_message", false, true},
                                    {"separate_reasoning", true, true},     {"stream_reasoning", true, true}};
  for (const Peer& p : kPeers) {
    if (p.chat_only && !chat) continue;
    KEEL_API_TRY(r.accept_only_default(
        p.key, p.keel_behaviour,
        fmt::format("SGLang field accepted only as {} (what keel does); other values are not supported", p.keel_behaviour)));
  }
  return {};
}

MaybeError read_model(FieldReader& r, std::string& model) {
  if (!r.has("model")) return param_error(r.name("model"), "is required");
  KEEL_API_TRY(r.read_string("model", model));
  if (model.empty()) return param_error(r.name("model"), "must not be empty");
  return {};
}

// One message's content: a string, or a list of {"type": "text", "text": ...} parts.
MaybeError read_content(FieldReader& m, std::string_view role, std::string& out) {
  if (!m.has("content")) {
    if (role == "assistant") return {};
    return param_error(m.name("content"), "is required for role '{}'", role);
  }
  const json& c = m.at("content");
  if (c.is_string()) {
    out = c.get<std::string>();
    return {};
  }
  if (!c.is_array())
    return param_error(m.name("content"), "must be a string or a list of content parts, got {}", json_type_name(c));
  for (size_t i = 0; i < c.size(); ++i) {
    std::string part_name = fmt::format("{}[{}]", m.name("content"), i);
    if (!c[i].is_object()) return param_error(part_name, "must be an object, got {}", json_type_name(c[i]));
    FieldReader part(c[i], part_name);
    std::string type, text;
    KEEL_API_TRY(part.read_string("type", type));
    if (type != "text") {
      if (type.empty()) return param_error(part.name("type"), "is required");
      return ApiError{
          .status = make_error(ErrorCode::kUnsupported, "{}: content part type '{}' is not supported (text only)",
                               part.name("type"), type),
          .param = part.name("type")};
    }
    if (!part.has("text")) return param_error(part.name("text"), "is required");
    KEEL_API_TRY(part.read_string("text", text));
    KEEL_API_TRY(part.finish());
    if (i > 0) out += "\n";
    out += text;
  }
  return {};
}

MaybeError read_messages(FieldReader& r, std::vector<ChatMessage>& out) {
  if (!r.has("messages")) return param_error("messages", "is required");
  const json& v = r.at("messages");
  if (!v.is_array()) return param_error("messages", "must be a list of messages, got {}", json_type_name(v));
  if (v.empty()) return param_error("messages", "must contain at least one message");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string path = fmt::format("messages[{}]", i);
    if (!v[i].is_object()) return param_error(path, "must be an object, got {}", json_type_name(v[i]));
    FieldReader m(v[i], path);
    ChatMessage msg;
    if (!m.has("role")) return param_error(m.name("role"), "is required");
    KEEL_API_TRY(m.read_string("role", msg.role));
    if (msg.role != "system" && msg.role != "developer" && msg.role != "user" && msg.role != "assistant" &&
        msg.role != "tool") {
      return param_error(m.name("role"), "must be one of system, developer, user, assistant, tool; got '{}'", msg.role);
    }
    KEEL_API_TRY(read_content(m, msg.role, msg.content));
    KEEL_API_TRY(m.read_string("name", msg.name));
    if (msg.role == "tool") {
      KEEL_API_TRY(m.read_string("tool_call_id", msg.tool_call_id));
    }
    if (m.has("tool_calls")) {
      return ApiError{
          .status = make_error(ErrorCode::kUnsupported, "{}: tool calls are not supported", m.name("tool_calls")),
          .param = m.name("tool_calls")};
    }
    KEEL_API_TRY(m.finish());
    out.push_back(std::move(msg));
  }
  return {};
}

// prompt: a string, a list of token ids, or a batch of one of those (larger batches are refused:
// send one request per prompt).
MaybeError read_prompt(FieldReader& r, const ParseLimits& limits, CompletionRequest& req) {
  if (!r.has("prompt")) return param_error("prompt", "is required");
  const json& v = r.at("prompt");
  if (v.is_string()) {
    req.prompt_text = v.get<std::string>();
    return {};
  }
  if (!v.is_array()) return param_error("prompt", "must be a string or a list of token ids, got {}", json_type_name(v));
  if (v.empty()) return param_error("prompt", "must not be an empty list");
  const json* one = &v;
  if (v[0].is_string() || v[0].is_array()) {
    if (v.size() > 1) {
      return ApiError{.status = make_error(
                          ErrorCode::kUnsupported,
                          "prompt: batches of {} prompts are not supported; send one request per prompt", v.size()),
                      .param = "prompt"};
    }
    if (v[0].is_string()) {
      req.prompt_text = v[0].get<std::string>();
      return {};
    }
    one = &v[0];
    if (one->empty()) return param_error("prompt[0]", "must not be an empty list");
  }
  json wrapper = {{"prompt", *one}};
  FieldReader ids(wrapper);
  req.prompt_is_ids = true;
  return ids.read_int_list("prompt", 0, vocab_hi(limits), static_cast<size_t>(limits.max_prompt_ids), req.prompt_ids);
}

}  // namespace

MaybeError read_sampling_fields(FieldReader& r, const ParseLimits& limits, GenerationParams& p) {
  KEEL_API_TRY(r.read_number("temperature", 0.0, 2.0, false, p.temperature));
  KEEL_API_TRY(r.read_number("top_p", 0.0, 1.0, true, p.top_p));
  KEEL_API_TRY(r.read_int("top_k", -1, std::numeric_limits<int32_t>::max(), p.top_k));
  if (p.top_k < 0) p.top_k = 0;
  KEEL_API_TRY(r.read_number("min_p", 0.0, 1.0, false, p.min_p));
  int64_t seed = 0;
  if (r.has("seed")) {
    KEEL_API_TRY(r.read_int("seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), seed));
    p.seed = static_cast<uint64_t>(seed);
  }
  KEEL_API_TRY(r.read_int("n", 1, limits.max_n, p.n));
  KEEL_API_TRY(r.read_string_or_list("stop", static_cast<size_t>(limits.max_stop), p.stop));
  KEEL_API_TRY(r.read_int_list("stop_token_ids", 0, vocab_hi(limits), 256, p.stop_token_ids));
  KEEL_API_TRY(r.read_number("presence_penalty", -2.0, 2.0, false, p.presence_penalty));
  KEEL_API_TRY(r.read_number("frequency_penalty", -2.0, 2.0, false, p.frequency_penalty));
  KEEL_API_TRY(r.read_number("repetition_penalty", 0.0, 10.0, true, p.repetition_penalty));
  KEEL_API_TRY(read_logit_bias(r, limits, p));
  KEEL_API_TRY(r.read_bool("ignore_eos", p.ignore_eos));
  return {};
}

ApiResult<ChatRequest> parse_chat_request(std::string_view body, const ParseLimits& limits) {
  auto parsed = parse_json_object(body, limits.max_json_depth);
  if (!parsed.ok()) return parsed.error();
  const json& j = parsed.value();
  FieldReader r(j);
  ChatRequest req;
  GenerationParams& p = req.params;
  KEEL_API_TRY(read_model(r, req.model));
  KEEL_API_TRY(read_messages(r, req.messages));
  if (r.has("max_tokens") && r.has("max_completion_tokens")) {
    return param_error("max_completion_tokens", "set max_tokens or max_completion_tokens, not both");
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    int32_t max_tokens = 0;
    if (!r.has(key)) continue;
    KEEL_API_TRY(r.read_int(key, 1, kMaxTokensCap, max_tokens));
    p.max_tokens = max_tokens;
  }
  KEEL_API_TRY(read_sampling_fields(r, limits, p));
  bool logprobs = false;
  KEEL_API_TRY(r.read_bool("logprobs", logprobs));
  int32_t top_logprobs = 0;
  KEEL_API_TRY(r.read_int("top_logprobs", 0, limits.max_top_logprobs, top_logprobs));
  if (r.has("top_logprobs") && !logprobs) return param_error("top_logprobs", "requires logprobs to be true");
  p.top_logprobs = logprobs ? top_logprobs : -1;
  KEEL_API_TRY(read_stream_fields(r, p));
  KEEL_API_TRY(read_response_format(r, p));
  KEEL_API_TRY(read_grammar_fields(r, false, p));
  KEEL_API_TRY(read_peer_router_fields(r, true));
  r.ignore("user");
  KEEL_API_TRY(r.finish());
  return req;
}

ApiResult<CompletionRequest> parse_completion_request(std::string_view body, const ParseLimits& limits) {
  auto parsed = parse_json_object(body, limits.max_json_depth);
  if (!parsed.ok()) return parsed.error();
  const json& j = parsed.value();
  FieldReader r(j);
  CompletionRequest req;
  GenerationParams& p = req.params;
  KEEL_API_TRY(read_model(r, req.model));
  KEEL_API_TRY(read_prompt(r, limits, req));
  if (r.has("max_tokens")) {
    int32_t max_tokens = 0;
    KEEL_API_TRY(r.read_int("max_tokens", 1, kMaxTokensCap, max_tokens));
    p.max_tokens = max_tokens;
  }
  KEEL_API_TRY(read_sampling_fields(r, limits, p));
  if (r.has("logprobs")) {
    int32_t logprobs = 0;
    KEEL_API_TRY(r.read_int("logprobs", 0, limits.max_top_logprobs, logprobs));
    p.top_logprobs = logprobs;
  }
  KEEL_API_TRY(read_stream_fields(r, p));
  KEEL_API_TRY(read_response_format(r, p));
  KEEL_API_TRY(read_grammar_fields(r, false, p));
  KEEL_API_TRY(r.accept_only_default("echo", false, "echo is not supported"));
  KEEL_API_TRY(r.accept_only_default("suffix", "", "suffix (fill-in-the-middle) is not supported"));
  if (r.has("best_of")) {
    int32_t best_of = 1;
    KEEL_API_TRY(r.read_int("best_of", 1, limits.max_n, best_of));
    if (best_of != p.n) {
      return ApiError{.status = make_error(ErrorCode::kUnsupported,
                                           "best_of: only best_of == n is supported, got {} with n = {}", best_of, p.n),
                      .param = "best_of"};
    }
  }
  KEEL_API_TRY(read_peer_router_fields(r, false));
  r.ignore("user");
  KEEL_API_TRY(r.finish());
  return req;
}

MaybeError read_grammar_fields(FieldReader& r, bool with_json_schema, GenerationParams& p) {
  using Kind = ResponseFormat::Kind;
  struct Field {
    const char* key;
    Kind kind;
  };
  static constexpr Field kFields[] = {{"regex", Kind::kRegex}, {"ebnf", Kind::kEbnf}, {"json_schema", Kind::kJsonSchema}};
  for (const Field& f : kFields) {
    if (f.kind == Kind::kJsonSchema && !with_json_schema) continue;
    if (!r.has(f.key)) continue;
    if (p.response_format.kind != Kind::kText) {
      return param_error(r.name(f.key), "set only one of {} and {}",
                         p.response_format.param.empty() ? "response_format" : p.response_format.param, r.name(f.key));
    }
    const json& v = r.at(f.key);
    ResponseFormat& rf = p.response_format;
    if (f.kind == Kind::kJsonSchema && (v.is_object() || v.is_boolean())) {
      rf.spec = v.dump();
    } else {
      KEEL_API_TRY(r.read_string(f.key, rf.spec));
      if (rf.spec.empty()) return param_error(r.name(f.key), "must be a non-empty string");
    }
    rf.kind = f.kind;
    rf.param = r.name(f.key);
  }
  if (r.has("grammar_whitespace")) {
    std::string ws;
    KEEL_API_TRY(r.read_string("grammar_whitespace", ws));
    if (ws != "compact" && ws != "flexible")
      return param_error(r.name("grammar_whitespace"), "must be \"compact\" or \"flexible\", got '{}'", ws);
    p.response_format.whitespace =
        ws == "compact" ? ResponseFormat::Whitespace::kCompact : ResponseFormat::Whitespace::kFlexible;
  }
  return {};
}

}  // namespace keel::server::openai
