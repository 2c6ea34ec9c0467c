#include "router/stream_resume.h"

namespace keel::router {

using nlohmann::json;

bool ResumeState::on_token_event(std::string_view data) {
  json j = json::parse(data, nullptr, false);
  // Typed checks only (nlohmann's value()/get<> throw on a wrong type): a replica's bytes must not throw.
  const auto index = j.is_object() ? j.find("index") : j.end();
  if (j.is_discarded() || !j.is_object() || !j.contains("token_ids") || !j["token_ids"].is_array() ||
      (index != j.end() && !(index->is_number_integer() && *index == 0))) {
    bad_ = true;
    return false;
  }
  saw_token_event_ = true;
  for (const json& t : j["token_ids"]) {
    if (!t.is_number_integer()) {
      bad_ = true;
      return false;
    }
    pending_.push_back(t.get<int32_t>());
  }
  return true;
}

namespace {

// `"finish_reason": "<anything>"` (not null) somewhere in a chunk, without parsing it.
bool has_finish_reason(std::string_view data) {
  constexpr std::string_view kKey = "\"finish_reason\"";
  size_t at = data.find(kKey);
  while (at != std::string_view::npos) {
    size_t i = at + kKey.size();
    while (i < data.size() && (data[i] == ' ' || data[i] == ':')) ++i;
    if (i < data.size() && data[i] == '"') return true;
    at = data.find(kKey, i);
  }
  return false;
}

}  // namespace

void ResumeState::on_chunk_forwarded(std::string_view data) {
  committed_.insert(committed_.end(), pending_.begin(), pending_.end());
  pending_.clear();
  ++n_forwarded_;
  if (has_finish_reason(data)) finished_ = true;
}

std::optional<std::string> ResumeState::rewrite_chunk(std::string_view data) {
  if (n_resumes_ == 0 && !first_id_.empty()) return std::string(data);
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::string(data);
  if (n_resumes_ == 0) {
    if (j.contains("id") && j["id"].is_string()) first_id_ = j["id"].get<std::string>();
    if (j.contains("created") && j["created"].is_number_integer()) first_created_ = j["created"].get<int64_t>();
    return std::string(data);
  }
  if (!first_id_.empty() && j.contains("id")) j["id"] = first_id_;
  if (first_created_ && j.contains("created")) j["created"] = *first_created_;
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& c = j["choices"][0];
    auto empty_or_null = [](const json& o, const char* key) {
      const auto it = o.find(key);
      return it == o.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty());
    };
    if (c.is_object() && c.contains("delta") && c["delta"].is_object() && c["delta"].contains("role") &&
        empty_or_null(c["delta"], "content") && (!c.contains("finish_reason") || c["finish_reason"].is_null())) {
      return std::nullopt;  // the resumed replica's own opening role chunk
    }
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    json& u = j["usage"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      u["completion_tokens"] = u["completion_tokens"].get<int64_t>() + resume_base_;
    }
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
      u["prompt_tokens"] = u["prompt_tokens"].get<int64_t>() - resume_base_;
    }
  }
  return j.dump();
}

std::optional<std::string> ResumeState::resume_body(const json& original) const {
  // Content went out that no token event named (not a keel replica): nothing to resume from.
  if (bad_ || !original.is_object() || (!saw_token_event_ && n_forwarded_ > 1)) return std::nullopt;
  if (original.contains("n") && original["n"].is_number_integer() && original["n"].get<int64_t>() != 1) {
    return std::nullopt;
  }
  json body = original;
  const auto n = static_cast<int64_t>(committed_.size());
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!body.contains(key) || !body[key].is_number_integer()) continue;
    int64_t left = body[key].get<int64_t>() - n;
    if (left < 1) return std::nullopt;
    body[key] = left;
  }
  body["keel_resume_token_ids"] = committed_;
  return body.dump();
}

void ResumeState::begin_resume() {
  pending_.clear();
  ++n_resumes_;
  resume_base_ = static_cast<int64_t>(committed_.size());
}

}  // namespace keel::router
