// SlotWords (probe/slot_words.h), the copy-on-write per-CPU words of a sample, and what it
// buys (issue 32): a copy shares every block, a write unshares one, and the sampler,
// the recording writer and the reader cost what changed in an interval, nothing when
// nothing did.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "model/interval.h"
#include "model/interval_cursor.h"
#include "probe/records.h"
#include "probe/slot_words.h"
#include "sample/sampler.h"
#include "store/recording.h"
#include "store/sample_codec.h"
#include "test_recording_util.h"
#include "test_util.h"

namespace schedhot {
namespace {

using testing::synthetic_meta;
using testing::tmp_path;
using testing::word;

constexpr uint32_t K = SlotWords::kBlockCpus;

TEST(SlotWords, AssignIsSharedZeroBlocksAndAllocatesNoWords) {
  const uint64_t before = SlotWords::allocated_bytes();
  SlotWords w(3 * K + 5, 7);
  EXPECT_EQ(SlotWords::allocated_bytes(), before) << "zeros are the shared zero block (made once per size)";
  EXPECT_EQ(w.ncpus(), 3 * K + 5);
  EXPECT_EQ(w.slot_words(), 7u);
  EXPECT_EQ(w.size(), size_t(3 * K + 5) * 7);
  ASSERT_EQ(w.nblocks(), 4u);
  EXPECT_EQ(w.block_cpus(0), K);
  EXPECT_EQ(w.block_cpus(3), 5u) << "the last block holds the remainder";
  for (size_t b = 0; b < w.nblocks(); ++b) EXPECT_TRUE(w.zero_block(b));
  EXPECT_EQ(w.block(0), w.block(3)) << "one zero block for every block of the size";
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(w[i], 0u);
  SlotWords v(K, 7);
  EXPECT_EQ(v.block(0), w.block(0)) << "the same zero block in another SlotWords of the same slot width";
  w.clear();
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(w.nblocks(), 0u);
  SlotWords e(0, 7);
  EXPECT_TRUE(e.empty());
}

TEST(SlotWords, FlatIndexAndByCpuAgree) {
  const uint32_t ncpus = 2 * K + 3, sw = 5;
  SlotWords w(ncpus, sw);
  std::vector<uint64_t> dense(size_t(ncpus) * sw);
  std::mt19937_64 rng(3);
  for (size_t i = 0; i < dense.size(); ++i) {
    dense[i] = rng();
    if (i % 3) w.mut(i) = dense[i];
    else w.mut_cpu(uint32_t(i / sw))[i % sw] = dense[i];
  }
  for (uint32_t c = 0; c < ncpus; ++c)
    for (uint32_t k = 0; k < sw; ++k) {
      ASSERT_EQ(w.cpu(c)[k], dense[size_t(c) * sw + k]) << "cpu " << c << " word " << k;
      ASSERT_EQ(w[size_t(c) * sw + k], dense[size_t(c) * sw + k]);
    }
  for (size_t b = 0; b < w.nblocks(); ++b)
    EXPECT_EQ(w.block(b), w.cpu(uint32_t(b * K))) << "a block starts with its first CPU's words";
}

TEST(SlotWords, CopySharesAndAWriteUnsharesOnlyItsBlock) {
  const uint32_t ncpus = 4 * K, sw = 9;
  SlotWords a(ncpus, sw);
  for (uint32_t c = 0; c < ncpus; ++c) a.mut_cpu(c)[c % sw] = c + 1;  // every block a's own
  for (size_t b = 0; b < a.nblocks(); ++b) EXPECT_FALSE(a.zero_block(b));

  const uint64_t alloc0 = SlotWords::allocated_bytes(), copied0 = SlotWords::copied_bytes();
  SlotWords b = a;
  EXPECT_EQ(SlotWords::allocated_bytes(), alloc0) << "a copy copies block pointers, no words";
  for (size_t k = 0; k < a.nblocks(); ++k) EXPECT_TRUE(b.same_block(a, k));
  EXPECT_TRUE(a == b);

  b.mut_cpu(K + 2)[4] = 12345;  // block 1
  EXPECT_EQ(SlotWords::allocated_bytes() - alloc0, size_t(K) * sw * 8) << "one block unshared";
  EXPECT_EQ(SlotWords::copied_bytes() - copied0, size_t(K) * sw * 8);
  EXPECT_TRUE(b.same_block(a, 0));
  EXPECT_FALSE(b.same_block(a, 1));
  EXPECT_TRUE(b.same_block(a, 2));
  EXPECT_TRUE(b.same_block(a, 3));
  EXPECT_EQ(a.cpu(K + 2)[4], 0u) << "the original is unchanged";
  EXPECT_EQ(b.cpu(K + 2)[4], 12345u);
  EXPECT_EQ(b.cpu(K + 2)[(K + 2) % sw], K + 3) << "the rest of the block was copied";
  EXPECT_FALSE(a == b);

  const uint64_t alloc1 = SlotWords::allocated_bytes();
  b.mut(size_t(K + 5) * sw) = 1;  // the same block again: b's own now, written in place
  EXPECT_EQ(SlotWords::allocated_bytes(), alloc1);

  // A zero block unshared is zeros, not a copy.
  SlotWords z(2 * K, sw), y = z;
  const uint64_t copied2 = SlotWords::copied_bytes();
  y.mut_cpu(0)[0] = 1;
  EXPECT_EQ(SlotWords::copied_bytes(), copied2);
  EXPECT_TRUE(z.zero_block(0));
  EXPECT_FALSE(y.zero_block(0));
  EXPECT_TRUE(y.zero_block(1));
  for (uint32_t k = 1; k < K * sw; ++k) ASSERT_EQ(y.block(0)[k], 0u);

  // mut_block without keep: the caller overwrites it
  SlotWords x = a;
  uint64_t* d = x.mut_block(3, false);
  for (size_t k = 0; k < size_t(K) * sw; ++k) d[k] = 7;
  EXPECT_EQ(x.cpu(3 * K + 1)[2], 7u);
  EXPECT_NE(a.cpu(3 * K + 1)[2], 7u);
}

// copy_slots writes only the blocks that differ, private words aside.
TEST(SlotWords, CopySlotsWritesOnlyChangedBlocks) {
  const ProbeSpec* spec = find_probe("nohz_exit");
  ASSERT_NE(spec, nullptr);
  const SlotFields& L = spec->slot;
  const uint32_t ncpus = 4 * K;
  std::vector<uint64_t> map(size_t(ncpus) * L.slot_words, 0);
  SlotWords w;
  EXPECT_EQ(copy_slots(map.data(), ncpus, L, w), 0u) << "all zero: the zero blocks stay";
  const Field* priv = nullptr;
  for (const Field& f : L.fields)
    if (f.kind == FieldKind::priv) priv = &f;
  ASSERT_NE(priv, nullptr);
  map[size_t(K + 1) * L.slot_words + priv->offset] = 99;  // a private word moves: nothing to copy
  EXPECT_EQ(copy_slots(map.data(), ncpus, L, w), 0u);
  map[size_t(2 * K + 3) * L.slot_words + L.find("calls")->offset] = 5;
  SlotWords before = w;
  EXPECT_EQ(copy_slots(map.data(), ncpus, L, w), 1u);
  EXPECT_FALSE(w.same_block(before, 2));
  for (size_t b : {0, 1, 3}) EXPECT_TRUE(w.same_block(before, b));
  EXPECT_EQ(w.cpu(2 * K + 3)[L.find("calls")->offset], 5u);
  EXPECT_EQ(copy_slots(map.data(), ncpus, L, w), 0u) << "nothing changed since";
}

/// The BPF maps as a SlotReader: dense CPU-major arrays copied out as ProbeSet::read does;
/// with_marks: and the change marks (abi.h sh_cpu_marks) tick() moves as the programs would.
class DenseMaps : public SlotReader {
 public:
  explicit DenseMaps(const Meta& m, bool with_marks = false) : m_(m) {
    for (const ProbeMeta& p : m.probes) {
      st_.push_back(p.status);
      maps_.emplace_back(size_t(m.ncpus) * p.slot.slot_words, 0);
    }
    if (with_marks) {
      marks_.resize(m.ncpus);
      for (size_t i = 0; i < m.probes.size() && i < SH_NPROBES; ++i) {
        seen_.emplace_back();
        seen_.back().live = marks_.data();
        seen_.back().probe = uint32_t(i);
      }
    }
  }
  const std::vector<ProbeStatus>& statuses() const override { return st_; }
  void read(Sample& s) const override {
    for (size_t i = 0; i < s.probes.size(); ++i)
      if (s.probes[i].present)
        copy_slots(maps_[i].data(), m_.ncpus, m_.probes[i].slot, s.probes[i].words, nullptr,
                   i < seen_.size() ? &seen_[i] : nullptr);
  }
  std::vector<int> poll(int) override { return {}; }
  /// Counts on every every-th CPU of every probe's first counter, its last one on odd k (past a
  /// histogram: a delta lists a CPU's words in order), and a histogram value.
  void tick(uint32_t every, uint64_t k) {
    for (size_t p = 0; p < m_.probes.size(); ++p) {
      const SlotFields& L = m_.probes[p].slot;
      const Field *counter = nullptr, *last = nullptr;  // the first counter and the last
      for (const Field& f : L.fields)
        if (f.kind == FieldKind::counter) {
          if (!counter) counter = &f;
          if (!last || f.offset > last->offset) last = &f;
        }
      for (uint32_t c = 0; c < m_.ncpus; c += every) {
        if (counter) maps_[p][size_t(c) * L.slot_words + counter->offset] += k + c;
        if (last && last != counter && k % 2) maps_[p][size_t(c) * L.slot_words + last->offset] += 1;
        const uint32_t bucket = uint32_t((k * 37 + c) % SH_HIST_BUCKETS);
        for (const Field& f : L.fields)
          if (f.kind == FieldKind::hist) {
            maps_[p][size_t(c) * L.slot_words + f.offset + 2 + bucket] += 1;
            if (!marks_.empty() && p < SH_NPROBES) marks_[c].chunk[p][bucket / SH_MARK_CHUNK_WORDS] += 1;
          }
        if (!marks_.empty() && p < SH_NPROBES) marks_[c].gen[p] += 1;
      }
    }
  }
  /// The maps themselves (a test's writer thread changes them while they are read).
  std::vector<std::vector<uint64_t>>& maps() { return maps_; }
  /// Changes about frac of every probe's words at random: most grow, some shrink (a
  /// reset), private words too (which a sample zeroes).
  void churn(std::mt19937_64& rng, double frac) {
    std::uniform_real_distribution<double> u(0, 1);
    for (auto& map : maps_)
      for (uint64_t& w : map) {
        if (u(rng) > frac) continue;
        w = rng() % 10 == 0 ? w / 2 : w + rng() % 1000;
      }
  }

