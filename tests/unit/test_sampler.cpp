// SampleSchedule (src/sample/sampler.h), the deadlines of record, report --live and top,
// on a simulated CLOCK_MONOTONIC: on time, after a stall (SIGSTOP/SIGCONT, Ctrl-Z then fg),
// at the end of -d, and when top's +/- change the interval. LiveSource's loop on a fake
// SlotReader (no BPF): the final sample a stop takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "sample/sampler.h"
#include "tui/replay_feed.h"

using namespace schedhot;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kT0 = 1000 * kSec;  ///< the first sample's CLOCK_MONOTONIC time
constexpr uint64_t kTake = 150'000;    ///< wake-up to sample, ns (what a deadline is late by)

/// The process stopped (SIGSTOP) from `from` to `to`, ns after kT0.
struct Stop {
  uint64_t from, to;
};

/// What LiveSource::next does with s, on a simulated clock: the first sample at kT0, then
/// each one kTake after its deadline, or kTake after the process runs again when it was
/// stopped then; until s.more() is false or max samples. Returns the samples' times, ns
/// after kT0.
std::vector<uint64_t> run(SampleSchedule& s, const std::vector<Stop>& stops = {}, size_t max = 10000) {
  std::vector<uint64_t> at;
  uint64_t now = kT0;
  while (at.size() < max) {
    if (!at.empty()) {
      if (!s.more()) break;
      now = std::max(now, s.due());
    }
    for (const Stop& st : stops)
      if (now >= kT0 + st.from && now < kT0 + st.to) now = kT0 + st.to;
    if (!at.empty()) now += kTake;
    s.taken(now);
    at.push_back(now - kT0);
  }
  return at;
}

std::vector<uint64_t> gaps(const std::vector<uint64_t>& at) {
  std::vector<uint64_t> g;
  for (size_t i = 1; i < at.size(); ++i) g.push_back(at[i] - at[i - 1]);
  return g;
}

/// Samples lost as top's header counts them (missed_samples per gap).
uint64_t lost(const std::vector<uint64_t>& at, uint64_t interval_ns) {
  uint64_t n = 0;
  for (uint64_t g : gaps(at)) n += missed_samples(g, interval_ns);
  return n;
}

}  // namespace

TEST(SampleSchedule, OnTimeSamplesFollowTheGridWithoutDrift) {
  SampleSchedule s(100 * kMs, 1 * kSec);
  auto at = run(s);
  ASSERT_EQ(at.size(), 11u) << "0, 0.1 .. 1.0 s";
  for (size_t k = 1; k < at.size(); ++k) EXPECT_EQ(at[k], k * 100 * kMs + kTake) << "sample " << k;
  EXPECT_EQ(lost(at, 100 * kMs), 0u);
}

// The repro of record -d 6 -i 100ms with SIGSTOP at +2 s and SIGCONT at +4 s: before, the
// sample due at 2.1 s came at 4.03 s and the next 19 right after it, 0-200 us apart.
TEST(SampleSchedule, StallSkipsMissedDeadlinesInsteadOfABurst) {
  SampleSchedule s(100 * kMs, 6 * kSec);
  auto at = run(s, {{2030 * kMs, 4030 * kMs}});
  auto g = gaps(at);
  EXPECT_GE(*std::min_element(g.begin(), g.end()), 10 * kMs) << "no gap under a tenth of an interval";
  auto late = std::find(at.begin(), at.end(), 4030 * kMs + kTake);
  ASSERT_NE(late, at.end()) << "the sample due at 2.1 s is taken when the process runs again";
  EXPECT_EQ(*(late - 1), 2000 * kMs + kTake);
  ASSERT_NE(late + 1, at.end());
  EXPECT_EQ(*(late + 1), 4100 * kMs + kTake) << "then the next deadline of the grid";
  EXPECT_EQ(at.back(), 6000 * kMs + kTake) << "and the run still ends at -d";
  EXPECT_EQ(at.size(), 61u - 19u) << "2.2 .. 4.0 s skipped";
}

