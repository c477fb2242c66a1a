// The payload codecs of SAMPLE, EXACT, GAPS, CATCH and ONLINE frames (sample_codec.h): each
// frame type's encoder, then its decoder.
#include "store/sample_codec.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "probe/module.h"
#include "store/frame.h"

namespace schedhot {

uint64_t state_words(const Meta& m) {
  uint64_t w = 0;
  for (auto& p : m.probes) w += p.slot.slot_words;
  return w * m.ncpus;
}

std::string backwards_time(uint64_t mono_ns, uint64_t prev_ns) {
  if (mono_ns == prev_ns) return "sample time does not advance (the same as the previous sample's)";
  return fmt::format("sample time goes backwards ({:.3f} s before the previous sample's)",
                     static_cast<double>(prev_ns - mono_ns) / 1e9);
}

// ---- SAMPLE -----------------------------------------------------------------------

std::string encode_sample(const Sample& s, const Meta& meta, const Sample* prev) {
  std::string b;
  put<uint32_t>(b, s.seq);
  put<uint64_t>(b, s.mono_ns);
  put<uint64_t>(b, s.wall_ns);
  uint16_t nentries = 0;
  for (size_t i = 0; i < s.probes.size() && i < meta.probes.size(); ++i)
    if (s.probes[i].present) ++nentries;
  put<uint16_t>(b, nentries);
  for (size_t i = 0; i < s.probes.size() && i < meta.probes.size(); ++i) {
    const ProbeSample& cur = s.probes[i];
    if (!cur.present) continue;
    const uint32_t sw = meta.probes[i].slot.slot_words;
    if (cur.words.size() != size_t(meta.ncpus) * sw || (!cur.words.empty() && !cur.words.shaped(meta.ncpus, sw)))
      throw std::runtime_error(fmt::format("sample for {} has {} words, expected {}", meta.probes[i].name,
                                           cur.words.size(), size_t(meta.ncpus) * sw));
    const ProbeSample* base = nullptr;
    if (prev && i < prev->probes.size() && prev->probes[i].present && prev->probes[i].words.shaped(meta.ncpus, sw))
      base = &prev->probes[i];
    put<uint16_t>(b, static_cast<uint16_t>(i));
    if (base && base->words.stamp() && base->words.stamp() == cur.words.stamp()) {
      put_varint(b, 0);  // the very state of the previous sample: nothing changed
      continue;
    }
    std::string cpus;
    uint64_t nchanged = 0;
    int64_t last_cpu = -1;
    std::string words;
    // What changed from the previous sample, when its producer kept it (the sampler, the
    // decoder: SlotDelta lists exactly the words that differ): no compare at all.
    if (const SlotDelta* d = base ? cur.words.delta_from(base->words) : nullptr;
        d && d->first.size() == size_t(meta.ncpus) + 1) {
      size_t s_at = 0;  // the next shrunk entry
      for (uint32_t c = 0; c < meta.ncpus; ++c) {
        const uint32_t i0 = d->first[c], i1 = d->first[c + 1];
        if (i0 == i1) continue;
        words.clear();
        int64_t last_w = -1;
        for (uint32_t i = i0; i < i1; ++i) {
          const uint32_t k = d->word[i];
          uint64_t change = d->grown[i];  // new - old: the growth, or (when it shrank) kept aside
          if (!change && s_at < d->shrunk.size() && d->shrunk[s_at].first == i) change = d->shrunk[s_at++].second;
          put_varint(words, static_cast<uint64_t>(k - last_w - 1));
          put_varint(words, zigzag(static_cast<int64_t>(change)));
          last_w = k;
        }
        put_varint(cpus, static_cast<uint64_t>(c - last_cpu - 1));
        put_varint(cpus, i1 - i0);
        cpus += words;
        last_cpu = c;
        ++nchanged;
      }
      put_varint(b, nchanged);
      b += cpus;
      continue;
    }
    for (uint32_t c = 0; c < meta.ncpus; ++c) {
      // A block the previous sample shares (CPUs that did not change) is skipped unread.
      if (base && (c & (SlotWords::kBlockCpus - 1)) == 0 && cur.words.same_block(base->words, c >> SlotWords::kBlockShift)) {
        c += cur.words.block_cpus(c >> SlotWords::kBlockShift) - 1;
        continue;
      }
      const uint64_t* w = cur.words.cpu(c);
      const uint64_t* o = base ? base->words.cpu(c) : nullptr;
      // An unchanged slot (an idle CPU) is one memcmp; in a changed one, runs of 8 equal
      // words (the empty part of a histogram) are skipped 8 at a time.
      if (o && std::memcmp(w, o, size_t(sw) * sizeof(uint64_t)) == 0) continue;
      words.clear();
      uint64_t nw = 0;
      int64_t last_w = -1;
      for (uint32_t k = 0; k < sw; ++k) {
        if (o && (k & 7) == 0 && k + 8 <= sw && std::memcmp(w + k, o + k, 8 * sizeof(uint64_t)) == 0) {
          k += 7;
          continue;
        }
        uint64_t before = o ? o[k] : 0;
        if (w[k] == before) continue;
        put_varint(words, static_cast<uint64_t>(k - last_w - 1));
        put_varint(words, zigzag(static_cast<int64_t>(w[k] - before)));
        last_w = k;
        ++nw;
      }
      if (!nw) continue;
      put_varint(cpus, static_cast<uint64_t>(c - last_cpu - 1));
      put_varint(cpus, nw);
      cpus += words;
      last_cpu = c;
      ++nchanged;
    }
    put_varint(b, nchanged);
    b += cpus;
  }
  return b;
}

bool decode_sample(const std::string& raw, bool keyframe, const Meta& meta, Sample& state, bool& valid,
                   std::vector<char>& nonzero_cpu, std::string& why) {
  ByteReader cur(raw);
  if (!keyframe && !valid) {
    why = "delta sample with no keyframe before it";
    return false;
  }
  const uint32_t seq = cur.get<uint32_t>();
  const uint64_t mono = cur.get<uint64_t>();
  const uint64_t wall = cur.get<uint64_t>();
  const uint16_t nentries = cur.get<uint16_t>();
  if (!cur.ok) {
    why = "sample header truncated";
    return false;
  }
  // Deltas are applied to state in place; until the sample decodes completely the state
  // is not valid (a seek starts again from a keyframe). A keyframe is absolute, so the
  // words it replaces need not be the sample before it: they are kept (whatever sample
  // they were, or a part-decoded one) and rewritten where they differ.
  if (state.probes.size() != meta.probes.size()) state.probes.assign(meta.probes.size(), {});
  if (keyframe || nonzero_cpu.size() != meta.ncpus) nonzero_cpu.assign(meta.ncpus, 0);
  valid = false;
  std::vector<bool> listed(meta.probes.size(), false);
  std::vector<uint64_t> vals;  // a keyframe's CPU, whole (overwrite below)
  for (uint16_t e = 0; e < nentries; ++e) {
    uint16_t pi = cur.get<uint16_t>();
    if (!cur.ok || pi >= meta.probes.size() || listed[pi]) {
      why = fmt::format("bad probe index {} in sample", pi);
      return false;
    }
    listed[pi] = true;
    const uint32_t sw = meta.probes[pi].slot.slot_words;
    ProbeSample& ps = state.probes[pi];
    // Three ways: a delta adds to the state before it; a keyframe onto words of the same
    // shape overwrites the CPUs whose words differ (what changed is kept as a delta, as a
    // delta sample's: no new blocks, and a reader walking on keeps reusing them, issue 32);
    // anything else starts from zeros (shared zero blocks, unshared as CPUs are written).
    const bool from_zero = !ps.present || !ps.words.shaped(meta.ncpus, sw);
    const bool overwrite = keyframe && !from_zero;
    const uint64_t before = from_zero ? 0 : ps.words.stamp();
    if (from_zero)
      ps.words.assign(meta.ncpus, sw);
    else
      ps.words.begin_next();
    ps.present = true;
    uint64_t ncpu = cur.varint();
    if (!cur.ok || ncpu > meta.ncpus) {
      why = fmt::format("probe {}: {} changed CPUs out of {}", meta.probes[pi].name, ncpu, meta.ncpus);
      return false;
    }
    // What this sample changed, for Interval (SlotDelta): kept when it applies to a
    // stamped state (not a keyframe's zeros) and changed something.
    std::shared_ptr<SlotDelta> delta;
    if (before && (ncpu || overwrite)) {
      delta = std::make_shared<SlotDelta>();
      delta->before = before;
      delta->first.resize(size_t(meta.ncpus) + 1);
    }
    uint32_t next_first = 0;  // the next CPU whose delta->first is not set yet
    const auto open_cpu = [&](uint32_t c) {
      if (delta)
        while (next_first <= c) delta->first[next_first++] = uint32_t(delta->word.size());
    };
    // Parsed word entries not yet applied (a delta sample's), in CPU and word order.
    struct Pending {
      uint64_t* at;
      uint32_t cpu, w;
      uint64_t d;
    };
    constexpr size_t kBatch = 512;
    thread_local std::vector<Pending> batch;
    batch.clear();
    const auto apply_batch = [&] {
      for (const Pending& e : batch) {
        const uint64_t was = *e.at;
        const uint64_t now = was + e.d;
        *e.at = now;
        if (now) nonzero_cpu[e.cpu] = 1;
        if (delta && now != was) {
          open_cpu(e.cpu);
          delta->add(e.w, was, now);
        }
      }
      batch.clear();
    };
    // A failure part-way: what was applied is undone (the delta holds each change), so the
    // state is again the one the caller may have let go of (RecordingReader::restore).
    const auto abandon = [&] {
      if (delta) {
        open_cpu(meta.ncpus);
        ps.words.undo(*delta);
      }
      ps.words.end_next();
      return false;
    };
    // overwrite: CPU c's words become want (sw words), written only where they differ.
    const auto overwrite_cpu = [&](uint32_t c, const uint64_t* want) {
      const uint64_t* old = ps.words.cpu(c);
      uint32_t w0 = 0;
      while (w0 < sw && old[w0] == want[w0]) ++w0;
      if (w0 == sw) return;
      uint64_t* slot = ps.words.mut_cpu(c);  // unshares (the pointer old may be stale now)
      open_cpu(c);
      for (uint32_t w = w0; w < sw; ++w)
        if (slot[w] != want[w]) {
          if (delta) delta->add(w, slot[w], want[w]);
          slot[w] = want[w];
        }
    };
    // overwrite: CPUs [from, to) are not in the keyframe: all their words are zero.
    uint32_t zero_from = 0;
    const auto zero_cpus = [&](uint32_t to) {
      if (vals.size() < sw) vals.assign(sw, 0);
      for (uint32_t c = zero_from; c < to;) {
        const uint32_t b = c >> SlotWords::kBlockShift;
        if ((c & (SlotWords::kBlockCpus - 1)) == 0 && ps.words.zero_block(b) && c + ps.words.block_cpus(b) <= to) {
          c += ps.words.block_cpus(b);  // already zero
          continue;
        }
        std::fill(vals.begin(), vals.begin() + sw, 0);
        overwrite_cpu(c, vals.data());
        ++c;
      }
      zero_from = to;
    };
    uint64_t cpu = 0;
    bool first_cpu = true;
    for (uint64_t k = 0; k < ncpu; ++k) {
      uint64_t gap = cur.varint();
      cpu = first_cpu ? gap : cpu + 1 + gap;
      first_cpu = false;
      uint64_t nw = cur.varint();
      if (!cur.ok || gap >= meta.ncpus || cpu >= meta.ncpus || nw > sw) {
        why = fmt::format("probe {}: bad CPU entry", meta.probes[pi].name);
        return abandon();
      }
      // The CPU's word entries: an index (a gap after the one before) and a change.
      uint64_t w = 0;
      bool first_w = true;
      int64_t d = 0;
      const auto next_word = [&] {
        const uint64_t wg = cur.varint();
        w = first_w ? wg : w + 1 + wg;
        first_w = false;
        d = unzigzag(cur.varint());
        if (cur.ok && wg < sw && w < sw) return true;
        why = fmt::format("probe {}: bad word entry on CPU {}", meta.probes[pi].name, cpu);
        return false;
      };
      if (overwrite) {
        zero_cpus(uint32_t(cpu));
        std::fill(vals.begin(), vals.begin() + sw, 0);
        for (uint64_t x = 0; x < nw; ++x) {
          if (!next_word()) return abandon();
          vals[w] = static_cast<uint64_t>(d);  // from zero
          if (vals[w]) nonzero_cpu[cpu] = 1;
        }
        overwrite_cpu(uint32_t(cpu), vals.data());
        zero_from = uint32_t(cpu) + 1;
        continue;
      }
      // Unshares the CPU's block (next() handed out a copy sharing it); nw <= sw, so a
      // CPU with words has a block.
      // (The delta's offsets are set as the batch is applied: entries of earlier CPUs may
      // still wait in it.)
      uint64_t* slot = nw ? ps.words.mut_cpu(uint32_t(cpu)) : nullptr;
      for (uint64_t x = 0; x < nw; ++x) {
        if (!next_word()) return abandon();
        // A changed word of a busy 8192-CPU state is a cache miss: fetched now, written
        // once a batch of them is parsed, so that the misses overlap.
        __builtin_prefetch(slot + w, 1);
        batch.push_back({slot + w, uint32_t(cpu), uint32_t(w), static_cast<uint64_t>(d)});
      }
      if (batch.size() >= kBatch) apply_batch();
    }
    apply_batch();
    if (overwrite) zero_cpus(meta.ncpus);
    if (delta && (!delta->word.empty() || !ps.words.stamp())) {
      // Kept also when empty but the state was written (words rewritten to their values):
      // a consumer holding only the state before (hollow) reads the interval from it.
      open_cpu(meta.ncpus);
      ps.words.stamp_state(std::move(delta));
    } else if (!ps.words.stamp()) {
      ps.words.stamp_state();  // a keyframe's state from zeros (nothing before it to change from)
    }
    ps.words.end_next();
  }
  if (cur.left() != 0) {
    why = fmt::format("{} trailing bytes in sample", cur.left());
    return false;
  }
  for (size_t pi = 0; pi < listed.size(); ++pi)
    if (!listed[pi]) {
      // Not present: its words are not read, but kept (as they were, same stamp), so that a
      // consumer that let go of them (one_state) can read them back (SlotWords::refill).
      state.probes[pi].present = false;
    }
  state.seq = seq;
  state.mono_ns = mono;
  state.wall_ns = wall;
  valid = true;
  return true;
}

// ---- EXACT ------------------------------------------------------------------------

std::string encode_exact(const ExactBatch& batch, uint64_t since_ns) {
  std::string exact;
  put<uint32_t>(exact, static_cast<uint32_t>(batch.records.size()));
  put<uint64_t>(exact, batch.lost);
  uint64_t last = since_ns;
  for (const ExactRecord& r : batch.records) {
    // in time order: a record before the previous one (or the previous sample) is stored
    // at the previous time rather than refused
    const uint64_t ts = std::max(r.ts_ns, last);
    put_varint(exact, ts - last);
    put_varint(exact, r.cpu);
    put_varint(exact, r.probe);
    put_varint(exact, r.word);
    last = ts;
  }
  return exact;
}

bool decode_exact(const std::string& raw, uint64_t since_ns, uint64_t mono_ns, uint32_t ncpus, ExactBatch& out,
                  std::string& why) {
  ByteReader c(raw);
  const uint32_t n = c.get<uint32_t>();
  ExactBatch b;
  b.lost = c.get<uint64_t>();
  if (!c.ok || uint64_t(n) * 4 > c.left()) {  // a record takes at least 4 bytes
    why = "bad exact frame: record count larger than its payload";
    return false;
  }
  b.records.reserve(n);
  uint64_t ts = since_ns;
  for (uint32_t i = 0; i < n && c.ok; ++i) {
    ExactRecord r;
    const uint64_t gap = c.varint();
    if (ts + gap < ts) c.ok = false;
    ts += gap;
    r.ts_ns = ts;
    const uint64_t cpu = c.varint(), probe = c.varint(), word = c.varint();
    if (!c.ok) break;  // said below: truncated
    if (ts > mono_ns) {  // the writer takes a sample's records up to its time
      why = fmt::format("bad exact frame: record {} at {} ns, after its sample's time {} ns", i, ts, mono_ns);
      return false;
    }
    if (cpu >= ncpus || probe > 0xffff || word > 0xffff) {
      why = fmt::format("bad exact frame: record {} names CPU {} probe {} word {}", i, cpu, probe, word);
      return false;
    }
    r.cpu = static_cast<uint32_t>(cpu);
    r.probe = static_cast<uint16_t>(probe);
    r.word = static_cast<uint16_t>(word);
    b.records.push_back(r);
  }
  if (!c.ok || c.left()) {
    why = "bad exact frame: truncated or trailing bytes";
    return false;
  }
  out = std::move(b);
  return true;
}

// ---- GAPS -------------------------------------------------------------------------

std::string encode_gaps(const Sample& s, const Meta& meta) {
  const GapBatch& g = *s.gaps;
  if (g.from_ns > s.mono_ns)
    throw std::runtime_error(fmt::format("sample {}: gap counts from {} ns, after the sample's time {} ns", s.seq,
                                         g.from_ns, s.mono_ns));
  std::string gaps;
  put<uint64_t>(gaps, g.from_ns);
  put<uint64_t>(gaps, g.full);
  put<uint32_t>(gaps, static_cast<uint32_t>(g.counts.size()));
  uint32_t last_cpu = 0, last_line = 0, of_cpu = 0;
  for (size_t i = 0; i < g.counts.size(); ++i) {
    const GapCounts& e = g.counts[i];
    if (e.cpu >= meta.ncpus || e.line >= meta.gap_lines.size())
      throw std::runtime_error(fmt::format("sample {}: gap entry {} (CPU {}, line {}) is out of range ({} CPUs, {} gap lines)",
                                           s.seq, i, e.cpu, e.line, meta.ncpus, meta.gap_lines.size()));
    if (i && (e.cpu < last_cpu || (e.cpu == last_cpu && e.line <= last_line)))
      throw std::runtime_error(fmt::format("sample {}: gap entry {} (CPU {}, line {}) is not after the one before it (CPU {}, line {})",
                                           s.seq, i, e.cpu, e.line, last_cpu, last_line));
    of_cpu = i && e.cpu == last_cpu ? of_cpu + 1 : 1;
    if (of_cpu > kMaxGapEntriesPerCpu)
      throw std::runtime_error(fmt::format("sample {}: more than {} gap entries of CPU {}", s.seq,
                                           kMaxGapEntriesPerCpu, e.cpu));
    put_varint(gaps, e.cpu - (i ? last_cpu : 0));
    put_varint(gaps, e.line);
    for (const auto* h : {&e.ww, &e.wa, &e.ra}) {
      uint64_t nz = 0;
      for (uint32_t v : *h) nz += v != 0;
      put_varint(gaps, nz);
      int64_t last_b = -1;
      for (size_t b = 0; b < h->size(); ++b) {
        if (!(*h)[b]) continue;
        put_varint(gaps, static_cast<uint64_t>(int64_t(b) - last_b - 1));
        put_varint(gaps, (*h)[b]);
        last_b = int64_t(b);
      }
    }
    last_cpu = e.cpu;
    last_line = e.line;
  }
  return gaps;
}

bool decode_gaps(const std::string& raw, uint64_t mono_ns, const Meta& meta, GapBatch& out, std::string& why) {
  ByteReader c(raw);
  GapBatch b;
  b.from_ns = c.get<uint64_t>();
  b.full = c.get<uint64_t>();
  const uint32_t n = c.get<uint32_t>();
  if (!c.ok) {
    why = "bad gaps frame: truncated header";
    return false;
  }
  if (b.from_ns > mono_ns) {
    why = fmt::format("bad gaps frame: counts from {} ns, after its sample's time {} ns", b.from_ns, mono_ns);
    return false;
  }
  // An entry takes at least 5 bytes (CPU gap, line, three empty histograms), and no CPU has
  // more than kMaxGapEntriesPerCpu of them (distinct lines): both bound n before allocating.
  const uint64_t most = uint64_t(meta.ncpus) * std::min<uint64_t>(meta.gap_lines.size(), kMaxGapEntriesPerCpu);
  if (uint64_t(n) * 5 > c.left() || n > most) {
    why = fmt::format("bad gaps frame: {} entries, more than its payload or {} CPUs x {} lines hold", n, meta.ncpus,
                      std::min<uint64_t>(meta.gap_lines.size(), kMaxGapEntriesPerCpu));
    return false;
  }
  b.counts.reserve(n);
  uint64_t cpu = 0, line = 0, of_cpu = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t gap = c.varint();
    const uint64_t l = c.varint();
    if (!c.ok) break;  // said below: truncated
    if (gap >= meta.ncpus || (i ? cpu + gap : gap) >= meta.ncpus || l >= meta.gap_lines.size()) {
      why = fmt::format("bad gaps frame: entry {} names CPU {} line {} ({} CPUs, {} gap lines)", i,
                        gap >= meta.ncpus ? gap : (i ? cpu + gap : gap), l, meta.ncpus, meta.gap_lines.size());
      return false;
    }
    const uint64_t e_cpu = i ? cpu + gap : gap;
    if (i && gap == 0 && l <= line) {
      why = fmt::format("bad gaps frame: entry {} (CPU {} line {}) is not after the one before it (line {})", i, e_cpu, l,
                        line);
      return false;
    }
    of_cpu = i && gap == 0 ? of_cpu + 1 : 1;
    if (of_cpu > kMaxGapEntriesPerCpu) {
      why = fmt::format("bad gaps frame: more than {} entries of CPU {}", kMaxGapEntriesPerCpu, e_cpu);
      return false;
    }
    cpu = e_cpu;
    line = l;
    GapCounts& e = b.counts.emplace_back();
    e.cpu = static_cast<uint32_t>(cpu);
    e.line = static_cast<uint32_t>(line);
    static constexpr const char* kHist[] = {"ww", "wa", "ra"};
    int hi = 0;
    for (auto* h : {&e.ww, &e.wa, &e.ra}) {
      const uint64_t nz = c.varint();
      if (!c.ok) break;
      if (nz > h->size()) {
        why = fmt::format("bad gaps frame: entry {} (CPU {} line {}) {}: {} buckets of {}", i, cpu, line, kHist[hi], nz,
                          h->size());
        return false;
      }
      uint64_t bucket = 0;
      for (uint64_t k = 0; k < nz; ++k) {
        const uint64_t bg = c.varint();
        const uint64_t v = c.varint();
        if (!c.ok) break;
        bucket = k ? bucket + 1 + bg : bg;
        if (bg >= h->size() || bucket >= h->size() || v == 0 || v > UINT32_MAX) {
          why = fmt::format("bad gaps frame: entry {} (CPU {} line {}) {}: bucket {} of {} with value {}", i, cpu, line,
                            kHist[hi], bg >= h->size() ? bg : bucket, h->size(), v);
          return false;
        }
        (*h)[bucket] = static_cast<uint32_t>(v);
      }
      ++hi;
    }
  }
  if (!c.ok || c.left()) {
    why = "bad gaps frame: truncated or trailing bytes";
    return false;
  }
  out = std::move(b);
  return true;
}

