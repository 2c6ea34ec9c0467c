#include "router/decision_log.h"

#include <cerrno>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "router/json_string.h"

namespace keel::router {

DecisionLog::~DecisionLog() {
  if (file_ != nullptr) std::fclose(file_);
}

Status DecisionLog::open(const std::string& path) {
  if (path.empty()) return {};
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "--decision-log '{}': {}", path, std::strerror(errno));
  }
  return {};
}

void DecisionLog::write(const DecisionRecord& rec, std::span<const CandidateView> views,
                        std::span<const ReplicaPtr* const> replicas) {
  line_.clear();
  auto out = std::back_inserter(line_);
  fmt::format_to(out, R"({{"t_us":{},"group":{},"synced":{},"recent":{},"group_in_flight":{},"gap_ms":{},"pick":{},)",
                 rec.t_us, rec.group, rec.synced, rec.group_recent, rec.group_in_flight, rec.group_gap_ms,
                 rec.pick.index);
  fmt::format_to(out, R"("decision":"{}","c":[)", decision_name(rec.pick.decision));
  for (size_t i = 0; i < views.size() && i < replicas.size(); ++i) {
    const CandidateView& v = views[i];
    const Replica& r = **replicas[i];
    if (i > 0) line_ += ',';
    line_ += R"({"url":)";
    append_json_string(line_, r.url);  // a URL may hold any byte after host:port
    fmt::format_to(out, R"(,"load":{},"work":{},"match":{},"free":{},"own":{},"peers":{}}})", v.load, v.work, v.match,
                   v.free_cache, r.in_flight.load(std::memory_order_relaxed),
                   r.peer_in_flight.load(std::memory_order_relaxed));
  }
  line_ += "]}\n";
  std::fwrite(line_.data(), 1, line_.size(), file_);
  std::fflush(file_);
}

}  // namespace keel::router
