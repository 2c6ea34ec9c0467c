// ProxyRequest's stages before the upstream call: admission (API key, tenant, rate limit), the body
// (one pass for the stream flag, resumability and the prompt; the DOM only for a resumable stream,
// which may need a seed and a resume body), prefix keys, and the choice of a replica among the
// healthy candidates.
#include <algorithm>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "base/clock.h"
#include "router/body_scan.h"
#include "router/prefix_key.h"
#include "router/proxy.h"

namespace keel::router {

using nlohmann::json;

namespace {

std::string bearer_key(std::string_view auth) {
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() <= kBearer.size() || !server::http::iequals(auth.substr(0, kBearer.size()), kBearer)) return {};
  return std::string(auth.substr(kBearer.size()));
}

// Rough bytes per token of English text, to estimate the KV slots a character block will take.
constexpr int32_t kBytesPerToken = 4;

}  // namespace

bool ProxyRequest::admit() {
  TenantTable* tenants = svc_.tenants();
  region_ = std::string(req_.header(svc_.config().region_header));
  if (!tenants) return true;
  std::string key = bearer_key(req_.header("Authorization"));
  if (key.empty()) {
    fail_before_start(401, "missing API key: send 'Authorization: Bearer <key>'");
    return false;
  }
  KeyEntry* entry = tenants->find_key(key);
  if (!entry) {
    fail_before_start(401, "invalid API key");
    return false;
  }
  tenant_ = entry->tenant->name;
  pool_ = entry->tenant->pool;
  if (region_.empty()) region_ = entry->tenant->region;
  if (entry->bucket) {
    if (int64_t wait_s = entry->bucket->try_take(now_us()); wait_s > 0) {
      fail_before_start(429, fmt::format("rate limit of tenant '{}' exceeded; retry in {} s", tenant_, wait_s), wait_s);
      return false;
    }
  }
  return true;
}

bool ProxyRequest::parse_body() {
  if (kind_ == ProxyKind::kModels) return true;
  const BodyKind kind = kind_ == ProxyKind::kChat         ? BodyKind::kChat
                        : kind_ == ProxyKind::kCompletion ? BodyKind::kCompletion
                                                          : BodyKind::kNative;
  auto fields = scan_body(req_.body, kind);
  if (!fields) {
    fail_before_start(400, "the request body is not a JSON object");
    return false;
  }
  fields_ = std::move(*fields);
  stream_ = fields_.stream;
  resumable_ = stream_ && fields_.single && svc_.config().resume_streams && kind_ != ProxyKind::kNative;
  if (resumable_) {
    body_ = json::parse(req_.body, nullptr, false);  // the resume body is built from it
    if (body_.is_discarded()) {                      // not expected after the scan; never an exception on an io thread
      fail_before_start(400, "the request body is not a JSON object");
      return false;
    }
    if (!fields_.has_seed) {
      body_["seed"] = random_u64() >> 33;  // every replica that continues this stream samples alike
      body_text_ = body_.dump();
      return true;
    }
  }
  body_text_ = std::move(req_.body);
  return true;
}

void ProxyRequest::compute_keys() {
  compute_prefix_keys();
  if (keys_->empty()) return;
  // The key that covers the prompt's first kGroupTokens tokens (or all of a shorter prompt).
  const int64_t keys_for_group = (kGroupTokens + slots_per_key_ - 1) / slots_per_key_;
  group_index_ = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(keys_->size()), keys_for_group) - 1);
  group_ = (*keys_)[group_index_];
  has_group_ = true;
}

// Keys of the prompt's head only (RouterConfig::max_prefix_tokens; the tokenizer stops there too).
void ProxyRequest::compute_prefix_keys() {
  if (kind_ == ProxyKind::kModels || !svc_.policy().uses_prefix()) return;
  const auto max_tokens = static_cast<size_t>(svc_.config().max_prefix_tokens);
  if (fields_.prompt_is_ids) {
    auto ids = std::span<const int32_t>(fields_.prompt_ids);
    keys_ = std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(ids.first(std::min(ids.size(), max_tokens))));
    return;
  }
  if (const auto& tok = svc_.tokenizer()) {
    if (auto ids = tok(req_.path, body_text_)) {
      keys_ = std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(*ids));
      return;
    }
  }
  const std::string_view text = fields_.prompt_text;
  keys_ = std::make_shared<const std::vector<uint64_t>>(char_prefix_hashes(
      text.substr(0, std::min(text.size(), max_tokens * static_cast<size_t>(kBytesPerToken))), svc_.config().char_block_bytes));
  slots_per_key_ = std::max(1, svc_.config().char_block_bytes / kBytesPerToken);
}

