// PeerFeed (peer_feed.h): what this instance's feed pushes and when. The subscriber is a RecordingExchange,
// a test double of server::http::Exchange (the real one needs a live connection) that keeps every push and
// every posted function for the test to run; the pushed bytes are read back through the real SseReader and
// PeerView, as a peer instance reads them. Without a batch gap an event is pushed by the next posted flush;
// with one (RouterConfig::peer_feed_batch_us) an event inside the gap after the last push waits for the
// timer, and that flush carries every event made meanwhile, in order, in one push.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "router/peer_feed.h"
#include "router/peer_view.h"
#include "router/replica.h"

namespace keel::router {
namespace {

const char* kA = "http://10.0.0.1:8000";

class RecordingExchange final : public server::http::Exchange {
 public:
  void respond(server::http::HttpResponse response) override { responded = response.status; }
  void begin_stream(int status, std::string, server::http::Headers) override { stream_status = status; }
  void push(std::string bytes) override { pushes.push_back(std::move(bytes)); }
  void end_stream() override { ended = true; }
  void post(std::function<void()> fn) override { posted.push_back(std::move(fn)); }
  void on_disconnect(std::function<void()>) override {}

  // Runs (and forgets) the functions posted so far.
  void run_posted() {
    auto fns = std::move(posted);
    posted.clear();
    for (auto& fn : fns) fn();
  }

  int responded = 0, stream_status = 0;
  bool ended = false;
  std::vector<std::string> pushes;
  std::vector<std::function<void()>> posted;
};

struct Scheduled {
  int64_t delay_us;
  std::function<void()> fn;
};

ReplicaList one_replica() {
  return {
      std::make_shared<Replica>(1, kA, Endpoint{.host = "10.0.0.1", .port = 8000}, ReplicaLabels{}, BreakerConfig{})};
}

// Feeds `bytes` to a peer's view of `list` (peer 0); returns the route events' groups seen.
std::vector<uint64_t> read_as_peer(SseReader& reader, PeerView& view, const ReplicaList& list,
                                   const std::string& bytes) {
  std::vector<uint64_t> groups;
  EXPECT_TRUE(reader.feed(bytes, [&](const SseEvent& ev) {
    uint64_t group = 0;
    EXPECT_EQ(view.apply(0, ev, list, &group), ev.comment_only ? PeerApply::kIgnored : PeerApply::kApplied);
    if (ev.event == "route") groups.push_back(group);
  }));
  return groups;
}

TEST(PeerFeed, WithoutAGapEachFlushPushesWhatWasEmittedBeforeIt) {
  auto list = one_replica();
  Replica& r = *list[0];
  PeerFeed feed;
  auto ex = std::make_shared<RecordingExchange>();
  r.in_flight = 2;
  r.work = 40;
  feed.subscribe(ex, list);
  ASSERT_EQ(ex->stream_status, 200);
  ASSERT_EQ(ex->pushes.size(), 1u);  // reset + snapshot

  auto peer_list = one_replica();  // the peer routes to the same replica URL
  PeerView view({"http://127.0.0.1:9001"});
  SseReader reader;
  read_as_peer(reader, view, peer_list, ex->pushes[0]);
  EXPECT_TRUE(view.all_live());
  EXPECT_EQ(peer_list[0]->peer_in_flight.load(), 2);
  EXPECT_EQ(peer_list[0]->peer_work.load(), 40);

  r.in_flight = 3;
  r.work = 56;
  feed.on_route(r, 77);
  EXPECT_EQ(ex->pushes.size(), 1u);  // not yet: the flush is posted
  ASSERT_EQ(ex->posted.size(), 1u);
  r.in_flight = 2;
  r.work = 40;
  feed.on_done(r);
  EXPECT_EQ(ex->posted.size(), 1u);  // one flush for both
  ex->run_posted();
  ASSERT_EQ(ex->pushes.size(), 2u);
  EXPECT_EQ(read_as_peer(reader, view, peer_list, ex->pushes[1]), std::vector<uint64_t>{77});
  EXPECT_EQ(peer_list[0]->peer_in_flight.load(), 2);  // the later event's figures
  EXPECT_LT(ex->pushes[1].find("event: route"), ex->pushes[1].find("event: done"));

  feed.on_done(r);  // the next event posts a new flush
  EXPECT_EQ(ex->posted.size(), 1u);
  feed.close();
  EXPECT_TRUE(ex->ended);
}

TEST(PeerFeed, AnEventInsideTheGapWaitsForTheTimerThatPushesEverythingMeanwhileAtOnce) {
  auto list = one_replica();
  Replica& r = *list[0];
  PeerFeed feed;
  std::vector<Scheduled> timers;
  constexpr int64_t kGapUs = 60'000'000;  // a minute: every event below falls inside the gap
  feed.set_batch(kGapUs, [&](int64_t us, std::function<void()> fn) { timers.push_back({us, std::move(fn)}); });
  auto ex = std::make_shared<RecordingExchange>();
  feed.subscribe(ex, list);
  ASSERT_EQ(ex->pushes.size(), 1u);

  // The first event after a quiet spell goes out with the next flush, as without a gap.
  r.in_flight = 1;
  feed.on_route(r, 5);
  EXPECT_TRUE(timers.empty());
  ASSERT_EQ(ex->posted.size(), 1u);
  ex->run_posted();
  ASSERT_EQ(ex->pushes.size(), 2u);

  // Within the gap: no post, one timer for the rest of the gap, nothing pushed until it fires.
  r.in_flight = 2;
  feed.on_route(r, 6);
  ASSERT_EQ(timers.size(), 1u);
  EXPECT_GT(timers[0].delay_us, 0);
  EXPECT_LE(timers[0].delay_us, kGapUs);
  EXPECT_TRUE(ex->posted.empty());
  r.in_flight = 1;
  feed.on_done(r);
  r.in_flight = 2;
  feed.on_route(r, 7);
  EXPECT_EQ(timers.size(), 1u);  // the pending timer takes these too
  EXPECT_EQ(ex->pushes.size(), 2u);

  timers[0].fn();
  ASSERT_EQ(ex->pushes.size(), 3u);
  auto peer_list = one_replica();
  PeerView view({"http://127.0.0.1:9001"});
  SseReader reader;
  read_as_peer(reader, view, peer_list, ex->pushes[0]);
  EXPECT_EQ(read_as_peer(reader, view, peer_list, ex->pushes[1]), std::vector<uint64_t>{5});
  EXPECT_EQ(read_as_peer(reader, view, peer_list, ex->pushes[2]), (std::vector<uint64_t>{6, 7}));
  EXPECT_EQ(peer_list[0]->peer_in_flight.load(), 2);

  // That push restarted the gap: the next event waits for a new timer.
  feed.on_done(r);
  EXPECT_EQ(timers.size(), 2u);
  EXPECT_TRUE(ex->posted.empty());
  feed.close();
}

}  // namespace
}  // namespace keel::router