 private:
  const Meta& m_;
  std::vector<ProbeStatus> st_;
  std::vector<std::vector<uint64_t>> maps_;
  std::vector<sh_cpu_marks> marks_;      ///< per CPU, with_marks only
  mutable std::vector<SlotMarks> seen_;  ///< per probe, as ProbeSet::read keeps them
};

/// s's words with their stamps dropped (each probe's first block written once, unchanged):
/// Interval and the writer then compare every CPU, the path a delta must agree with.
Sample without_delta(Sample s) {
  for (ProbeSample& p : s.probes)
    if (p.words.nblocks()) p.words.mut_block(0);
  return s;
}

/// The words of every present probe of s, dense (what a sample cost before SlotWords).
size_t dense_bytes(const Sample& s) {
  size_t n = 0;
  for (const ProbeSample& p : s.probes) n += p.words.size() * sizeof(uint64_t);
  return n;
}

// Issue 32's "Done when": the sampler (LiveSource over the maps) and record's writer
// (RecordingWriter::write_sample) allocate and copy words only for the blocks that
// changed: nothing on an idle interval, and with 1 CPU in 64 changed at most
// kBlockCpus/64 of the sample. The reader (RecordingReader::next, what report/export/w
// read through) likewise.
TEST(SlotWords, AnIntervalCostsTheBlocksThatChanged) {
  const uint32_t ncpus = 1024;
  const Meta m = synthetic_meta(ncpus);
  DenseMaps maps(m);
  LiveSource live(maps, m, 1, 0, nullptr);  // a 1 ns interval: every poll takes a sample
  const std::string path = tmp_path("slot_words_cost.shot");
  std::remove(path.c_str());
  RecordingWriter w(path, m);
  Sample s;
  maps.tick(1, 1);
  ASSERT_TRUE(live.poll(s));  // the baseline: every block written
  w.write_sample(s);
  const size_t dense = dense_bytes(s);
  ASSERT_GT(dense, 0u);

  struct Cost {
    uint64_t sample_alloc, sample_copied, write_alloc, write_copied;
  };
  auto interval = [&](uint32_t every, uint64_t k) {
    if (every) maps.tick(every, k);
    const uint64_t a0 = SlotWords::allocated_bytes(), c0 = SlotWords::copied_bytes();
    EXPECT_TRUE(live.poll(s));
    const uint64_t a1 = SlotWords::allocated_bytes(), c1 = SlotWords::copied_bytes();
    w.write_sample(s);
    const uint64_t a2 = SlotWords::allocated_bytes(), c2 = SlotWords::copied_bytes();
    return Cost{a1 - a0, c1 - c0, a2 - a1, c2 - c1};
  };

  // An idle interval: no word allocated or copied, by the sampler or the writer.
  const Cost idle = interval(0, 0);
  EXPECT_EQ(idle.sample_alloc, 0u);
  EXPECT_EQ(idle.sample_copied, 0u);
  EXPECT_EQ(idle.write_alloc, 0u);
  EXPECT_EQ(idle.write_copied, 0u);

  // 1 CPU in 64 changed: the sampler writes one block of kBlockCpus CPUs per changed CPU
  // (freshly: no copy of the old words), the writer keeps the sample by its pointers.
  const Cost one = interval(64, 2);
  const uint64_t blocks = ncpus / 64;  // CPUs 0, 64, ...: each in a block of its own
  uint64_t expect = 0;
  for (const ProbeMeta& p : m.probes) {
    bool ticks = false;  // DenseMaps::tick moves its first counter and its histograms
    for (const Field& f : p.slot.fields) ticks |= f.kind == FieldKind::counter || f.kind == FieldKind::hist;
    if (ticks) expect += blocks * K * p.slot.slot_words * sizeof(uint64_t);
  }
  EXPECT_EQ(one.sample_alloc, expect);
  EXPECT_LE(one.sample_alloc * 64, dense * K) << "at most kBlockCpus/64 of the sample";
  EXPECT_EQ(one.sample_copied, 0u);
  EXPECT_EQ(one.write_alloc, 0u);
  EXPECT_EQ(one.write_copied, 0u);
  fmt::print("{} CPUs, a sample of {} bytes dense: an idle interval allocates {} bytes, one with 1 CPU in 64 changed {} "
             "({:.1f} %)\n",
             ncpus, dense, idle.sample_alloc + idle.write_alloc, one.sample_alloc + one.write_alloc,
             100.0 * double(one.sample_alloc) / double(dense));
  interval(0, 0);  // one more idle interval, then the end
  w.close();

  // Reading it back: each sample after the first costs the blocks it changed (a copy of
  // each, the previous sample holding the old one), an idle one nothing.
  auto r = RecordingReader::open(path);
  Sample a, b;
  ASSERT_TRUE(r->next(a));
  ASSERT_TRUE(r->next(b));  // idle
  const uint64_t a0 = SlotWords::allocated_bytes();
  ASSERT_TRUE(r->next(a));  // 1 in 64
  const uint64_t a1 = SlotWords::allocated_bytes();
  ASSERT_TRUE(r->next(b));  // idle
  const uint64_t a2 = SlotWords::allocated_bytes();
  EXPECT_EQ(a1 - a0, expect);
  EXPECT_EQ(a2 - a1, 0u);
  for (size_t p = 0; p < m.probes.size(); ++p) {
    for (size_t k = 0; k < b.probes[p].words.nblocks(); ++k) ASSERT_TRUE(b.probes[p].words.same_block(a.probes[p].words, k));
  }
  std::remove(path.c_str());
}

// The change marks (abi.h sh_cpu_marks, bpf/common.bpf.h sh_mark/sh_hist_add): copy_slots
// does not read a CPU whose gen did not move, nor a histogram chunk whose count did not,
// for the words it last wrote; words of another stamp, or a gen moved past 2^31, are read
// in full. A word changed in the "map" without its mark is what shows what was read.
TEST(CopySlots, MarksThatDidNotMoveLeaveWordsUnread) {
  const SlotFields& L = find_probe("nohz_exit")->slot;
  const uint32_t ncpus = 3, sw = L.slot_words, p = SH_P_NOHZ_EXIT;
  const uint32_t calls = L.find("calls")->offset, b0 = L.find("lat")->offset + 2;
  std::vector<uint64_t> map(size_t(ncpus) * sw, 0);
  std::vector<sh_cpu_marks> live(ncpus);
  auto at = [&](uint32_t c, uint32_t w) -> uint64_t& { return map[size_t(c) * sw + w]; };
  SlotMarks marks;
  marks.live = live.data();
  marks.probe = p;
  SlotWords w;
  for (uint32_t c = 0; c < ncpus; ++c) at(c, calls) = 10 + c;
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);  // a first state: read in full
  EXPECT_EQ(w.cpu(2)[calls], 12u);
  EXPECT_EQ(marks.stamp, w.stamp());

