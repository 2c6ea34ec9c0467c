#include "server/openai/response_build.h"

namespace keel::server::openai {

using nlohmann::json;

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json finish_reason_json(sched::FinishReason reason) {
  switch (reason) {
    case sched::FinishReason::kStop: return "stop";
    case sched::FinishReason::kLength: return "length";
    case sched::FinishReason::kNone:
    case sched::FinishReason::kCancelled:
    case sched::FinishReason::kError: return nullptr;
  }
  return nullptr;
}

json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

namespace {

json bytes_array(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

json chat_token_entry(const TokenBytes& token_bytes, const sched::TokenLogprob& lp) {
  const std::string& bytes = token_bytes(lp.token);
  return {{"token", bytes}, {"logprob", lp.logprob}, {"bytes", bytes_array(bytes)}};
}

json choice_logprobs(const Choice& c, bool chat, const TokenBytes& token_bytes) {
  LogprobRun run{.tokens = c.tokens, .chosen = c.logprobs, .alternatives = c.top_logprobs};
  return chat ? chat_logprobs_json(run, token_bytes) : completion_logprobs_json(run, token_bytes, 0);
}

}  // namespace

json chat_logprobs_json(const LogprobRun& run, const TokenBytes& token_bytes) {
  json content = json::array();
  for (size_t i = 0; i < run.chosen.size(); ++i) {
    json entry = chat_token_entry(token_bytes, run.chosen[i]);
    json top = json::array();
    if (i < run.alternatives.size()) {
      for (const auto& alt : run.alternatives[i]) top.push_back(chat_token_entry(token_bytes, alt));
    }
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs_json(const LogprobRun& run, const TokenBytes& token_bytes, int64_t text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  int64_t offset = text_offset;
  for (size_t i = 0; i < run.chosen.size(); ++i) {
    const std::string& bytes = token_bytes(run.chosen[i].token);
    tokens.push_back(bytes);
    token_logprobs.push_back(run.chosen[i].logprob);
    json alts = json::object();
    if (i < run.alternatives.size()) {
      for (const auto& alt : run.alternatives[i]) alts[token_bytes(alt.token)] = alt.logprob;
    }
    top.push_back(std::move(alts));
    offsets.push_back(offset);
    offset += static_cast<int64_t>(bytes.size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

std::string chat_completion_json(const ResponseHead& head, std::span<const Choice> choices, const Usage& usage,
                                 bool with_logprobs, const TokenBytes& token_bytes) {
  json out_choices = json::array();
  for (const Choice& c : choices) {
    out_choices.push_back({{"index", c.index},
                           {"message", {{"role", "assistant"}, {"content", c.text}}},
                           {"logprobs", with_logprobs ? choice_logprobs(c, true, token_bytes) : json(nullptr)},
                           {"finish_reason", finish_reason_json(c.finish)}});
  }
  json body = {{"id", head.id},       {"object", "chat.completion"},       {"created", head.created},
               {"model", head.model}, {"choices", std::move(out_choices)}, {"usage", usage_json(usage)}};
  return dump_json(body);
}

std::string text_completion_json(const ResponseHead& head, std::span<const Choice> choices, const Usage& usage,
                                 bool with_logprobs, const TokenBytes& token_bytes) {
  json out_choices = json::array();
  for (const Choice& c : choices) {
    out_choices.push_back({{"index", c.index},
                           {"text", c.text},
                           {"logprobs", with_logprobs ? choice_logprobs(c, false, token_bytes) : json(nullptr)},
                           {"finish_reason", finish_reason_json(c.finish)}});
  }
  json body = {{"id", head.id},       {"object", "text_completion"},       {"created", head.created},
               {"model", head.model}, {"choices", std::move(out_choices)}, {"usage", usage_json(usage)}};
  return dump_json(body);
}

std::string chat_chunk_json(const ResponseHead& head, const ChunkDelta& delta, bool include_usage_field) {
  json d = json::object();
  if (delta.role) d["role"] = *delta.role;
  if (delta.content) d["content"] = *delta.content;
  json choice = {{"index", delta.index},
                 {"delta", std::move(d)},
                 {"logprobs", delta.logprobs},
                 {"finish_reason", finish_reason_json(delta.finish)}};
  json body = {{"id", head.id},
               {"object", "chat.completion.chunk"},
               {"created", head.created},
               {"model", head.model},
               {"choices", json::array({std::move(choice)})}};
  if (include_usage_field) body["usage"] = nullptr;
  return dump_json(body);
}

std::string completion_chunk_json(const ResponseHead& head, int32_t index, std::string_view text, const json& logprobs,
                                  sched::FinishReason finish, bool include_usage_field) {
  json choice = {
      {"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason_json(finish)}};
  json body = {{"id", head.id},
               {"object", "text_completion"},
               {"created", head.created},
               {"model", head.model},
               {"choices", json::array({std::move(choice)})}};
  if (include_usage_field) body["usage"] = nullptr;
  return dump_json(body);
}

std::string usage_chunk_json(const ResponseHead& head, std::string_view object, const Usage& usage) {
  json body = {{"id", head.id},       {"object", object},         {"created", head.created},
               {"model", head.model}, {"choices", json::array()}, {"usage", usage_json(usage)}};
  return dump_json(body);
}

}  // namespace keel::server::openai
