// `keel router`: the cache-aware request router in front of `keel serve` replicas (docs/router.md).
// Composes RouterConfig from flags, loads the model's tokenizer and chat template when --model is
// given (so prefixes are keyed by the replicas' own token ids), registers the replicas, serves until
// SIGTERM/SIGINT.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/model_files.h"
#include "cli/stop_signals.h"
#include "router/service.h"
#include "server/http/server.h"
#include "server/native_generate.h"
#include "server/openai/request_parse.h"
#include "server/prompt.h"

namespace keel::cli {
namespace {

struct RouterArgs {
  std::vector<std::string> workers;
  std::string model;
  std::string tenants;
  server::http::ServerConfig http;
  router::RouterConfig router;
  std::string instance = "0/1";  // --instance i/n (CacheAwareConfig::set_instance)
};

int fail(int code, const Status& st) {
  std::fprintf(stderr, "keel router: %s\n", st.to_string().c_str());
  return code;
}

// "URL" or "URL@region=eu,cloud=gcp,pool=a".
Result<std::pair<std::string, router::ReplicaLabels>> parse_worker(const std::string& spec) {
  auto at = spec.find('@');
  router::ReplicaLabels labels;
  if (at != std::string::npos) {
    std::string rest = spec.substr(at + 1);
    size_t pos = 0;
    while (pos <= rest.size()) {
      size_t comma = rest.find(',', pos);
      std::string kv = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      auto eq = kv.find('=');
      std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
      std::string* dst = k == "region" ? &labels.region : k == "cloud" ? &labels.cloud : k == "pool" ? &labels.pool : nullptr;
      if (!dst || eq == std::string::npos) {
        return make_error(ErrorCode::kInvalidArgument, "worker '{}': labels are region=, cloud=, pool=", spec);
      }
      *dst = v;
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  return std::pair{spec.substr(0, at), labels};
}

// The head of the token ids keel serve would build (same parser, template and tokenizer code): the
// first max_tokens of them, without encoding the rest of a long prompt (server/prompt.h).
router::PromptTokenizer make_tokenizer(std::shared_ptr<tokenizer::Tokenizer> tok,
                                       std::shared_ptr<std::optional<tokenizer::ChatTemplate>> tmpl,
                                       int64_t max_tokens) {
  const auto max = static_cast<size_t>(max_tokens);
  return [tok, tmpl, max](std::string_view path, std::string_view body) -> std::optional<std::vector<int32_t>> {
    server::openai::ParseLimits limits;
    limits.n_vocab = tok->n_vocab();
    auto head = [max](const std::vector<int32_t>& ids) {
      return std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), max)));
    };
    if (path == "/v1/chat/completions") {
      auto req = server::openai::parse_chat_request(body, limits);
      if (!req.ok() || !tmpl->has_value()) return std::nullopt;
      auto text = server::chat_prompt_text(*tok, &tmpl->value(), req.value().messages);
      if (!text.ok()) return std::nullopt;
      return server::leading_prompt_tokens(*tok, text.value(), server::kChatEncode, max);
    }
    if (path == "/v1/completions") {
      auto req = server::openai::parse_completion_request(body, limits);
      if (!req.ok()) return std::nullopt;
      if (req.value().prompt_is_ids) return head(req.value().prompt_ids);
      return server::leading_prompt_tokens(*tok, req.value().prompt_text, server::kTextEncode, max);
    }
    if (path == "/generate") {
      auto req = server::parse_native_request(body, limits);
      if (!req.ok()) return std::nullopt;
      if (req.value().has_ids) return head(req.value().input_ids);
      return server::leading_prompt_tokens(*tok, req.value().text, server::kTextEncode, max);
    }
    return std::nullopt;
  };
}