  at(1, calls) = 50;  // no mark: not read
  EXPECT_EQ(copy_slots(map.data(), ncpus, L, w, nullptr, &marks), 0u);
  EXPECT_EQ(w.cpu(1)[calls], 11u);
  live[1].gen[p] += 1;  // now read
  const uint64_t before = w.stamp();
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);
  EXPECT_EQ(w.cpu(1)[calls], 50u);
  ASSERT_NE(w.kept_delta(), nullptr);
  EXPECT_EQ(w.kept_delta()->before, before);
  EXPECT_EQ(w.kept_delta()->word.size(), 1u) << "the delta lists the one word read that changed";

  // Buckets of chunks 5 and 9 change; only chunk 5's count moves: chunk 9 stays unread.
  at(2, b0 + 5 * SH_MARK_CHUNK_WORDS + 3) = 7;
  at(2, b0 + 9 * SH_MARK_CHUNK_WORDS) = 4;
  at(2, b0 - 2) = 777;  // sum_ns: read with the rest of the slot when gen moved
  live[2].gen[p] += 2;
  live[2].chunk[p][5] += 7;
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);
  EXPECT_EQ(w.cpu(2)[b0 + 5 * SH_MARK_CHUNK_WORDS + 3], 7u);
  EXPECT_EQ(w.cpu(2)[b0 + 9 * SH_MARK_CHUNK_WORDS], 0u);
  EXPECT_EQ(w.cpu(2)[b0 - 2], 777u);
  live[2].gen[p] += 1;
  live[2].chunk[p][9] += 4;
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);
  EXPECT_EQ(w.cpu(2)[b0 + 9 * SH_MARK_CHUNK_WORDS], 4u);

  // Another probe's marks are not this one's.
  at(0, calls) = 99;
  live[0].gen[SH_P_IDLE] += 1;
  live[0].chunk[SH_P_IDLE][0] += 1;
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);
  EXPECT_EQ(w.cpu(0)[calls], 10u);

  // A gen that moved 2^31 or more: every chunk read, whatever their counts say.
  at(2, b0 + 20 * SH_MARK_CHUNK_WORDS) = 3;
  live[2].gen[p] += uint64_t(1) << 31;
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);
  EXPECT_EQ(w.cpu(2)[b0 + 20 * SH_MARK_CHUNK_WORDS], 3u);

  // Words of another stamp (not what the marks were read for): read in full.
  SlotWords other = w;
  other.mut_block(0);  // written: its stamp dropped
  copy_slots(map.data(), ncpus, L, other, nullptr, &marks);
  EXPECT_EQ(other.cpu(0)[calls], 99u);
  copy_slots(map.data(), ncpus, L, w, nullptr, &marks);  // and w again: the marks now say other's
  EXPECT_EQ(w.cpu(0)[calls], 99u);
}

