// AccessLog (router/access_log.h): lines from many threads all reach the output, whole and once; the
// writer empties the buffer within its interval without being asked; and a stalled output drops lines
// past the bound instead of blocking the writers, then reports how many.
#include "router/access_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace keel::router {
namespace {

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fseek(f, 0, SEEK_END);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AccessLog, EveryLineFromEveryThreadArrivesWholeAndOnce) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  constexpr int kThreads = 4, kLines = 5000;
  {
    AccessLog log(f, AccessLogConfig{.flush_ms = 5, .flush_bytes = 4096});
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&log, t] {
        for (int i = 0; i < kLines; ++i)
          log.write(fmt::format("access thread={} line={} {}", t, i, std::string(40, 'x')));
      });
    }
    for (auto& t : ts) t.join();
  }  // destroyed: what was buffered is written
  const auto lines = lines_of(read_all(f));
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kLines));
  std::set<std::string> seen(lines.begin(), lines.end());
  EXPECT_EQ(seen.size(), lines.size());
  std::vector<int> next(kThreads, 0);  // each thread's lines in its own order
  for (const auto& l : lines) {
    int t = -1, i = -1;
    ASSERT_EQ(std::sscanf(l.c_str(), "access thread=%d line=%d", &t, &i), 2) << l;
    ASSERT_TRUE(t >= 0 && t < kThreads) << l;
    EXPECT_EQ(i, next[static_cast<size_t>(t)]++) << l;
    EXPECT_EQ(l.size(), fmt::format("access thread={} line={} ", t, i).size() + 40) << l;
  }
  std::fclose(f);
}

TEST(AccessLog, LinesReachTheOutputWithinTheFlushIntervalUnasked) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  AccessLog log(f, AccessLogConfig{.flush_ms = 50});
  log.write("access one");
  log.write("access two");
  std::string text;
  for (int i = 0; i < 200 && text.empty(); ++i) {  // up to 2 s; the writer flushes every 50 ms
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    text = read_all(f);
  }
  EXPECT_EQ(text, "access one\naccess two\n");
  std::fclose(f);
}

TEST(AccessLog, LinesPastTheBoundAreDroppedCountedAndReported) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    // The writer waits a minute unless the buffer passes flush_bytes, which is above max_buffered: all
    // that is buffered stays until the log is destroyed, like an output that stalled.
    AccessLog log(f, AccessLogConfig{.flush_ms = 60'000, .flush_bytes = 1 << 20, .max_buffered = 100});
    for (int i = 0; i < 10; ++i) log.write(fmt::format("access {:03}", i));  // 11 bytes each: 9 fit
    EXPECT_EQ(log.dropped(), 1);
  }
  const auto lines = lines_of(read_all(f));
  ASSERT_EQ(lines.size(), 10u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(lines[static_cast<size_t>(i)], fmt::format("access {:03}", i));
  EXPECT_NE(lines[9].find("1 lines dropped"), std::string::npos) << lines[9];
  std::fclose(f);
}

}  // namespace
}  // namespace keel::router
