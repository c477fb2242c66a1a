#include "model/lines.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>
#include <fmt/format.h>

#include "probe/module.h"

namespace schedhot {

namespace {

/// Byte offset -> line of the object.
int64_t lof(int64_t off, int lb) { return line_of(off, lb); }

/// The slot words [lo, hi) that Interval::count(f, cpu, idx) sums (empty for no field, a
/// histogram or private words, an element out of range).
std::pair<uint32_t, uint32_t> word_range(const FieldRef& f, int idx) {
  if (!f || f.field->kind == FieldKind::priv || f.field->kind == FieldKind::hist) return {0, 0};
  uint32_t lo = f.field->offset, hi = lo + f.field->nwords;
  if (f.field->kind == FieldKind::counter_array && idx >= 0) {
    if (static_cast<uint32_t>(idx) >= f.field->nwords) return {0, 0};
    lo += static_cast<uint32_t>(idx);
    hi = lo + 1;
  }
  return {lo, hi};
}

}  // namespace

std::optional<FieldTarget> field_target(const std::string& field, int ncpus, const CoherenceLayout& L) {
  std::string f = field;
  bool per_cpu = false;
  if (auto p = f.find("[cpu]"); p != std::string::npos) {
    per_cpu = true;
    f.erase(p, 5);
  }
  for (const HotObject* o : hot_objects())
    if (auto t = o->field_target(f, per_cpu, ncpus, L)) return t;
  return std::nullopt;
}

namespace {

/// Shown name of a line: the object, its line number when it has several, and what it
/// holds (its hot object's line_name()).
std::string line_name(const LineKey& k, const CoherenceLayout& L) {
  for (const HotObject* o : hot_objects())
    if (auto n = o->line_name(k.object, k.line, L)) return *n;
  return fmt::format("{} line {}", k.object, k.line);
}

}  // namespace

const std::vector<WhatIf>& what_ifs() {
  static const std::vector<WhatIf> v = [] {
    std::vector<WhatIf> r;
    for (const WhatIf& w : all_what_ifs())
      if (w.replays) r.push_back(w);
    return r;
  }();
  return v;
}

bool what_if_applies(const WhatIf& w, const CoherenceLayout& layout) {
  const HotObject* o = what_if_owner(w.id);
  return o && w.replays && o->what_if_reason(w, layout).empty();
}

CoherenceLayout apply_what_if(const CoherenceLayout& layout, const WhatIf& w) {
  CoherenceLayout L = layout;
  if (const HotObject* o = what_if_owner(w.id)) o->apply(w, L);
  return L;
}

LinePlan::LinePlan(const Meta& meta, const CoherenceLayout& layout) : meta_(&meta), layout_(layout) {
  const int ncpus = static_cast<int>(meta.ncpus);
  probe_res_.assign(meta.probes.size(), {0, 0});
  for (int p = 0; p < static_cast<int>(meta.probes.size()); ++p) {
    probe_res_[size_t(p)].first = res_.size();
    const ProbeModule* mod = find_module(meta.probes[size_t(p)].name);
    if (!mod) {
      probe_res_[size_t(p)].second = res_.size();
      continue;
    }
    std::map<std::string, int> bound_ids, kind_ids;
    for (const FieldAccess& a : mod->spec().accesses) {
      const FieldRef counter = field_ref(meta, p, a.counter);
      const FieldRef minus = a.minus.empty() ? FieldRef{} : field_ref(meta, p, a.minus);
      const std::string bname = a.bound.empty() ? mod->spec().primary : a.bound;
      const FieldRef bound = field_ref(meta, p, bname);
      if (!counter || !bound) continue;
      auto [bit, bnew] = bound_ids.emplace(bname, static_cast<int>(bounds_.size()));
      if (bnew) bounds_.push_back(bound);
      std::vector<int> elems;  // -1: the field as a whole (or the element_bits sum)
      if (a.element == FieldAccess::kEachElement) {
        for (uint32_t e = 0; e < counter.field->nwords; ++e) elems.push_back(static_cast<int>(e));
      } else {
        elems.push_back(a.element_bits ? -1 : a.element);
      }
      for (int e : elems) {
        std::string field = a.field;
        if (auto h = field.find('#'); h != std::string::npos) field.replace(h, 1, std::to_string(e));
        std::optional<FieldTarget> t = field_target(field, ncpus, layout);
        if (!t) continue;  // not in this kernel
        const std::string kname = a.counter + "-" + a.minus + "#" + std::to_string(e);
        auto [kit, knew] = kind_ids.emplace(kname, static_cast<int>(kind_ids.size()));
        (void)knew;
        res_.push_back({p, counter, minus, e, a.element_bits, a.write, bit->second, kit->second, field, a.assumption,
                        std::move(*t)});
      }
    }
    probe_res_[size_t(p)].second = res_.size();
  }

  // Word ranges read per access and bound (Interval::count(f, cpu, idx)'s words), and
  // family ids.
  const auto range = word_range;
  for (const FieldRef& b : bounds_) bound_words_.push_back(range(b, -1));
  probe_families_.assign(meta.probes.size(), 0);
  for (Resolved& r : res_) {
    std::tie(r.counter_lo, r.counter_hi) = range(r.counter, r.elem);
    std::tie(r.minus_lo, r.minus_hi) = range(r.minus, -1);
    auto f = std::find(families_.begin(), families_.end(), r.target.family);
    if (f == families_.end()) f = families_.insert(f, r.target.family);
    r.family = static_cast<int>(f - families_.begin());
    if (r.family < 32) probe_families_[size_t(r.probe)] |= 1u << r.family;
  }

  // Per probe: the words its accesses read, its bounds, whether it is counted.
  words_.resize(meta.probes.size());
  probe_bounds_.resize(meta.probes.size());
  by_word_.resize(meta.probes.size());
  other_res_.resize(meta.probes.size());
  mods_.assign(meta.probes.size(), nullptr);
  for (size_t p = 0; p < meta.probes.size(); ++p) {
    const auto [b, e] = probe_res_[p];
    if (b == e) continue;
    mods_[p] = find_module(meta.probes[p].name);
    std::vector<uint32_t>& words = words_[p];
    std::vector<const Field*> seen;  // each field's words once (cpupri_set: 404 accesses, 2 arrays)
    auto need = [&](const FieldRef& f) {
      if (!f || f.field->kind == FieldKind::priv || f.field->kind == FieldKind::hist) return;
      if (std::find(seen.begin(), seen.end(), f.field) != seen.end()) return;
      seen.push_back(f.field);
      for (uint32_t w = f.field->offset; w < f.field->offset + f.field->nwords; ++w) words.push_back(w);
    };
    for (size_t i = b; i < e; ++i) {
      need(res_[i].counter);
      need(res_[i].minus);
      need(bounds_[size_t(res_[i].bound)]);
      std::vector<int>& pb = probe_bounds_[p];
      if (std::find(pb.begin(), pb.end(), res_[i].bound) == pb.end()) pb.push_back(res_[i].bound);
    }
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    for (size_t i = b; i < e; ++i) {
      const Resolved& r = res_[i];
      if (!r.bits && r.counter_hi == r.counter_lo + 1) by_word_[p].push_back({r.counter_lo, uint32_t(i)});
      else other_res_[p].push_back(uint32_t(i));
    }
    std::sort(by_word_[p].begin(), by_word_[p].end());
    max_slot_words_ = std::max<size_t>(max_slot_words_, meta.probes[p].slot.slot_words);
  }

  // Line ids: the lines each access can reach from CPUs 0..ncpus-1 form one run per access
  // (a per-CPU target moves up with the CPU id); per object, the union of its runs.
  const int lb = layout_.line_bytes;
  const int last_cpu = std::max(ncpus, 1) - 1;
  std::vector<std::pair<int64_t, int64_t>> run(res_.size());
  std::map<std::string, uint32_t> obj_ids;
  res_obj_.resize(res_.size());
  std::vector<int64_t> ls;
  for (size_t i = 0; i < res_.size(); ++i) {
    const FieldTarget& t = res_[i].target;
    ls.clear();
    t.lines(0, lb, ls);
    t.lines(last_cpu, lb, ls);
    run[i] = {*std::min_element(ls.begin(), ls.end()), *std::max_element(ls.begin(), ls.end())};
    auto [it, fresh] = obj_ids.emplace(t.object, static_cast<uint32_t>(objects_.size()));
    if (fresh) objects_.push_back({t.object, t.family, run[i].first, run[i].second, 0});
    Object& o = objects_[it->second];
    o.min_line = std::min(o.min_line, run[i].first);
    o.max_line = std::max(o.max_line, run[i].second);
    res_obj_[i] = it->second;
  }
  // Ids in LineKey order: objects by name (obj_ids is a map), then by line.
  for (const auto& [name, o] : obj_ids) {
    Object& ob = objects_[o];
    ob.first_id = static_cast<uint32_t>(keys_.size());
    for (int64_t l = ob.min_line; l <= ob.max_line; ++l) {
      keys_.push_back(LineKey{ob.name, l});
      line_obj_.push_back(o);
    }
  }
  rank_.resize(keys_.size());
  for (uint32_t id = 0; id < rank_.size(); ++id) rank_[id] = id;  // ids are made in LineKey order
  names_.resize(keys_.size());
  last_line_.assign(res_.size(), UINT32_MAX);
  d_.assign(max_slot_words_, 0);
  caps_.assign(bounds_.size(), 0);
}

int LinePlan::family_id(const std::string& family) const {
  auto f = std::find(families_.begin(), families_.end(), family);
  return f == families_.end() ? -1 : static_cast<int>(f - families_.begin());
}

const std::string& LinePlan::name(uint32_t id) const {
  if (names_[id].empty()) names_[id] = line_name(keys_[id], layout_);
  return names_[id];
}

void LinePlan::line_ids(size_t i, int cpu, std::vector<uint32_t>& out) const {
  const FieldTarget& t = res_[i].target;
  const Object& o = objects_[res_obj_[i]];
  const int lb = layout_.line_bytes;
  switch (t.mode) {
    case FieldTarget::fixed: out.push_back(o.first_id + uint32_t(lof(t.base, lb) - o.min_line)); return;
    case FieldTarget::bit:
      out.push_back(o.first_id + uint32_t(lof(t.base + int64_t(std::max(cpu, 0) / 64) * 8, lb) - o.min_line));
      return;
    case FieldTarget::int32:
      out.push_back(o.first_id + uint32_t(lof(t.base + int64_t(std::max(cpu, 0)) * 4, lb) - o.min_line));
      return;
    case FieldTarget::scan: {
      const int64_t bytes = std::max<int64_t>(8, (t.nbits + 63) / 64 * 8);
      for (int64_t l = lof(t.base, lb); l <= lof(t.base + bytes - 1, lb); ++l) out.push_back(o.first_id + uint32_t(l - o.min_line));
      return;
    }
  }
}

void LinePlan::compute(const Interval& iv, Lines& out, int family) const {
  // Forget the previous interval's lines (only those it touched).
  for (uint32_t id : out.touched) {
    out.rates[id].clear();
    out.used[id].clear();
  }
  out.touched.clear();
  out.ids.clear();
  if (out.rates.size() != keys_.size()) {
    out.rates.assign(keys_.size(), {});
    out.used.assign(keys_.size(), {});
  }
  const Meta& meta = iv.meta();
  const int ncpus = static_cast<int>(meta.ncpus);
  const double secs = iv.seconds();
  if (secs <= 0) return;
  std::fill(last_line_.begin(), last_line_.end(), UINT32_MAX);
  // One probe on one CPU: an entry per (line, bound, kind) it reached. One kind's accesses
  // to a line count once (a write if any writes); kinds sharing a bound add up to at most
  // the bound's delta (an event touches a line once).
  std::vector<Entry>& ents = ents_;
  // d: the deltas of the words a probe's accesses read (the others are never read, so d
  // is not cleared); caps: the bounds' deltas on the CPU.
  uint64_t* const d = d_.data();
  std::vector<uint64_t>& caps = caps_;
  auto sum = [d](uint32_t lo, uint32_t hi) {
    uint64_t x = 0;
    for (uint32_t w = lo; w < hi; ++w) x += d[w];
    return x;
  };
  for (int p = 0; p < static_cast<int>(meta.probes.size()) && size_t(p) < probe_res_.size(); ++p) {
    const auto [b, e] = probe_res_[size_t(p)];
    if (b == e || !iv.present(p)) continue;
    if (family >= 0 && (family >= 32 || !(probe_families_[size_t(p)] & (1u << family)))) continue;
    // What the report says is not counted is not counted here either (unavailable, blind:
    // blind_reason(meta, p), read each interval as a NOTE may change the status).
    const ProbeStatus& st = meta.probes[size_t(p)].status;
    if (!st.attached || (mods_[size_t(p)] && !mods_[size_t(p)]->blind_reason(meta.host, st).empty())) continue;
    // The words this probe's accesses read, whose deltas are taken once per CPU into d;
    // and the bounds: a CPU where all are 0 adds nothing (bw <= cap, br <= cap - bw
    // below), so idle CPUs cost a few words each.
    const std::vector<uint32_t>& words = words_[size_t(p)];
    const std::vector<int>& pb = probe_bounds_[size_t(p)];
    for (int cpu = 0; cpu < ncpus; ++cpu) {
      iv.word_deltas(p, cpu, words, d);
      bool any = false;
      for (int bd : pb) any |= (caps[size_t(bd)] = sum(bound_words_[size_t(bd)].first, bound_words_[size_t(bd)].second)) > 0;
      if (!any || !iv.online(cpu)) continue;
      ents.clear();
      // Access i's events on this CPU, as entries of the lines it reaches.
      auto access = [&](size_t i) {
        const Resolved& r = res_[i];
        if (family >= 0 && r.family != family) return;
        double n = 0;
        if (r.bits) {
          for (uint32_t k = 0; k < r.counter.field->nwords; ++k)
            if (k & r.bits) {
              const auto [lo, hi] = word_range(r.counter, static_cast<int>(k));
              n += static_cast<double>(sum(lo, hi));
            }
        } else {
          n = static_cast<double>(sum(r.counter_lo, r.counter_hi));
        }
        if (n <= 0) return;
        if (r.minus) n = std::max(0.0, n - static_cast<double>(sum(r.minus_lo, r.minus_hi)));
        if (n <= 0) return;
        ids_.clear();
        line_ids(i, cpu, ids_);
        for (uint32_t id : ids_) {
          // The accesses that reached each line (its fields and assumptions): once per pair.
          if (last_line_[i] != id) {
            last_line_[i] = id;
            std::vector<uint32_t>& u = out.used[id];
            if (u.empty()) out.touched.push_back(id);
            if (std::find(u.begin(), u.end(), uint32_t(i)) == u.end()) u.push_back(uint32_t(i));
          }
          ents.push_back({id, r.bound, r.kind, r.write ? 0 : n, r.write ? n : 0});
        }
      };
      // The order of the accesses does not matter (entries are sorted below, used lists at
      // the end): one-word counters whose word did not move are skipped without a look.
      for (const auto& [w, i] : by_word_[size_t(p)])
        if (d[w]) access(i);
      for (uint32_t i : other_res_[size_t(p)]) access(i);
      if (ents.empty()) continue;
      std::sort(ents.begin(), ents.end(), [](const Entry& x, const Entry& y) {
        return std::tie(x.line, x.bound, x.kind) < std::tie(y.line, y.bound, y.kind);
      });
      for (size_t i = 0; i < ents.size();) {
        const uint32_t line = ents[i].line;
        double rs = 0, ws = 0;
        while (i < ents.size() && ents[i].line == line) {
          const int bound = ents[i].bound;
          double br = 0, bw = 0;
          while (i < ents.size() && ents[i].line == line && ents[i].bound == bound) {
            const int kind = ents[i].kind;
            double kr = 0, kw = 0;
            for (; i < ents.size() && ents[i].line == line && ents[i].bound == bound && ents[i].kind == kind; ++i) {
              kr = std::max(kr, ents[i].r);
              kw = std::max(kw, ents[i].w);
            }
            bw += kw;
            br += std::max(0.0, kr - kw);
          }
          const double cap = static_cast<double>(caps[size_t(bound)]);
          bw = std::min(bw, cap);
          br = std::min(br, std::max(0.0, cap - bw));
          ws += bw;
          rs += br;
        }
        if (ws > 0 || rs > 0) out.rates[line].push_back({cpu, p, rs / secs, ws / secs});
      }
    }
  }
  // Lines in LineKey order, each with its rates by (cpu, probe) and its accesses ascending.
  for (uint32_t id : out.touched) {
    if (out.rates[id].empty()) continue;
    std::vector<LineCpuRate>& v = out.rates[id];
    const auto by_cpu = [](const LineCpuRate& a, const LineCpuRate& b) { return std::tie(a.cpu, a.probe) < std::tie(b.cpu, b.probe); };
    if (!std::is_sorted(v.begin(), v.end(), by_cpu)) std::sort(v.begin(), v.end(), by_cpu);
    std::sort(out.used[id].begin(), out.used[id].end());
    out.ids.push_back(id);
  }
  std::sort(out.ids.begin(), out.ids.end(), [&](uint32_t a, uint32_t b) { return rank_[a] < rank_[b]; });
}

std::vector<LineAccesses> LinePlan::accesses(const Interval& iv) const {
  Lines ls;
  compute(iv, ls);
  std::vector<LineAccesses> out;
  out.reserve(ls.ids.size());
  for (uint32_t id : ls.ids) {
    LineAccesses la;
    la.key = keys_[id];
    la.family = family(id);
    la.name = name(id);
    // Fields and assumptions of the line, in declaration order.
    auto add = [](std::vector<std::string>& v, const std::string& x) {
      if (!x.empty() && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    };
    for (uint32_t i : ls.used[id]) {
      const Resolved& r = res_[i];
      add(la.fields, r.field);
      add(la.assumptions, r.target.assumption);
      add(la.assumptions, r.assumption);
    }
    la.rates = std::move(ls.rates[id]);
    out.push_back(std::move(la));
  }
  return out;
}

std::vector<LineAccesses> line_accesses(const Interval& iv, const CoherenceLayout& layout) {
  return LinePlan(iv.meta(), layout).accesses(iv);
}

std::vector<PossibleLine> possible_lines(const Meta& meta, const CoherenceLayout& layout) {
  const LinePlan plan(meta, layout);
  const int ncpus = static_cast<int>(meta.ncpus);
  std::map<LineKey, PossibleLine> lines;
  std::vector<int64_t> ls;
  for (const LinePlan::Resolved& r : plan.resolved()) {
    const bool per_cpu = r.target.mode == FieldTarget::bit || r.target.mode == FieldTarget::int32;
    ls.clear();
    for (int cpu = 0; cpu < (per_cpu ? ncpus : std::min(ncpus, 1)); ++cpu) r.target.lines(cpu, layout.line_bytes, ls);
    for (int64_t l : ls) {
      PossibleLine& pl = lines[LineKey{r.target.object, l}];
      if (pl.family.empty()) {
        pl.key = LineKey{r.target.object, l};
        pl.family = r.target.family;
        pl.name = line_name(pl.key, layout);
      }
      if (std::find(pl.probes.begin(), pl.probes.end(), r.probe) == pl.probes.end()) pl.probes.push_back(r.probe);
    }
  }
  std::vector<PossibleLine> out;
  for (auto& [k, l] : lines) {
    std::sort(l.probes.begin(), l.probes.end());
    out.push_back(std::move(l));
  }
  // Objects in natural order (pri_to_cpu[2] before pri_to_cpu[10]), then by line.
  std::stable_sort(out.begin(), out.end(), [](const PossibleLine& a, const PossibleLine& b) {
    if (a.key.object != b.key.object) return natural_less(a.key.object, b.key.object);
    return a.key.line < b.key.line;
  });
  return out;
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      // Leading zeros aside, a longer run of digits is the larger number.
      size_t ia = i, jb = j;
      while (ia + 1 < ie && a[ia] == '0') ++ia;
      while (jb + 1 < je && b[jb] == '0') ++jb;
      if (ie - ia != je - jb) return ie - ia < je - jb;
      if (int c = a.compare(ia, ie - ia, b, jb, je - jb); c != 0) return c < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

CoherenceLayout layout_of(const Meta& meta) {
  if (meta.layout) return *meta.layout;
  return assumed_layout(meta.host.kernel_release, meta.host.cacheline_bytes);
}

std::string estimate_name(double gap_s, double total_s) {
  if (!(gap_s > 0) || !(total_s > 0)) return LineSummary::kIndependentArrivals;
  if (gap_s >= total_s * (1 - 1e-9)) return LineSummary::kGapModel;
  const double pct = std::clamp(std::round(100 * gap_s / total_s), 1.0, 99.0);
  return fmt::format("{}, {:.0f}% of the time", LineSummary::kGapModel, pct);
}

double CoherenceSummary::cpu_xfers_per_s(int cpu) const {
  if (cpu_totals.empty()) {  // a summary built by hand: sum the lines
    double s = 0;
    for (const LineSummary& l : lines)
      for (const CpuXfers& c : l.traffic.cpus)
        if (static_cast<int>(c.cpu) == cpu) s += c.total();
    return s;
  }
  return cpu >= 0 && size_t(cpu) < cpu_totals.size() ? cpu_totals[size_t(cpu)] : 0;
}

namespace {

/// The model of each line of `lines` into out (one per lines.ids); per line, the CPUs'
/// summed rates.
void model_lines(const TopologyIndex& topo, const LinePlan::Lines& lines, std::vector<LineTraffic>& out) {
  thread_local std::vector<CpuAccessRate> rates;
  if (out.size() < lines.ids.size()) out.resize(lines.ids.size());
  for (size_t k = 0; k < lines.ids.size(); ++k) {
    rates.clear();
    for (const LineCpuRate& r : lines.rates[lines.ids[k]]) {  // sorted by cpu, then probe
      if (rates.empty() || rates.back().cpu != static_cast<uint32_t>(r.cpu))
        rates.push_back({static_cast<uint32_t>(r.cpu), 0, 0});
      rates.back().reads_per_s += r.reads;
      rates.back().writes_per_s += r.writes;
    }
    coherence_model(topo, rates, out[k]);
  }
}

/// The transfers/s (or, with cost, the stall ns/s) of the lines of family fam, summed in
/// LineKey order.
double family_total(const LinePlan& plan, const LinePlan::Lines& lines, const std::vector<LineTraffic>& t,
                    const std::string& fam, const XferCost* cost, const std::vector<char>* use_gap = nullptr,
                    const std::vector<LineTraffic>* gap = nullptr, bool* any_gap = nullptr) {
  double s = 0;
  for (size_t k = 0; k < lines.ids.size(); ++k) {
    if (plan.family(lines.ids[k]) != fam) continue;
    const bool g = use_gap && gap && (*use_gap)[k];
    if (g && any_gap) *any_gap = true;
    const LineTraffic& x = g ? (*gap)[k] : t[k];
    s += cost ? stall_ns_per_s(x, *cost) : x.total();
  }
  return s;
}

/// The element of v (sorted by key()) with key k, inserted (value-initialized: the caller
/// sets its key) when missing. at: where the search starts, left at the element; the keys
/// asked with one `at` must not decrease, so that a run of them walks v once.
template <class V, class K, class Key>
typename V::value_type& sorted_slot(V& v, size_t& at, const K& k, Key key) {
  while (at < v.size() && key(v[at]) < k) ++at;
  if (at == v.size() || key(v[at]) != k) v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), typename V::value_type{});
  return v[at];
}

}  // namespace

CoherenceAccumulator::CoherenceAccumulator(const Meta& meta, XferCost cost)
    : meta_(meta), layout_(layout_of(meta)), cost_(cost), topo_(meta.host.topology), plan_(meta, layout_) {
  for (const WhatIf& w : what_ifs()) {
    what_if_plans_.emplace_back(meta, apply_what_if(layout_, w));
    what_if_applies_.push_back(what_if_applies(w, layout_));
  }
  what_if_.assign(what_ifs().size(), {0, 0});
  what_if_stall_.assign(what_ifs().size(), {0, 0});
  what_if_gap_s_.assign(what_ifs().size(), 0);
  what_if_lines_.resize(what_ifs().size());
  acc_.resize(plan_.line_count());
}

void CoherenceAccumulator::map_gap_lines() {
  gap_mapped_ = true;
  gap_id_.assign(meta_.gap_lines.size(), -1);
  gap_counts_.assign(plan_.line_count(), {});
  if (meta_.gap_lines.empty()) return;
  std::map<LineKey, uint32_t> ids;
  for (uint32_t id = 0; id < plan_.line_count(); ++id) ids.emplace(plan_.key(id), id);
  for (size_t i = 0; i < meta_.gap_lines.size(); ++i) {
    auto it = ids.find(LineKey{meta_.gap_lines[i].object, meta_.gap_lines[i].line});
    if (it != ids.end()) gap_id_[i] = static_cast<int32_t>(it->second);
  }
}

CpuGaps poisson_gaps(uint32_t cpu, double reads_per_s, double writes_per_s, double seconds) {
  CpuGaps g;
  g.cpu = cpu;
  const double nr = std::max(0.0, reads_per_s) * seconds, nw = std::max(0.0, writes_per_s) * seconds;
  // Spreads n gaps of an exponential of rate (per s) over the buckets into h.
  const auto spread = [](std::array<double, kGapBuckets>& h, double n, double rate) {
    if (n <= 0) return;
    if (!(rate > 0)) {
      h[kGapBuckets - 1] += n;
      return;
    }
    const double per_ns = rate / 1e9;
    double below = 0;  // the CDF at the bucket's lower bound
    for (uint32_t b = 0; b < kGapBuckets; ++b) {
      const double up = b + 1 < kGapBuckets ? -std::expm1(-per_ns * gap_upper(b)) : 1.0;
      h[b] += n * std::max(0.0, up - below);
      below = up;
    }
  };
  spread(g.ww, nw, writes_per_s);
  spread(g.wa, nw, reads_per_s + writes_per_s);
  spread(g.ra, nr, reads_per_s + writes_per_s);
  return g;
}

bool CoherenceAccumulator::gap_line(size_t k, double secs) {
  const uint32_t id = lines_.ids[k];
  const std::vector<const GapCounts*>& counts = gap_counts_[id];
  if (counts.empty()) return false;
  cpu_gaps_.clear();
  size_t at = 0;  // counts and rates are both by ascending cpu
  bool any = false;
  const std::vector<LineCpuRate>& rates = lines_.rates[id];
  for (size_t r = 0; r < rates.size();) {
    const int cpu = rates[r].cpu;
    double reads = 0, writes = 0;
    for (; r < rates.size() && rates[r].cpu == cpu; ++r) {
      reads += rates[r].reads;
      writes += rates[r].writes;
    }
    while (at < counts.size() && counts[at]->cpu < static_cast<uint32_t>(cpu)) ++at;
    CpuGaps g;
    bool use = at < counts.size() && counts[at]->cpu == static_cast<uint32_t>(cpu);
    if (use) {
      g.cpu = static_cast<uint32_t>(cpu);
      for (uint32_t b = 0; b < kGapBuckets; ++b) {
        g.ww[b] = counts[at]->ww[b];
        g.wa[b] = counts[at]->wa[b];
        g.ra[b] = counts[at]->ra[b];
      }
      // The counts against the counters: a probe notes each of an event's records (up to
      // two on one line: nohz_enter's calls and first), so more than 4x the counted
      // accesses (and 16) is not this CPU's traffic (a damaged or crafted file): its rates
      // decide instead, and a line's transfers never exceed what its accesses allow.
      use = g.writes() + g.reads() <= 4 * (reads + writes) * secs + 16;
    }
    if (use) {
      any = true;
      cpu_gaps_.push_back(g);
    } else {
      cpu_gaps_.push_back(poisson_gaps(static_cast<uint32_t>(cpu), reads, writes, secs));
    }
  }
  if (!any) return false;
  if (gap_traffic_.size() <= k) gap_traffic_.resize(k + 1);
  gap_model(topo_, cpu_gaps_, secs, gap_traffic_[k]);
  return true;
}

void CoherenceAccumulator::reset() {
  seconds_ = 0;
  for (uint32_t id : live_) {
    Acc& a = acc_[id];
    a.live = false;
    a.fields.clear();
    a.assumptions.clear();
    a.merged.clear();
    a.reads = a.writes = 0;
    a.cpus.clear();
    a.by_probe.clear();
    a.rw.clear();
    a.seconds = a.gap_seconds = 0;
  }
  live_.clear();
  what_if_.assign(what_ifs().size(), {0, 0});
  what_if_stall_.assign(what_ifs().size(), {0, 0});
  what_if_gap_s_.assign(what_ifs().size(), 0);
  gap_seconds_ = traffic_seconds_ = 0;
  gap_full_ = 0;
}

void CoherenceAccumulator::add(const Interval& iv) {
  const double secs = iv.seconds();
  if (secs <= 0) return;
  seconds_ += secs;
  plan_.compute(iv, lines_);
  model_lines(topo_, lines_, traffic_);
  // The gap counts of this interval (only when they cover exactly it), by plan line id.
  use_gap_.assign(lines_.ids.size(), 0);
  bool interval_gap = false;
  const std::optional<GapBatch>& gb = iv.last().gaps;
  if (gb && gb->from_ns == iv.first().mono_ns)  // also a batch of no counts: every table full or idle
    gap_full_ = gb->full > UINT64_MAX - gap_full_ ? UINT64_MAX : gap_full_ + gb->full;  // a file's value: saturate
  if (gb && gb->from_ns == iv.first().mono_ns && !gb->counts.empty()) {
    if (!gap_mapped_) map_gap_lines();
    for (uint32_t id : gap_touched_) gap_counts_[id].clear();
    gap_touched_.clear();
    for (const GapCounts& c : gb->counts) {
      if (c.line >= gap_id_.size() || gap_id_[c.line] < 0) continue;  // not a line of this plan
      std::vector<const GapCounts*>& v = gap_counts_[size_t(gap_id_[c.line])];
      if (v.empty()) gap_touched_.push_back(uint32_t(gap_id_[c.line]));
      if (!v.empty() && v.back()->cpu >= c.cpu) {  // out of order: keep cpu ascending, each once
        auto it = std::lower_bound(v.begin(), v.end(), c.cpu, [](const GapCounts* x, uint32_t cpu) { return x->cpu < cpu; });
        if (it != v.end() && (*it)->cpu == c.cpu) continue;
        v.insert(it, &c);
      } else {
        v.push_back(&c);
      }
    }
    for (size_t k = 0; k < lines_.ids.size(); ++k)
      if (gap_line(k, secs)) use_gap_[k] = 1, interval_gap = true;
    for (uint32_t id : gap_touched_) gap_counts_[id].clear();  // the batch is not kept past add()
    gap_touched_.clear();
  }
  if (interval_gap) gap_seconds_ += secs;
  if (!lines_.ids.empty()) traffic_seconds_ += secs;  // what the shares count: time with some traffic
  const auto& res = plan_.resolved();
  for (size_t k = 0; k < lines_.ids.size(); ++k) {
    const uint32_t id = lines_.ids[k];
    const std::vector<LineCpuRate>& rates = lines_.rates[id];
    const LineTraffic& traffic = use_gap_[k] ? gap_traffic_[k] : traffic_[k];
    Acc& a = acc_[id];
    if (!a.live) {
      a.live = true;
      live_.push_back(id);
    }
    a.seconds += secs;
    if (use_gap_[k]) a.gap_seconds += secs;
    // Its fields and assumptions, in the order they were first met (declaration order
    // within an interval); an access already merged adds nothing new.
    auto add = [](std::vector<const std::string*>& v, const std::string& x) {
      if (!x.empty() && std::find_if(v.begin(), v.end(), [&](const std::string* y) { return *y == x; }) == v.end())
        v.push_back(&x);
    };
    for (uint32_t i : lines_.used[id]) {
      auto m = std::lower_bound(a.merged.begin(), a.merged.end(), i);
      if (m != a.merged.end() && *m == i) continue;
      a.merged.insert(m, i);
      add(a.fields, res[i].field);
      add(a.assumptions, res[i].target.assumption);
      add(a.assumptions, res[i].assumption);
    }
    size_t at = 0;
    for (const LineCpuRate& r : rates)  // by cpu
      if (r.reads > 0 || r.writes > 0) {
        auto& e = sorted_slot(a.rw, at, static_cast<uint32_t>(r.cpu), [](const auto& x) { return x.first; });
        e.first = static_cast<uint32_t>(r.cpu);
        e.second |= uint8_t((r.reads > 0 ? 1 : 0) | (r.writes > 0 ? 2 : 0));
      }
    // per CPU: its totals, and its misses shared out to its probes
    size_t r = 0;
    at = 0;
    // The first interval's CPUs at once: grown entry by entry, 8192 of them per line took
    // twice their size at the last doubling (the report's peak RSS, issue 32).
    if (a.cpus.empty()) a.cpus.reserve(traffic.cpus.size());
    for (const CpuXfers& c : traffic.cpus) {
      CpuXfers& t = sorted_slot(a.cpus, at, c.cpu, [](const CpuXfers& e) { return e.cpu; });
      t.cpu = c.cpu;
      t.read_xfers_per_s += c.read_xfers_per_s * secs;
      t.write_xfers_per_s += c.write_xfers_per_s * secs;
      for (int d = 0; d < kXferDistances; ++d) t.by_distance[size_t(d)] += c.by_distance[size_t(d)] * secs;
      double reads = 0, writes = 0;
      const size_t r0 = r;
      for (; r < rates.size() && static_cast<uint32_t>(rates[r].cpu) == c.cpu; ++r) {
        reads += rates[r].reads;
        writes += rates[r].writes;
      }
      size_t pat = 0;
      for (size_t k2 = r0; k2 < r; ++k2) {
        double x = 0;
        if (reads > 0) x += c.read_xfers_per_s * rates[k2].reads / reads;
        if (writes > 0) x += c.write_xfers_per_s * rates[k2].writes / writes;
        auto& bp = sorted_slot(a.by_probe, pat, rates[k2].probe, [](const auto& e) { return e.first; });
        bp.first = rates[k2].probe;
        bp.second += x * secs;
      }
      a.reads += reads * secs;
      a.writes += writes * secs;
    }
  }
  for (size_t w = 0; w < what_ifs().size(); ++w) {
    if (!what_if_applies_[w]) continue;
    const std::string& fam = what_ifs()[w].family;
    const LinePlan& wp = what_if_plans_[w];
    LinePlan::Lines& wl = what_if_lines_[w];
    // Only the family's lines are compared: the what-if plan models those alone.
    wp.compute(iv, wl, wp.family_id(fam));
    model_lines(topo_, wl, what_if_traffic_);
    // Before: the figure the lines show (the gap model where it modeled them). After: the
    // patched layout's lines have no gap counts, so when before used them, after is its
    // independent-arrivals figure times before's gap/independent-arrivals ratio in this
    // interval (both figures on the same estimate).
    bool gap = false;
    const double bx = family_total(plan_, lines_, traffic_, fam, nullptr, &use_gap_, &gap_traffic_, &gap);
    const double bs = family_total(plan_, lines_, traffic_, fam, &cost_, &use_gap_, &gap_traffic_);
    double ax = family_total(wp, wl, what_if_traffic_, fam, nullptr);
    double as = family_total(wp, wl, what_if_traffic_, fam, &cost_);
    if (gap) {
      const double ix = family_total(plan_, lines_, traffic_, fam, nullptr);
      const double is = family_total(plan_, lines_, traffic_, fam, &cost_);
      ax = ix > 0 ? ax * bx / ix : ax;
      as = is > 0 ? as * bs / is : as;
      what_if_gap_s_[w] += secs;
    }
    what_if_[w].first += bx * secs;
    what_if_[w].second += ax * secs;
    what_if_stall_[w].first += bs * secs;
    what_if_stall_[w].second += as * secs;
  }
}

CoherenceSummary CoherenceAccumulator::of(const Interval& iv) {
  reset();
  add(iv);
  return summary();
}

CoherenceSummary CoherenceAccumulator::summary() const {
  CoherenceSummary s;
  s.seconds = seconds_;
  s.line_bytes = layout_.line_bytes;
  s.notes = layout_.notes;
  s.gap_full = gap_full_;
  s.estimate = estimate_name(gap_seconds_, traffic_seconds_);
  const double T = seconds_ > 0 ? seconds_ : 1;
  std::vector<uint32_t> ids = live_;
  std::sort(ids.begin(), ids.end(), [&](uint32_t x, uint32_t y) { return plan_.rank(x) < plan_.rank(y); });
  for (uint32_t id : ids) {
    const Acc& a = acc_[id];
    LineSummary l;
    l.key = plan_.key(id);
    l.family = plan_.family(id);
    l.name = plan_.name(id);
    for (const std::string* f : a.fields) l.fields.push_back(*f);
    for (const std::string* f : a.assumptions) l.assumptions.push_back(*f);
    l.reads_per_s = a.reads / T;
    l.writes_per_s = a.writes / T;
    for (const auto& [cpu, f] : a.rw) {
      l.readers += (f & 1) != 0;
      l.writers += (f & 2) != 0;
    }
    for (const CpuXfers& c : a.cpus) {
      CpuXfers x = c;
      x.read_xfers_per_s /= T;
      x.write_xfers_per_s /= T;
      for (auto& d : x.by_distance) d /= T;
      l.traffic.read_xfers_per_s += x.read_xfers_per_s;
      l.traffic.write_xfers_per_s += x.write_xfers_per_s;
      for (int d = 0; d < kXferDistances; ++d) l.traffic.by_distance[size_t(d)] += x.by_distance[size_t(d)];
      l.traffic.cpus.push_back(x);
    }
    for (const auto& [p, x] : a.by_probe) l.by_probe.push_back({p, x / T});
    l.estimate = estimate_name(a.gap_seconds, a.seconds);
    for (const CpuXfers& c : l.traffic.cpus) {
      if (s.cpu_totals.size() <= c.cpu) s.cpu_totals.resize(size_t(c.cpu) + 1, 0.0);
      s.cpu_totals[c.cpu] += c.total();
    }
    s.lines.push_back(std::move(l));
  }
  // Every seed patch in rank order: those replayed (what_ifs(), figures when they apply)
  // and those with nothing to replay (said, never left out).
  size_t w = 0;
  for (const WhatIf& wi : all_what_ifs()) {
    WhatIfResult r;
    r.what = wi;
    const HotObject* o = what_if_owner(wi.id);
    r.reason = o ? o->what_if_reason(wi, layout_) : "";
    if (!wi.replays) {
      s.what_if.push_back(r);
      continue;
    }
    r.applies = r.reason.empty();
    if (r.applies) {
      r.before_xfers_per_s = what_if_[w].first / T;
      r.after_xfers_per_s = what_if_[w].second / T;
      r.before_stall_ns_per_s = what_if_stall_[w].first / T;
      r.after_stall_ns_per_s = what_if_stall_[w].second / T;
      if (what_if_gap_s_[w] > 0)
        r.estimate = estimate_name(what_if_gap_s_[w], traffic_seconds_) +
                     "; after: independent arrivals x the before figure's gap/independent-arrivals ratio per interval "
                     "(the patched layout's lines have no gap counts)";
    }
    s.what_if.push_back(r);
    ++w;
  }
  return s;
}

std::vector<size_t> LinePlan::event_accesses(int probe, uint32_t word) const {
  std::vector<size_t> out;
  if (probe < 0 || size_t(probe) >= probe_res_.size()) return out;
  const Field* f = nullptr;
  for (const Field& x : meta_->probes[size_t(probe)].slot.fields)
    if (x.kind != FieldKind::priv && word >= x.offset && word < x.offset + x.nwords) f = &x;
  if (!f) return out;
  const int elem = f->kind == FieldKind::counter_array ? static_cast<int>(word - f->offset) : -1;
  // A minus counter's record (abi.h): the base counter's event in the case the minus
  // counts: its accesses without a minus apply, those that subtract it do not.
  const Field* base = nullptr;
  const auto [b, e] = probe_res_[size_t(probe)];
  for (size_t i = b; i < e; ++i)
    if (res_[i].minus && res_[i].minus.field == f) base = res_[i].counter.field;
  for (size_t i = b; i < e; ++i) {
    const Resolved& r = res_[i];
    bool applies = false;
    if (r.counter.field == f) {
      if (r.bits) applies = elem >= 0 && (uint32_t(elem) & r.bits);
      else applies = r.elem == -1 || r.elem == elem;
    } else if (base && r.counter.field == base) {
      applies = !r.minus;
    }
    if (applies) out.push_back(i);
  }
  return out;
}

std::vector<std::pair<LineKey, bool>> LinePlan::event_lines(int probe, uint32_t word, int cpu) const {
  std::vector<std::pair<LineKey, bool>> out;
  std::vector<int64_t> ls;
  for (size_t i : event_accesses(probe, word)) {
    const Resolved& r = res_[i];
    ls.clear();
    r.target.lines(cpu, layout_.line_bytes, ls);
    for (int64_t l : ls) {
      const LineKey k{r.target.object, l};
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& x) { return x.first == k; });
      if (it == out.end()) out.push_back({k, r.write});
      else it->second = it->second || r.write;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

/// The line id + 1 a route target gives CPU c, as bpf/gaps.bpf.c computes it.
uint32_t route_line(const sh_gap_target& t, uint32_t c) {
  uint64_t off = 0;
  if (t.mode == SH_GAP_BIT) off = t.base + uint64_t(c / 64) * 8;
  else if (t.mode == SH_GAP_INT32) off = t.base + uint64_t(c) * 4;
  return uint32_t(t.id0 + int32_t(off >> (t.shift & 63)));
}

}  // namespace

GapRoutes gap_routes(const LinePlan& plan) {
  GapRoutes out;
  const int lb = plan.layout().line_bytes;
  if (lb <= 0 || (lb & (lb - 1)) != 0) return out;
  const uint8_t shift = static_cast<uint8_t>(__builtin_ctz(unsigned(lb)));
  const auto& res = plan.resolved();
  // One target per access: a scan becomes its lines, each a fixed target.
  struct Tgt {
    sh_gap_target t;
    uint32_t id;  // the line id of a fixed target
  };
  auto targets = [&](size_t i, std::vector<Tgt>& v) {
    const FieldTarget& ft = res[i].target;
    const auto [first, min_line] = plan.object_ids(i);
    sh_gap_target t{};
    t.write = res[i].write ? 1 : 0;
    t.shift = shift;
    auto fixed = [&](int64_t line) {
      Tgt x{t, first + uint32_t(line - min_line)};
      x.t.mode = SH_GAP_FIXED;
      x.t.id0 = int32_t(x.id + 1);
      v.push_back(x);
    };
    if (ft.mode == FieldTarget::fixed) {
      fixed(ft.base >= 0 ? ft.base / lb : -((-ft.base + lb - 1) / lb));
    } else if (ft.mode == FieldTarget::scan) {
      std::vector<int64_t> ls;
      ft.lines(0, lb, ls);
      for (int64_t l : ls) fixed(l);
    } else {
      // id = id0 + ((base + off) >> shift): a negative base moves up by whole lines.
      int64_t base = ft.base, k = 0;
      if (base < 0) {
        k = (-base + lb - 1) / lb;
        base += k * lb;
      }
      t.mode = ft.mode == FieldTarget::bit ? SH_GAP_BIT : SH_GAP_INT32;
      t.base = uint64_t(base);
      t.id0 = int32_t(int64_t(first) - min_line - k + 1);
      v.push_back({t, UINT32_MAX});
    }
  };
  // The routes, then the lines that some route could not hold.
  std::vector<std::pair<uint32_t, std::vector<Tgt>>> all;
  std::vector<char> dropped(plan.line_count(), 0);
  const Meta& meta = plan.meta();
  for (size_t p = 0; p < meta.probes.size() && p < SH_NPROBES; ++p) {
    const uint32_t words = std::min<uint32_t>(meta.probes[p].slot.slot_words, SH_GAP_ROUTE_WORDS);
    for (uint32_t w = 0; w < words; ++w) {
      const std::vector<size_t> acc = plan.event_accesses(static_cast<int>(p), w);
      if (acc.empty()) continue;
      std::vector<Tgt> v;
      for (size_t i : acc) targets(i, v);
      // Fixed targets of one line merge (a write if any writes).
      std::vector<Tgt> m;
      for (const Tgt& x : v) {
        auto it = std::find_if(m.begin(), m.end(), [&](const Tgt& y) {
          return x.id != UINT32_MAX && y.id == x.id;
        });
        if (it != m.end()) it->t.write |= x.t.write;
        else m.push_back(x);
      }
      if (m.size() > SH_GAP_TARGETS)
        for (const Tgt& x : m)
          if (x.id != UINT32_MAX && x.t.mode == SH_GAP_FIXED) dropped[x.id] = 1;
      // Fixed targets first; a per-CPU target that lands on an earlier target's line skips
      // those CPUs, and upgrades that target to a write there when it writes (abi.h
      // sh_gap_target). A set of CPUs that is not one range: its lines are left out.
      std::stable_partition(m.begin(), m.end(), [](const Tgt& x) { return x.t.mode == SH_GAP_FIXED; });
      for (Tgt& x : m) x.t.skip_lo = x.t.skip_hi = x.t.up_lo = x.t.up_hi = 0;
      for (size_t i = 0; i < m.size(); ++i) {
        if (m[i].t.mode == SH_GAP_FIXED) continue;
        std::vector<std::vector<uint32_t>> same(i);  // per earlier target: the CPUs it shares with i
        for (uint32_t c = 0; c < meta.ncpus; ++c) {
          const uint32_t li = route_line(m[i].t, c);
          for (size_t j = 0; j < i; ++j)
            if (route_line(m[j].t, c) == li) {
              same[j].push_back(c);
              break;
            }
        }
        std::vector<uint32_t> skip;
        for (size_t j = 0; j < i; ++j) skip.insert(skip.end(), same[j].begin(), same[j].end());
        std::sort(skip.begin(), skip.end());
        auto range = [&](const std::vector<uint32_t>& cs, uint32_t& lo, uint32_t& hi) {
          if (cs.empty()) return true;
          lo = cs.front();
          hi = cs.back() + 1;
          return hi - lo == cs.size();
        };
        bool ok = range(skip, m[i].t.skip_lo, m[i].t.skip_hi);
        for (size_t j = 0; j < i && ok; ++j)
          if (!same[j].empty() && m[i].t.write && !m[j].t.write) {
            if (m[j].t.up_hi > m[j].t.up_lo) ok = false;  // upgraded by two targets: keep it simple
            else ok = range(same[j], m[j].t.up_lo, m[j].t.up_hi);
          }
        if (!ok)
          for (uint32_t c : skip) dropped[route_line(m[i].t, c) - 1] = 1;
      }
      all.push_back({uint32_t(p) * SH_GAP_ROUTE_WORDS + w, std::move(m)});
    }
  }
  for (auto& [key, v] : all) {
    sh_gap_route r{};
    for (const Tgt& x : v) {
      if (x.id != UINT32_MAX && dropped[x.id]) continue;
      if (r.n >= SH_GAP_TARGETS) break;  // only per-CPU targets beyond: cannot happen with the modules' accesses
      r.t[r.n++] = x.t;
    }
    if (r.n) out.routes.push_back({key, r});
  }
  out.lines.reserve(plan.line_count());
  for (uint32_t id = 0; id < plan.line_count(); ++id) out.lines.push_back({plan.key(id).object, plan.key(id).line});
  return out;
}

std::vector<std::pair<LineKey, bool>> event_lines(const Meta& meta, const CoherenceLayout& layout, int probe,
                                                  uint32_t word, int cpu) {
  return LinePlan(meta, layout).event_lines(probe, word, cpu);
}

ExactAccumulator::ExactAccumulator(const Meta& meta, const CoherenceLayout& layout)
    : meta_(meta), layout_(layout), topo_(meta.host.topology), plan_(meta, layout_) {}

ExactAccumulator::ExactAccumulator(const Meta& meta, bool with_what_ifs) : ExactAccumulator(meta, layout_of(meta)) {
  if (!with_what_ifs) return;
  for (const WhatIf& w : what_ifs())
    if (what_if_applies(w, layout_))
      what_ifs_.emplace_back(w.id, std::make_unique<ExactAccumulator>(meta, apply_what_if(layout_, w)));
}

ExactAccumulator::~ExactAccumulator() = default;

std::pair<double, double> ExactAccumulator::family_totals(const std::string& family) const {
  std::map<std::string, bool> in;  // object -> of the family
  for (uint32_t id = 0; id < plan_.line_count(); ++id)
    if (plan_.family(id) == family) in[plan_.key(id).object] = true;
  double e = 0, g = 0;
  for (const auto& [k, m] : lines_)
    if (in.count(k.object)) e += m.traffic(0, seconds_).total();
  for (const auto& [k, t] : gap_x_)
    if (in.count(k.object)) g += t.total() / (seconds_ > 0 ? seconds_ : 1.0);
  return {e, g};
}

std::optional<ExactAccumulator::WhatIfCounts> ExactAccumulator::what_if(const std::string& id) const {
  for (const auto& [w, acc] : what_ifs_) {
    if (w != id) continue;
    const std::string& fam = [&]() -> const std::string& {
      for (const WhatIf& x : what_ifs())
        if (x.id == id) return x.family;
      return id;
    }();
    WhatIfCounts c;
    std::tie(c.before_exact, c.before_gap) = family_totals(fam);
    std::tie(c.after_exact, c.after_gap) = acc->family_totals(fam);
    return c;
  }
  return std::nullopt;
}

void ExactAccumulator::add(double seconds, const ExactBatch& b) {
  for (auto& [w, acc] : what_ifs_) acc->add(seconds, b);
  ++batches_;
  if (seconds > 0) seconds_ += seconds;
  lost_ = b.lost > UINT64_MAX - lost_ ? UINT64_MAX : lost_ + b.lost;  // saturates: never wraps to "0 lost"
  for (auto& [k, m] : lines_) m.add_lost(b.lost);
  for (const ExactRecord& r : b.records) {
    if (r.ts_ns < last_ts_ || r.cpu >= meta_.ncpus) {
      ++skipped_;
      continue;
    }
    last_ts_ = r.ts_ns;
    ++records_;
    ++by_word_[{r.probe, r.word}];
    const uint64_t key = (uint64_t(r.probe) << 48) | (uint64_t(r.word) << 32) | r.cpu;
    auto it = cache_.find(key);
    if (it == cache_.end())
      it = cache_.emplace(key, plan_.event_lines(r.probe, r.word, static_cast<int>(r.cpu))).first;
    for (const auto& [line, write] : it->second) {
      auto m = lines_.find(line);
      if (m == lines_.end()) {
        m = lines_.emplace(std::piecewise_construct, std::forward_as_tuple(line), std::forward_as_tuple(topo_, 1, meta_.ncpus)).first;
        m->second.add_lost(lost_);
      }
      const bool xfer = m->second.feed({r.ts_ns, r.cpu, 0, write});
      auto [g, fresh] = gap_ids_.emplace(line, static_cast<uint32_t>(gap_keys_.size()));
      if (fresh) gap_keys_.push_back(line);
      gaps_.feed({r.ts_ns, r.cpu, g->second, write});
      if (observer_) observer_->access(r.ts_ns, r.cpu, g->second, write, xfer);
    }
  }
  if (seconds <= 0) return;
  thread_local LineTraffic t;
  for (uint32_t id : gaps_.lines()) {
    const std::vector<CpuGaps> g = gaps_.take(id);
    gap_model(topo_, g, seconds, t);
    LineTraffic& acc = gap_x_[gap_keys_[id]];
    acc.read_xfers_per_s += t.read_xfers_per_s * seconds;
    acc.write_xfers_per_s += t.write_xfers_per_s * seconds;
    for (int d = 0; d < kXferDistances; ++d) acc.by_distance[size_t(d)] += t.by_distance[size_t(d)] * seconds;
    // Per CPU (both ascending cpu): merged.
    for (const CpuXfers& c : t.cpus) {
      auto it = std::lower_bound(acc.cpus.begin(), acc.cpus.end(), c.cpu,
                                 [](const CpuXfers& x, uint32_t cpu) { return x.cpu < cpu; });
      if (it == acc.cpus.end() || it->cpu != c.cpu) {
        CpuXfers z;
        z.cpu = c.cpu;
        it = acc.cpus.insert(it, z);
      }
      it->read_xfers_per_s += c.read_xfers_per_s * seconds;
      it->write_xfers_per_s += c.write_xfers_per_s * seconds;
      for (int d = 0; d < kXferDistances; ++d) it->by_distance[size_t(d)] += c.by_distance[size_t(d)] * seconds;
    }
  }
}

void ExactAccumulator::restart() {
  for (auto& [w, acc] : what_ifs_) acc->restart();
  for (auto& [k, m] : lines_) m.clear_counts();
  for (uint32_t id : gaps_.lines()) (void)gaps_.take(id);  // the histograms so far: the last times stay
  gap_x_.clear();
  by_word_.clear();
  records_ = lost_ = skipped_ = batches_ = 0;
  seconds_ = 0;
}

void ExactAccumulator::clear() {
  for (auto& [w, acc] : what_ifs_) acc->clear();
  lines_.clear();
  gaps_ = GapTracker{};
  gap_x_.clear();
  by_word_.clear();
  records_ = lost_ = skipped_ = batches_ = last_ts_ = 0;
  seconds_ = 0;
}

void ExactAccumulator::interval(const ExactBatch* before, double seconds, const ExactBatch& b) {
  clear();
  if (before) {
    add(0, *before);
    restart();
  }
  add(seconds, b);
}

std::optional<LineTraffic> ExactAccumulator::gap_traffic(const LineKey& k) const {
  auto it = gap_x_.find(k);
  if (it == gap_x_.end()) return std::nullopt;
  LineTraffic t = it->second;
  if (seconds_ > 0) {
    t.read_xfers_per_s /= seconds_;
    t.write_xfers_per_s /= seconds_;
    for (double& x : t.by_distance) x /= seconds_;
    for (CpuXfers& c : t.cpus) {
      c.read_xfers_per_s /= seconds_;
      c.write_xfers_per_s /= seconds_;
      for (double& x : c.by_distance) x /= seconds_;
    }
  }
  return t;
}

std::string ExactAccumulator::line_name(uint32_t id) const { return schedhot::line_name(line_key(id), layout_); }

std::optional<LineTraffic> ExactAccumulator::traffic(const LineKey& k) const {
  auto it = lines_.find(k);
  if (it == lines_.end()) return std::nullopt;
  return it->second.traffic(0, seconds_);
}

}  // namespace schedhot