// A busy machine's steady state: the sampler moves its last words into the sample and
// record's writer keeps the previous sample hollow (its stamp only), so a busy interval
// is written in place: no block allocated or copied after the second sample. The
// recording reads back every sample's words.
TEST(SlotWords, ABusyIntervalIsWrittenInPlace) {
  for (bool with_marks : {false, true}) {
  SCOPED_TRACE(with_marks ? "read by the change marks" : "read in full");
  const uint32_t ncpus = 256;
  const Meta m = synthetic_meta(ncpus);
  DenseMaps maps(m, with_marks);
  LiveSource live(maps, m, 1, 0, nullptr);
  const std::string path = tmp_path("slot_words_busy_in_place.shot");
  std::remove(path.c_str());
  RecordingWriter w(path, m);
  Sample s;
  std::vector<Sample> kept;
  for (uint64_t k = 1; k <= 6; ++k) {
    maps.tick(1, k);  // every CPU
    const uint64_t a0 = SlotWords::allocated_bytes(), c0 = SlotWords::copied_bytes();
    ASSERT_TRUE(live.poll(s));
    const uint64_t a1 = SlotWords::allocated_bytes(), c1 = SlotWords::copied_bytes();
    w.write_sample(s);
    if (k >= 3) {
      EXPECT_EQ(a1 - a0, 0u) << "sample " << k;
      EXPECT_EQ(c1 - c0, 0u) << "sample " << k;
      EXPECT_EQ(SlotWords::allocated_bytes(), a1) << "the writer allocates nothing either";
    }
    Sample dense = make_sample(m);  // the words as a copy of their own
    for (size_t p = 0; p < s.probes.size(); ++p)
      for (size_t i = 0; i < s.probes[p].words.size(); ++i) dense.probes[p].words.mut(i) = s.probes[p].words[i];
    kept.push_back(std::move(dense));
  }
  w.close();
  auto r = RecordingReader::open(path);
  Sample got;
  for (size_t k = 0; k < kept.size(); ++k) {
    ASSERT_TRUE(r->next(got)) << k;
    for (size_t p = 0; p < got.probes.size(); ++p)
      for (size_t i = 0; i < got.probes[p].words.size(); ++i)
        ASSERT_EQ(got.probes[p].words[i], kept[k].probes[p].words[i]) << "sample " << k << " probe " << p << " word " << i;
  }
  EXPECT_FALSE(r->next(got));
  std::remove(path.c_str());
  }
}

// Interval skips the CPUs of a shared block: its figures equal those over the same words
// held in blocks of their own.
TEST(SlotWords, IntervalOverSharedBlocksEqualsUnshared) {
  const Meta m = synthetic_meta(3 * K + 1);
  std::mt19937_64 rng(11);
  Sample a = make_sample(m);
  testing::advance(m, a, rng, 0.5);
  Sample b = a;  // shares every block
  b.mono_ns = a.mono_ns + m.interval_ns;
  const int cs = m.probe_index("cpupri_set");
  testing::add_hist(m, b, cs, int(K) + 1, "lat", 5000);
  b.probes[size_t(cs)].words.mut(word(m, cs, int(K) + 1, "calls")) += 4;
  Sample deep = b;  // the same words, every block its own
  for (ProbeSample& p : deep.probes)
    for (size_t k = 0; k < p.words.nblocks(); ++k) {
      const std::vector<uint64_t> keep(p.words.block(k), p.words.block(k) + size_t(p.words.block_cpus(k)) * p.words.slot_words());
      std::copy(keep.begin(), keep.end(), p.words.mut_block(k, false));
    }
  for (size_t k = 0; k < deep.probes[size_t(cs)].words.nblocks(); ++k)
    ASSERT_TRUE(!deep.probes[size_t(cs)].words.same_block(a.probes[size_t(cs)].words, k));
  const Interval shared(m, a, b), unshared(m, a, deep);
  for (int p = 0; p < int(m.probes.size()); ++p)
    for (const Field& f : m.probes[size_t(p)].slot.fields) {
      const FieldRef ref{p, &f};
      for (int c = -1; c < int(m.ncpus); ++c) {
        if (f.kind == FieldKind::hist) {
          const HistSummary x = shared.hist(ref, c), y = unshared.hist(ref, c);
          ASSERT_EQ(x.count, y.count) << f.name << " cpu " << c;
          ASSERT_EQ(x.p99, y.p99);
          ASSERT_EQ(x.max_ns, y.max_ns);
        } else {
          ASSERT_EQ(shared.count(ref, c), unshared.count(ref, c)) << f.name << " cpu " << c;
        }
        if (c >= 0) ASSERT_EQ(shared.online(c), unshared.online(c));
      }
    }
  EXPECT_EQ(shared.count(cs, "calls"), 4u);
  EXPECT_EQ(shared.hist(cs, "lat").count, 1u);
}

// The recording decoder keeps what each sample changed (SlotDelta), and Interval reads
// only those words for two consecutive states: its figures equal the dense compare's to
// the bit, resets (a word that shrank) and keyframes included, and the delta is there.
/// Writes a recording of nsamples samples of m to path: each advanced by testing::advance
/// with busy(k) of its CPUs busy, then changed by edit(k, s) (resets).
void write_walk(const std::string& path, const Meta& m, std::mt19937_64& rng, int nsamples,
                const std::function<double(int)>& busy, const std::function<void(int, Sample&)>& edit) {
  std::remove(path.c_str());
  RecordingWriter w(path, m);
  Sample s = make_sample(m);
  for (int k = 0; k < nsamples; ++k) {
    testing::advance(m, s, rng, busy(k));
    edit(k, s);
    w.write_sample(s);
  }
  w.close();
}

/// Every sample of the recording at path, each read by one reader from the start.
std::vector<Sample> read_all(const std::string& path) {
  std::vector<Sample> out;
  auto r = RecordingReader::open(path);
  Sample s;
  while (r->next(s)) out.push_back(s);
  return out;
}

