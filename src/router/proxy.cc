#include "router/proxy.h"

#include <algorithm>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/http/sse.h"

namespace keel::router {

using nlohmann::json;
using server::http::ExchangePtr;
using server::http::HttpRequest;
using server::http::HttpResponse;

uint64_t random_u64() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

std::string error_body(std::string_view message, std::string_view type, int code) {
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}.dump();
}

namespace {

std::string_view error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 429) return "rate_limit_exceeded";
  if (status >= 500) return "service_unavailable";
  return "invalid_request_error";
}

}  // namespace

HttpResponse error_response(int status, std::string_view message) {
  return HttpResponse{.status = status, .body = error_body(message, error_type(status), status)};
}

namespace {

bool retryable_status(int status) { return status == 429 || status == 500 || status == 502 || status == 503 || status == 504; }

std::string sanitize_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return {};
  for (char c : id) {
    if (c < 0x21 || c > 0x7e) return {};
  }
  return std::string(id);
}

// "rt-" and 16 random hex digits (per request: without fmt's format-string parsing).
std::string new_request_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(19, '0');
  id[0] = 'r', id[1] = 't', id[2] = '-';
  uint64_t v = random_u64();
  for (int i = 18; i >= 3; --i, v >>= 4) id[static_cast<size_t>(i)] = kHex[v & 15];
  return id;
}

std::string_view header_of(const HeaderList& h, std::string_view name) {
  for (const auto& [k, v] : h) {
    if (server::http::iequals(k, name)) return v;
  }
  return {};
}

}  // namespace

ProxyRequest::ProxyRequest(RouterService& svc, ProxyKind kind, HttpRequest&& req, ExchangePtr ex)
    : svc_(svc), kind_(kind), req_(std::move(req)), ex_(std::move(ex)), start_us_(now_us()) {}

void ProxyRequest::run() {
  request_id_ = sanitize_request_id(req_.header("X-Request-Id"));
  if (request_id_.empty()) request_id_ = new_request_id();
  // Registered before taking mu_: if the client is already gone the callback runs right here.
  ex_->on_disconnect([weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self) return;
    std::lock_guard l(self->mu_);
    if (self->finished_) return;
    self->finished_ = true;
    if (self->call_) self->call_->cancel();
    self->release_replica(true);
    self->log_access(499);
  });
  std::lock_guard lock(mu_);
  if (finished_) return;
  if (svc_.stopping()) return fail_before_start(503, "the router is shutting down");
  if (!admit()) return;
  if (req_.body.size() > kIoThreadBodyMaxBytes) {
    if (svc_.body_work().try_post([self = shared_from_this()] { self->prepare_off_io_thread(); })) {
      svc_.n_large_bodies().fetch_add(1, std::memory_order_relaxed);
      return;
    }
    svc_.n_large_bodies_refused().fetch_add(1, std::memory_order_relaxed);
    return fail_before_start(429, "too many large request bodies are waiting to be prepared; retry shortly", 1);
  }
  if (!parse_body()) return;
  compute_keys();
  start_attempts();
}

void ProxyRequest::prepare_off_io_thread() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;  // the client left while the body waited
    if (!parse_body()) return;
    compute_keys();
  }
  // The upstream call starts on the connection's io thread, as for a small body (its pool and its
  // handlers belong to that thread's context).
  ex_->dispatch([self = shared_from_this()] {
    std::lock_guard lock(self->mu_);
    if (self->finished_) return;
    if (self->svc_.stopping()) return self->fail_before_start(503, "the router is shutting down");
    self->start_attempts();
  });
}

void ProxyRequest::start_attempts() {
  svc_.retry_budget().on_request();
  attempt(false);
}