// Skipping must not change top's lost count: the gap of the stall counts the samples that
// should have been in it, and the short gap after the late sample counts none.
TEST(SampleSchedule, StallKeepsTheLostCount) {
  SampleSchedule s(100 * kMs, 6 * kSec);
  auto at = run(s, {{2030 * kMs, 4030 * kMs}});
  EXPECT_EQ(lost(at, 100 * kMs), 19u) << "the 2.03 s gap";
  // top -i 100ms -n 40 stopped for 1.55 s after its 11th sample: lost 15 (the 1.57 s gap),
  // and never those 15 samples afterwards.
  SampleSchedule top(100 * kMs, 0);
  auto at2 = run(top, {{1020 * kMs, 2570 * kMs}}, 40);
  EXPECT_EQ(lost(at2, 100 * kMs), 15u);
  auto g = gaps(at2);
  EXPECT_GE(*std::min_element(g.begin(), g.end()), 10 * kMs);
  EXPECT_EQ(at2[12], 2600 * kMs + kTake);
  EXPECT_EQ(at2.back(), 2600 * kMs + 27 * 100 * kMs + kTake);
}

// A sample late by nearly an interval: the grid point just after it is skipped too, or
// the next interval would be a sliver with absurd rates.
TEST(SampleSchedule, LateJustBeforeADeadlineSkipsItToo) {
  SampleSchedule s(100 * kMs, 0);
  auto at = run(s, {{150 * kMs, 395 * kMs}}, 6);
  // 0, 0.1, then the one due at 0.2 s at 0.395 s; 0.4 s is 5 ms away: next at 0.5 s.
  ASSERT_EQ(at.size(), 6u);
  EXPECT_EQ(at[2], 395 * kMs + kTake);
  EXPECT_EQ(at[3], 500 * kMs + kTake);
  EXPECT_EQ(at[4], 600 * kMs + kTake);
  EXPECT_EQ(lost(at, 100 * kMs), 2u) << "0.3 and 0.4 s, from the 0.295 s gap";
}

TEST(SampleSchedule, DurationEndsWithASampleAtItsEnd) {
  {  // not a multiple of the interval: 0 .. 0.9, then 1.05 s
    SampleSchedule s(300 * kMs, 1050 * kMs);
    auto at = run(s);
    ASSERT_EQ(at.size(), 5u);
    EXPECT_EQ(at.back(), 1050 * kMs + kTake);
  }
  {  // stopped across the end: the late sample is the last
    SampleSchedule s(100 * kMs, 1 * kSec);
    auto at = run(s, {{550 * kMs, 1300 * kMs}});
    EXPECT_EQ(at.back(), 1300 * kMs + kTake);
    EXPECT_EQ(at.size(), 7u) << "0 .. 0.5, then 1.3 s";
  }
  {  // running again just before the end (within a tenth of an interval): that sample is
     // the last, not one more a few ms later
    SampleSchedule s(100 * kMs, 1 * kSec);
    auto at = run(s, {{550 * kMs, 995 * kMs}});
    EXPECT_EQ(at.back(), 995 * kMs + kTake);
    auto g = gaps(at);
    EXPECT_GE(*std::min_element(g.begin(), g.end()), 10 * kMs);
  }
  {  // running again a little before the end: the sample at the end still comes
    SampleSchedule s(100 * kMs, 1 * kSec);
    auto at = run(s, {{550 * kMs, 950 * kMs}});
    EXPECT_EQ(at.back(), 1000 * kMs + kTake);
    EXPECT_EQ(at[at.size() - 2], 950 * kMs + kTake);
  }
}

