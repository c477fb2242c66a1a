#include "model/lines.h"

#include <algorithm>
#include <fmt/format.h>

#include "probe/module.h"

namespace schedhot {

namespace {

/// Where one access lands: a line, and whether the field's placement was assumed.
struct Place {
  LineKey key;
  std::string family;
  std::string assumption;
};

constexpr const char* kSeparate =
    "a separately allocated bitmap, modeled as its own line-aligned object (slab neighbours not known)";

/// Byte offset -> line of the object.
int64_t lof(int64_t off, int lb) { return line_of(off, lb); }

/// The lines of a bitmap of nbits bits starting at byte `base` of its object: the line of
/// bit `cpu` (cpu >= 0), or every line of the bitmap (cpu < 0: a scan such as
/// for_each_cpu or cpumask_any_and).
void bitmap_lines(std::vector<int64_t>& out, int64_t base, int cpu, int64_t nbits, int lb) {
  if (cpu >= 0) {
    out.push_back(lof(base + int64_t(cpu / 64) * 8, lb));
    return;
  }
  const int64_t bytes = std::max<int64_t>(8, (nbits + 63) / 64 * 8);
  for (int64_t l = lof(base, lb); l <= lof(base + bytes - 1, lb); ++l) out.push_back(l);
}

/// The places of kernel field `field` (element `elem` already substituted for "#"; "[cpu]"
/// stands for cpu) on a kernel with `layout`, for a machine with ncpus possible CPUs.
/// Empty when the kernel has no such field.
std::vector<Place> places(const std::string& field, int cpu, int ncpus, const CoherenceLayout& L) {
  const int lb = L.line_bytes;
  std::vector<Place> out;
  std::string f = field;
  bool per_cpu = false;
  if (auto p = f.find("[cpu]"); p != std::string::npos) {
    per_cpu = true;
    f.erase(p, 5);
  }
  const int c = per_cpu ? cpu : -1;
  if (f.rfind("nohz.", 0) == 0) {
    if (!L.nohz) return out;
    const NohzLayout& n = *L.nohz;
    const std::string m = f.substr(5);
    if (m == "idle_cpus_mask") {
      std::vector<int64_t> ls;
      if (n.mask_is_pointer) {
        bitmap_lines(ls, 0, c, ncpus, lb);
        for (auto l : ls) out.push_back({{"nohz.idle_cpus_mask", l}, "nohz", kSeparate});
      } else {
        bitmap_lines(ls, n.idle_cpus_mask.offset, c, n.mask_bytes * 8, lb);
        for (auto l : ls) out.push_back({{"nohz", l}, "nohz", ""});
      }
      return out;
    }
    const MemberLayout* mem = nullptr;
    if (m == "nr_cpus" && n.nr_cpus) mem = &*n.nr_cpus;
    if (m == "has_blocked") mem = &n.has_blocked;
    if (m == "needs_update" && n.needs_update) mem = &*n.needs_update;
    if (m == "next_balance") mem = &n.next_balance;
    if (m == "next_blocked") mem = &n.next_blocked;
    if (mem) out.push_back({{"nohz", lof(mem->offset, lb)}, "nohz", ""});
    return out;
  }
  if (f.rfind("cpupri.", 0) == 0) {
    if (!L.cpupri) return out;
    const CpupriLayout& cp = *L.cpupri;
    if (f == "cpupri.cpu_to_pri") {
      out.push_back({{"cpupri.cpu_to_pri", lof(int64_t(std::max(c, 0)) * 4, lb)}, "cpupri",
                     "cpu_to_pri[] (kcalloc'd ints) modeled as starting on a line boundary"});
      return out;
    }
    // cpupri.pri_to_cpu[i].count / .mask
    int i = -1;
    char what[16] = {};
    if (std::sscanf(f.c_str(), "cpupri.pri_to_cpu[%d].%15s", &i, what) != 2 || i < 0 || i >= cp.nr_prios) return out;
    const std::string w = what;
    if (w == "count") {
      if (!cp.count_offset) return out;
      out.push_back({{"root_domain", lof(cp.vec_offset(i) + *cp.count_offset, lb)}, "cpupri",
                     "root_domain modeled as starting on a line boundary (kzalloc'd, kmalloc-2k or larger)"});
    } else if (w == "mask") {
      std::vector<int64_t> ls;
      if (cp.mask_is_pointer) {
        bitmap_lines(ls, 0, c, ncpus, lb);
        for (auto l : ls) out.push_back({{fmt::format("cpupri.pri_to_cpu[{}].mask", i), l}, "cpupri", kSeparate});
      } else {
        bitmap_lines(ls, cp.vec_offset(i) + cp.mask_offset, c, cp.mask_bytes * 8, lb);
        for (auto l : ls) out.push_back({{"root_domain", l}, "cpupri", ""});
      }
    }
    return out;
  }
  if (f == "tick_broadcast_lock") {
    std::string a;
    if (!L.bcast_lock.own_line) a = "placement unknown (" + L.bcast_lock.reason + "): modeled as its own line";
    out.push_back({{"tick_broadcast_lock", 0}, "tick_broadcast_lock", a});
  }
  return out;
}

/// The kernel field access `a` names for counter element elem ("#" replaced by it; -1: the
/// field as a whole) and its places for an event on cpu: the one mapping from the probes'
/// declarations to lines, used by line_accesses() (counters) and event_lines() (records).
std::vector<Place> access_places(const FieldAccess& a, int elem, int cpu, int ncpus, const CoherenceLayout& L,
                                 std::string& field) {
  field = a.field;
  if (auto h = field.find('#'); h != std::string::npos) field.replace(h, 1, std::to_string(elem));
  return places(field, cpu, ncpus, L);
}

/// Shown name of a line: the object, its line number when it has several, and what it holds.
std::string line_name(const LineKey& k, const CoherenceLayout& L) {
  if (k.object == "root_domain" && L.cpupri) {
    const CpupriLayout& cp = *L.cpupri;
    int lo = -1, hi = -1;
    for (int i = 0; i < cp.nr_prios; ++i) {
      const int64_t a = lof(cp.vec_offset(i), L.line_bytes), b = lof(cp.vec_offset(i) + cp.vec_size - 1, L.line_bytes);
      if (a <= k.line && k.line <= b) {
        if (lo < 0) lo = i;
        hi = i;
      }
    }
    if (lo < 0) return fmt::format("root_domain line {}", k.line);
    return lo == hi ? fmt::format("root_domain line {} (cpupri vec {})", k.line, lo)
                    : fmt::format("root_domain line {} (cpupri vecs {}-{})", k.line, lo, hi);
  }
  if (k.line == 0 && (k.object == "nohz" || k.object == "tick_broadcast_lock" ||
                      k.object.find(".mask") != std::string::npos || k.object == "nohz.idle_cpus_mask"))
    return k.object;
  return fmt::format("{} line {}", k.object, k.line);
}

/// Events of one access declaration on one CPU (element elem of an array, -1 the field).
double events(const Interval& iv, int p, const FieldRef& counter, const FieldRef& minus, int cpu, int elem) {
  double n = static_cast<double>(iv.count(counter, cpu, elem));
  if (minus) n -= static_cast<double>(iv.count(minus, cpu, -1));
  return std::max(0.0, n);
}

}  // namespace

const std::vector<WhatIf>& what_ifs() {
  static const std::vector<WhatIf> v = {
      {"nohz_nr_cpus", "sched/fair: remove nohz.nr_cpus and use the weight of the cpumask (5d86d542, v7.0)", "nohz"},
      {"cpupri_count", "sched/cpupri: remove the count field from struct cpupri_vec", "cpupri"},
  };
  return v;
}

namespace {

/// Moves members at or after `from` down by `by` bytes, each to its natural alignment
/// (min(size, 8)) after the previous one: what the compiler does when a member goes.
void relayout(std::vector<MemberLayout*>& ms) {
  std::sort(ms.begin(), ms.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  int64_t end = 0;
  for (auto* m : ms) {
    const int64_t al = std::clamp<int64_t>(m->size, 1, 8);
    const int64_t want = (end + al - 1) / al * al;
    if (m->offset > want) m->offset = want;
    end = m->offset + m->size;
  }
}

}  // namespace

CoherenceLayout apply_what_if(const CoherenceLayout& layout, const WhatIf& w) {
  CoherenceLayout L = layout;
  if (w.id == "nohz_nr_cpus" && L.nohz && L.nohz->nr_cpus) {
    NohzLayout& n = *L.nohz;
    n.nr_cpus.reset();
    std::vector<MemberLayout*> ms = {&n.idle_cpus_mask, &n.has_blocked, &n.next_balance, &n.next_blocked};
    if (n.needs_update) ms.push_back(&*n.needs_update);
    for (auto& o : n.other_members) ms.push_back(&o);
    relayout(ms);
  }
  if (w.id == "cpupri_count" && L.cpupri && L.cpupri->count_offset) {
    CpupriLayout& cp = *L.cpupri;
    const int64_t mask_size = cp.mask_is_pointer ? 8 : cp.mask_bytes;
    const int64_t old_vec = cp.vec_size;
    cp.count_offset.reset();
    cp.count_size = 0;
    cp.mask_offset = 0;
    cp.vec_size = mask_size;
    cp.cpu_to_pri_offset -= (old_vec - cp.vec_size) * cp.nr_prios;
  }
  return L;
}

CoherenceLayout assumed_layout(const std::string& kernel_release, int line_bytes) {
  CoherenceLayout L;
  L.line_bytes = line_bytes;
  int major = 0;
  std::sscanf(kernel_release.c_str(), "%d", &major);
  NohzLayout n;  // Debian 6.1 / 7.3 (kernel-notes 2.1): OFFSTACK=y
  n.size = 64;
  n.idle_cpus_mask = {"idle_cpus_mask", 0, 8};
  n.mask_is_pointer = true;
  if (major < 7) {
    n.nr_cpus = MemberLayout{"nr_cpus", 8, 4};
    n.has_blocked = {"has_blocked", 12, 4};
    n.needs_update = MemberLayout{"needs_update", 16, 4};
    n.next_balance = {"next_balance", 24, 8};
    n.next_blocked = {"next_blocked", 32, 8};
  } else {
    n.has_blocked = {"has_blocked_load", 8, 4};
    n.needs_update = MemberLayout{"needs_update", 12, 4};
    n.next_balance = {"next_balance", 16, 8};
    n.next_blocked = {"next_blocked", 24, 8};
  }
  L.nohz = n;
  CpupriLayout cp;  // Debian 6.1 / 7.3: cpupri at rd+184, 16 B vectors, separate masks
  cp.cpupri_offset = 184;
  cp.nr_prios = 101;
  cp.vec_size = 16;
  cp.count_offset = 0;
  cp.count_size = 4;
  cp.mask_offset = 8;
  cp.mask_is_pointer = true;
  cp.cpu_to_pri_offset = 101 * 16;
  cp.cpupri_size = cp.cpu_to_pri_offset + 8;
  cp.root_domain_size = 1824;
  L.cpupri = cp;
  L.bcast_lock.reason = "not recorded";
  L.notes.push_back(fmt::format(
      "layout not recorded: every line is modeled on Debian's {} layout (CPUMASK_OFFSTACK=y, nohz {} nr_cpus, "
      "cpupri_vec with count, cpupri at root_domain+184)",
      major < 7 ? "6.1" : "7.3", major < 7 ? "with" : "without"));
  return L;
}

namespace {

/// Registers access `a` of kernel field `field` in line `pl` (name, fields, assumptions).
LineAccesses& note_line(std::map<LineKey, LineAccesses>& lines, const Place& pl, const std::string& field,
                        const FieldAccess& a, const CoherenceLayout& layout) {
  LineAccesses& la = lines[pl.key];
  if (la.family.empty()) {
    la.key = pl.key;
    la.family = pl.family;
    la.name = line_name(pl.key, layout);
  }
  if (std::find(la.fields.begin(), la.fields.end(), field) == la.fields.end()) la.fields.push_back(field);
  for (const std::string& s : {pl.assumption, a.assumption})
    if (!s.empty() && std::find(la.assumptions.begin(), la.assumptions.end(), s) == la.assumptions.end())
      la.assumptions.push_back(s);
  return la;
}

}  // namespace

std::vector<LineAccesses> line_accesses(const Interval& iv, const CoherenceLayout& layout) {
  const Meta& meta = iv.meta();
  const int ncpus = static_cast<int>(meta.ncpus);
  const double secs = iv.seconds();
  std::map<LineKey, LineAccesses> lines;
  if (secs <= 0) return {};
  // For the probe being built: (line, cpu, bound) -> (selection -> its reads and writes).
  // One selection (counter, minus, element) is one kind of event: its accesses to a line
  // count once (a write if any writes). Kinds sharing a bound add up to at most the
  // bound's delta (an event touches a line once).
  struct Acc {
    double r = 0, w = 0;
  };
  using Slot = std::tuple<LineKey, int, std::string>;
  std::map<Slot, std::map<std::string, Acc>> kinds;
  std::map<Slot, double> bounds;
  for (int p = 0; p < static_cast<int>(meta.probes.size()); ++p) {
    if (!iv.present(p)) continue;
    const ProbeModule* mod = find_module(meta.probes[size_t(p)].name);
    if (!mod) continue;
    kinds.clear();
    bounds.clear();
    for (const FieldAccess& a : mod->spec().accesses) {
      const FieldRef counter = field_ref(meta, p, a.counter);
      const FieldRef minus = a.minus.empty() ? FieldRef{} : field_ref(meta, p, a.minus);
      const std::string bname = a.bound.empty() ? mod->spec().primary : a.bound;
      const FieldRef bound = field_ref(meta, p, bname);
      if (!counter || !bound) continue;
      std::vector<int> elems;  // -1: the field as a whole
      const bool each = a.element == FieldAccess::kEachElement;
      if (each || a.element_bits) {
        for (uint32_t e = 0; e < counter.field->nwords; ++e)
          if (each || (e & a.element_bits)) elems.push_back(static_cast<int>(e));
      } else {
        elems.push_back(a.element);
      }
      for (int cpu = 0; cpu < ncpus; ++cpu) {
        if (!iv.online(cpu)) continue;
        if (iv.count(counter, cpu, -1) == 0) continue;  // idle CPUs cost nothing
        // element_bits: one kind, the sum of its elements; kEachElement: a kind per element.
        std::vector<std::pair<int, double>> evs;
        double summed = 0;
        for (int e : elems) {
          const double n = events(iv, p, counter, minus, cpu, e);
          if (n <= 0) continue;
          if (a.element_bits) summed += n;
          else evs.push_back({e, n});
        }
        if (a.element_bits && summed > 0) evs.push_back({-1, summed});
        for (auto [e, n] : evs) {
          std::string field;
          const std::vector<Place> pls = access_places(a, e, cpu, ncpus, layout, field);
          const std::string kind = a.counter + "-" + a.minus + "#" + std::to_string(a.element_bits ? -1 : e);
          for (const Place& pl : pls) {
            note_line(lines, pl, field, a, layout);
            const Slot slot{pl.key, cpu, bname};
            Acc& acc = kinds[slot][kind];
            (a.write ? acc.w : acc.r) = std::max(a.write ? acc.w : acc.r, n);
            bounds[slot] = static_cast<double>(iv.count(bound, cpu, -1));
          }
        }
      }
    }
    // Per line and CPU: the bounded sums of the kinds, then this probe's rates.
    std::map<std::pair<LineKey, int>, Acc> per_cpu;
    for (const auto& [slot, ks] : kinds) {
      double w = 0, r = 0;
      for (const auto& [k, acc] : ks) {
        w += acc.w;
        r += std::max(0.0, acc.r - acc.w);
      }
      const double cap = bounds[slot];
      w = std::min(w, cap);
      r = std::min(r, std::max(0.0, cap - w));
      Acc& t = per_cpu[{std::get<0>(slot), std::get<1>(slot)}];
      t.w += w;
      t.r += r;
    }
    for (const auto& [kc, acc] : per_cpu)
      if (acc.w > 0 || acc.r > 0) lines[kc.first].rates.push_back({kc.second, p, acc.r / secs, acc.w / secs});
  }
  std::vector<LineAccesses> out;
  for (auto& [k, la] : lines) {
    if (la.rates.empty()) continue;
    std::sort(la.rates.begin(), la.rates.end(),
              [](const LineCpuRate& a, const LineCpuRate& b) { return std::tie(a.cpu, a.probe) < std::tie(b.cpu, b.probe); });
    out.push_back(std::move(la));
  }
  return out;
}

std::vector<std::pair<LineKey, bool>> event_lines(const Meta& meta, const CoherenceLayout& layout, int probe,
                                                  uint32_t word, int cpu) {
  std::vector<std::pair<LineKey, bool>> out;
  if (probe < 0 || probe >= static_cast<int>(meta.probes.size())) return out;
  const ProbeModule* mod = find_module(meta.probes[size_t(probe)].name);
  if (!mod) return out;
  const Field* f = nullptr;
  for (const Field& x : meta.probes[size_t(probe)].layout.fields)
    if (x.kind != FieldKind::priv && word >= x.offset && word < x.offset + x.nwords) f = &x;
  if (!f) return out;
  const int elem = f->kind == FieldKind::counter_array ? static_cast<int>(word - f->offset) : -1;
  const auto& acc = mod->spec().accesses;
  // A minus counter's record (abi.h): the base counter's event in the case the minus
  // counts: its accesses without a minus apply, those that subtract it do not.
  std::string base;
  for (const FieldAccess& a : acc)
    if (!a.minus.empty() && a.minus == f->name) base = a.counter;
  const int ncpus = static_cast<int>(meta.ncpus);
  for (const FieldAccess& a : acc) {
    bool applies = false;
    if (a.counter == f->name) {
      if (a.element == FieldAccess::kEachElement || (a.element == -1 && !a.element_bits)) applies = true;
      else if (a.element_bits) applies = elem >= 0 && (uint32_t(elem) & a.element_bits);
      else applies = elem == a.element;
    } else if (!base.empty() && a.counter == base) {
      applies = a.minus.empty();
    }
    if (!applies) continue;
    std::string field;
    for (const Place& pl : access_places(a, a.element == FieldAccess::kEachElement ? elem : -1, cpu, ncpus, layout, field)) {
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == pl.key; });
      if (it == out.end()) out.push_back({pl.key, a.write});
      else it->second = it->second || a.write;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

CoherenceLayout layout_of(const Meta& meta) {
  if (meta.layout) return *meta.layout;
  return assumed_layout(meta.host.kernel_release, meta.host.cacheline_bytes);
}

double CoherenceSummary::cpu_xfers_per_s(int cpu) const {
  double s = 0;
  for (const LineSummary& l : lines)
    for (const CpuXfers& c : l.traffic.cpus)
      if (static_cast<int>(c.cpu) == cpu) s += c.total();
  return s;
}

namespace {

/// The model of each line of `lines`; per line, the CPUs' summed rates.
std::vector<LineTraffic> model_lines(const TopologyIndex& topo, const std::vector<LineAccesses>& lines) {
  std::vector<LineTraffic> out;
  std::vector<CpuAccessRate> rates;
  for (const LineAccesses& l : lines) {
    rates.clear();
    for (const LineCpuRate& r : l.rates) {  // sorted by cpu, then probe
      if (rates.empty() || rates.back().cpu != static_cast<uint32_t>(r.cpu))
        rates.push_back({static_cast<uint32_t>(r.cpu), 0, 0});
      rates.back().reads_per_s += r.reads;
      rates.back().writes_per_s += r.writes;
    }
    out.push_back(coherence_model(topo, rates));
  }
  return out;
}

double family_total(const std::vector<LineAccesses>& lines, const std::vector<LineTraffic>& t, const std::string& fam,
                    const XferCost* cost) {
  double s = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].family == fam) s += cost ? stall_ns_per_s(t[i], *cost) : t[i].total();
  return s;
}

}  // namespace

CoherenceAccumulator::CoherenceAccumulator(const Meta& meta, XferCost cost)
    : meta_(meta), layout_(layout_of(meta)), cost_(cost), topo_(meta.host.topology) {
  what_if_.assign(what_ifs().size(), {0, 0});
  what_if_stall_.assign(what_ifs().size(), {0, 0});
}

void CoherenceAccumulator::add(const Interval& iv) {
  const double secs = iv.seconds();
  if (secs <= 0) return;
  seconds_ += secs;
  const std::vector<LineAccesses> lines = line_accesses(iv, layout_);
  const std::vector<LineTraffic> traffic = model_lines(topo_, lines);
  for (size_t i = 0; i < lines.size(); ++i) {
    const LineAccesses& l = lines[i];
    Acc& a = acc_[l.key];
    if (a.line.family.empty()) a.line = LineAccesses{l.key, l.family, l.name, l.fields, l.assumptions, {}};
    for (const std::string& f : l.fields)
      if (std::find(a.line.fields.begin(), a.line.fields.end(), f) == a.line.fields.end()) a.line.fields.push_back(f);
    for (const std::string& f : l.assumptions)
      if (std::find(a.line.assumptions.begin(), a.line.assumptions.end(), f) == a.line.assumptions.end())
        a.line.assumptions.push_back(f);
    // per CPU: its totals, and its misses shared out to its probes
    size_t r = 0;
    for (const CpuXfers& c : traffic[i].cpus) {
      CpuXfers& t = a.cpus[c.cpu];
      t.cpu = c.cpu;
      t.read_xfers_per_s += c.read_xfers_per_s * secs;
      t.write_xfers_per_s += c.write_xfers_per_s * secs;
      for (int d = 0; d < kXferDistances; ++d) t.by_distance[size_t(d)] += c.by_distance[size_t(d)] * secs;
      double reads = 0, writes = 0;
      const size_t r0 = r;
      for (; r < l.rates.size() && static_cast<uint32_t>(l.rates[r].cpu) == c.cpu; ++r) {
        reads += l.rates[r].reads;
        writes += l.rates[r].writes;
      }
      for (size_t k = r0; k < r; ++k) {
        double x = 0;
        if (reads > 0) x += c.read_xfers_per_s * l.rates[k].reads / reads;
        if (writes > 0) x += c.write_xfers_per_s * l.rates[k].writes / writes;
        a.by_probe[l.rates[k].probe] += x * secs;
      }
      a.reads += reads * secs;
      a.writes += writes * secs;
    }
  }
  for (size_t w = 0; w < what_ifs().size(); ++w) {
    const WhatIf& wi = what_ifs()[w];
    const CoherenceLayout after = apply_what_if(layout_, wi);
    const bool applies = (wi.id == "nohz_nr_cpus" && layout_.nohz && layout_.nohz->nr_cpus) ||
                         (wi.id == "cpupri_count" && layout_.cpupri && layout_.cpupri->count_offset);
    if (!applies) continue;
    const std::vector<LineAccesses> la = line_accesses(iv, after);
    const std::vector<LineTraffic> ta = model_lines(topo_, la);
    what_if_[w].first += family_total(lines, traffic, wi.family, nullptr) * secs;
    what_if_[w].second += family_total(la, ta, wi.family, nullptr) * secs;
    what_if_stall_[w].first += family_total(lines, traffic, wi.family, &cost_) * secs;
    what_if_stall_[w].second += family_total(la, ta, wi.family, &cost_) * secs;
  }
}

CoherenceSummary CoherenceAccumulator::summary() const {
  CoherenceSummary s;
  s.seconds = seconds_;
  s.line_bytes = layout_.line_bytes;
  s.notes = layout_.notes;
  const double T = seconds_ > 0 ? seconds_ : 1;
  for (const auto& [k, a] : acc_) {
    LineSummary l;
    l.key = k;
    l.family = a.line.family;
    l.name = a.line.name;
    l.fields = a.line.fields;
    l.assumptions = a.line.assumptions;
    l.reads_per_s = a.reads / T;
    l.writes_per_s = a.writes / T;
    for (const auto& [cpu, c] : a.cpus) {
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
    s.lines.push_back(std::move(l));
  }
  for (size_t w = 0; w < what_ifs().size(); ++w) {
    const WhatIf& wi = what_ifs()[w];
    WhatIfResult r;
    r.what = wi;
    if (wi.id == "nohz_nr_cpus") {
      r.applies = layout_.nohz && layout_.nohz->nr_cpus;
      if (!layout_.nohz) r.reason = "nohz layout unknown";
      else if (!r.applies) r.reason = "this kernel has it: nohz.nr_cpus is gone";
    } else if (wi.id == "cpupri_count") {
      r.applies = layout_.cpupri && layout_.cpupri->count_offset;
      if (!layout_.cpupri) r.reason = "cpupri layout unknown";
      else if (!r.applies) r.reason = "this kernel has it: cpupri_vec.count is gone";
    }
    if (r.applies) {
      r.before_xfers_per_s = what_if_[w].first / T;
      r.after_xfers_per_s = what_if_[w].second / T;
      r.before_stall_ns_per_s = what_if_stall_[w].first / T;
      r.after_stall_ns_per_s = what_if_stall_[w].second / T;
    }
    s.what_if.push_back(r);
  }
  return s;
}

ExactAccumulator::ExactAccumulator(const Meta& meta) : meta_(meta), layout_(layout_of(meta)), topo_(meta.host.topology) {}

void ExactAccumulator::add(double seconds, const ExactBatch& b) {
  ++batches_;
  if (seconds > 0) seconds_ += seconds;
  lost_ += b.lost;
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
      it = cache_.emplace(key, event_lines(meta_, layout_, r.probe, r.word, static_cast<int>(r.cpu))).first;
    for (const auto& [line, write] : it->second) {
      auto m = lines_.find(line);
      if (m == lines_.end()) {
        m = lines_.emplace(std::piecewise_construct, std::forward_as_tuple(line), std::forward_as_tuple(topo_, 1, meta_.ncpus)).first;
        m->second.add_lost(lost_);
      }
      m->second.feed({r.ts_ns, r.cpu, 0, write});
    }
  }
}

std::optional<LineTraffic> ExactAccumulator::traffic(const LineKey& k) const {
  auto it = lines_.find(k);
  if (it == lines_.end()) return std::nullopt;
  return it->second.traffic(0, seconds_);
}

}  // namespace schedhot
