// The admin API: list, add, drain and remove replicas at run time (docs/router.md). Bodies are JSON;
// bad bodies are 400, unknown replicas 404, duplicates 409, a missing or wrong admin key 401. Every
// change is saved to the state file when one is configured (state_file.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "server/http/admin_access.h"
#include "router/service.h"

namespace keel::router {

using nlohmann::json;
using server::http::ExchangePtr;
using server::http::HttpRequest;
using server::http::HttpResponse;

namespace {

void respond(const ExchangePtr& ex, int status, const json& body) {
  ex->respond(HttpResponse{.status = status, .body = body.dump()});
}

void respond_error(const ExchangePtr& ex, int status, std::string_view message) {
  std::string_view type = status == 401   ? "authentication_error"
                          : status == 403 ? "permission_error"
                          : status == 404 ? "not_found_error"
                                          : "invalid_request_error";
  respond(ex, status, {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", status}}}});
}

int status_of(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kInvalidArgument: return s.message().find("already registered") != std::string::npos ? 409 : 400;
    default: return 500;
  }
}

// The request's JSON object with a string "url", or an error already sent.
std::optional<json> read_body(const HttpRequest& req, const ExchangePtr& ex) {
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    respond_error(ex, 400, "the body must be a JSON object");
    return std::nullopt;
  }
  if (!j.contains("url") || !j["url"].is_string()) {
    respond_error(ex, 400, "'url' (a string) is required");
    return std::nullopt;
  }
  return j;
}

std::optional<ReplicaLabels> read_labels(const json& j, const ExchangePtr& ex) {
  ReplicaLabels labels;
  if (!j.contains("labels")) return labels;
  const json& l = j["labels"];
  if (!l.is_object()) {
    respond_error(ex, 400, "'labels' must be an object");
    return std::nullopt;
  }
  for (const auto& [k, v] : l.items()) {
    std::string* dst = k == "region" ? &labels.region : k == "cloud" ? &labels.cloud : k == "pool" ? &labels.pool : nullptr;
    if (!dst) {
      respond_error(ex, 400, fmt::format("unknown label '{}' (region, cloud, pool)", k));
      return std::nullopt;
    }
    if (!v.is_string()) {
      respond_error(ex, 400, fmt::format("label '{}' must be a string", k));
      return std::nullopt;
    }
    *dst = v.get<std::string>();
  }
  return labels;
}

json describe(const Replica& r, const PrefixIndex& index) {
  const int64_t now_ms = now_us() / 1000;
  return {{"url", r.url},
          {"labels", {{"region", r.labels.region}, {"cloud", r.labels.cloud}, {"pool", r.labels.pool}}},
          {"state", r.state.load() == ReplicaState::kActive ? "active" : "draining"},
          {"healthy", r.healthy.load()},
          {"breaker", breaker_state_name(r.breaker.state(now_ms))},
          {"in_flight", r.in_flight.load()},
          {"work", r.work.load()},
          {"queued", r.queued.load()},
          {"cache_source", index.exact_live(r.id) ? "exact" : "approximate"},
          {"cache_entries", index.exact_live(r.id) ? index.n_exact(r.id) : index.n_approx(r.id)}};
}

// The change is made; a state file that cannot be rewritten is the operator's to fix (500 says so).
void respond_saved(RouterService& svc, const ExchangePtr& ex, int status, const json& body) {
  if (Status s = svc.persist(); !s.ok()) {
    return respond_error(ex, 500, fmt::format("applied, but the state file was not updated: {}", s.message()));
  }
  respond(ex, status, body);
}

}  // namespace

bool admit_admin(const RouterService& svc, const HttpRequest& req, const ExchangePtr& ex, std::string_view what) {
  auto denial = server::http::deny_admin(svc.config().admin_key, req, what);
  if (denial) respond_error(ex, denial->status, denial->message);
  return !denial;
}

void register_admin_routes(RouterService& svc, server::http::Router& router) {
  auto guarded = [&svc](auto fn) {
    return [&svc, fn](HttpRequest&& req, const ExchangePtr& ex) {
      if (admit_admin(svc, req, ex, "admin calls")) fn(req, ex);
    };
  };
  router.add("GET", "/admin/replicas", guarded([&svc](const HttpRequest&, const ExchangePtr& ex) {
               json list = json::array();
               for (const auto& r : *svc.replicas().snapshot()) list.push_back(describe(*r, svc.index()));
               respond(ex, 200, {{"replicas", std::move(list)}});
             }));
  router.add("POST", "/admin/replicas", guarded([&svc](const HttpRequest& req, const ExchangePtr& ex) {
               auto j = read_body(req, ex);
               if (!j) return;
               auto labels = read_labels(*j, ex);
               if (!labels) return;
               Status s = svc.add_replica((*j)["url"].get<std::string>(), std::move(*labels));
               if (!s.ok()) return respond_error(ex, status_of(s), s.message());
               respond_saved(svc, ex, 201, {{"added", (*j)["url"]}});
             }));
  router.add("POST", "/admin/replicas/drain", guarded([&svc](const HttpRequest& req, const ExchangePtr& ex) {
               auto j = read_body(req, ex);
               if (!j) return;
               Status s = svc.replicas().drain((*j)["url"].get<std::string>());
               if (!s.ok()) return respond_error(ex, status_of(s), s.message());
               respond_saved(svc, ex, 200, {{"draining", (*j)["url"]}});
             }));
  router.add("POST", "/admin/replicas/remove", guarded([&svc](const HttpRequest& req, const ExchangePtr& ex) {
               auto j = read_body(req, ex);
               if (!j) return;
               auto removed = svc.replicas().remove((*j)["url"].get<std::string>());
               if (!removed.ok()) return respond_error(ex, status_of(removed.status()), removed.status().message());
               svc.index().forget((*removed)->id);
               respond_saved(svc, ex, 200, {{"removed", (*j)["url"]}});
             }));
}

}  // namespace keel::router