// top: + up to 10 s, then - back to 0.1 s. The pending wait follows at once.
TEST(SampleSchedule, ShorterIntervalReplansThePendingWait) {
  SampleSchedule s(10 * kSec, 0);
  s.taken(kT0);
  s.taken(kT0 + 10 * kSec + kTake);  // last sample at +10 s; next due at +20 s
  ASSERT_EQ(s.due(), kT0 + 20 * kSec);
  s.set_interval(100 * kMs, kT0 + 10 * kSec + 50 * kMs);
  EXPECT_EQ(s.due(), kT0 + 10 * kSec + 100 * kMs) << "one new interval after the last sample";
  s.taken(kT0 + 10 * kSec + 100 * kMs + kTake);
  EXPECT_EQ(s.due(), kT0 + 10 * kSec + 200 * kMs) << "then on the new grid";
}

TEST(SampleSchedule, IntervalChangeWhenThatIsPastIsDueNow) {
  SampleSchedule s(10 * kSec, 0);
  s.taken(kT0);
  const uint64_t now = kT0 + 3 * kSec;  // 3 s into the 10 s wait, - six times
  for (uint64_t iv : {5 * kSec, 2 * kSec, 1 * kSec, 500 * kMs, 200 * kMs, 100 * kMs}) s.set_interval(iv, now);
  EXPECT_EQ(s.due(), now);
  s.taken(now + kTake);
  EXPECT_EQ(s.due(), now + 100 * kMs) << "the grid goes on from the re-planned deadline";
}

TEST(SampleSchedule, LongerIntervalReplansThePendingWait) {
  SampleSchedule s(100 * kMs, 0);
  s.taken(kT0);
  s.set_interval(10 * kSec, kT0 + 50 * kMs);
  EXPECT_EQ(s.due(), kT0 + 10 * kSec);
  EXPECT_EQ(s.interval(), 10 * kSec);
}

TEST(SampleSchedule, IntervalChangeKeepsTheEndOfTheDuration) {
  SampleSchedule s(100 * kMs, 1 * kSec);
  s.taken(kT0);
  s.taken(kT0 + 100 * kMs + kTake);
  s.set_interval(2 * kSec, kT0 + 150 * kMs);
  EXPECT_EQ(s.due(), kT0 + 1 * kSec) << "the sample at the end of -d";
  EXPECT_TRUE(s.more());
}

// ---- LiveSource on a fake reader -------------------------------------------------------

namespace {

/// A SlotReader without BPF: counts reads and waits; poll() sets stop (a SIGINT arriving
/// while next() waits for its deadline) on the call numbered stop_on_poll (1 = the first).
class FakeReader : public SlotReader {
 public:
  explicit FakeReader(std::atomic<bool>* stop, int stop_on_poll = 0) : stop_(stop), stop_on_poll_(stop_on_poll) {}
  const std::vector<ProbeStatus>& statuses() const override { return statuses_; }
  void read(Sample&) const override { ++reads; }
  /// Returns at once (no wait: the tests' deadlines are an hour away or 1 ms).
  std::vector<int> poll(int) override {
    if (++polls == stop_on_poll_) stop_->store(true);
    return {};
  }
  mutable int reads = 0;
  int polls = 0;

 private:
  std::atomic<bool>* stop_;
  int stop_on_poll_;
  std::vector<ProbeStatus> statuses_;
};

}  // namespace

// The issue-9 repro: record -i 500ms stopped by SIGINT lost the calls since its last
// sample (-2.2 % of cpupri_set over a run, -8 % over 3 s): next() returned false on stop
// without reading. Now the stop takes one last sample at once, long before the deadline.
TEST(LiveSource, StopWhileWaitingTakesAFinalSampleAtOnce) {
  std::atomic<bool> stop{false};
  FakeReader r(&stop, 3);  // SIGINT during the third slice of the wait
  LiveSource src(r, Meta{}, 3600 * kSec, 0, &stop);
  Sample base, fin, more;
  ASSERT_TRUE(src.next(base)) << "the baseline";
  ASSERT_TRUE(src.next(fin)) << "the stop's final sample";
  EXPECT_EQ(r.polls, 3) << "taken as soon as the stop is seen";
  EXPECT_EQ(r.reads, 2) << "the probes are read for it";
  EXPECT_EQ(fin.seq, 1u);
  EXPECT_LT(fin.mono_ns, base.mono_ns + 3600 * kSec) << "at the stop, not at the next deadline";
  EXPECT_GE(fin.mono_ns, base.mono_ns);
  EXPECT_FALSE(src.next(more)) << "then the end";
  EXPECT_FALSE(src.finish(more));
  EXPECT_EQ(r.reads, 2);
}

