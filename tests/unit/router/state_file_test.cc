// The router's state file: what render_state writes parses back to the same replica set, a save
// replaces the file whole, and every malformed file is refused with a message naming the problem.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "router/state_file.h"

namespace keel::router {
namespace {

ReplicaList two_replicas() {
  ReplicaSet set(BreakerConfig{});
  EXPECT_TRUE(set.add("http://10.0.0.1:8000", {.region = "eu", .cloud = "gcp", .pool = "a"}).ok());
  EXPECT_TRUE(set.add("http://10.0.0.2:8000", {}).ok());
  EXPECT_TRUE(set.drain("http://10.0.0.2:8000").ok());
  return *set.snapshot();
}

TEST(StateFile, RoundTripsUrlsLabelsAndDrainState) {
  auto saved = parse_state(render_state(two_replicas()));
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  ASSERT_EQ(saved->size(), 2u);
  EXPECT_EQ((*saved)[0].url, "http://10.0.0.1:8000");
  EXPECT_EQ((*saved)[0].labels.region, "eu");
  EXPECT_EQ((*saved)[0].labels.cloud, "gcp");
  EXPECT_EQ((*saved)[0].labels.pool, "a");
  EXPECT_FALSE((*saved)[0].draining);
  EXPECT_EQ((*saved)[1].url, "http://10.0.0.2:8000");
  EXPECT_TRUE((*saved)[1].draining);
}

TEST(StateFile, RefusesMalformedFilesNamingTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"{not json", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"replicas": []})", "version"},
      {R"({"version": 2, "replicas": []})", "version"},
      {R"({"version": 1})", "'replicas' array"},
      {R"({"version": 1, "replicas": [5]})", "must be an object"},
      {R"({"version": 1, "replicas": [{"url": 5}]})", "string 'url'"},
      {R"({"version": 1, "replicas": [{"url": "ftp://x:1"}]})", "http://"},
      {R"({"version": 1, "replicas": [{"url": "http://x:1", "colour": "red"}]})", "unknown replica field 'colour'"},
      {R"({"version": 1, "replicas": [{"url": "http://x:1", "labels": {"zone": "a"}}]})", "unknown label 'zone'"},
      {R"({"version": 1, "replicas": [{"url": "http://x:1", "labels": {"region": 1}}]})", "must be a string"},
      {R"({"version": 1, "replicas": [{"url": "http://x:1", "state": "gone"}]})", "'state'"},
      {R"({"version": 1, "replicas": [{"url": "http://x:1"}, {"url": "http://x:1"}]})", "listed twice"},
  };
  for (auto [text, message] : cases) {
    auto r = parse_state(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(message), std::string::npos) << text << " -> " << r.status().message();
  }
}

TEST(StateFile, MissingFileIsAFirstStartAndSaveReplacesTheFileWhole) {
  const auto dir = std::filesystem::temp_directory_path() / ("keel_state_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "router.json").string();
  auto missing = load_state_file(path);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  {
    std::ofstream(path) << std::string(10000, ' ') << "garbage";  // longer than what replaces it
  }
  EXPECT_FALSE(load_state_file(path).ok());
  ASSERT_TRUE(save_state_file(path, two_replicas()).ok());
  auto loaded = load_state_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(save_state_file((dir / "no_such_dir" / "x.json").string(), two_replicas()).ok());
  EXPECT_FALSE(load_state_file(dir.string()).ok());  // a directory is not a state file
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace keel::router