// ---- CATCH ------------------------------------------------------------------------

namespace {
bool printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
}
}  // namespace

bool valid_catch_comm(const std::string& s) { return s.size() <= kMaxCatchCommBytes && printable_ascii(s); }
bool valid_catch_symbol(const std::string& s) { return s.size() <= kMaxCatchSymbolBytes && printable_ascii(s); }

std::string encode_caught(const CatchBatch& batch, uint64_t since_ns) {
  // The symbol table: each unique symbol once, in order of first use.
  std::vector<const std::string*> syms;
  std::unordered_map<std::string_view, uint64_t> sym_index;
  for (size_t k = 0; k < batch.stacks.size(); ++k) {
    const auto& st = batch.stacks[k];
    if (st.size() > SH_CATCH_FRAMES)
      throw std::runtime_error(fmt::format("caught stack {} has {} frames, more than {}", k, st.size(), SH_CATCH_FRAMES));
    for (const StackFrame& f : st) {
      if (!valid_catch_symbol(f.sym))
        throw std::runtime_error(fmt::format("caught stack {}: a symbol of {} bytes that is over {} or not printable",
                                             k, f.sym.size(), kMaxCatchSymbolBytes));
      if (sym_index.emplace(f.sym, syms.size()).second) syms.push_back(&f.sym);
    }
  }
  std::string b;
  put_varint(b, batch.lost);
  put_varint(b, syms.size());
  for (const std::string* sym : syms) {
    put_varint(b, sym->size());
    b += *sym;
  }
  put_varint(b, batch.stacks.size());
  for (const auto& st : batch.stacks) {
    put_varint(b, st.size());
    for (const StackFrame& f : st) {
      put_varint(b, sym_index.at(f.sym));
      put_varint(b, f.off);
    }
  }
  put_varint(b, batch.events.size());
  uint64_t last = since_ns;
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const CaughtEvent& e = batch.events[i];
    if (i == 0 ? e.ts_ns <= since_ns : e.ts_ns < last)
      throw std::runtime_error(fmt::format("caught event {} at {} ns is {} ({} ns)", i, e.ts_ns,
                                           i == 0 ? "not after the previous sample" : "before the event before it", last));
    if (e.stack > batch.stacks.size())
      throw std::runtime_error(fmt::format("caught event {} names stack {} of {}", i, e.stack, batch.stacks.size()));
    if (!valid_catch_comm(e.comm))
      throw std::runtime_error(fmt::format("caught event {}: a comm of {} bytes that is over {} or not printable", i,
                                           e.comm.size(), kMaxCatchCommBytes));
    put_varint(b, e.ts_ns - last);
    put_varint(b, e.dur_ns);
    put_varint(b, e.cpu);
    put_varint(b, e.probe);
    put_varint(b, uint16_t(e.flags & ~SH_CATCH_F_STEAL));  // 1.6: in the STEAL frame (1.5 readers skip it)
    put_varint(b, e.pid);
    put_varint(b, e.tgid);
    put_varint(b, e.comm.size());
    b += e.comm;
    put_varint(b, e.detail);
    put_varint(b, e.irq_ns);
    put_varint(b, e.softirq_ns);
    put_varint(b, e.nmi_ns);
    put_varint(b, e.stack);
    last = e.ts_ns;
  }
  return b;
}