// A stop already set when next() is called (the signal came while the caller wrote the
// previous sample) also gets its final sample, once.
TEST(LiveSource, StopBeforeNextTakesOneFinalSample) {
  std::atomic<bool> stop{false};
  FakeReader r(&stop);
  LiveSource src(r, Meta{}, 3600 * kSec, 0, &stop);
  Sample s;
  ASSERT_TRUE(src.next(s));
  stop.store(true);
  EXPECT_TRUE(src.next(s));
  EXPECT_EQ(s.seq, 1u);
  EXPECT_FALSE(src.next(s));
  EXPECT_EQ(r.reads, 2);
  EXPECT_EQ(r.polls, 0) << "no wait at all";
}

// top ends on q (no signal) or stops calling next() once stop is set: finish() takes the
// final sample for its recording, once; not before the baseline.
TEST(LiveSource, FinishTakesTheFinalSampleOnce) {
  std::atomic<bool> stop{false};
  FakeReader r(&stop);
  LiveSource src(r, Meta{}, 3600 * kSec, 0, &stop);
  Sample s;
  EXPECT_FALSE(src.finish(s)) << "no baseline yet";
  EXPECT_EQ(r.reads, 0);
  ASSERT_TRUE(src.next(s));
  EXPECT_TRUE(src.finish(s));
  EXPECT_EQ(s.seq, 1u);
  EXPECT_FALSE(src.finish(s));
  stop.store(true);
  EXPECT_FALSE(src.next(s)) << "the final sample is taken: nothing more";
  EXPECT_EQ(r.reads, 2);
}

// -d ends with its own sample at the end; a stop after that adds none.
TEST(LiveSource, DurationEndTakesNoExtraSampleOnStop) {
  std::atomic<bool> stop{false};
  FakeReader r(&stop);
  LiveSource src(r, Meta{}, 1 * kMs, 1 * kMs, &stop);  // -d 1ms -i 1ms: baseline and the end
  Sample s;
  ASSERT_TRUE(src.next(s));
  ASSERT_TRUE(src.next(s));
  EXPECT_EQ(s.seq, 1u);
  stop.store(true);
  EXPECT_FALSE(src.next(s));
  EXPECT_FALSE(src.finish(s));
  EXPECT_EQ(r.reads, 2);
}

// top's UI loop polls: the baseline at once, then nothing (and no sleep: the learner is
// serviced with a zero wait) until a deadline an hour away; a stop seen by poll() takes
// the final sample, once, as next() does.
TEST(LiveSource, PollNeverWaitsAndReturnsOnlyWhatIsDue) {
  std::atomic<bool> stop{false};
  FakeReader r(&stop);
  LiveSource src(r, Meta{}, 3600 * kSec, 0, &stop);
  Sample s;
  ASSERT_TRUE(src.poll(s)) << "the baseline";
  EXPECT_EQ(s.seq, 0u);
  s.seq = 99;
  EXPECT_FALSE(src.poll(s));
  EXPECT_FALSE(src.poll(s));
  EXPECT_EQ(s.seq, 99u) << "untouched";
  EXPECT_EQ(r.polls, 2) << "the learner serviced once per poll";
  EXPECT_EQ(r.reads, 1);
  stop.store(true);
  ASSERT_TRUE(src.poll(s));
  EXPECT_EQ(s.seq, 1u);
  EXPECT_TRUE(src.ended());
  EXPECT_FALSE(src.poll(s));
  EXPECT_FALSE(src.finish(s));
  EXPECT_EQ(r.reads, 2);
}

