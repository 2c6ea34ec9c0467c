// parse_peer_figures (peer_event.h): the in-place scan of the shape peer_feed.cc writes against the JSON
// parse (nlohmann) it stands in for. For every input, tricky or randomly mutated, both answers must be
// the same, and whatever the scan accepts the JSON parse must read to the same figures.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "router/peer_event.h"

namespace keel::router {
namespace {

std::string event(std::string_view url, int64_t n, int64_t work, const char* group = nullptr) {
  std::string s = R"({"url":")" + std::string(url) + R"(","in_flight":)" + std::to_string(n) + R"(,"work":)" +
                  std::to_string(work);
  if (group != nullptr) s += std::string(R"(,"group":)") + group;
  return s + "}";
}

// Both paths give the same answer; the scan, where it accepts, the JSON parse's figures.
void expect_same(const std::string& data) {
  PeerFigures full, json, scanned;
  const PeerParse a = parse_peer_figures(data, &full);
  const PeerParse b = parse_peer_figures_json(data, &json);
  ASSERT_EQ(a, b) << data;
  if (a == PeerParse::kOk) {
    EXPECT_EQ(full.url, json.url) << data;
    EXPECT_EQ(full.in_flight, json.in_flight) << data;
    EXPECT_EQ(full.work, json.work) << data;
    EXPECT_EQ(full.has_group, json.has_group) << data;
    EXPECT_EQ(full.group, json.group) << data;
  }
  if (scan_peer_figures(data, &scanned)) {
    ASSERT_EQ(b, PeerParse::kOk) << data;
    EXPECT_EQ(scanned.url, json.url) << data;
    EXPECT_EQ(scanned.in_flight, json.in_flight) << data;
    EXPECT_EQ(scanned.work, json.work) << data;
    EXPECT_EQ(scanned.group, json.group) << data;
  }
}

TEST(PeerEvent, TheWritersShapeIsScannedInPlace) {
  PeerFigures f;
  const std::string route = event("http://10.0.0.1:8000", 3, 56, "6208440830440890227");
  ASSERT_TRUE(scan_peer_figures(route, &f));
  EXPECT_EQ(f.url, "http://10.0.0.1:8000");
  EXPECT_GE(f.url.data(), route.data());  // a view into the data, not a copy
  EXPECT_LT(f.url.data(), route.data() + route.size());
  EXPECT_EQ(f.in_flight, 3);
  EXPECT_EQ(f.work, 56);
  EXPECT_TRUE(f.has_group);
  EXPECT_EQ(f.group, 6208440830440890227u);
  ASSERT_TRUE(scan_peer_figures(event("http://h:1", 0, 0), &f));
  EXPECT_FALSE(f.has_group);
  EXPECT_EQ(f.group, 0u);
  // The bounds themselves are in range; one more is not (and neither path takes it).
  EXPECT_TRUE(scan_peer_figures(event("u", kMaxPeerInFlight, kMaxPeerWork), &f));
  EXPECT_FALSE(scan_peer_figures(event("u", kMaxPeerInFlight + 1, 0), &f));
  EXPECT_EQ(parse_peer_figures(event("u", kMaxPeerInFlight + 1, 0), &f), PeerParse::kBadFields);
  EXPECT_EQ(parse_peer_figures(event("u", 0, kMaxPeerWork + 1), &f), PeerParse::kBadFields);
}

TEST(PeerEvent, OtherValidJsonIsParsedAndReadsTheSame) {
  PeerFigures f;
  for (const std::string data :
       {R"({ "url": "http://h:1", "in_flight": 2, "work": 9 })", R"({"work":9,"url":"http://h:1","in_flight":2})",
        R"({"url":"http:\/\/h:1","in_flight":2,"work":9})", R"({"url":"http://h:1","in_flight":2,"work":9,"x":[1]})",
        R"({"url":"http://h:1","in_flight":2,"work":9,"url":"http://h:1"})"}) {
    EXPECT_FALSE(scan_peer_figures(data, &f)) << data;
    ASSERT_EQ(parse_peer_figures(data, &f), PeerParse::kOk) << data;
    EXPECT_EQ(f.url, "http://h:1") << data;
    EXPECT_EQ(f.in_flight, 2) << data;
    EXPECT_EQ(f.work, 9) << data;
    expect_same(data);
  }
}

TEST(PeerEvent, TrickyInputsGetTheJsonParsersAnswer) {
  const std::vector<std::string> cases = {
      "", "{}", "[]", "null", "{", R"({"url":"a")", event("a", 1, 2) + " ", " " + event("a", 1, 2),
      event("a", 1, 2) + "}", R"({"url":"a","in_flight":01,"work":2})", R"({"url":"a","in_flight":-1,"work":2})",
      R"({"url":"a","in_flight":1.0,"work":2})", R"({"url":"a","in_flight":1e2,"work":2})",
      R"({"url":"a","in_flight":1,"work":2,"group":-3})", R"({"url":"a","in_flight":1,"work":2,"group":1.5})",
      R"({"url":"a","in_flight":1,"work":2,"group":18446744073709551615})",
      R"({"url":"a","in_flight":1,"work":2,"group":18446744073709551616})",
      R"({"url":"a","in_flight":1,"work":2,"group":9999999999999999999})",
      R"({"url":"a","in_flight":1,"work":2,"group":})", R"({"url":"a","in_flight":1,"work":2,"group":0})",
      R"({"url":"a","in_flight":123456789012345678,"work":2})", R"({"url":"a","in_flight":1234567890123456789,"work":2})",
      R"({"url":1,"in_flight":1,"work":2})", R"({"url":"a\u0000b","in_flight":1,"work":2})",
      std::string(R"({"url":"a)") + '\x01' + R"(","in_flight":1,"work":2})",
      std::string(R"({"url":"a)") + '\x7f' + R"(","in_flight":1,"work":2})",
      std::string(R"({"url":"a)") + "\xc3\xa9" + R"(","in_flight":1,"work":2})",
      std::string(R"({"url":"a)") + "\xff" + R"(","in_flight":1,"work":2})",
      R"({"url":"","in_flight":0,"work":0})", R"({"url":"a","in_flight":1})", R"({"url":"a","work":2})",
  };
  for (const auto& c : cases) expect_same(c);
}

// Random single- and multi-byte mutations of the writer's shape: both paths answer alike.
TEST(PeerEvent, MutatedEventsGetTheSameAnswerFromBothPaths) {
  const std::string base = event("http://127.0.0.1:45249", 7, 259, "6208440830440890227");
  const std::string alphabet = std::string("0123456789{}[]\":,.-+eE \\/u\x01\x7f\xc3\xa9") + "abcgkw_";
  std::mt19937_64 rng(20261201);
  int scanned = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % (s.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 1:
          if (at < s.size()) s.erase(at, 1);
          break;
        default:
          if (at < s.size()) s[at] = c;
      }
    }
    PeerFigures f;
    scanned += scan_peer_figures(s, &f) ? 1 : 0;
    expect_same(s);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(scanned, 100);  // the mutations reach the scan's accepting side too (digits, URL bytes)
}

}  // namespace
}  // namespace keel::router
