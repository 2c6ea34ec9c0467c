#include "router/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace keel::router {

using nlohmann::json;

namespace {

constexpr int kVersion = 1;

Status bad(std::string_view what) { return make_error(ErrorCode::kInvalidArgument, "state file: {}", what); }

}  // namespace

Result<std::vector<SavedReplica>> parse_state(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("version") || j["version"] != kVersion) return bad(fmt::format("needs \"version\": {}", kVersion));
  if (!j.contains("replicas") || !j["replicas"].is_array()) return bad("needs a 'replicas' array");
  std::vector<SavedReplica> out;
  for (const json& r : j["replicas"]) {
    if (!r.is_object()) return bad("each replica must be an object");
    for (const auto& [k, _] : r.items()) {
      if (k != "url" && k != "labels" && k != "state") return bad(fmt::format("unknown replica field '{}'", k));
    }
    SavedReplica s;
    if (!r.contains("url") || !r["url"].is_string()) return bad("each replica needs a string 'url'");
    s.url = r["url"].get<std::string>();
    if (auto ep = parse_replica_url(s.url); !ep.ok()) return bad(ep.status().message());
    for (const SavedReplica& seen : out) {
      if (seen.url == s.url) return bad(fmt::format("replica '{}' is listed twice", s.url));
    }
    if (r.contains("labels")) {
      const json& l = r["labels"];
      if (!l.is_object()) return bad(fmt::format("replica '{}': 'labels' must be an object", s.url));
      for (const auto& [k, v] : l.items()) {
        std::string* dst = k == "region" ? &s.labels.region : k == "cloud" ? &s.labels.cloud : k == "pool" ? &s.labels.pool : nullptr;
        if (!dst) return bad(fmt::format("replica '{}': unknown label '{}' (region, cloud, pool)", s.url, k));
        if (!v.is_string()) return bad(fmt::format("replica '{}': label '{}' must be a string", s.url, k));
        *dst = v.get<std::string>();
      }
    }
    if (r.contains("state")) {
      if (r["state"] != "active" && r["state"] != "draining") {
        return bad(fmt::format("replica '{}': 'state' must be \"active\" or \"draining\"", s.url));
      }
      s.draining = r["state"] == "draining";
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string render_state(const ReplicaList& replicas) {
  json list = json::array();
  for (const auto& r : replicas) {
    list.push_back({{"url", r->url},
                    {"labels", {{"region", r->labels.region}, {"cloud", r->labels.cloud}, {"pool", r->labels.pool}}},
                    {"state", r->state.load() == ReplicaState::kDraining ? "draining" : "active"}});
  }
  return json{{"version", kVersion}, {"replicas", std::move(list)}}.dump(2) + "\n";
}

Result<std::optional<std::vector<SavedReplica>>> load_state_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<std::vector<SavedReplica>>();
  std::ifstream in(path, std::ios::binary);
  if (!in || !S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::kIo, "cannot read state file '{}': {}", path,
                      in ? "not a regular file" : std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = parse_state(ss.str());
  if (!parsed.ok()) return make_error(ErrorCode::kInvalidArgument, "'{}': {}", path, parsed.status().message());
  return std::optional<std::vector<SavedReplica>>(std::move(parsed).value());
}

Status save_state_file(const std::string& path, const ReplicaList& replicas) {
  const std::string text = render_state(replicas);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(ErrorCode::kIo, "cannot write state file '{}': {}", tmp, std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      return make_error(ErrorCode::kIo, "cannot write state file '{}': {}", tmp, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced) return make_error(ErrorCode::kIo, "cannot flush state file '{}': {}", tmp, std::strerror(err));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return make_error(ErrorCode::kIo, "cannot replace state file '{}': {}", path, std::strerror(errno));
  }
  return {};
}

}  // namespace keel::router