namespace {
/// A length-prefixed string of at most most bytes from c (false, with c.ok cleared when it
/// runs past the end; too long: false with c.ok kept).
template <typename S>
bool get_text(ByteReader& c, uint64_t most, S& out) {
  const uint64_t n = c.varint();
  if (!c.ok) return false;
  if (n > most) return false;
  if (n > c.left()) {
    c.ok = false;
    return false;
  }
  out = S(reinterpret_cast<const char*>(c.p), size_t(n));
  c.p += n;
  return true;
}
}  // namespace

bool decode_caught(const std::string& raw, uint64_t since_ns, uint64_t mono_ns, uint32_t ncpus, size_t nprobes,
                   CatchBatch& out, std::string& why) {
  static constexpr const char* kTrunc = "bad catch frame: truncated or trailing bytes";
  ByteReader c(raw);
  CatchBatch b;
  b.lost = c.varint();
  // symbols: each takes at least its length byte
  const uint64_t nsyms = c.varint();
  if (!c.ok) {
    why = kTrunc;
    return false;
  }
  if (nsyms > c.left()) {
    why = fmt::format("bad catch frame: {} symbols, more than its payload holds", nsyms);
    return false;
  }
  // What the decoded batch takes, counted as it is built: a frame of a few KiB naming one
  // long symbol from millions of stack frames would otherwise decode to gigabytes.
  uint64_t used = nsyms * sizeof(std::string_view);
  auto over = [&](const char* what) {
    why = fmt::format("bad catch frame: its {} decode to more than {} bytes", what, kMaxCatchDecodedBytes);
    return false;
  };
  if (used > kMaxCatchDecodedBytes) return over("symbols");
  std::vector<std::string_view> syms(static_cast<size_t>(nsyms));
  for (uint64_t k = 0; k < nsyms; ++k) {
    if (!get_text(c, kMaxCatchSymbolBytes, syms[k])) {
      if (!c.ok) {
        why = kTrunc;
      } else {
        why = fmt::format("bad catch frame: symbol {} is longer than {} bytes", k, kMaxCatchSymbolBytes);
      }
      return false;
    }
    if (!printable_ascii(syms[k])) {
      why = fmt::format("bad catch frame: symbol {} is not printable", k);
      return false;
    }
  }
  // stacks: each takes at least its frame count byte, each frame two bytes
  const uint64_t nstacks = c.varint();
  if (!c.ok) {
    why = kTrunc;
    return false;
  }
  if (nstacks > c.left()) {
    why = fmt::format("bad catch frame: {} stacks, more than its payload holds", nstacks);
    return false;
  }
  used += nstacks * sizeof(std::vector<StackFrame>);
  if (used > kMaxCatchDecodedBytes) return over("stacks");
  b.stacks.resize(size_t(nstacks));
  for (uint64_t k = 0; k < nstacks; ++k) {
    const uint64_t nf = c.varint();
    if (!c.ok) {
      why = kTrunc;
      return false;
    }
    if (nf > SH_CATCH_FRAMES) {
      why = fmt::format("bad catch frame: stack {} has {} frames, more than {}", k, nf, SH_CATCH_FRAMES);
      return false;
    }
    auto& st = b.stacks[size_t(k)];
    st.reserve(size_t(nf));
    for (uint64_t j = 0; j < nf; ++j) {
      const uint64_t si = c.varint(), off = c.varint();
      if (!c.ok) {
        why = kTrunc;
        return false;
      }
      if (si >= nsyms) {
        why = fmt::format("bad catch frame: stack {} frame {} names symbol {} of {}", k, j, si, nsyms);
        return false;
      }
      const std::string_view sym = syms[size_t(si)];
      used += sizeof(StackFrame) + (sym.size() > 15 ? sym.size() + 1 : 0);
      if (used > kMaxCatchDecodedBytes) return over("stacks");
      st.push_back({std::string(sym), off});
    }
  }
  // events: each takes at least 13 bytes (13 varints, an empty comm)
  const uint64_t n = c.varint();
  if (!c.ok) {
    why = kTrunc;
    return false;
  }
  if (n > c.left() / 13) {
    why = fmt::format("bad catch frame: {} events, more than its payload holds", n);
    return false;
  }
  used += n * sizeof(CaughtEvent);
  if (used > kMaxCatchDecodedBytes) return over("events");
  b.events.reserve(size_t(n));
  uint64_t ts = since_ns;
  for (uint64_t i = 0; i < n; ++i) {
    CaughtEvent e;
    const uint64_t gap = c.varint();
    const uint64_t dur = c.varint(), cpu = c.varint(), probe = c.varint(), flags = c.varint(), pid = c.varint(),
                   tgid = c.varint();
    if (!c.ok) {
      why = kTrunc;
      return false;
    }
    if (!get_text(c, kMaxCatchCommBytes, e.comm)) {
      why = c.ok ? fmt::format("bad catch frame: event {} has a comm longer than {} bytes", i, kMaxCatchCommBytes)
                 : std::string(kTrunc);
      return false;
    }
    e.detail = c.varint();
    e.irq_ns = c.varint();
    e.softirq_ns = c.varint();
    e.nmi_ns = c.varint();
    const uint64_t stack = c.varint();
    if (!c.ok) {
      why = kTrunc;
      return false;
    }
    if (ts > mono_ns || gap > mono_ns - ts) {  // (ts + gap would be after mono_ns, or wrap)
      why = fmt::format("bad catch frame: event {} after its sample's time {} ns", i, mono_ns);
      return false;
    }
    ts += gap;
    if (ts <= since_ns) {  // only the first can be: the gaps keep the rest in order
      why = fmt::format("bad catch frame: event {} at {} ns, not after the previous sample's time", i, ts);
      return false;
    }
    if (cpu >= ncpus || probe >= nprobes || probe > 0xffff) {
      why = fmt::format("bad catch frame: event {} names CPU {} probe {} ({} CPUs, {} probes)", i, cpu, probe, ncpus,
                        nprobes);
      return false;
    }
    if (flags > 0xffff || pid > UINT32_MAX || tgid > UINT32_MAX) {
      why = fmt::format("bad catch frame: event {} has flags {} pid {} tgid {}", i, flags, pid, tgid);
      return false;
    }
    if (!valid_catch_comm(e.comm)) {
      why = fmt::format("bad catch frame: event {} has a comm that is not printable", i);
      return false;
    }
    if (stack > nstacks) {
      why = fmt::format("bad catch frame: event {} names stack {} of {}", i, stack, nstacks);
      return false;
    }
    if ((flags & SH_CATCH_F_DETAIL) && probe < probe_modules().size())
      if (std::string bad = probe_modules()[probe]->caught_detail_error(e.detail, ncpus); !bad.empty()) {
        why = fmt::format("bad catch frame: event {} {}", i, bad);
        return false;
      }
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.cpu = static_cast<uint32_t>(cpu);
    e.probe = static_cast<uint16_t>(probe);
    e.flags = static_cast<uint16_t>(flags & ~uint64_t(SH_CATCH_F_STEAL));  // only a STEAL frame sets it
    e.pid = static_cast<uint32_t>(pid);
    e.tgid = static_cast<uint32_t>(tgid);
    e.stack = static_cast<uint32_t>(stack);
    b.events.push_back(std::move(e));
  }
  if (c.left()) {
    why = kTrunc;
    return false;
  }
  out = std::move(b);
  return true;
}