/// Asserts that two intervals over the same samples give the same figures: every word's
/// delta on every CPU, every counter and histogram per CPU, all CPUs and a group, online
/// CPUs and the first sample's summed histograms. seq names the sample in messages.
void expect_same_interval(const Meta& m, const Interval& fast, const Interval& slow, const std::vector<int>& group,
                          uint32_t seq) {
  for (int c = -1; c <= int(m.ncpus); ++c) ASSERT_EQ(fast.online(c), slow.online(c)) << "cpu " << c;
  for (int p = 0; p < int(m.probes.size()); ++p) {
    ASSERT_EQ(fast.present(p), slow.present(p)) << "probe " << p << " sample " << seq;
    if (fast.present(p)) {  // every word's delta on every CPU, as the coherence model reads them
      const uint32_t sw = m.probes[size_t(p)].slot.slot_words;
      std::vector<uint32_t> all(sw);
      std::iota(all.begin(), all.end(), 0u);
      std::vector<uint64_t> df(sw, 7), ds(sw, 7);
      for (int c = 0; c < int(m.ncpus); ++c) {
        fast.word_deltas(p, c, all, df.data());
        slow.word_deltas(p, c, all, ds.data());
        ASSERT_EQ(df, ds) << "probe " << p << " cpu " << c << " sample " << seq;
      }
    }
    for (const Field& f : m.probes[size_t(p)].slot.fields) {
      const FieldRef ref{p, &f};
      if (f.kind != FieldKind::hist) {
        for (int c = -1; c < int(m.ncpus); ++c) {
          ASSERT_EQ(fast.count(ref, c), slow.count(ref, c)) << f.name << " cpu " << c << " sample " << seq;
          if (f.kind == FieldKind::counter_array)
            for (int k = 0; k < int(f.nwords); ++k) ASSERT_EQ(fast.count(ref, c, k), slow.count(ref, c, k));
        }
        ASSERT_EQ(fast.count(ref, std::span<const int>(group)), slow.count(ref, std::span<const int>(group)));
        continue;
      }
      auto same = [&](const HistSummary& x, const HistSummary& y, int c) {
        ASSERT_EQ(x.count, y.count) << f.name << " cpu " << c << " sample " << seq;
        ASSERT_EQ(x.mean_ns, y.mean_ns);
        ASSERT_EQ(x.max_ns, y.max_ns);
        for (auto q : {&HistSummary::p10, &HistSummary::p50, &HistSummary::p90, &HistSummary::p98, &HistSummary::p99})
          ASSERT_EQ(x.*q, y.*q) << f.name << " cpu " << c;
      };
      for (int c = -1; c < int(m.ncpus); ++c) same(fast.hist(ref, c), slow.hist(ref, c), c);
      same(fast.hist(ref, std::span<const int>(group)), slow.hist(ref, std::span<const int>(group)), -2);
      std::vector<uint64_t> kf, ks;
      same(fast.hist(p, f.name, std::span<const int>(group), kf), slow.hist(p, f.name, std::span<const int>(group), ks), -3);
      ASSERT_EQ(kf, ks);
      ASSERT_EQ(fast.buckets(p, f.name), slow.buckets(p, f.name));
      ASSERT_EQ(fast.first_summed(p, f.name), slow.first_summed(p, f.name)) << f.name << " sample " << seq;
    }
  }
}

TEST(SlotWords, IntervalOfConsecutiveDecodedStatesEqualsDense) {
  const Meta m = synthetic_meta(3 * K + 5);
  std::mt19937_64 rng(17);
  const std::string path = tmp_path("slot_words_delta.shot");
  const int nsamples = int(kKeyframeEvery) + 6;  // a second keyframe inside
  write_walk(path, m, rng, nsamples, [](int k) { return k % 5 == 3 ? 0.02 : 0.6; }, [&](int k, Sample& s) {
    if (k % 7 == 5)  // a reset: a few CPUs' words go back to a smaller value
      for (size_t p = 0; p < m.probes.size(); ++p)
        for (uint32_t c = 0; c < m.ncpus; c += 9)
          for (uint32_t x = 0; x < m.probes[p].slot.slot_words; x += 3) s.probes[p].words.mut_cpu(c)[x] /= 2;
  });
  auto r = RecordingReader::open(path);
  Sample a, b;
  ASSERT_TRUE(r->next(a));
  int sparse = 0, pairs = 0;
  std::vector<int> group;
  for (uint32_t c = 1; c < m.ncpus; c += 3) group.push_back(int(c));
  while (r->next(b)) {
    ++pairs;
    const Sample dense = without_delta(b);  // the same words: Interval compares every CPU
    const Interval fast(m, a, b), slow(m, a, dense);
    bool any = false;
    for (int p = 0; p < int(m.probes.size()); ++p) {
      ASSERT_FALSE(dense.probes[size_t(p)].words.delta_from(a.probes[size_t(p)].words));
      any |= b.probes[size_t(p)].words.delta_from(a.probes[size_t(p)].words) != nullptr;
    }
    ASSERT_NO_FATAL_FAILURE(expect_same_interval(m, fast, slow, group, b.seq));
    sparse += any;
    a = b;
  }
  EXPECT_EQ(pairs, nsamples - 1);
  // Every pair, the one into the second keyframe too: the keyframe rewrites the state in
  // place and keeps what changed (decode_sample).
  EXPECT_EQ(sparse, nsamples - 1);
  std::remove(path.c_str());
}

// Read through an IntervalCursor (which lets go of the sample before the one it holds),
// the decoder makes each busy sample from the blocks of the sample before last, caught up
// by the words that changed, not by copying every block: no word copied but by the second
// sample (the first has no older state to reuse), no block allocated after it, a keyframe
// inside included (rewritten in place), every sample equal to one read on its own (resets
// too).
TEST(SlotWords, TheDecoderReusesTheBlocksOfTheSampleBeforeLast) {
  const Meta m = synthetic_meta(2 * K + 3);
  std::mt19937_64 rng(5);
  const std::string path = tmp_path("slot_words_reuse.shot");
  const int nsamples = int(kKeyframeEvery) + 10;
  write_walk(path, m, rng, nsamples, [](int) { return 1.0; }, [&](int k, Sample& s) {
    if (k % 6 == 4)
      for (uint32_t c = 0; c < m.ncpus; c += 5) s.probes[0].words.mut_cpu(c)[0] /= 3;
  });
  const std::vector<Sample> want = read_all(path);  // every sample held: nothing can be reused
  ASSERT_EQ(want.size(), size_t(nsamples));
  auto r = RecordingReader::open(path);
  IntervalCursor ic(m, {});
  size_t i = 0;
  uint64_t copied_late = 0, allocated_late = 0;
  const uint64_t recycled0 = SlotWords::recycled_bytes();
  for (uint64_t c0 = SlotWords::copied_bytes(), a0 = SlotWords::allocated_bytes(); ic.next(*r);
       c0 = SlotWords::copied_bytes(), a0 = SlotWords::allocated_bytes()) {
    // What making sample i copied and allocated: only the second copies (the first has no
    // older state to reuse), every CPU being busy in every sample.
    if (i != 1) copied_late += SlotWords::copied_bytes() - c0;
    if (i >= 2) allocated_late += SlotWords::allocated_bytes() - a0;
    ASSERT_LT(i, want.size());
    for (size_t p = 0; p < m.probes.size(); ++p)
      ASSERT_TRUE(ic.cur().probes[p].words == want[i].probes[p].words) << "sample " << i << " probe " << p;
    ++i;
  }
  EXPECT_EQ(i, want.size());
  EXPECT_EQ(copied_late, 0u);
  EXPECT_EQ(allocated_late, 0u);
  EXPECT_GT(SlotWords::recycled_bytes(), recycled0);
  std::remove(path.c_str());
}