// copy_slots (sample.h), what ProbeSet::read does with a mapped BPF map: every word is
// copied CPU-major except the private ones (nohz_exit's timing stack), which read as 0.
TEST(CopySlots, CopiesEveryWordButThePrivateOnes) {
  const ProbeSpec* spec = find_probe("nohz_exit");
  ASSERT_NE(spec, nullptr);
  const SlotFields& L = spec->slot;
  const uint32_t ncpus = 3;
  std::vector<uint64_t> map(size_t(ncpus) * L.slot_words);
  for (size_t i = 0; i < map.size(); ++i) map[i] = i + 1;
  SlotWords words(1, 1);
  words.mut(0) = 42;
  copy_slots(map.data(), ncpus, L, words);
  ASSERT_EQ(words.size(), map.size());
  size_t priv = 0;
  for (uint32_t c = 0; c < ncpus; ++c)
    for (uint32_t w = 0; w < L.slot_words; ++w) {
      bool is_priv = false;
      for (const auto& f : L.fields)
        if (f.kind == FieldKind::priv && w >= f.offset && w < f.offset + f.nwords) is_priv = true;
      const size_t i = size_t(c) * L.slot_words + w;
      EXPECT_EQ(words[i], is_priv ? 0 : map[i]) << "cpu " << c << " word " << w;
      priv += is_priv;
    }
  // struct sh_timing (depth, ts[], detail[]), struct sh_catch's rate window (win_ns, win_sent)
  // and the tick proxy's open tick (sh_nohz_exit_slot.tick, set and cleared every tick)
  EXPECT_EQ(priv, ncpus * (1 + 2 * SH_MAX_DEPTH + 2 + 1));
  EXPECT_EQ(words[offsetof(sh_nohz_exit_slot, tick) / 8], 0u) << "the tick proxy's word is not recorded";
}

// The idle slot as the program writes an event at or over a --catch threshold: the
// histogram's bucket, then (after the stack is taken) a catch counter.
namespace {
struct IdleEvents {
  const SlotFields& L = find_probe("idle")->slot;
  uint32_t bucket = L.find("lat")->offset + uint32_t(offsetof(sh_hist, bucket) / 8) + 300;
  uint32_t caught = L.find("caught")->offset;
  void event(uint64_t* slot) const {
    __atomic_fetch_add(slot + bucket, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(slot + caught, 1, __ATOMIC_RELEASE);
  }
};
}  // namespace

// An event the program finishes while a CPU's slot is being copied is in the copy's
// counter and not in its histogram when it ends between their reads: copy_slots reads the
// witnesses (the catch counts) first and copies the CPU again when they moved. Here the
// "program" finishes an event on CPU 1 after the witnesses' first read of the first try:
// the copy is made again, holds the event in both places, and what the delta says
// (compared in place, the block being the copy's own) is the words' change.
TEST(CopySlots, AnEventEndingDuringTheCopyIsReadAgainWhole) {
  IdleEvents ev;
  const SlotFields& L = ev.L;
  ASSERT_TRUE(L.find("caught")->witness && L.find("catch_rate_drops")->witness && L.find("catch_full_drops")->witness);
  ASSERT_FALSE(L.find("entries")->witness);
  const uint32_t ncpus = 3, sw = L.slot_words;
  std::vector<uint64_t> map(size_t(ncpus) * sw, 0);
  SlotWords words;
  copy_slots(map.data(), ncpus, L, words);  // the first state
  for (int round = 0; round < 2; ++round) {
    ev.event(map.data() + sw);  // a change on CPU 1: its block is copied
    int calls = 0;
    const std::function<void(uint32_t)> between = [&](uint32_t cpu) {
      if (cpu == 1 && calls++ == 0) ev.event(map.data() + sw);
    };
    const uint64_t rereads = slot_rereads(), stamp = words.stamp();
    // Round 0: the state before is held too, so the copy writes a block of its own; round
    // 1: nothing else holds it, so the copy compares and writes in place.
    SlotWords held = round == 0 ? words : SlotWords();
    SlotWords next = std::move(words);
    copy_slots(map.data(), ncpus, L, next, &between);
    EXPECT_EQ(slot_rereads(), rereads + 1) << "round " << round;
    EXPECT_EQ(calls, 2) << "CPU 1 copied twice";
    EXPECT_EQ(next.cpu(1)[ev.bucket], map[sw + ev.bucket]);
    EXPECT_EQ(next.cpu(1)[ev.caught], map[sw + ev.caught]);
    const SlotDelta* d = next.kept_delta();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->before, stamp);
    // CPU 1's entries: the bucket and the counter, each grown by the two events.
    ASSERT_EQ(d->first[1], 0u);
    ASSERT_EQ(d->first[2], 2u) << "round " << round;
    EXPECT_EQ(d->word[0], ev.bucket);
    EXPECT_EQ(d->grown[0], 2u) << "round " << round;
    EXPECT_EQ(d->word[1], ev.caught);
    EXPECT_EQ(d->grown[1], 2u) << "round " << round;
    EXPECT_TRUE(d->shrunk.empty());
    words = std::move(next);
  }
}

