// KV pulls between replicas (docs/router.md "KV pulls"). A router that sends a request to a replica
// holding less of its prompt than another one does names that holder in X-Keel-Kv-Source; the
// replica then fetches the holder's KV for the prompt's longest cached prefix (POST /v1/kv/export
// there), imports it into its own cache and starts the request, which finds the prefix cached: a
// copy of a hot prefix costs a transfer instead of a prefill. Both ends are admin calls (a pulled
// prefix enters the cache other requests read), and a pull that fails in any way leaves the request
// to prefill as it would have: the hint is an optimization, never a reason to fail a request.
#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

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
               "held none of it, failed, rejected, no_room, busy, refused, off; waited: a request without a hint that waited for a pull of its "
               "prefix in progress).",
               fmt::format("outcome=\"{}\"", outcome))
      .add();
  if (tokens > 0) {
    metrics_.counter("keel_kv_pulled_tokens_total", "Prompt tokens whose KV was imported from another replica.")
        .add(static_cast<double>(tokens));
  }
}

struct Api::PullInFlight {
  std::vector<int32_t> tokens;  // the prompt whose prefix is being pulled
  std::mutex mu;
  bool done = false;
  std::vector<std::function<void()>> waiters;  // mu
};

namespace {
// A request waits for a pull in progress when its prompt shares at least this many leading tokens with
// the pulled one: more than a chat template's opening, less than any system prompt worth a pull.
constexpr size_t kMinPullShare = 32;
// Requests with a body up to this size are tokenized on the io thread before their pull, so that a
// request of the same prefix that arrives next finds the pull registered (as the non-hinted path does).
constexpr size_t kIoThreadPullBodyMaxBytes = 64 << 10;
}  // namespace

std::shared_ptr<Api::PullInFlight> Api::register_pull(std::vector<int32_t> tokens) {
  auto p = std::make_shared<PullInFlight>();
  p->tokens = std::move(tokens);
  std::lock_guard lock(pulls_mu_);
  pulls_in_flight_.push_back(p);
  n_pulls_in_flight_.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void Api::finish_pull(const std::shared_ptr<PullInFlight>& p) {
  {
    std::lock_guard lock(pulls_mu_);
    std::erase(pulls_in_flight_, p);
    n_pulls_in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard lock(p->mu);
    p->done = true;
    waiters.swap(p->waiters);
  }
  for (auto& w : waiters) w();
}

bool Api::wait_for_pull(const std::vector<int32_t>& prompt, std::function<void()> resume) {
  std::lock_guard lock(pulls_mu_);
  for (const auto& p : pulls_in_flight_) {
    const size_t n = std::min(prompt.size(), p->tokens.size());
    const size_t shared =
        static_cast<size_t>(std::mismatch(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(n), p->tokens.begin()).first -
                            prompt.begin());
    if (shared < kMinPullShare) continue;
    std::lock_guard plock(p->mu);
    if (p->done) return false;
    p->waiters.push_back(std::move(resume));
    count_pull("waited");
    return true;
  }
  return false;
}

std::vector<int32_t> Api::prompt_tokens(const Accepted& a) {
  std::vector<int32_t> tokens = a.prepared.prompt;
  if (a.resumed) tokens.insert(tokens.end(), a.resumed->begin(), a.resumed->end());
  return tokens;
}

bool Api::start_after_pull(const std::shared_ptr<Waiting>& w, const http::ExchangePtr& ex) {
  if (n_pulls_in_flight_.load(std::memory_order_relaxed) == 0) return false;
  auto resume = [this, w, ex, token = handoff_token()] {
    ex->dispatch([this, w, ex, token] { start_accepted(std::move(w->accepted), w->body, ex); });
  };
  return wait_for_pull(prompt_tokens(w->accepted), std::move(resume));
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
  std::shared_ptr<Waiting> w;  // accepted on this io thread (small bodies)
  std::shared_ptr<PullInFlight> pull;
  if (held->body.size() <= kIoThreadPullBodyMaxBytes) {
    auto a = accept(kind, *held, received_us);
    if (!a.ok()) {
      ex->respond(openai::error_response(a.error()));
      return true;
    }
    w = std::make_shared<Waiting>(Waiting{std::move(a).value(), std::move(held->body)});
    // The same prefix on its way here already (two requests of a group spread to this replica):
    // wait for that pull rather than fetch the prefix twice.
    if (start_after_pull(w, ex)) return true;
    pull = register_pull(prompt_tokens(w->accepted));
  }
  bool posted = post_ready_work(kv_work_, ex, [this, kind, held, w, pull, source, received_us]() -> openai::ApiResult<Ready> {
    Accepted a;
    if (w) {
      a = std::move(w->accepted);
      // Whatever happens in the pull, the requests waiting for it go on.
      std::unique_ptr<void, std::function<void(void*)>> done(this, [this, pull](void*) { finish_pull(pull); });
      pull_prefix(source, pull->tokens);
    } else {
      auto got = accept(kind, *held, received_us);
      if (!got.ok()) return got.error();
      a = std::move(got).value();
      pull_prefix(source, prompt_tokens(a));
    }
    auto factory = structured_.constraint_for(a.prepared.params.response_format, w ? w->body : held->body);
    if (!factory.ok()) return factory.error();
    return Ready{std::move(a), std::move(factory).value()};
  });
  if (!posted) {
    count_pull("busy");
    if (pull) finish_pull(pull);
    if (w) {  // accepted already: it starts here, without the pull
      start_accepted(std::move(w->accepted), w->body, ex);
      return true;
    }
    req = std::move(*held);
    return false;
  }
  return true;
}

void Api::pull_prefix(std::string_view source, const std::vector<int32_t>& tokens) {
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
    http::HttpResponse resp{.status = 200, .content_type = std::string(kKvWireContentType)};
    try {
      sched::KvPrefix p = kv_->export_prefix(r.tokens, limit);
      count(p.n_tokens() > 0 ? "sent" : "miss", p.n_tokens());
      resp.body = encode_kv(kv_->identity, p);
    } catch (const std::exception& e) {  // out of memory for the rows: answered, not left hanging
      resp = openai::error_response(ApiError{.status = make_error(ErrorCode::kInternal, "KV export failed: {}", e.what())});
    }
    ex->dispatch([ex, resp = std::move(resp)]() mutable { ex->respond(std::move(resp)); });
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