// One state (IntervalCursorOptions::one_state, report's and `w`'s walk): the cursor lets go
// of cur()'s words before each read, the decoder writes its state in place, and each
// interval is read from the later sample and what changed. Read side by side with a
// two-state cursor over the same recording (resets, a keyframe, a --from/--to window read
// on past its end): every figure of every interval equal, prev() hollow, the last sample's
// words back at the end, and the window's first-to-last interval from the sparse first
// sample equal to the dense one.
TEST(SlotWords, AOneStateCursorReadsTheIntervalsTwoStatesRead) {
  const Meta m = synthetic_meta(3 * K + 2);
  std::mt19937_64 rng(23);
  const std::string path = tmp_path("slot_words_one_state.shot");
  const int nsamples = int(kKeyframeEvery) + 12;
  write_walk(path, m, rng, nsamples, [](int k) { return k % 4 == 1 ? 0.05 : 0.7; }, [&](int k, Sample& s) {
    // A probe missing from some samples: one inside, the one after the window, the last.
    s.probes[1].present = !(k == 10 || k == nsamples - 5 || k == nsamples - 1);
    if (k % 9 == 4)
      for (size_t p = 0; p < m.probes.size(); ++p)
        for (uint32_t c = 1; c < m.ncpus; c += 7)
          for (uint32_t x = 0; x < m.probes[p].slot.slot_words; x += 5) s.probes[p].words.mut_cpu(c)[x] /= 3;
  });
  std::vector<int> group;
  for (uint32_t c = 0; c < m.ncpus; c += 4) group.push_back(int(c));
  for (const SampleWindow& w : {SampleWindow{}, SampleWindow{2.0, double(nsamples - 6), m.interval_ns}}) {
    SCOPED_TRACE(w.from_s);
    auto r1 = RecordingReader::open(path), r2 = RecordingReader::open(path);
    IntervalCursorOptions o1{w, std::nullopt, PastWindow::read_on, /*keep_first=*/true};
    IntervalCursorOptions o2 = o1;
    o2.one_state = true;
    IntervalCursor two(m, o1), one(m, o2);
    int intervals = 0, hollow = 0;
    while (two.next(*r1)) {
      ASSERT_TRUE(one.next(*r2));
      ASSERT_EQ(one.cur().seq, two.cur().seq);
      for (size_t p = 0; p < m.probes.size(); ++p) {
        ASSERT_EQ(one.cur().probes[p].present, two.cur().probes[p].present);
        if (two.cur().probes[p].present)
          ASSERT_TRUE(one.cur().probes[p].words == two.cur().probes[p].words) << "sample " << one.cur().seq;
      }
      ASSERT_EQ(one.interval() != nullptr, two.interval() != nullptr);
      if (!two.interval()) continue;
      ++intervals;
      hollow += one.prev()->probes[0].words.is_hollow();
      ASSERT_NO_FATAL_FAILURE(expect_same_interval(m, *one.interval(), *two.interval(), group, one.cur().seq));
    }
    EXPECT_FALSE(one.next(*r2));
    EXPECT_GT(intervals, 10);
    EXPECT_EQ(hollow, intervals) << "every earlier sample let go of";
    EXPECT_EQ(one.last()->probes[1].present, two.last()->probes[1].present);
    // The last sample handed out has its words back (the window was read on past it).
    ASSERT_TRUE(one.last() && two.last());
    EXPECT_EQ(one.last()->seq, two.last()->seq);
    for (size_t p = 0; p < m.probes.size(); ++p) {
      ASSERT_EQ(one.last()->probes[p].present, two.last()->probes[p].present);
      if (!two.last()->probes[p].present) continue;
      ASSERT_FALSE(one.last()->probes[p].words.is_hollow());
      EXPECT_TRUE(one.last()->probes[p].words == two.last()->probes[p].words);
    }
    // The window: from the first sample's sparse words.
    EXPECT_TRUE(one.first()->probes[0].words.is_hollow());
    const std::unique_ptr<WindowInterval> whole = one.window_interval();
    ASSERT_TRUE(whole);
    const Interval dense(m, *two.first(), *two.last());
    ASSERT_NO_FATAL_FAILURE(expect_same_interval(m, whole->iv, dense, group, 0));
  }
  std::remove(path.c_str());
}

// One state writes in place: after the first sample (made from zeros) a busy walk
// allocates and copies no block and catches nothing up, a keyframe included.
TEST(SlotWords, AOneStateWalkWritesTheDecodersStateInPlace) {
  const Meta m = synthetic_meta(2 * K + 3);
  std::mt19937_64 rng(9);
  const std::string path = tmp_path("slot_words_in_place.shot");
  const int nsamples = int(kKeyframeEvery) + 8;
  write_walk(path, m, rng, nsamples, [](int) { return 1.0; }, [](int, Sample&) {});
  const std::vector<Sample> want = read_all(path);
  auto r = RecordingReader::open(path);
  IntervalCursorOptions o;
  o.one_state = true;
  IntervalCursor ic(m, o);
  size_t i = 0;
  const uint64_t a0 = SlotWords::allocated_bytes(), c0 = SlotWords::copied_bytes(), r0 = SlotWords::recycled_bytes();
  uint64_t a1 = a0;
  while (ic.next(*r)) {
    if (i == 0) a1 = SlotWords::allocated_bytes();
    ASSERT_LT(i, want.size());
    for (size_t p = 0; p < m.probes.size(); ++p) ASSERT_TRUE(ic.cur().probes[p].words == want[i].probes[p].words) << i;
    ++i;
  }
  EXPECT_EQ(i, want.size());
  EXPECT_GT(a1, a0);  // the first sample's blocks
  EXPECT_EQ(SlotWords::allocated_bytes(), a1);
  EXPECT_EQ(SlotWords::copied_bytes(), c0);
  EXPECT_EQ(SlotWords::recycled_bytes(), r0);
  std::remove(path.c_str());
}

