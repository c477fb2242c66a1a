#include "probe/records.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <queue>
#include <tuple>

namespace schedhot {

std::vector<ExactRecord> merge_by_time(std::vector<std::vector<ExactRecord>>& streams) {
  const auto by_ts = [](const ExactRecord& a, const ExactRecord& b) { return a.ts_ns < b.ts_ns; };
  size_t total = 0;
  for (auto& s : streams) {
    if (!std::is_sorted(s.begin(), s.end(), by_ts)) std::stable_sort(s.begin(), s.end(), by_ts);
    total += s.size();
  }
  std::vector<ExactRecord> out;
  out.reserve(total);
  // heap of (ts, stream, position): the smallest ts, then the lowest stream, first
  using Head = std::tuple<uint64_t, size_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (size_t i = 0; i < streams.size(); ++i)
    if (!streams[i].empty()) heap.push({streams[i][0].ts_ns, i, 0});
  while (!heap.empty()) {
    auto [ts, i, k] = heap.top();
    heap.pop();
    out.push_back(streams[i][k]);
    if (k + 1 < streams[i].size()) heap.push({streams[i][k + 1].ts_ns, i, k + 1});
  }
  for (auto& s : streams) s.clear();
  return out;
}

void scale_gap_counts(GapCounts& g, double scale, uint64_t& rng) {
  if (scale == 1.0) return;
  for (auto* h : {&g.ww, &g.wa, &g.ra})
    for (uint32_t& v : *h) {
      if (!v) continue;
      const double x = double(v) * scale, fl = std::floor(x);
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      const double r = fl + (double(rng >> 11) * 0x1.0p-53 < x - fl ? 1.0 : 0.0);
      v = r >= 4294967295.0 ? 4294967295u : static_cast<uint32_t>(r);
    }
}

namespace {
std::atomic<uint64_t> g_slot_rereads{0};
}  // namespace

uint64_t slot_rereads() { return g_slot_rereads.load(std::memory_order_relaxed); }

size_t copy_slots(const uint64_t* slots, uint32_t ncpus, const SlotFields& L, SlotWords& words,
                  const std::function<void(uint32_t cpu)>* between, SlotMarks* marks) {
  const uint32_t sw = L.slot_words;
  if (!words.shaped(ncpus, sw)) words.assign(ncpus, sw);
  if (words.empty()) return 0;
  // With marks: the histogram's buckets, [hb, he), are compared by the chunks whose count
  // moved (the rest of the slot as before); a CPU whose gen did not move not at all.
  if (marks && (!marks->live || marks->probe >= SH_NPROBES)) marks = nullptr;
  uint32_t hb = 0, he = 0;
  if (marks)
    for (auto& f : L.fields)
      if (f.kind == FieldKind::hist && f.offset + 2 + SH_HIST_BUCKETS <= sw) {
        hb = f.offset + 2;  // after sum_ns, max_ns
        he = hb + SH_HIST_BUCKETS;
        break;
      }
  bool known = false;  // marks->gen and chunk are what was read for the words held now
  if (marks) {
    if (marks->gen.size() != ncpus || marks->chunk.size() != size_t(ncpus) * SH_MARK_CHUNKS) {
      marks->gen.assign(ncpus, 0);
      marks->chunk.assign(size_t(ncpus) * SH_MARK_CHUNKS, 0);
      marks->stamp = 0;
    }
    known = marks->stamp != 0 && marks->stamp == words.stamp();
  }
  // The slot's words that are not private, as [lo, hi) runs: what is compared.
  std::vector<char> priv(sw, 0);
  std::vector<uint32_t> wit;  // witness words (Field::witness)
  for (auto& f : L.fields) {
    if (f.kind == FieldKind::priv)
      for (uint32_t w = f.offset; w < f.offset + f.nwords && w < sw; ++w) priv[w] = 1;
    if (f.witness)
      for (uint32_t w = f.offset; w < f.offset + f.nwords && w < sw; ++w) wit.push_back(w);
  }
  std::vector<std::pair<uint32_t, uint32_t>> base;  // ascending; split: the first past the histogram
  for (uint32_t w = 0; w < sw;) {
    if (priv[w] || (w >= hb && w < he)) {
      ++w;
      continue;
    }
    uint32_t e = w;
    while (e < sw && !priv[e] && !(e >= hb && e < he)) ++e;
    base.emplace_back(w, e);
    w = e;
  }
  size_t split = 0;
  while (split < base.size() && base[split].first < hb) ++split;
  std::vector<std::pair<uint32_t, uint32_t>> runs = base;  // what a CPU's read compares, ascending
  // The runs of CPU c now (the base runs with its histogram's chunks to read in their
  // place, so that the delta lists a CPU's words in order), from its marks read here into
  // gen_now and row (row: SH_MARK_CHUNKS); false when they say nothing moved.
  uint64_t gen_now = 0;
  std::array<uint32_t, SH_MARK_CHUNKS> row{};
  auto cpu_runs = [&](uint32_t c) {
    if (!marks) return true;
    runs.assign(base.begin(), base.begin() + std::ptrdiff_t(split));
    const sh_cpu_marks& m = marks->live[c];
    gen_now = __atomic_load_n(&m.gen[marks->probe], __ATOMIC_ACQUIRE);
    const uint64_t was = marks->gen[c];
    if (known && gen_now == was) return false;
    for (uint32_t j = 0; j < SH_MARK_CHUNKS; ++j) row[j] = __atomic_load_n(&m.chunk[marks->probe][j], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);  // the words after the marks (written before them)
    auto rest = [&] { runs.insert(runs.end(), base.begin() + std::ptrdiff_t(split), base.end()); };
    if (he == 0) {
      rest();
      return true;
    }
    // A u32 chunk count that wrapped looks unmoved: past 2^31 programs, every chunk.
    const uint32_t* kept = marks->chunk.data() + size_t(c) * SH_MARK_CHUNKS;
    const bool all = !known || gen_now - was >= (uint64_t(1) << 31);
    for (uint32_t j = 0; j < SH_MARK_CHUNKS; ++j) {
      if (!all && row[j] == kept[j]) continue;
      const uint32_t lo = hb + j * SH_MARK_CHUNK_WORDS;
      if (runs.size() > split && runs.back().second == lo)
        runs.back().second = lo + SH_MARK_CHUNK_WORDS;
      else
        runs.emplace_back(lo, lo + SH_MARK_CHUNK_WORDS);
    }
    rest();
    return true;
  };
  auto keep_marks = [&](uint32_t c) {
    if (!marks) return;
    marks->gen[c] = gen_now;
    std::copy(row.begin(), row.end(), marks->chunk.begin() + std::ptrdiff_t(size_t(c) * SH_MARK_CHUNKS));
  };
  // What changed from the words' state before (when it has a stamp: the previous sample's,
  // which a copy keeps) to the one made here, for Interval and the recording writer
  // (SlotDelta): the compare of a changed block is word by word anyway.
  const uint64_t before = words.stamp();
  std::shared_ptr<SlotDelta> delta;
  if (before) {
    delta = std::make_shared<SlotDelta>();
    delta->before = before;
    delta->first.resize(size_t(ncpus) + 1);
  }
  std::vector<uint64_t> seen(wit.size());
  uint32_t next_first = 0;  // the next CPU whose delta->first is not set yet
  size_t written = 0;
  for (size_t b = 0; b < words.nblocks(); ++b) {
    const uint32_t nc = words.block_cpus(b);
    const uint32_t c0 = static_cast<uint32_t>(b) << SlotWords::kBlockShift;
    const uint64_t* src = slots + size_t(c0) * sw;
    const uint64_t* cur = words.block(b);
    // The first CPU of the block whose words differ (nc: none); the ones before it are equal.
    uint32_t differs = 0;
    for (bool same = true; same && differs < nc;) {
      if (cpu_runs(c0 + differs))
        for (auto [lo, hi] : runs)
          if (std::memcmp(src + size_t(differs) * sw + lo, cur + size_t(differs) * sw + lo,
                          (hi - lo) * sizeof(uint64_t)) != 0) {
            same = false;
            break;
          }
      if (same) ++differs;
    }
    if (differs == nc) continue;
    // cur stays valid: the block is either still held by the sample it was copied from, or
    // ours alone and written in place (each word compared before it is overwritten; a
    // copy made again first puts back the words the last try changed).
    uint64_t* dst = words.mut_block(b, /*keep=*/false);
    for (uint32_t k = 0; k < nc; ++k) {
      const uint64_t* sk = src + size_t(k) * sw;
      const uint64_t* ck = cur + size_t(k) * sw;
      uint64_t* dk = dst + size_t(k) * sw;
      if (delta && k < differs) {  // found equal above: the old sample's words, not compared again
        if (dk != ck) std::memcpy(dk, ck, size_t(sw) * sizeof(uint64_t));
        continue;
      }
      if (delta)
        while (next_first <= c0 + k) delta->first[next_first++] = uint32_t(delta->word.size());
      // The maps are live (a mapped BPF array the programs keep writing, one word at a time,
      // while this reads them in address order): an event the program finishes between
      // the reads of two of its words is in one and not the other. The witnesses are read
      // first and again with the rest: when they moved, the CPU is copied again (up to
      // kTries times; a CPU whose events end faster than a copy keeps the last try).
      constexpr int kTries = 16;
      for (int t = 1;; ++t) {
        for (size_t i = 0; i < wit.size(); ++i) seen[i] = __atomic_load_n(sk + wit[i], __ATOMIC_ACQUIRE);
        if (between) (*between)(c0 + k);
        if (delta && !cpu_runs(c0 + k)) {  // its marks did not move: the old sample's words
          if (dk != ck) std::memcpy(dk, ck, size_t(sw) * sizeof(uint64_t));
          break;
        }
        const size_t n0 = delta ? delta->word.size() : 0, s0 = delta ? delta->shrunk.size() : 0;
        if (!delta) {
          if (marks) cpu_runs(c0 + k);  // a first state: the marks it was read at
          std::memcpy(dk, sk, size_t(sw) * sizeof(uint64_t));
        } else {
          // Each word is read once, and what the delta says is what the sample holds. Words
          // found equal keep the old sample's value (ck: not live), a run at once (an idle
          // CPU's), else 8 words at a time (most of a busy slot, its empty buckets, did not
          // move). Words outside the runs (histogram chunks whose marks did not move) too.
          auto keep_old = [&](uint32_t lo, uint32_t hi) {
            if (dk != ck) std::memcpy(dk + lo, ck + lo, (hi - lo) * sizeof(uint64_t));
          };
          if (marks && he && dk != ck) keep_old(hb, he);
          for (auto [lo, hi] : runs) {
            if (std::memcmp(sk + lo, ck + lo, (hi - lo) * sizeof(uint64_t)) == 0) {
              keep_old(lo, hi);
              continue;
            }
            for (uint32_t w = lo; w < hi;) {
              const uint32_t e = std::min(hi, w + 8);
              if (std::memcmp(sk + w, ck + w, (e - w) * sizeof(uint64_t)) == 0) {
                keep_old(w, e);
              } else {
                for (uint32_t x = w; x < e; ++x) {
                  const uint64_t now = __atomic_load_n(sk + x, __ATOMIC_RELAXED), old = ck[x];
                  if (now != old) delta->add(x, old, now);
                  dk[x] = now;
                }
              }
              w = e;
            }
          }
        }
        bool moved = false;
        for (size_t i = 0; i < wit.size() && !moved; ++i) moved = dk[wit[i]] != seen[i];
        if (!moved || t == kTries) {
          keep_marks(c0 + k);
          break;
        }
        g_slot_rereads.fetch_add(1, std::memory_order_relaxed);
        if (delta) {
          // Undo this try: in place (dk == ck), its entries' old values go back.
          if (dk == ck) {
            size_t si = s0;
            for (size_t i = n0; i < delta->word.size(); ++i) {
              uint64_t diff = delta->grown[i];
              if (si < delta->shrunk.size() && delta->shrunk[si].first == i) diff = delta->shrunk[si++].second;
              dk[delta->word[i]] -= diff;
            }
          }
          delta->word.resize(n0);
          delta->grown.resize(n0);
          delta->shrunk.resize(s0);
        }
      }
      for (auto& f : L.fields)
        if (f.kind == FieldKind::priv) std::memset(dk + f.offset, 0, f.nwords * sizeof(uint64_t));
    }
    ++written;
  }
  if (delta) {
    while (next_first <= ncpus) delta->first[next_first++] = uint32_t(delta->word.size());
    if (written) words.stamp_state(std::move(delta));  // unchanged: the state and its stamp stay
  } else {
    words.stamp_state();  // a first state: what the next sample's delta applies to
  }
  if (marks) marks->stamp = words.stamp();
  return written;
}

}  // namespace schedhot
