// libFuzzer target for the router's configuration inputs, which come from files and the command line:
// the tenants file (router/tenants.h), the state file (router/state_file.h) and a replica URL
// (--workers, the admin API; router/replica.h); and for a replica's polled Prometheus text
// (router/prom_gauge.h). The first byte picks which; the rest is the text.
//   - tenants: a table that parses answers find_key for the key "k" (the seed lists its SHA-256) and
//     "k"'s token bucket gives a non-negative Retry-After at any time;
//   - state: a file that parses renders back (render_state) to text that parses to the same replicas;
//   - URL: one that parses has a host without '/' and a port in 1..65535;
//   - Prometheus text: a gauge reads -1 or a count in 0..2^40 (UBSan checks the conversion).
// Any other outcome than a clean error or those properties aborts. Runs: scripts/fuzz.sh
// router_config_fuzz <seconds>.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "router/prom_gauge.h"
#include "router/rate_limit.h"
#include "router/replica.h"
#include "router/state_file.h"
#include "router/tenants.h"

namespace {

using namespace keel::router;

void tenants(std::string_view text) {
  auto table = TenantTable::parse(text);
  if (!table.ok()) return;
  KeyEntry* e = (*table)->find_key("k");
  if (!e || !e->bucket) return;
  for (int64_t now_us : {int64_t{0}, int64_t{0}, int64_t{1}, int64_t{1'000'000}, int64_t{999'999}, int64_t{1} << 60}) {
    if (e->bucket->try_take(now_us) < 0) std::abort();
  }
}

void state(std::string_view text) {
  auto saved = parse_state(text);
  if (!saved.ok()) return;
  ReplicaList list;
  ReplicaId id = 0;
  for (const SavedReplica& s : *saved) {
    auto ep = parse_replica_url(s.url);
    if (!ep.ok()) std::abort();  // parse_state checked it
    auto r = std::make_shared<Replica>(id++, s.url, *ep, s.labels, BreakerConfig{});
    if (s.draining) r->state = ReplicaState::kDraining;
    list.push_back(std::move(r));
  }
  auto again = parse_state(render_state(list));
  if (!again.ok() || again->size() != saved->size()) std::abort();
  for (size_t i = 0; i < saved->size(); ++i) {
    const SavedReplica &a = (*saved)[i], &b = (*again)[i];
    if (a.url != b.url || a.draining != b.draining || a.labels.region != b.labels.region ||
        a.labels.cloud != b.labels.cloud || a.labels.pool != b.labels.pool) {
      std::abort();
    }
  }
}

void url(std::string_view text) {
  auto ep = parse_replica_url(text);
  if (!ep.ok()) return;
  if (ep->host.empty() || ep->host.find('/') != std::string::npos || ep->port == 0) std::abort();
}

void gauges(std::string_view text) {
  for (std::string_view name : {"keel_num_requests_waiting", "keel_kv_slots_used"}) {
    const int64_t v = prom_gauge(text, name);
    if (v < -1 || v > (int64_t{1} << 40)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: tenants(text); break;
    case 1: state(text); break;
    case 2: url(text); break;
    default: gauges(text); break;
  }
  return 0;
}
