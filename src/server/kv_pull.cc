// KV pulls between replicas (docs/router.md "KV pulls"). A router that sends a request to a replica
// holding less of its prompt than another one does names that holder in X-Keel-Kv-Source; the
// replica then fetches the holder's KV for the prompt's longest cached prefix (POST /v1/kv/export
// there), imports it into its own cache and starts the request, which finds the prefix cached: a
// copy of a hot prefix costs a transfer instead of a prefill. Both ends are admin calls (a pulled
// prefix enters the cache other requests read), and a pull that fails in any way leaves the request
// to prefill as it would have: the hint is an optimization, never a reason to fail a request.
#include <algorithm>

#include <fmt/format.h>

#include "base/log.h"
#include "server/api.h"
#include "server/http/admin_access.h"
#include "server/http/fetch.h"

namespace keel::server {

using openai::ApiError;

void Api::set_kv_transfer(KvTransfer kv) { kv_ = std::move(kv); }

void Api::count_pull(std::string_view outcome, int64_t tokens) {
  metrics_
      .counter("keel_kv_pulls_total",
               "Requests that came with a KV pull hint, by outcome (imported, cached: nothing new, miss: the source "
               "held none of it, failed, rejected, no_room, busy, refused, off).",
               fmt::format("outcome=\"{}\"", outcome))
      .add();
  if (tokens > 0) {
    metrics_.counter("keel_kv_pulled_tokens_total", "Prompt tokens whose KV was imported from another replica.")
        .add(static_cast<double>(tokens));
  }
}

bool Api::start_with_pull(ApiKind kind, http::HttpRequest& req, const http::ExchangePtr& ex, int64_t received_us) {
  if (!kv_ || config_.kv_max_tokens == 0) {
    count_pull("off");
    return false;
  }
  // Whoever may name a source decides what enters this replica's cache: the router, as an admin.
  if (http::deny_admin(config_.admin_key, req, "KV pulls")) {
    count_pull("refused");
    return false;
  }
  std::string source(req.header("X-Keel-Kv-Source"));
  if (!http::parse_http_origin(source).ok()) {
    count_pull("refused");
    return false;
  }
  auto held = std::make_shared<http::HttpRequest>(std::move(req));
  bool posted = post_ready_work(kv_work_, ex, [this, kind, held, source, received_us]() -> openai::ApiResult<Ready> {
    auto a = accept(kind, *held, received_us);
    if (!a.ok()) return a.error();
    pull_prefix(source, a.value());
    auto factory = structured_.constraint_for(a.value().prepared.params.response_format, held->body);
    if (!factory.ok()) return factory.error();
    return Ready{std::move(a).value(), std::move(factory).value()};
  });
  if (!posted) {
    req = std::move(*held);
    count_pull("busy");
  }
  return posted;
}

void Api::pull_prefix(std::string_view source, const Accepted& a) {
  std::vector<int32_t> tokens = a.prepared.prompt;
  if (a.resumed) tokens.insert(tokens.end(), a.resumed->begin(), a.resumed->end());
  // The last token is always computed (its logits), so its KV is never what a request reuses.
  const auto n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(tokens.size()) - 1, config_.kv_max_tokens));
  if (tokens.size() < 2 || n == 0) return count_pull("miss");
  std::span<const int32_t> want = std::span<const int32_t>(tokens).first(n);
  auto origin = http::parse_http_origin(source);
  http::FetchRequest fr{.target = "/v1/kv/export",
                        .headers = {{"Content-Type", "application/json"}},
                        .body = kv_export_request_body(want),
                        .timeout_ms = config_.kv_timeout_ms,
                        .max_body_bytes = static_cast<int64_t>(kKvWireMagic.size()) + 4 + 4096 +
                                          static_cast<int64_t>(n) * (4 + 4 * kv_->identity.floats_per_token())};
  if (!config_.admin_key.empty()) fr.headers.emplace_back("Authorization", "Bearer " + config_.admin_key);
  auto got = http::fetch(*origin, fr);
  if (!got.ok() || got.value().status != 200) {
    KEEL_LOG_DEBUG("KV pull from {}: {}", source,
                   got.ok() ? fmt::format("status {}", got.value().status) : got.status().to_string());
    return count_pull("failed");
  }
  auto prefix = decode_kv(got.value().body, kv_->identity, static_cast<int64_t>(n));
  if (!prefix.ok()) {
    KEEL_LOG_WARN("KV pull from {} refused: {}", source, prefix.status().to_string());
    return count_pull("rejected");
  }
  if (prefix.value().n_tokens() == 0) return count_pull("miss");
  if (!std::equal(prefix.value().tokens.begin(), prefix.value().tokens.end(), want.begin())) {
    KEEL_LOG_WARN("KV pull from {} refused: its tokens are not a prefix of the prompt", source);
    return count_pull("rejected");
  }
  auto imported = kv_->import_prefix(prefix.value());
  if (!imported.ok()) {
    return count_pull(imported.status().code() == ErrorCode::kResourceExhausted ? "no_room" : "rejected");
  }
  count_pull(imported.value() > 0 ? "imported" : "cached", imported.value());
}

void Api::handle_kv_export(http::HttpRequest&& req, const http::ExchangePtr& ex) {
  if (!kv_ || config_.kv_max_tokens == 0) {
    return ex->respond(openai::error_response(openai::http_error(404, "KV export is off on this replica (--kv-max-tokens 0)")));
  }
  if (auto denial = http::deny_admin(config_.admin_key, req, "KV exports")) {
    return ex->respond(openai::error_response(openai::http_error(denial->status, std::move(denial->message))));
  }
  auto parsed = parse_kv_export_request(req.body, kv_->identity.n_vocab, config_.kv_max_tokens);
  if (!parsed.ok()) return ex->respond(openai::error_response(ApiError{.status = parsed.status()}));
  auto count = [this](std::string_view outcome, int64_t tokens) {
    metrics_
        .counter("keel_kv_exports_total", "KV export calls answered, by outcome (sent, miss, busy).",
                 fmt::format("outcome=\"{}\"", outcome))
        .add();
    if (tokens > 0) {
      metrics_.counter("keel_kv_exported_tokens_total", "Cached prompt tokens whose KV another replica pulled.")
          .add(static_cast<double>(tokens));
    }
  };
  bool posted = kv_work_.try_post([this, ex, count, r = std::move(parsed).value()] {
    const int64_t limit = r.max_tokens > 0 ? std::min(r.max_tokens, config_.kv_max_tokens) : config_.kv_max_tokens;
    sched::KvPrefix p = kv_->export_prefix(r.tokens, limit);
    count(p.n_tokens() > 0 ? "sent" : "miss", p.n_tokens());
    ex->dispatch([ex, body = encode_kv(kv_->identity, p)]() mutable {
      ex->respond(http::HttpResponse{.status = 200, .content_type = std::string(kKvWireContentType), .body = std::move(body)});
    });
  });
  if (!posted) {
    count("busy", 0);
    ex->respond(openai::error_response(ApiError{.status = make_error(ErrorCode::kResourceExhausted,
                                                    "{} KV transfers already wait for a thread; retry later",
                                                    kv_work_.waiting()),
                               .retry_after_s = config_.retry_after_s}));
  }
}

}  // namespace keel::server