// The same with a real writer thread: an event on CPU 0 every few copies' time while the
// main thread samples. No sample holds a catch count its histogram does not (the
// histogram may hold one event more: one in flight, between the program's two adds). The
// events are spaced by 8 copies' time (at least 20 us): a CPU whose events end faster than
// its slot is copied keeps the last of 16 tries, as copy_slots says (under ASan, events
// 3 us apart left 5 of 33,813 samples so).
TEST(CopySlots, NoSampleHoldsACountItsHistogramLacks) {
  IdleEvents ev;
  const uint32_t ncpus = 2, sw = ev.L.slot_words;
  std::vector<uint64_t> map(size_t(ncpus) * sw, 0);
  SlotWords words;
  // One copy of a changed slot, timed (the fastest of 50).
  auto copy_ns = std::chrono::nanoseconds::max();
  for (int i = 0; i < 50; ++i) {
    ev.event(map.data());
    SlotWords next = words;
    const auto t0 = std::chrono::steady_clock::now();
    copy_slots(map.data(), ncpus, ev.L, next);
    copy_ns = std::min(copy_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0));
    words = next;
  }
  const auto gap = std::max<std::chrono::nanoseconds>(std::chrono::microseconds(20), 8 * copy_ns);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      ev.event(map.data());
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < gap) {
      }
    }
  });
  int samples = 0, bad = 0;
  const uint64_t rereads = slot_rereads();
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300)) {
    // A sample at a random time between events (sampling right after each change would
    // copy in step with the writer and never overlap an event).
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const auto wait = std::chrono::nanoseconds(int64_t(rng % uint64_t(gap.count())));
    for (const auto w0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - w0 < wait;) {
    }
    SlotWords next = words;
    copy_slots(map.data(), ncpus, ev.L, next);
    const uint64_t h = next.cpu(0)[ev.bucket], c = next.cpu(0)[ev.caught];
    if (c > h || h > c + 1) ++bad;
    ++samples;
    words = next;
  }
  stop.store(true);
  writer.join();
  std::printf("a copy %.2f us, an event every %.1f us: %d samples, %d inconsistent, %llu copied again\n",
              double(copy_ns.count()) / 1e3, double(gap.count()) / 1e3, samples, bad,
              static_cast<unsigned long long>(slot_rereads() - rereads));
  EXPECT_GT(samples, 100);
  EXPECT_EQ(bad, 0);
}