void ProxyRequest::attempt(bool resuming) {
  std::string body = body_text_;
  if (resuming) {
    auto rb = resume_.resume_body(body_);
    if (!rb) return end_stream_with_error("the stream's replica failed and the stream cannot be resumed");
    body = std::move(*rb);
  }
  ReplicaPtr r = choose();  // counts the request in r->in_flight
  if (!r) {
    if (client_started_) return end_stream_with_error("no replica is available to continue the stream");
    return fail_before_start(503, "no healthy replica is available");
  }
  if (resuming) {
    resume_.begin_resume();
    r->n_resumed.fetch_add(1, std::memory_order_relaxed);
  }
  replica_ = r;
  tried_.push_back(r->id);
  ++n_attempts_;
  const uint64_t n = ++attempt_n_;
  status_ = 0;
  passthrough_ = false;
  is_sse_ = false;
  body_acc_.clear();
  sse_ = SseReader();
  r->n_requests.add(1);
  attempt_start_us_ = now_us();
  UpstreamRequest up{.method = req_.method, .target = req_.target};
  up.headers.emplace_back("X-Request-Id", request_id_);
  if (kind_ != ProxyKind::kModels) up.headers.emplace_back("Content-Type", "application/json");
  if (resumable_) up.headers.emplace_back("X-Keel-Token-Ids", "1");
  if (resuming) up.headers.emplace_back("X-Keel-Resume", "1");
  if (!kv_source_.empty()) {
    // The replica takes a pull hint from an admin only: the router's key (shared with the replicas).
    up.headers.emplace_back("X-Keel-Kv-Source", kv_source_);
    if (!svc_.config().admin_key.empty()) up.headers.emplace_back("Authorization", "Bearer " + svc_.config().admin_key);
  }
  up.body = std::move(body);
  auto weak = weak_from_this();
  UpstreamCallbacks cb{
      .on_head = [weak, n](int status, const HeaderList& h) { if (auto s = weak.lock()) s->on_head(n, status, h); },
      .on_data = [weak, n](std::string_view bytes) { if (auto s = weak.lock()) s->on_data(n, bytes); },
      .on_done = [self = shared_from_this(), n](UpstreamFailure f, const std::string& m) { self->on_done(n, f, m); }};
  call_ = svc_.upstream().send(r->endpoint, std::move(up), std::move(cb));
}

void ProxyRequest::on_head(uint64_t n, int status, const HeaderList& headers) {
  std::lock_guard lock(mu_);
  if (finished_ || n != attempt_n_) return;
  status_ = status;
  head_content_type_ = header_of(headers, "Content-Type");
  head_retry_after_ = header_of(headers, "Retry-After");
  const bool sse = head_content_type_.starts_with("text/event-stream");
  if (client_started_) {  // a resumed attempt: only a stream can continue the client's stream
    passthrough_ = status == 200 && sse;
    is_sse_ = passthrough_;
    return;
  }
  if (retryable_status(status) && n_retries_ < svc_.config().max_retries) {
    return;  // decided in on_done, once the error body is read (keeps the connection reusable)
  }
  passthrough_ = true;
  is_sse_ = sse;
  if (is_sse_) {
    client_started_ = true;
    ex_->begin_stream(status, "text/event-stream",
                      {{"X-Request-Id", request_id_}, {"Cache-Control", "no-cache"}, {"X-Keel-Replica", replica_->url}});
  }
}

void ProxyRequest::on_data(uint64_t n, std::string_view bytes) {
  std::lock_guard lock(mu_);
  if (finished_ || n != attempt_n_ || !passthrough_) return;
  if (!is_sse_) {
    if (static_cast<int64_t>(body_acc_.size() + bytes.size()) > svc_.config().max_response_bytes) {
      passthrough_ = false;
      status_ = 502;
      if (call_) call_->cancel();
      release_replica(true);
      return fail_before_start(502, "the replica's response is larger than the router's limit");
    }
    body_acc_.append(bytes);
    return;
  }
  // The events of one read go to the client in one push (one send, however many events the read held).
  const bool ok = sse_.feed(bytes, [this](const SseEvent& ev) { on_event(ev); });
  if (!events_out_.empty()) ex_->push(std::exchange(events_out_, {}));
  if (!ok) {
    if (call_) call_->cancel();
    release_replica(false);
    end_stream_with_error("the replica sent an oversized stream event");
  }
}

void ProxyRequest::on_event(const SseEvent& ev) {
  if (finished_) return;
  if (ev.event == "keel_tokens") {
    resume_.on_token_event(ev.data);
    return;
  }
  if (ev.comment_only) return;
  if (ev.data == "[DONE]") {
    saw_done_ = true;
    events_out_.append(ev.raw);
    return;
  }
  if (!resumable_) {
    events_out_.append(ev.raw);
    return;
  }
  auto out = resume_.rewrite_chunk(ev.data);
  if (!out) return;
  resume_.on_chunk_forwarded(ev.data);
  if (resume_.n_resumes() == 0) {
    events_out_.append(ev.raw);
  } else {
    events_out_.append(server::http::sse_event(*out, ev.event));
  }
}

