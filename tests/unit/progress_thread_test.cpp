#include "runtime/transport/progress_thread.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "runtime/common/unique_fd.hpp"

namespace larder {
namespace {

using std::chrono::microseconds;

// A source with an event descriptor, as UCX's worker: progress drains the eventfd's counter.
struct EventSource {
  UniqueFd fd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  std::mutex mu;
  std::condition_variable changed;
  std::uint64_t drained = 0;  // the sum of every value progress read from the descriptor

  ProgressSource source() {
    ProgressSource s;
    s.event_fd = fd.get();
    s.progress = [this] {
      std::uint64_t v = 0;
      if (::read(fd.get(), &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return false;
      std::lock_guard lock(mu);
      drained += v;
      changed.notify_all();
      return true;
    };
    s.arm = [] { return true; };
    return s;
  }
  void signal(std::uint64_t v) {
    ASSERT_EQ(::write(fd.get(), &v, sizeof v), static_cast<ssize_t>(sizeof v));
  }
  void wait_for_total(std::uint64_t total) {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return drained >= total; });
  }
};

// A source without a descriptor, as MPI: it never has work, and counts how often it is polled.
struct PolledSource {
  std::mutex mu;
  std::condition_variable changed;
  int polls = 0;

  ProgressSource source() {
    ProgressSource s;
    s.progress = [this] {
      std::lock_guard lock(mu);
      ++polls;
      changed.notify_all();
      return false;  // never any work: only the timeout (or a wake-up) brings the thread back
    };
    return s;
  }
  int count() {
    std::lock_guard lock(mu);
    return polls;
  }
  void wait_for(int n) {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return polls >= n; });
  }
};

TEST(ProgressThreadTest, SourcesWithDescriptorsAreServedWhenTheirEventFires) {
  EventSource a;
  EventSource b;
  ASSERT_TRUE(a.fd.valid() && b.fd.valid());
  // An idle interval far beyond the test's life: only the events can wake the thread.
  ProgressThread t(microseconds(3'600'000'000LL), microseconds(3'600'000'000LL));
  t.add(a.source());
  t.add(b.source());
  EXPECT_TRUE(t.event_driven());
  t.start();
  a.signal(3);
  a.wait_for_total(3);
  b.signal(5);
  b.wait_for_total(5);
  a.signal(7);
  a.wait_for_total(10);
  t.stop();  // returns: the wake-up eventfd ends the sleep
  EXPECT_EQ(a.drained, 10u);
  EXPECT_EQ(b.drained, 5u);
}

TEST(ProgressThreadTest, ASourceWithoutDescriptorIsPolled) {
  EventSource evented;
  PolledSource polled;
  ProgressThread t(microseconds(50), microseconds(1000));
  t.add(evented.source());
  t.add(polled.source());
  EXPECT_FALSE(t.event_driven());
  t.start();
  polled.wait_for(5);  // no event was ever signalled
  t.stop();
}

TEST(ProgressThreadTest, ActivityWakesAThreadThatBackedOffAndKeepsItPolling) {
  PolledSource polled;
  // An idle interval far beyond the test's life: without the wake-up the thread sleeps through
  // it, and the test never ends.
  ProgressThread t(microseconds(50), microseconds(3'600'000'000LL));
  t.add(polled.source());
  t.start();
  while (!t.backed_off()) std::this_thread::yield();  // set before its idle sleep
  const int before = polled.count();
  t.notify_activity();  // this rank sent a request: its answer must be received soon
  // The wake-up, then eager polling (the busy interval) for as long as the activity lasts.
  polled.wait_for(before + 3);
  t.stop();
}

TEST(ProgressThreadTest, StopIsIdempotentAndWorksBeforeStart) {
  ProgressThread t(microseconds(50), microseconds(1000));
  t.stop();
  t.stop();
  EXPECT_EQ(t.passes(), 0u);
}

}  // namespace
}  // namespace larder