// The words a one-state cursor let go of come back when the read after them fails: the
// recording cut inside its last frame (the state is still the sample's), and a sample that
// fails to decode part-way (decode_sample undoes what it applied: the state and its stamp
// are the sample's again). And SlotWords::refill from a state one step later (a sample the
// reader refused after decoding it) undoes that step on a copy, the later state unwritten.
TEST(SlotWords, LetGoWordsComeBackAfterAFailedRead) {
  const Meta m = synthetic_meta(K + 5);
  std::mt19937_64 rng(31);
  const std::string path = tmp_path("slot_words_cut.shot");
  write_walk(path, m, rng, 8, [](int) { return 0.8; }, [](int, Sample&) {});
  const std::vector<Sample> want = read_all(path);
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Cut in the middle of the last sample's frame (the END and INDEX frames go too).
    auto r = RecordingReader::open(path);
    const auto pos = r->sample_positions();
    ASSERT_EQ(pos.size(), want.size());
    bytes.resize(pos.back().offset + 20);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  auto r = RecordingReader::open(path);
  IntervalCursorOptions o;
  o.one_state = true;
  IntervalCursor ic(m, o);
  size_t n = 0;
  while (ic.next(*r)) ++n;
  ASSERT_EQ(n, want.size() - 1);
  for (size_t p = 0; p < m.probes.size(); ++p) {
    ASSERT_FALSE(ic.cur().probes[p].words.is_hollow());
    EXPECT_TRUE(ic.cur().probes[p].words == want[n - 1].probes[p].words);
  }

  // A delta sample cut short decodes part-way and fails: the state is undone.
  Sample state = want[5];
  const std::string raw = encode_sample(want[6], m, &want[5]);
  bool valid = true;
  std::vector<char> nonzero;
  std::string why;
  ASSERT_TRUE(decode_sample(raw, false, m, state, valid, nonzero, why)) << why;  // whole: it decodes
  const Sample before = want[5];
  for (size_t cut : {raw.size() - 3, raw.size() / 2}) {
    Sample st = before;  // shares its blocks: the decoder's writes copy them
    valid = true;
    ASSERT_FALSE(decode_sample(raw.substr(0, cut), false, m, st, valid, nonzero, why));
    // The probes before the failing one are one step on (their deltas kept), the failing
    // one's applied entries undone, the rest untouched: each reads back as sample 5's.
    int undone = 0;
    for (size_t p = 0; p < m.probes.size(); ++p)
      undone += st.probes[p].words.stamp() == before.probes[p].words.stamp() &&
                !(st.probes[p].words == want[6].probes[p].words);
    EXPECT_GE(undone, 1) << "cut " << cut << ": " << why;
    Sample h = before;
    for (ProbeSample& ps : h.probes) ps.words.hollow();
    ASSERT_TRUE(refill_hollow(h, st)) << "cut " << cut;
    for (size_t p = 0; p < m.probes.size(); ++p)
      EXPECT_TRUE(h.probes[p].words == before.probes[p].words) << "cut " << cut << " probe " << p << ": " << why;
  }
  valid = true;

  // refill from one step later: a hollow copy of sample 5's state, the decoder's state
  // at sample 6 (made from it, its delta kept).
  Sample s5 = before, s6 = before;
  ASSERT_TRUE(decode_sample(raw, false, m, s6, valid, nonzero, why)) << why;
  const Sample s6_copy = s6;
  for (ProbeSample& ps : s5.probes) ps.words.hollow();
  ASSERT_TRUE(refill_hollow(s5, s6));
  for (size_t p = 0; p < m.probes.size(); ++p) {
    EXPECT_TRUE(s5.probes[p].words == before.probes[p].words) << p;
    EXPECT_EQ(s5.probes[p].words.stamp(), before.probes[p].words.stamp());
    EXPECT_TRUE(s6.probes[p].words == want[6].probes[p].words) << "the later state is not written";
  }
  // Not from two steps on: sample 4's hollow state cannot be read back from sample 6's.
  Sample s4 = want[4];
  for (ProbeSample& ps : s4.probes) ps.words.hollow();
  EXPECT_FALSE(refill_hollow(s4, s6_copy));
  std::remove(path.c_str());
}

// A keyframe is absolute, so the decoder rewrites whatever state it holds: after a seek
// from the end to the first sample, and from the first to the second keyframe, each
// sample is the one a fresh reader decodes, and the interval from the sample read before
// the seek equals the dense compare (what the rewrite kept as changed is exact).
TEST(SlotWords, AKeyframeAfterASeekRewritesTheStateItFinds) {
  const Meta m = synthetic_meta(2 * K + 3);
  std::mt19937_64 rng(11);
  const std::string path = tmp_path("slot_words_seek.shot");
  const int nsamples = int(kKeyframeEvery) + 4;
  write_walk(path, m, rng, nsamples, [](int k) { return k % 3 ? 0.7 : 0.05; }, [&](int k, Sample& s) {
    if (k == 10)  // a CPU whose words go back to zero: the keyframe leaves it out
      for (size_t p = 0; p < m.probes.size(); ++p) std::fill_n(s.probes[p].words.mut_cpu(3), m.probes[p].slot.slot_words, 0);
  });
  const std::vector<Sample> want = read_all(path);
  ASSERT_EQ(want.size(), size_t(nsamples));
  auto r = RecordingReader::open(path);
  Sample last, got;
  while (r->next(got)) last = got;
  const auto check = [&](size_t i, const Sample& from) {
    ASSERT_TRUE(r->seek_sample(i));
    ASSERT_TRUE(r->next(got));
    ASSERT_EQ(got.mono_ns, want[i].mono_ns);
    int with_delta = 0;
    for (size_t p = 0; p < m.probes.size(); ++p) {
      ASSERT_TRUE(got.probes[p].words == want[i].probes[p].words) << "sample " << i << " probe " << p;
      with_delta += got.probes[p].words.delta_from(from.probes[p].words) != nullptr;
    }
    EXPECT_GT(with_delta, 0) << "sample " << i;
    // Interval from the sample before the seek (either way in time: the figures of the
    // words' differences), with and without the kept delta.
    const Sample& a = from.mono_ns <= got.mono_ns ? from : got;
    const Sample& b = from.mono_ns <= got.mono_ns ? got : from;
    const Sample da = without_delta(a), db = without_delta(b);
    const Interval fast(m, a, b), slow(m, da, db);
    for (int p = 0; p < int(m.probes.size()); ++p)
      for (const Field& f : m.probes[size_t(p)].slot.fields) {
        const FieldRef ref{p, &f};
        for (int c = -1; c < int(m.ncpus); ++c) {
          if (f.kind != FieldKind::hist) {
            ASSERT_EQ(fast.count(ref, c), slow.count(ref, c)) << f.name << " cpu " << c;
            continue;
          }
          const HistSummary x = fast.hist(ref, c), y = slow.hist(ref, c);
          ASSERT_EQ(x.count, y.count) << f.name << " cpu " << c;
          ASSERT_EQ(x.max_ns, y.max_ns) << f.name << " cpu " << c;
          ASSERT_EQ(x.p99, y.p99) << f.name << " cpu " << c;
        }
      }
  };
  check(0, last);  // the end's state rewritten into the first sample's
  const Sample first = got;
  check(kKeyframeEvery, first);
  std::remove(path.c_str());
}

