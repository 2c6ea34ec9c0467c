// PeerFeedReader against answers framed by hand, split at every point and at random points: the events
// come out whole and in order whatever the split; a non-200 answer, an oversized head or event, malformed
// chunk framing and the stream's end are reported, never a crash.
#include "router/peer_feed_reader.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace keel::router {
namespace {

constexpr std::string_view kHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string chunk(std::string_view data) { return fmt::format("{:x}\r\n{}\r\n", data.size(), data); }

struct Read {
  std::vector<std::string> events;  // event name + "|" + data
  bool ok = true;
  std::string why;
};

Read read(std::string_view wire, const std::vector<size_t>& cuts) {
  PeerFeedReader r;
  Read out;
  size_t at = 0;
  auto on = [&](const SseEvent& ev) { out.events.push_back(ev.event + "|" + ev.data); };
  for (size_t cut : cuts) {
    if (!out.ok) break;
    out.ok = r.feed(wire.substr(at, cut - at), on, &out.why);
    at = cut;
  }
  if (out.ok) out.ok = r.feed(wire.substr(at), on, &out.why);
  return out;
}

const std::vector<std::string> kEvents{"event: reset\ndata: {}\n\n",
                                       "event: route\ndata: {\"url\":\"http://a:1\",\"in_flight\":1,\"work\":80}\n\n",
                                       ":\n\n", "event: done\ndata: " + std::string(300, 'z') + "\n\n"};
const std::vector<std::string> kWant{"reset|{}", "route|{\"url\":\"http://a:1\",\"in_flight\":1,\"work\":80}", "|",
                                     "done|" + std::string(300, 'z')};

TEST(PeerFeedReader, EveryTwoWaySplitGivesTheSameEvents) {
  std::string wire(kHead);
  for (const auto& e : kEvents) wire += chunk(e);
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    const Read r = read(wire, {cut});
    EXPECT_TRUE(r.ok) << "cut at " << cut << ": " << r.why;
    EXPECT_EQ(r.events, kWant) << "cut at " << cut;
  }
}

TEST(PeerFeedReader, RandomSplitsChunkExtensionsAndTheEnd) {
  std::mt19937 rng(7);
  for (int k = 0; k < 300; ++k) {
    std::string wire(kHead);
    for (const auto& e : kEvents) {
      // An event may be cut across chunks, and a chunk may carry a chunk extension.
      const size_t half = rng() % (e.size() + 1);
      for (std::string_view piece : {std::string_view(e).substr(0, half), std::string_view(e).substr(half)}) {
        if (piece.empty()) continue;
        wire += rng() % 2 ? fmt::format("{:X};name=value\r\n{}\r\n", piece.size(), piece) : chunk(piece);
      }
    }
    wire += "0\r\n\r\n";
    std::vector<size_t> cuts;
    for (size_t at = 0; at < wire.size(); at += 1 + rng() % 40) cuts.push_back(at);
    const Read r = read(wire, cuts);
    ASSERT_EQ(r.events, kWant) << k;
    ASSERT_FALSE(r.ok) << k;
    ASSERT_EQ(r.why, "the stream ended") << k;
  }
}

TEST(PeerFeedReader, AnAnswerWithoutChunksIsReadToo) {
  std::string body;
  for (const auto& e : kEvents) body += e;
  const std::string wire = fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}", body.size() + 100, body);
  const Read r = read(wire, {wire.size() / 3});
  EXPECT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.events, kWant);
}

TEST(PeerFeedReader, BadAnswersAreReported) {
  const Read not_found = read("HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}", {});
  EXPECT_FALSE(not_found.ok);
  EXPECT_EQ(not_found.why, "answered 404");
  EXPECT_TRUE(not_found.events.empty());

  const Read huge_head = read("HTTP/1.1 200 OK\r\nX-Pad: " + std::string(20000, 'p') + "\r\n\r\n", {});
  EXPECT_FALSE(huge_head.ok);

  const Read huge_event = read(std::string(kHead) + chunk("data: " + std::string(70000, 'x')), {});
  EXPECT_FALSE(huge_event.ok);
  EXPECT_EQ(huge_event.why, "oversized event");

  // (Beast reads a chunk's trailing CRLF with the next size line: bad bytes there are seen at that line's end.)
  for (const std::string framing : {"zz\r\nnot a chunk\r\n", "5\r\nhelloXX\r\n", "1234567890abcdef01\r\n"}) {
    const Read r = read(std::string(kHead) + chunk("event: reset\ndata: {}\n\n") + framing, {});
    EXPECT_FALSE(r.ok) << framing;
    EXPECT_EQ(r.events, std::vector<std::string>{"reset|{}"}) << framing;
  }

  const Read garbage = read("not http at all\r\n\r\n", {});
  EXPECT_FALSE(garbage.ok);
}

}  // namespace
}  // namespace keel::router
