// Replica's load and free-cache signals: a poll lags the router's own decisions, so what the router
// sent since a poll was sent is added to (load) or taken off (free cache) the polled figures.
#include <gtest/gtest.h>

#include "router/replica.h"

namespace keel::router {
namespace {

Replica make_replica() {
  return Replica(1, "http://127.0.0.1:1", Endpoint{.host = "127.0.0.1", .port = 1}, {}, BreakerConfig{});
}

TEST(Replica, FreeCacheFallsBackToMinusIndexEntriesUntilPolled) {
  Replica r = make_replica();
  EXPECT_EQ(r.free_cache(40), -40);
  r.set_kv(100, 1000, 0);
  EXPECT_EQ(r.free_cache(40), 900);
}

// Three new prompts routed to one replica before its next poll: without the router's own count the
// replica would still look as free as before and win every tie (all three prefixes on one replica).
TEST(Replica, FreeCacheTakesOffWhatWasRoutedSinceThePollWasSent) {
  Replica r = make_replica();
  r.set_kv(100, 1000, r.routed_slots_done.load());
  r.routed_slots.fetch_add(120);  // a prompt is routed here
  EXPECT_EQ(r.free_cache(0), 780);
  r.routed_slots_done.fetch_add(120);  // ... and finishes
  const int64_t at_send = r.routed_slots_done.load();  // a poll goes out now ...
  r.routed_slots.fetch_add(50);                         // ... another prompt is routed while it is out ...
  r.set_kv(220, 1000, at_send);                         // ... and the report includes the first prompt only
  EXPECT_EQ(r.free_cache(0), 730);
  r.routed_slots_done.fetch_add(50);
  r.set_kv(270, 1000, r.routed_slots_done.load());
  EXPECT_EQ(r.free_cache(0), 730);
}

// A poll sent while a request runs may come back without its prefill (keel serve's gauge lags a
// running request): the request still counts until a poll sent after it finished. Counting the routed
// slots as covered by that poll made the next decision see the replica as free as before, and
// sequential new prefixes all went to one replica (test_router.py's layouts, Session 18).
TEST(Replica, AFinishedRequestIsCoveredOnlyByAPollSentAfterIt) {
  Replica r = make_replica();
  r.set_kv(100, 1000, r.routed_slots_done.load());
  r.routed_slots.fetch_add(120);                      // routed, running
  r.set_kv(100, 1000, r.routed_slots_done.load());    // a poll sent mid-request reports the old figure
  EXPECT_EQ(r.free_cache(0), 780);                    // the request still counts
  r.routed_slots_done.fetch_add(120);                 // it finishes
  EXPECT_EQ(r.free_cache(0), 780);                    // still, until a poll sent from now on returns
  r.set_kv(220, 1000, r.routed_slots_done.load());
  EXPECT_EQ(r.free_cache(0), 780);
}

TEST(Replica, LoadAddsOnlyTrafficTheRouterDidNotSendPersistingTwoPolls) {
  Replica r = make_replica();
  r.in_flight.store(2);
  r.set_reported(1, 4, 2);  // 3 more than ours, first poll: not yet counted
  EXPECT_EQ(r.load(), 2);
  r.set_reported(1, 4, 2);
  EXPECT_EQ(r.load(), 5);
}

// Pushed load (the replica's own in-flight count from its cache feed): another router instance's
// requests count at once; what this router sent after the push is added; the polled figure and the
// router's fresh count are never lowered by it; a lost feed (clear_pushed) falls back to polls.
TEST(Replica, PushedLoadCountsOtherInstancesAndWhatWasSentSince) {
  Replica r = make_replica();
  r.in_flight.store(2);
  r.set_pushed(7);  // ours 2 + another instance's 5
  EXPECT_EQ(r.load(), 7);
  r.in_flight.fetch_add(3);  // sent since the push: not in it yet
  EXPECT_EQ(r.load(), 10);
  r.set_pushed(10);
  EXPECT_EQ(r.load(), 10);
  r.in_flight.store(1);  // four of ours finished, the push not yet here: it still counts them
  EXPECT_EQ(r.load(), 10);
  r.set_pushed(6);
  EXPECT_EQ(r.load(), 6);
  r.set_pushed(0);  // a push that missed our fresh request (sent between admit and event)
  EXPECT_EQ(r.load(), 1);
  r.set_reported(4, 4, 1);
  r.set_reported(4, 4, 1);  // polls say 7 more than ours
  EXPECT_EQ(r.load(), 8);
  r.clear_pushed();
  EXPECT_EQ(r.load(), 8);
  r.set_reported(0, 0, 1);
  r.set_reported(0, 0, 1);
  EXPECT_EQ(r.load(), 1);
}

}  // namespace
}  // namespace keel::router