// The sampler keeps what each sample changed (copy_slots' SlotDelta): the recording writer
// encodes from it without comparing, to the same bytes as the compare, and Interval's
// figures over two consecutive live samples equal the dense compare's.
TEST(SlotWords, TheSamplersDeltaWritesTheSameBytesAndFigures) {
  const Meta m = synthetic_meta(2 * K + 7);
  DenseMaps maps(m);
  LiveSource live(maps, m, 1, 0, nullptr);  // a 1 ns interval: every poll takes a sample
  std::mt19937_64 rng(23);
  std::vector<Sample> taken;
  Sample s;
  for (int k = 0; k < 12; ++k) {
    maps.churn(rng, k % 4 == 2 ? 0.0 : k % 4 == 3 ? 0.01 : 0.3);  // idle, nearly idle, busy
    ASSERT_TRUE(live.poll(s));
    taken.push_back(s);
  }
  int with_delta = 0;
  for (size_t k = 1; k < taken.size(); ++k) {
    for (size_t p = 0; p < m.probes.size(); ++p)
      with_delta += taken[k].probes[p].words.delta_from(taken[k - 1].probes[p].words) != nullptr;
    const Sample dense = without_delta(taken[k]);
    const Interval fast(m, taken[k - 1], taken[k]), slow(m, taken[k - 1], dense);
    for (int p = 0; p < int(m.probes.size()); ++p)
      for (const Field& f : m.probes[size_t(p)].slot.fields) {
        const FieldRef ref{p, &f};
        for (int c = -1; c < int(m.ncpus); ++c) {
          if (f.kind == FieldKind::hist) {
            const HistSummary x = fast.hist(ref, c), y = slow.hist(ref, c);
            ASSERT_EQ(x.count, y.count) << f.name << " cpu " << c << " sample " << k;
            ASSERT_EQ(x.p50, y.p50);
            ASSERT_EQ(x.p99, y.p99);
            ASSERT_EQ(x.max_ns, y.max_ns);
            ASSERT_EQ(x.mean_ns, y.mean_ns);
          } else if (f.kind != FieldKind::priv) {
            ASSERT_EQ(fast.count(ref, c), slow.count(ref, c)) << f.name << " cpu " << c << " sample " << k;
          }
        }
      }
  }
  EXPECT_GE(with_delta, int(m.probes.size()) * 8) << "the busy and nearly idle samples keep a delta";
  // The same samples written twice: as taken (the writer reads the deltas) and with their
  // stamps dropped (the writer compares): the same bytes.
  const std::string a = tmp_path("slot_words_delta_a.shot"), b = tmp_path("slot_words_delta_b.shot");
  std::remove(a.c_str());
  std::remove(b.c_str());
  {
    RecordingWriter wa(a, m), wb(b, m);
    for (const Sample& t : taken) {
      wa.write_sample(t);
      wb.write_sample(without_delta(t));
    }
    wa.close();
    wb.close();
  }
  auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const std::string ba = bytes(a), bb = bytes(b);
  EXPECT_GT(ba.size(), 1000u);
  EXPECT_TRUE(ba == bb) << "the recordings differ (" << ba.size() << " and " << bb.size() << " bytes)";
  std::remove(a.c_str());
  std::remove(b.c_str());
}

// Crafted recordings (an attacker's, 2026-12-06): a bucket grows while sum_ns does not
// (nosum: only idle.lat's bucket 20 on CPU 0, +1 at sample 5 and at the keyframe 64; on a
// real machine, a sample read between the program's bucket and sum_ns increments), buckets,
// sum_ns and max reset (histodd). The delta path counts them as the dense compare does, in
// every interval, so the same change gives the same figure wherever it falls.
TEST(SlotWords, CraftedHistogramsCountTheSameThroughTheDelta) {
  for (const char* name : {"delta-nosum-2.shot", "delta-histodd-4.shot"}) {
    auto r = RecordingReader::open(std::string(SCHEDHOT_DATA) + "/" + name);
    ASSERT_TRUE(r) << name;
    const Meta& m = r->meta();
    IntervalCursor ic(m, {});
    int with_delta = 0, intervals = 0;
    while (ic.next(*r)) {
      if (const Interval* iv = ic.interval()) {
        ++intervals;
        const Sample dense = without_delta(ic.cur());
        const Interval slow(m, *ic.prev(), dense);
        for (int p = 0; p < int(m.probes.size()); ++p) {
          with_delta += ic.cur().probes[size_t(p)].words.delta_from(ic.prev()->probes[size_t(p)].words) != nullptr;
          for (const Field& f : m.probes[size_t(p)].slot.fields) {
            if (f.kind != FieldKind::hist) continue;
            const FieldRef ref{p, &f};
            for (int c = -1; c < int(m.ncpus); ++c) {
              const HistSummary x = iv->hist(ref, c), y = slow.hist(ref, c);
              ASSERT_EQ(x.count, y.count) << name << " " << f.name << " cpu " << c << " at " << ic.t();
              ASSERT_EQ(x.p99, y.p99);
              ASSERT_EQ(x.max_ns, y.max_ns);
            }
          }
        }
        if (std::string(name) == "delta-nosum-2.shot") {
          // The bucket that grew counts (the programs add to it before sum_ns: a sample read
          // between the two), through the delta (+5 s) and the dense compare (+64 s, a
          // keyframe) alike, and nothing else does.
          const FieldRef lat = field_ref(m, m.probe_index("idle"), "lat");
          const bool moved = std::abs(ic.t() - 5.0) < 0.01 || std::abs(ic.t() - 64.0) < 0.01;
          EXPECT_EQ(iv->hist(lat, 0).count, moved ? 1u : 0u) << "at " << ic.t();
          EXPECT_EQ(iv->hist(lat).count, moved ? 1u : 0u) << "at " << ic.t();
        }
      }
    }
    EXPECT_GT(intervals, 60) << name;
    EXPECT_GT(with_delta, 0) << name << ": the delta path was taken";
  }
}

// The BPF maps are live while the sampler reads them (a mapped array the programs keep
// writing): what the sample holds and what its delta says must come from the same read of
// each word, or the recording (encoded from the delta) drifts from the samples. A thread
// keeps adding to the maps while samples are taken and written; every sample read back
// equals the sample taken. (Found by the VM suite: cpupri_set timed 5 more calls than
// counted when the delta was compared before the copy.)
TEST(SlotWords, ASampleOfLiveMapsAndItsDeltaAgree) {
  const Meta m = synthetic_meta(2 * K + 3);
  DenseMaps maps(m);
  LiveSource live(maps, m, 1, 0, nullptr);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::mt19937_64 rng(29);
    auto& mm = maps.maps();
    while (!done.load(std::memory_order_relaxed))
      for (int n = 0; n < 256; ++n) {
        auto& map = mm[rng() % mm.size()];
        __atomic_fetch_add(&map[rng() % map.size()], 1 + rng() % 3, __ATOMIC_RELAXED);
      }
  });
  const std::string path = tmp_path("slot_words_live.shot");
  std::remove(path.c_str());
  std::vector<Sample> taken;
  {
    RecordingWriter w(path, m);
    Sample s;
    for (int k = 0; k < 150; ++k) {
      if (!live.poll(s)) break;
      taken.push_back(s);
      w.write_sample(s);
    }
    w.close();
  }
  done = true;
  writer.join();
  ASSERT_EQ(taken.size(), 150u);
  auto r = RecordingReader::open(path);
  Sample back;
  for (size_t k = 0; k < taken.size(); ++k) {
    ASSERT_TRUE(r->next(back)) << k;
    for (size_t p = 0; p < m.probes.size(); ++p)
      ASSERT_TRUE(back.probes[p].words == taken[k].probes[p].words) << "sample " << k << " probe " << p;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace schedhot
