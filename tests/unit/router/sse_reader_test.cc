#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "router/sse_reader.h"

namespace keel::router {
namespace {

TEST(SseReader, SplitsEventsAcrossArbitraryPieces) {
  const std::string wire =
      "data: {\"a\":1}\n\nevent: keel_tokens\ndata: {\"token_ids\":[3]}\n\n:\n\ndata: [DONE]\r\n\r\n";
  for (size_t piece = 1; piece <= wire.size(); ++piece) {
    SseReader r;
    std::vector<SseEvent> got;
    std::vector<std::string> raws;
    for (size_t at = 0; at < wire.size(); at += piece) {
      r.feed(std::string_view(wire).substr(at, piece), [&](const SseEvent& e) {
        got.push_back(e);
        raws.emplace_back(e.raw);
      });
    }
    ASSERT_EQ(got.size(), 4u) << piece;
    EXPECT_EQ(got[0].data, "{\"a\":1}");
    EXPECT_EQ(got[1].event, "keel_tokens");
    EXPECT_TRUE(got[2].comment_only);
    EXPECT_EQ(got[3].data, "[DONE]");
    std::string joined;
    for (const auto& s : raws) joined += s;
    EXPECT_EQ(joined, wire);  // raw bytes forwarded unchanged
    EXPECT_EQ(r.n_buffered(), 0u);
  }
}

// Since Session 16 a read scans only its new bytes (and 2 before them, where a terminator can start):
// every way of cutting the stream into three reads still finds each event once, whichever of the
// "\n\n" / "\n\r\n" terminators it has.
TEST(SseReader, EveryTwoCutsFindTheSameEvents) {
  const std::string wire = "data: a\n\ndata: b\r\n\r\ndata: c\n\r\n:\r\n\ndata: d\n\n";
  for (size_t i = 0; i <= wire.size(); ++i) {
    for (size_t j = i; j <= wire.size(); ++j) {
      SseReader r;
      std::string datas;
      auto on = [&](const SseEvent& e) { datas += e.comment_only ? std::string("~") : e.data; };
      r.feed(std::string_view(wire).substr(0, i), on);
      r.feed(std::string_view(wire).substr(i, j - i), on);
      r.feed(std::string_view(wire).substr(j), on);
      EXPECT_EQ(datas, "abc~d") << i << " " << j;
      EXPECT_EQ(r.n_buffered(), 0u) << i << " " << j;
    }
  }
}

TEST(SseReader, RefusesAnOversizedPartialEvent) {
  SseReader r;
  EXPECT_FALSE(r.feed(
      std::string(100, 'x'), [](const SseEvent&) {}, 50));
}

}  // namespace
}  // namespace keel::router
