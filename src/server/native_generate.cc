#include "server/native_generate.h"

#include <limits>

namespace keel::server {

using nlohmann::json;
using openai::ApiError;
using openai::FieldReader;

openai::ApiResult<NativeRequest> parse_native_request(std::string_view body, const openai::ParseLimits& limits) {
  auto parsed = openai::parse_json_object(body, limits.max_json_depth);
  if (!parsed.ok()) return parsed.error();
  FieldReader r(parsed.value());
  NativeRequest req;
  bool has_text = r.has("text");
  req.has_ids = r.has("input_ids");
  if (has_text == req.has_ids) return openai::param_error("text", "set exactly one of text and input_ids");
  if (has_text) {
    KEEL_API_TRY(r.read_string("text", req.text));
  } else {
    int64_t hi = limits.n_vocab > 0 ? limits.n_vocab - 1 : std::numeric_limits<int32_t>::max();
    KEEL_API_TRY(r.read_int_list("input_ids", 0, hi, static_cast<size_t>(limits.max_prompt_ids), req.input_ids));
    if (req.input_ids.empty()) return openai::param_error("input_ids", "must not be empty");
  }
  auto& p = req.params;
  p.max_tokens = 128;
  if (r.has("sampling_params")) {
    const json& sp = r.at("sampling_params");
    if (!sp.is_object())
      return openai::param_error("sampling_params", "must be an object, got {}", openai::json_type_name(sp));
    FieldReader s(sp, "sampling_params");
    int32_t max_new = *p.max_tokens;
    KEEL_API_TRY(s.read_int("max_new_tokens", 1, std::numeric_limits<int32_t>::max(), max_new));
    p.max_tokens = max_new;
    KEEL_API_TRY(openai::read_sampling_fields(s, limits, p));
    KEEL_API_TRY(openai::read_grammar_fields(s, true, p));
    KEEL_API_TRY(s.finish());
  }
  KEEL_API_TRY(r.read_bool("stream", p.stream));
  bool return_logprob = false;
  int32_t top_n = 0;
  KEEL_API_TRY(r.read_bool("return_logprob", return_logprob));
  KEEL_API_TRY(r.read_int("top_logprobs_num", 0, limits.max_top_logprobs, top_n));
  p.top_logprobs = return_logprob ? top_n : -1;
  KEEL_API_TRY(r.finish());
  return req;
}

namespace {

json finish_json(sched::FinishReason reason) {
  json r = openai::finish_reason_json(reason);
  if (r.is_null()) return nullptr;
  return {{"type", r}};
}

json logprob_pairs(const std::vector<sched::TokenLogprob>& lps) {
  json out = json::array();
  for (const auto& lp : lps) out.push_back(json::array({lp.logprob, lp.token}));
  return out;
}

}  // namespace

std::string native_response_json(const std::string& id, std::span<const openai::Choice> choices,
                                 const openai::Usage& usage, bool with_logprobs) {
  json out = json::array();
  for (const auto& c : choices) {
    json meta = {{"id", id},
                 {"prompt_tokens", usage.prompt_tokens},
                 {"completion_tokens", static_cast<int32_t>(c.tokens.size())},
                 {"cached_tokens", usage.cached_tokens},
                 {"finish_reason", finish_json(c.finish)}};
    if (with_logprobs) {
      meta["output_token_logprobs"] = logprob_pairs(c.logprobs);
      json top = json::array();
      for (const auto& alts : c.top_logprobs) top.push_back(logprob_pairs(alts));
      meta["output_top_logprobs"] = std::move(top);
    }
    out.push_back({{"index", c.index}, {"text", c.text}, {"output_ids", c.tokens}, {"meta_info", std::move(meta)}});
  }
  return openai::dump_json(out.size() == 1 ? out[0] : out);
}

std::string native_chunk_json(const std::string& id, int32_t index, std::string_view text, std::span<const int32_t> ids,
                              sched::FinishReason finish, const openai::Usage* usage) {
  json body = {{"index", index}, {"text", text}, {"output_ids", std::vector<int32_t>(ids.begin(), ids.end())}};
  if (usage != nullptr) {
    body["meta_info"] = {{"id", id},
                         {"prompt_tokens", usage->prompt_tokens},
                         {"completion_tokens", usage->completion_tokens},
                         {"cached_tokens", usage->cached_tokens},
                         {"finish_reason", finish_json(finish)}};
  }
  return openai::dump_json(body);
}

}  // namespace keel::server