int run_router(RouterArgs a) {
  const sigset_t stop_signals = block_stop_signals();
  if (Status st = a.router.cache_aware.set_instance(a.instance); !st.ok()) return fail(2, st);
  if (Status st = a.router.validate(); !st.ok()) return fail(2, st);
  if (!a.router.peers.empty() && a.router.cache_aware.instances != static_cast<int64_t>(a.router.peers.size()) + 1) {
    KEEL_LOG_WARN(
        "{} --peer given with --instance {}: give every instance --instance i/n with n = peers + 1, or "
        "simultaneous ties are not split between the instances",
        a.router.peers.size(), a.instance);
  }
  if (Status st = a.http.validate(); !st.ok()) return fail(2, st);
  auto policy = router::make_policy(a.router.policy, a.router.cache_aware);
  if (!policy.ok()) return fail(2, policy.status());
  std::unique_ptr<router::TenantTable> tenants;
  if (!a.tenants.empty()) {
    auto t = router::TenantTable::load(a.tenants);
    if (!t.ok()) return fail(2, t.status());
    tenants = std::move(t).value();
  }
  router::PromptTokenizer tokenize;
  if (!a.model.empty()) {
    auto tok = load_tokenizer(a.model);
    if (!tok.ok()) return fail(2, tok.status());
    auto tmpl = load_chat_template(**tok);
    if (!tmpl.ok()) return fail(2, tmpl.status());
    tokenize = make_tokenizer(std::shared_ptr<tokenizer::Tokenizer>(std::move(tok).value()),
                              std::make_shared<std::optional<tokenizer::ChatTemplate>>(std::move(tmpl).value()),
                              a.router.max_prefix_tokens);
  }
  router::RouterService svc(a.router, std::move(policy).value(), std::move(tenants), std::move(tokenize));
  if (Status st = svc.open_decision_log(); !st.ok()) return fail(2, st);
  std::vector<std::pair<std::string, router::ReplicaLabels>> workers;
  for (const auto& w : a.workers) {
    auto spec = parse_worker(w);
    if (!spec.ok()) return fail(2, spec.status());
    workers.push_back(std::move(spec).value());
  }
  if (Status st = svc.load_replicas(workers); !st.ok()) return fail(2, st);
  server::http::Router routes;
  svc.add_routes(routes);
  server::http::HttpServer http(a.http, std::move(routes));
  // Upstream sockets on the front end's threads unless --upstream-threads > 0.
  svc.start(http.io_contexts(), http.threads_per_context());
  if (Status st = http.start(); !st.ok()) return fail(2, st);
  KEEL_LOG_INFO("router on http://{}:{} ({} replicas, policy {}, prefix keys: {})", a.http.host, http.port(),
                svc.replicas().snapshot()->size(), a.router.policy, a.model.empty() ? "characters" : "tokens");
  int sig = 0;
  sigwait(&stop_signals, &sig);
  KEEL_LOG_INFO("signal {}: stopping", sig);
  svc.close_peer_feed();  // its streams would hold the front end's drain
  http.stop();
  svc.stop();
  return 0;
}

}  // namespace

