#include "loadgen/openai_wire.h"

#include <nlohmann/json.hpp>

namespace keel::loadgen {

using nlohmann::json;

Result<Endpoint> parse_endpoint(std::string_view name) {
  if (name == "chat") return Endpoint::kChat;
  if (name == "completions") return Endpoint::kCompletions;
  return make_error(ErrorCode::kInvalidArgument, "unknown endpoint '{}' (chat | completions)", name);
}

std::string_view endpoint_path(Endpoint e) {
  switch (e) {
    case Endpoint::kChat: return "/v1/chat/completions";
    case Endpoint::kCompletions: return "/v1/completions";
  }
  return {};
}

Status check_extra_json(std::string_view extra_json) {
  if (extra_json.empty()) return {};
  json j = json::parse(extra_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return make_error(ErrorCode::kInvalidArgument, "--extra-body must be a JSON object");
  return {};
}

std::string make_body(Endpoint e, const RequestSpec& spec, const BodyOptions& options) {
  json body = {{"model", options.model},
               {"max_tokens", spec.max_tokens},
               {"temperature", options.temperature},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  switch (e) {
    case Endpoint::kChat: {
      json messages = json::array();
      if (!spec.system.empty()) messages.push_back({{"role", "system"}, {"content", spec.system}});
      messages.push_back({{"role", "user"}, {"content", spec.user}});
      body["messages"] = std::move(messages);
      break;
    }
    case Endpoint::kCompletions:
      body["prompt"] = spec.system.empty() ? spec.user : spec.system + "\n\n" + spec.user;
      break;
  }
  if (!options.extra_json.empty()) body.update(json::parse(options.extra_json));
  return body.dump();
}

namespace {

std::optional<int32_t> int_at(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int32_t>();
}

void read_usage(const json& usage, StreamChunk& out) {
  out.completion_tokens = int_at(usage, "completion_tokens");
  out.prompt_tokens = int_at(usage, "prompt_tokens");
  auto details = usage.find("prompt_tokens_details");
  if (details != usage.end() && details->is_object()) out.cached_tokens = int_at(*details, "cached_tokens");
}

std::string first_choice_text(const json& choices) {
  if (!choices.is_array() || choices.empty() || !choices[0].is_object()) return {};
  const json& c = choices[0];
  auto text = c.find("text");  // completions
  if (text != c.end() && text->is_string()) return text->get<std::string>();
  auto delta = c.find("delta");  // chat
  if (delta == c.end() || !delta->is_object()) return {};
  auto content = delta->find("content");
  return content != delta->end() && content->is_string() ? content->get<std::string>() : std::string{};
}

}  // namespace

Result<StreamChunk> parse_stream_chunk(std::string_view data) {
  StreamChunk out;
  if (data == "[DONE]") {
    out.done = true;
    return out;
  }
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return make_error(ErrorCode::kInvalidArgument, "stream event is not a JSON object: {}", data.substr(0, 200));
  if (auto err = j.find("error"); err != j.end()) {
    auto msg = err->is_object() ? err->find("message") : err->end();
    out.error = msg != err->end() && msg->is_string() ? msg->get<std::string>() : err->dump();
    return out;
  }
  if (auto choices = j.find("choices"); choices != j.end()) out.text = first_choice_text(*choices);
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) read_usage(*usage, out);
  return out;
}

Result<std::vector<std::string>> parse_model_ids(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto data = j.is_object() ? j.find("data") : j.end();
  if (!j.is_object() || data == j.end() || !data->is_array())
    return make_error(ErrorCode::kInvalidArgument, "GET /v1/models did not return a model list");
  std::vector<std::string> ids;
  for (const auto& m : *data) {
    auto id = m.is_object() ? m.find("id") : m.end();
    if (m.is_object() && id != m.end() && id->is_string()) ids.push_back(id->get<std::string>());
  }
  return ids;
}

}  // namespace keel::loadgen