// ---- STEAL ------------------------------------------------------------------------

std::string encode_steal(const CatchBatch& batch) {
  bool any = false;
  for (const CaughtEvent& e : batch.events) any |= (e.flags & SH_CATCH_F_STEAL) != 0;
  if (!any) return "";
  std::string b;
  put_varint(b, batch.events.size());
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const CaughtEvent& e = batch.events[i];
    if (!(e.flags & SH_CATCH_F_STEAL)) {
      put_varint(b, 0);
      continue;
    }
    if (e.steal_ns > e.dur_ns || e.steal_ns == UINT64_MAX)
      throw std::runtime_error(
          fmt::format("caught event {}: steal {} ns is over its duration {} ns", i, e.steal_ns, e.dur_ns));
    put_varint(b, e.steal_ns + 1);
  }
  return b;
}

std::string steal_frame_misplaced(std::optional<uint64_t> catch_ns, bool steal_seen, uint64_t mono_ns) {
  if (!catch_ns || *catch_ns != mono_ns)
    return fmt::format("bad steal frame: no catch frame for the sample at {} ns before it", mono_ns);
  if (steal_seen) return fmt::format("bad steal frame: a second one for the sample at {} ns", mono_ns);
  return "";
}

bool decode_steal(const std::string& raw, CatchBatch& b, std::string& why) {
  ByteReader c(raw);
  const uint64_t n = c.varint();
  if (!c.ok) {
    why = "bad steal frame: truncated";
    return false;
  }
  if (n != b.events.size()) {
    why = fmt::format("bad steal frame: {} events, its catch frame has {}", n, b.events.size());
    return false;
  }
  std::vector<uint64_t> v(b.events.size());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = c.varint();
    if (!c.ok) {
      why = "bad steal frame: truncated";
      return false;
    }
    if (v[i] && v[i] - 1 > b.events[i].dur_ns) {
      why = fmt::format("bad steal frame: event {} has steal {} ns, over its duration {} ns", i, v[i] - 1,
                        b.events[i].dur_ns);
      return false;
    }
  }
  if (c.left()) {
    why = "bad steal frame: trailing bytes";
    return false;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    CaughtEvent& e = b.events[i];
    if (v[i]) {
      e.steal_ns = v[i] - 1;
      e.flags |= SH_CATCH_F_STEAL;
    } else {
      e.steal_ns = 0;
      e.flags &= uint16_t(~SH_CATCH_F_STEAL);
    }
  }
  return true;
}

// ---- ONLINE -----------------------------------------------------------------------

std::string encode_online(const std::vector<int>& online, uint32_t ncpus) {
  std::string bitmap(online_bitmap_bytes(ncpus), '\0');
  for (int c : online)
    if (c >= 0 && static_cast<uint32_t>(c) < ncpus) bitmap[size_t(c) / 8] |= static_cast<char>(1u << (c % 8));
  return bitmap;
}

bool decode_online(const std::string& payload, uint32_t ncpus, std::vector<int>& cpus, std::string& why) {
  if (payload.size() != online_bitmap_bytes(ncpus)) {
    why = fmt::format("online frame of {} bytes for {} CPUs", payload.size(), ncpus);
    return false;
  }
  for (size_t i = 0; i < payload.size(); ++i) {
    const auto byte = static_cast<uint8_t>(payload[i]);
    for (int bit = 0; bit < 8; ++bit) {
      if (!(byte & (1u << bit))) continue;
      const size_t c = i * 8 + size_t(bit);
      if (c >= ncpus) {
        why = fmt::format("online frame names CPU {} of {}", c, ncpus);
        return false;
      }
      cpus.push_back(static_cast<int>(c));
    }
  }
  return true;
}

}  // namespace schedhot
