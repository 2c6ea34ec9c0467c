// ChunkedDecoder against bodies framed by hand and by Beast's serializer's format, split at every
// point and at random points; malformed framing is an error, never a crash.
#include "router/chunked_decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <fmt/format.h>

namespace keel::router {
namespace {

std::string frame(const std::vector<std::string>& chunks, std::string_view trailer = "") {
  std::string out;
  for (const auto& c : chunks) out += fmt::format("{:x}\r\n{}\r\n", c.size(), c);
  out += "0\r\n";
  out += trailer;
  out += "\r\n";
  return out;
}

// Feeds `wire` in pieces cut at `cuts`; returns the data and the last state.
std::pair<std::string, ChunkedDecoder::State> decode(std::string_view wire, const std::vector<size_t>& cuts) {
  ChunkedDecoder d;
  std::string got;
  size_t at = 0;
  ChunkedDecoder::State s = ChunkedDecoder::State::kOk;
  auto on = [&](std::string_view piece) { got += piece; };
  for (size_t cut : cuts) {
    s = d.feed(wire.substr(at, cut - at), on);
    at = cut;
  }
  s = d.feed(wire.substr(at), on);
  return {got, s};
}

TEST(ChunkedDecoder, EveryTwoWaySplitGivesTheSameData) {
  const std::vector<std::string> chunks{"event: route\ndata: {\"url\":\"x\"}\n\n", "a", std::string(300, 'z'), ":\n\n"};
  std::string want;
  for (const auto& c : chunks) want += c;
  const std::string wire = frame(chunks, "X-Trailer: 1\r\n");
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    const auto [got, s] = decode(wire, {cut});
    EXPECT_EQ(got, want) << "cut at " << cut;
    EXPECT_EQ(s, ChunkedDecoder::State::kDone) << "cut at " << cut;
  }
}

TEST(ChunkedDecoder, RandomSplitsAndExtensions) {
  std::mt19937 rng(7);
  for (int k = 0; k < 300; ++k) {
    std::vector<std::string> chunks;
    std::string want, wire;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < n; ++j) {
      std::string c(1 + rng() % 700, 'a');
      for (auto& ch : c) ch = static_cast<char>('a' + rng() % 26);
      want += c;
      wire += rng() % 2 ? fmt::format("{:X};name=value\r\n{}\r\n", c.size(), c)
                        : fmt::format("{:x}\r\n{}\r\n", c.size(), c);
    }
    wire += "0\r\n\r\n";
    std::vector<size_t> cuts;
    for (size_t at = 0; at < wire.size(); at += 1 + rng() % 40) cuts.push_back(at);
    const auto [got, s] = decode(wire, cuts);
    ASSERT_EQ(got, want) << k;
    ASSERT_EQ(s, ChunkedDecoder::State::kDone) << k;
  }
}

TEST(ChunkedDecoder, AnOpenStreamStaysOkAndKeepsWhatCameWhole) {
  const std::string wire = "5\r\nhello\r\n3\r\nab";
  const auto [got, s] = decode(wire, {2, 9});
  EXPECT_EQ(got, "helloab");
  EXPECT_EQ(s, ChunkedDecoder::State::kOk);
}

TEST(ChunkedDecoder, MalformedFramingIsAnError) {
  for (const std::string wire : {"g\r\nx\r\n", "\r\n", "5\r\nhelloXX", "5\nhello\r\n", "1234567890abcdef0\r\n",
                                 "3\r\nabc\r\n0\r\nbad trailer\rX"}) {
    const auto [got, s] = decode(wire, {});
    EXPECT_EQ(s, ChunkedDecoder::State::kError) << wire;
  }
  std::mt19937 rng(3);
  for (int k = 0; k < 2000; ++k) {  // random bytes: any state, no crash, never more data than bytes
    std::string wire(rng() % 64, '\0');
    for (auto& ch : wire) ch = "0123456789abcdefABCDEF;\r\n xyz"[rng() % 30];
    const auto [got, s] = decode(wire, {wire.size() / 2});
    EXPECT_LE(got.size(), wire.size());
  }
}

}  // namespace
}  // namespace keel::router