void ProxyRequest::on_done(uint64_t n, UpstreamFailure failure, const std::string& message) {
  std::lock_guard lock(mu_);
  if (n != attempt_n_) return;
  call_.reset();
  if (finished_) return;
  const bool replica_error = failure != UpstreamFailure::kNone || status_ >= 500 || (client_started_ && !passthrough_);
  release_replica(!replica_error);
  if (failure == UpstreamFailure::kNone && passthrough_) {
    if (is_sse_) {
      finished_ = true;
      ex_->end_stream();
      return log_access(status_);
    }
    HttpResponse resp{.status = status_, .body = std::move(body_acc_)};
    if (!head_content_type_.empty()) resp.content_type = head_content_type_;
    if (!head_retry_after_.empty()) resp.headers.emplace_back("Retry-After", head_retry_after_);
    resp.headers.emplace_back("X-Request-Id", request_id_);
    resp.headers.emplace_back("X-Keel-Replica", replica_->url);
    finished_ = true;
    ex_->respond(std::move(resp));
    return log_access(status_);
  }
  const std::string why = failure == UpstreamFailure::kNone
                              ? fmt::format("replica {} answered {}{}", replica_->url, status_,
                                            passthrough_ ? " and ended the stream early" : "")
                              : fmt::format("replica {} failed ({}): {}", replica_->url,
                                            upstream_failure_name(failure), message);
  if (client_started_) {
    if (saw_done_ || resume_.finished()) {  // every token is out: only the end marker was lost
      if (!saw_done_) ex_->push(std::string(server::http::sse_done()));
      finished_ = true;
      ex_->end_stream();
      return log_access(status_);
    }
    KEEL_LOG_WARN("request {}: {} mid-stream; resuming elsewhere", request_id_, why);
    if (!resumable_ || n_attempts_ > svc_.config().max_retries + 2) {
      return end_stream_with_error(fmt::format("{}; the stream cannot be continued", why));
    }
    return attempt(true);
  }
  retry_later(why);
}

void ProxyRequest::retry_later(const std::string& why) {
  if (n_retries_ >= svc_.config().max_retries || !svc_.retry_budget().try_spend()) {
    int status = status_ >= 400 && status_ != 200 ? 502 : 503;
    return fail_before_start(status, fmt::format("no replica could serve the request: {}", why));
  }
  ++n_retries_;
  replica_->n_retries.fetch_add(1, std::memory_order_relaxed);
  const int64_t delay = static_cast<int64_t>(svc_.config().retry_backoff_ms) << (n_retries_ - 1);
  svc_.upstream().run_after(delay, [self = shared_from_this()] {
    std::lock_guard lock(self->mu_);
    if (!self->finished_) self->attempt(false);
  });
}

void ProxyRequest::release_replica(bool ok) {
  if (!replica_ || attempt_start_us_ == 0) return;
  replica_->in_flight.fetch_sub(1, std::memory_order_relaxed);
  replica_->work.fetch_sub(work_, std::memory_order_relaxed);
  work_ = 0;
  replica_->routed_slots_done.fetch_add(routed_slots_, std::memory_order_relaxed);
  routed_slots_ = 0;
  svc_.peer_feed().on_done(*replica_);
  if (group_counted_) {
    svc_.remove_group(group_);
    group_counted_ = false;
  }
  svc_.index().remove_in_flight(replica_->id, keys_, ok);
  svc_.latency_seconds(*replica_).observe(static_cast<double>(now_us() - attempt_start_us_) * 1e-6);
  if (ok) {
    replica_->breaker.record_success();
  } else {
    replica_->n_errors.fetch_add(1, std::memory_order_relaxed);
    replica_->breaker.record_failure(now_us() / 1000);
  }
  attempt_start_us_ = 0;
}

void ProxyRequest::fail_before_start(int status, const std::string& message, int64_t retry_after_s) {
  finished_ = true;
  auto r = error_response(status, message);
  if (retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  r.headers.emplace_back("X-Request-Id", request_id_);
  ex_->respond(std::move(r));
  log_access(status);
}

void ProxyRequest::end_stream_with_error(const std::string& message) {
  finished_ = true;
  ex_->push(server::http::sse_event(error_body(message, "service_unavailable", 503)));
  ex_->end_stream();
  log_access(503);
}

// Formatted here, written by the access log's own thread (access_log.h): no write(2) on the io thread.
void ProxyRequest::log_access(int status) {
  AccessLog* log = svc_.access_log();
  if (log == nullptr || log_level() > LogLevel::kInfo) return;
  log->write(fmt::format("keel info: access id={} {} {} client={} tenant={} replica={} status={} attempts={} "
                         "resumes={} keys={} ms={:.1f}",
                         request_id_, req_.method, req_.path, req_.remote.empty() ? "-" : req_.remote,
                         tenant_.empty() ? "-" : tenant_,
                         replica_ ? replica_->url : "-", status, n_attempts_, resume_.n_resumes(), keys_->size(),
                         static_cast<double>(now_us() - start_us_) / 1e3));
}

void register_proxy_routes(RouterService& svc, server::http::Router& router) {
  auto route = [&svc](ProxyKind kind) {
    return [&svc, kind](HttpRequest&& req, const ExchangePtr& ex) {
      std::make_shared<ProxyRequest>(svc, kind, std::move(req), ex)->run();
    };
  };
  router.add("POST", "/v1/chat/completions", route(ProxyKind::kChat));
  router.add("POST", "/v1/completions", route(ProxyKind::kCompletion));
  router.add("POST", "/generate", route(ProxyKind::kNative));
  router.add("GET", "/v1/models", route(ProxyKind::kModels));
}

}  // namespace keel::router