// One proxied request, from admission to the last byte: authentication and rate limit (tenants),
// prefix keys, replica choice (policy over the healthy candidates), the upstream call, retries with
// backoff while nothing has reached the client, SSE pass-through (event by event, as they arrive), and
// mid-stream resumption on another replica (router/stream_resume.h). Created per request on an io
// thread; its upstream callbacks and the client's disconnect may run on other threads, so every
// member is guarded by mu_.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "router/body_scan.h"
#include "router/service.h"
#include "router/sse_reader.h"
#include "router/stream_resume.h"
#include "server/http/exchange.h"
#include "server/http/message.h"

namespace keel::router {

enum class ProxyKind { kChat, kCompletion, kNative, kModels };

// Shared by proxy.cc and proxy_admit.cc: fresh random bits (thread-local generator) and the
// OpenAI-style error body/response the router answers with on its own.
uint64_t random_u64();
std::string error_body(std::string_view message, std::string_view type, int code);
server::http::HttpResponse error_response(int status, std::string_view message);

// A request body larger than this is scanned, parsed and tokenized on a body thread
// (RouterService::body_work), not on the io thread that received it: a 7.5 MB chat prompt held the io
// thread, and every other connection on it, for 231 ms (docs/router.md, "Long prompts").
inline constexpr size_t kIoThreadBodyMaxBytes = 64 << 10;

class ProxyRequest : public std::enable_shared_from_this<ProxyRequest> {
 public:
  ProxyRequest(RouterService& svc, ProxyKind kind, server::http::HttpRequest&& req, server::http::ExchangePtr ex);
  void run();

 private:
  bool admit();
  // On a body thread: parse_body and compute_keys, then back to the connection's io thread to start.
  void prepare_off_io_thread();
  void start_attempts();  // under mu_, on the connection's io thread
  bool parse_body();
  void compute_keys();
  void compute_prefix_keys();
  ReplicaPtr choose();
  // KV pulls (RouterConfig::kv_pull_min_tokens). The candidate with the longest match among those
  // whose cache feed is live (ties: the lower load), or -1 when none holds any of the prompt.
  int64_t best_exact_holder(std::span<const CandidateView> views, std::span<const PrefixIndex::View> held) const;
  // Whether a replica matching `to` (a keel replica when to_exact) would pull the prefix from `from`:
  // pulls are on and `from` holds at least kv_pull_min_tokens more of the prompt.
  bool may_pull(const CandidateView& from, const CandidateView& to, bool to_exact) const;
  void attempt(bool resuming);
  void on_head(uint64_t n, int status, const HeaderList& headers);
  void on_data(uint64_t n, std::string_view bytes);
  void on_done(uint64_t n, UpstreamFailure failure, const std::string& message);
  void on_event(const SseEvent& ev);
  void retry_later(const std::string& why);
  // Answers status (an OpenAI-style error) before any replica was tried; retry_after_s > 0 adds
  // Retry-After (429s: a tenant's rate limit, a full body queue).
  void fail_before_start(int status, const std::string& message, int64_t retry_after_s = 0);
  void end_stream_with_error(const std::string& message);
  void release_replica(bool ok);
  void log_access(int status);

  RouterService& svc_;
  ProxyKind kind_;
  server::http::HttpRequest req_;
  server::http::ExchangePtr ex_;
  std::mutex mu_;
  int64_t start_us_ = 0;
  std::string request_id_;
  std::string tenant_;
  std::string pool_;
  std::string region_;
  nlohmann::json body_;  // only for a resumable stream (parse_body)
  BodyFields fields_;
  std::string body_text_;  // what goes to replicas (seed injected when streams can be resumed)
  bool stream_ = false;
  bool resumable_ = false;
  PrefixIndex::KeysPtr keys_ = std::make_shared<const std::vector<uint64_t>>();  // prefix keys of the prompt
  int64_t slots_per_key_ = 1;  // KV slots (tokens) one key stands for: 1 for token keys, estimated for character blocks
  std::vector<ReplicaId> tried_;
  int32_t n_attempts_ = 0;
  int32_t n_retries_ = 0;
  // The current attempt.
  uint64_t attempt_n_ = 0;  // callbacks of older attempts are ignored
  ReplicaPtr replica_;
  int64_t work_ = 0;  // this attempt's cost, counted in replica_->work until release_replica
  std::string kv_source_;  // X-Keel-Kv-Source of this attempt: the replica to pull the prefix's KV from
  int64_t routed_slots_ = 0;  // this attempt's estimated new KV slots, added to routed_slots_done at release
  bool has_group_ = false;      // the prompt has keys: group_ is its group (policy.h, kGroupTokens)
  uint64_t group_ = 0;
  size_t group_index_ = 0;      // group_'s position in keys_ (announced prompts are matched there)
  bool group_counted_ = false;  // this attempt is counted in the service's group table
  std::shared_ptr<UpstreamCall> call_;
  int64_t attempt_start_us_ = 0;
  int status_ = 0;
  std::string head_content_type_;  // of the current attempt's response head ("" if absent)
  std::string head_retry_after_;
  bool passthrough_ = false;  // this attempt's response goes to the client
  bool is_sse_ = false;
  std::string body_acc_;
  std::string events_out_;  // the SSE events of one upstream read, pushed to the client together
  SseReader sse_;
  // The client side.
  bool client_started_ = false;  // stream head sent
  bool finished_ = false;
  bool saw_done_ = false;
  ResumeState resume_;
};

}  // namespace keel::router