void register_router(CLI::App& app) {
  auto a = std::make_shared<RouterArgs>();
  a->http.port = 8080;
  a->http.n_io_threads = 1;
  a->http.context_per_thread = true;  // the router's handlers never block: an event loop per io thread
  auto* cmd = app.add_subcommand("router", "Route OpenAI requests across keel serve replicas by cached prefix and load");
  cmd->add_option("--workers", a->workers, "Replica URLs: http://host:port[@region=..,cloud=..,pool=..]");
  cmd->add_option("-m,--model", a->model, "GGUF/HF model whose tokenizer keys prefixes (default: character keys)");
  cmd->add_option("--tenants", a->tenants, "Tenants/API keys JSON file (keys stored as SHA-256)");
  cmd->add_option("--admin-key", a->router.admin_key,
                  "Bearer key required on /admin/* and the peer feed (without one: loopback clients only)")
      ->envname("KEEL_ADMIN_KEY");
  cmd->add_option("--state-file", a->router.state_file,
                  "Replica set saved here on every admin change and reloaded at start-up (then --workers is not used)");
  cmd->add_option("--host", a->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", a->http.port, "Port to listen on (0 = any free port)")->capture_default_str();
  cmd->add_option("--http-threads", a->http.n_io_threads, "Front-end io threads")->capture_default_str();
  cmd->add_option("--busy-poll-us", a->http.busy_poll_us, "Microseconds an io thread polls for events before it sleeps (0 = sleeps at once; > 0 spends an idle core to skip the wake-up per event)")->capture_default_str();
  cmd->add_option("--upstream-threads", a->router.upstream.n_threads, "Upstream io threads of their own (0 = run on the front end's --http-threads)")->capture_default_str();
  cmd->add_option("--max-body-bytes", a->http.max_body_bytes, "Largest request body (413 above)")->capture_default_str();
  cmd->add_option("--max-response-bytes", a->router.max_response_bytes, "Largest non-streamed response")->capture_default_str();
  cmd->add_option("--policy", a->router.policy, "round_robin | random | power_of_two | cache_aware")->capture_default_str();
  cmd->add_option("--balance-abs-threshold", a->router.cache_aware.balance_abs_threshold, "Most in-flight requests any replica may hold above the least busy one after a decision")->capture_default_str();
  cmd->add_option("--balance-idle-cap", a->router.cache_aware.balance_idle_cap, "Most in-flight requests a replica may hold while another stays idle and no more requests than replicas are in flight")->capture_default_str();
  cmd->add_option("--balance-rel-threshold", a->router.cache_aware.balance_rel_threshold, "Load ratio over the least loaded")->capture_default_str();
  cmd->add_option("--work-request-tokens", a->router.cache_aware.work_request_tokens, "Cost of a request beyond its uncached prompt tokens (work rule)")->capture_default_str();
  cmd->add_option("--balance-work-slack", a->router.cache_aware.balance_work_slack, "Requests a prefix holder may hold beyond the count bound when a spill would repeat its prefill (0 = work rule off)")->capture_default_str();
  cmd->add_option("--balance-abs-work", a->router.cache_aware.balance_abs_work, "Tokens a work-rule pick may finish later than the earliest allowed one")->capture_default_str();
  cmd->add_option("--group-affinity", a->router.cache_aware.group_affinity, "A prompt group with fewer requests than this in flight goes to its best match whatever the count bound (0 = off)")->capture_default_str();
  cmd->add_option("--spill-factor", a->router.cache_aware.spill_factor, "Equal-match set and cost spills: a holder over the count bound spills only when its work ahead exceeds this x (the spill's extra prefill + the target's work ahead); 0 = the count bound with --balance-idle-cap, --balance-work-slack and --group-affinity")->capture_default_str();
  cmd->add_option("--kv-pull-cost", a->router.cache_aware.kv_pull_cost, "Cost of a KV-pulled prompt token as a share of a prefilled one, in spill decisions (0 = decisions ignore pulls; --kv-pull-min-tokens)")->capture_default_str();
  cmd->add_option("--equal-match-tokens", a->router.cache_aware.equal_match_tokens, "Holders whose uncached tokens are within this many of the best are equal (--spill-factor)")->capture_default_str();
  cmd->add_option("--equal-match-ratio", a->router.cache_aware.equal_match_ratio, "... or within this share of the prompt, if more (--spill-factor)")->capture_default_str();
  cmd->add_option("--spill-slack", a->router.cache_aware.spill_slack, "Most requests a holder may queue over the count cap instead of spilling (--spill-factor)")->capture_default_str();
  cmd->add_option("--burst-window-ms", a->router.cache_aware.burst_window_ms, "A request with --burst-arrivals of its group routed within this window is a burst: the count bound decides (--spill-factor)")->capture_default_str();
  cmd->add_option("--burst-arrivals", a->router.cache_aware.burst_arrivals, "See --burst-window-ms")->capture_default_str();
  cmd->add_option("--near-burst-window-ms", a->router.cache_aware.near_burst_window_ms, "With --peer: count the other instances' possible unseen arrivals toward the burst guard only while the group's previous arrival is at most this old (0 = always)")->capture_default_str();
  cmd->add_option("--burst-share", a->router.cache_aware.burst_share, "... and only while its group holds at least this share of the requests in flight (0 = any share; 0.33 keeps a Poisson clump of one group among many on its holder)")->capture_default_str();
  cmd->add_option("--burst-rate-factor", a->router.cache_aware.burst_rate_factor, "A burst needs --burst-arrivals + ceil(this x the arrivals its group's own rate predicts in the window): 3 keeps a hot group's Poisson clumps from counting as bursts; 0 = the absolute bar of --burst-arrivals, the default)")->capture_default_str();
  cmd->add_option("--instance", a->instance,
                  "This router is instance i of n on the same replicas (i/n; several behind one balancer): "
                  "simultaneous burst picks of the instances interleave instead of stacking")
      ->capture_default_str();
  cmd->add_option(
      "--peer", a->router.peers,
      "Another router instance on the same replicas (http://host:port; repeatable): subscribe to its "
      "/v1/router/peer_feed and, while every peer feed is live, count its requests exactly instead of "
      "the --instance estimate (keep --instance i/n: it splits simultaneous ties, and is the fallback while a "
      "peer feed is down)");
  cmd->add_option("--decision-log", a->router.decision_log,
                  "Append one JSON line per routing decision to this file (candidates' loads, work, matches, "
                  "the pick; for tracing the policy, docs/router.md)");
  cmd->add_flag("--peer-work", a->router.peer_work,
                "With --peer: the work rule and cost spills also count the peers' work in flight (off by default: "
                "on the device test bed it made more cold copies; the loads are exact either way)");
  cmd->add_option("--min-match-ratio", a->router.cache_aware.min_match_ratio, "Matched share of the prompt that counts")->capture_default_str();
  cmd->add_option("--region-penalty", a->router.cache_aware.remote_penalty, "Load added to other regions' replicas")->capture_default_str();
  cmd->add_option("--region-header", a->router.region_header, "Header naming the request's region")->capture_default_str();
  cmd->add_option("--connect-timeout-ms", a->router.upstream.connect_timeout_ms, "Upstream connect timeout")->capture_default_str();
  cmd->add_option("--first-byte-timeout-ms", a->router.upstream.first_byte_timeout_ms, "Request sent -> response head")->capture_default_str();
  cmd->add_option("--idle-timeout-ms", a->router.upstream.idle_timeout_ms, "Longest pause inside a response")->capture_default_str();
  cmd->add_option("--upstream-pool", a->router.upstream.max_idle_per_replica, "Kept-alive connections pooled per replica")->capture_default_str();
  cmd->add_option("--upstream-pool-idle-ms", a->router.upstream.pool_idle_ms, "A pooled connection unused this long is closed")->capture_default_str();
  cmd->add_option("--max-retries", a->router.max_retries, "Other replicas tried before the client sees an error")->capture_default_str();
  cmd->add_option("--retry-backoff-ms", a->router.retry_backoff_ms, "First retry delay (doubles)")->capture_default_str();
  cmd->add_option("--health-interval-ms", a->router.health_interval_ms, "Active health check period")->capture_default_str();
  cmd->add_option("--breaker-threshold", a->router.breaker.failure_threshold, "Consecutive failures that open the breaker")->capture_default_str();
  cmd->add_option("--breaker-open-ms", a->router.breaker.open_ms, "Open time before a half-open probe")->capture_default_str();
  cmd->add_option("--char-block-bytes", a->router.char_block_bytes, "Prefix key block without a tokenizer")->capture_default_str();
  cmd->add_flag("!--no-resume", a->router.resume_streams, "Do not resume streams whose replica died");
  cmd->add_flag("!--no-cache-events", a->router.cache_events, "Only the approximate index (no /v1/cache/events)");
  cmd->add_option("--body-threads", a->router.body_threads, "Threads that prepare request bodies over 64 KiB")
      ->capture_default_str();
  cmd->add_option("--body-queue", a->router.body_queue, "Large bodies waiting for those threads before 429")
      ->capture_default_str();
  cmd->add_option("--max-prefix-tokens", a->router.max_prefix_tokens,
                  "Prefix keys come from a prompt's first N tokens (N x 4 bytes without --model)")
      ->capture_default_str();
  cmd->add_option("--kv-pull-min-tokens", a->router.kv_pull_min_tokens,
                  "Name a replica holding at least N more prompt tokens as the KV source of a request (0 = off)")
      ->capture_default_str();
  cmd->add_option("--max-approx-entries", a->router.max_approx_entries,
                  "Prefix keys the approximate index keeps per replica (about 40 bytes each when full)")
      ->capture_default_str();
  cmd->add_flag("!--no-access-log", a->router.access_log, "No access log lines");
  cmd->callback([a] { set_exit_code(run_router(*a)); });
}

}  // namespace keel::cli