int64_t ProxyRequest::best_exact_holder(std::span<const CandidateView> views,
                                        std::span<const PrefixIndex::View> held) const {
  int64_t best = -1;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!held[i].exact_live || views[i].match == 0) continue;
    const auto b = static_cast<size_t>(best);
    if (best < 0 || views[i].match > views[b].match ||
        (views[i].match == views[b].match && views[i].load < views[b].load)) {
      best = static_cast<int64_t>(i);
    }
  }
  return best;
}

bool ProxyRequest::may_pull(const CandidateView& from, const CandidateView& to, bool to_exact) const {
  const int64_t min_tokens = svc_.config().kv_pull_min_tokens;
  return min_tokens > 0 && to_exact && (from.match - to.match) * slots_per_key_ >= min_tokens;
}

ReplicaPtr ProxyRequest::choose() {
  const int64_t t0 = now_us();
  const int64_t now_ms = t0 / 1000;
  auto list = svc_.replicas().snapshot();
  std::vector<const ReplicaPtr*> cands;
  auto eligible = [&](const ReplicaPtr& r, bool allow_tried) {
    if (r->state.load() != ReplicaState::kActive || !r->healthy.load()) return false;
    if (!pool_.empty() && r->labels.pool != pool_) return false;
    if (!r->breaker.available(now_ms)) return false;
    return allow_tried || std::find(tried_.begin(), tried_.end(), r->id) == tried_.end();
  };
  for (const auto& r : *list) {
    if (eligible(r, false)) cands.push_back(&r);
  }
  if (cands.empty()) {
    for (const auto& r : *list) {
      if (eligible(r, true)) cands.push_back(&r);
    }
  }
  if (cands.empty()) return nullptr;
  const bool prefix = svc_.policy().uses_prefix() && !keys_->empty();
  std::vector<CandidateView> views;
  views.reserve(cands.size());
  // Loads are read and the pick counted in one step: concurrent decisions on other io threads see it.
  svc_.drain_peers();  // the peers' decisions that reached this host by now count in this one
  std::lock_guard decide(svc_.decision_mutex());
  // Every --peer feed live: the peers' own requests are known exactly (their feeds), no estimate.
  const bool synced = svc_.peers().all_live();
  const int64_t instances = svc_.config().cache_aware.instances;
  const bool peer_work = svc_.config().peer_work;
  std::vector<ReplicaId> ids;
  ids.reserve(cands.size());
  for (const ReplicaPtr* r : cands) ids.push_back((*r)->id);
  std::vector<PrefixIndex::View> held(cands.size());
  svc_.index().view(ids, prefix ? std::span<const uint64_t>(*keys_) : std::span<const uint64_t>(), held);
  for (size_t i = 0; i < cands.size(); ++i) {
    const Replica& rep = **cands[i];
    views.push_back(CandidateView{
        .load = synced ? rep.load_synced() : rep.load(instances),
        .work = rep.work.load(std::memory_order_relaxed) +
                (synced && peer_work ? rep.peer_work.load(std::memory_order_relaxed) : 0),
        .match = held[i].match,
        .free_cache = rep.free_cache(held[i].n_entries),
        .remote = !region_.empty() && !rep.labels.region.empty() && rep.labels.region != region_});
  }
  // KV pulls: only keel replicas (their cache feed live) export and import. The best of them is the
  // source of any pull, and with --kv-pull-cost the decision weighs what a pull from it would spare.
  const int64_t holder = prefix && svc_.config().kv_pull_min_tokens > 0 ? best_exact_holder(views, held) : -1;
  const int64_t pull_match = holder >= 0 ? views[static_cast<size_t>(holder)].match : 0;
  if (holder >= 0 && svc_.config().cache_aware.kv_pull_cost > 0) {
    for (size_t i = 0; i < views.size(); ++i) {
      views[i].can_pull = may_pull(views[static_cast<size_t>(holder)], views[i], held[i].exact_live);
    }
  }
  const auto n_keys = static_cast<int64_t>(keys_->size());
  const int64_t group_in_flight = has_group_ ? svc_.group_in_flight_locked(group_) : 0;
  const int64_t window_ms = svc_.config().cache_aware.burst_window_ms;
  // The group's arrivals in the burst window: this instance's own, or (with several router instances)
  // those the replicas announced from every instance (event: pending), whichever is more; each
  // instance alone sees only its share of a burst and would queue that many more at the holder.
  // With n instances (--instance i/n) this one sees 1/n of the group's arrivals: its own count n times,
  // unless every peer feed is live: then its own plus the peers' route events, exactly.
  int64_t group_recent = 0;
  if (has_group_) {
    group_recent = synced ? svc_.group_recent_locked(group_, now_ms - window_ms, true)
                          : instances * svc_.group_recent_locked(group_, now_ms - window_ms);
    group_recent = std::max(group_recent, svc_.index().announced_since(group_index_, group_, t0 - window_ms * 1000));
  }
  const double group_expected = has_group_ ? svc_.group_expected_locked(group_, now_ms, window_ms, group_recent) : 0;
  const int64_t group_gap_ms = has_group_ ? svc_.group_gap_ms_locked(group_, now_ms) : 0;
  Pick pick = svc_.policy().pick(RouteRequest{.n_keys = n_keys,
                                              .tokens_per_key = slots_per_key_,
                                              .group_in_flight = group_in_flight,
                                              .group_recent = group_recent,
                                              .group_expected = group_expected,
                                              .group_gap_ms = group_gap_ms,
                                              .random = random_u64(),
                                              .group = has_group_ ? group_ : 0,
                                              .synced = synced,
                                              .pull_match = svc_.config().cache_aware.kv_pull_cost > 0 ? pull_match : 0},
                                 views);
  if (pick.index < 0) return nullptr;
  if (svc_.decision_log().on()) {
    svc_.decision_log().write({.t_us = t0,
                               .group = has_group_ ? group_ : 0,
                               .synced = synced,
                               .group_recent = group_recent,
                               .group_in_flight = group_in_flight,
                               .group_gap_ms = group_gap_ms,
                               .pick = pick},
                              views, cands);
  }
  ReplicaPtr chosen = *cands[static_cast<size_t>(pick.index)];
  chosen->in_flight.fetch_add(1, std::memory_order_relaxed);  // taken off in release_replica
  // A KV pull: another keel replica holds enough more of the prompt that the chosen one copies it from
  // there (its prefill then starts after that prefix, so its cost here counts from the source's match).
  const auto picked = static_cast<size_t>(pick.index);
  const int64_t pull_from =
      holder >= 0 && may_pull(views[static_cast<size_t>(holder)], views[picked], held[picked].exact_live) ? holder : -1;
  kv_source_ = pull_from >= 0 ? (*cands[static_cast<size_t>(pull_from)])->url : std::string();
  const int64_t match_here = views[static_cast<size_t>(pull_from >= 0 ? pull_from : pick.index)].match;
  work_ = svc_.config().cache_aware.cost(n_keys, match_here, slots_per_key_);
  chosen->work.fetch_add(work_, std::memory_order_relaxed);  // taken off in release_replica
  if (has_group_) {
    svc_.add_group_locked(group_, now_ms);  // taken off in release_replica
    group_counted_ = true;
  }
  svc_.peer_feed().on_route(*chosen, has_group_ ? group_ : 0);  // the peers' view, under the decision mutex
  chosen->breaker.allow(now_ms);                                // takes the half-open probe slot when probing
  svc_.count_decision(pick.decision);
  if (prefix) {
    const int64_t matched = views[static_cast<size_t>(pick.index)].match;
    // Until the next poll reports it, the free cache the next decisions see is less what this prompt adds.
    routed_slots_ = (static_cast<int64_t>(keys_->size()) - matched) * slots_per_key_;
    chosen->routed_slots.fetch_add(routed_slots_, std::memory_order_relaxed);  // done in release_replica
    chosen->cache_hit_keys.add(matched);
    chosen->prompt_keys.add(static_cast<int64_t>(keys_->size()));
    if (!held[static_cast<size_t>(pick.index)].exact_live) svc_.index().record_routed(chosen->id, *keys_);
    svc_.index().add_in_flight(chosen->id, keys_);  // removed in release_replica
  }
  svc_.decision_seconds().observe(static_cast<double>(now_us() - t0) * 1e-6);
  return chosen;
}

}  // namespace keel::router
