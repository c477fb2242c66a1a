// The cpupri hot object (kernel/sched/cpupri.{h,c} in struct root_domain): its BTF reading,
// lines (root_domain lines holding vectors, OFFSTACK bitmaps, cpu_to_pri[], or the learned
// groups of separate allocations), fields, fix (cpupri_vec.count removed: the cpupri seed),
// what-ifs, Debian shape and JSON.
#include "probe/objects/cpupri.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include <bpf/btf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/layout.h"

namespace schedhot {

namespace {

using namespace objects;

/// "0-7,9": ascending ints as ranges.
std::string ranges(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (i == j ? fmt::format("{}", v[i]) : fmt::format("{}-{}", v[i], v[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<SeparateGroup> separate_groups(const CoherenceLayout& L) {
  std::vector<SeparateGroup> out;
  if (!L.learned) return out;
  const LearnedAddresses& a = *L.learned;
  const uint64_t lb = uint64_t(L.line_bytes);
  struct Item {
    uint64_t addr;
    int64_t bytes;
    int prio;  // -1 cpu_to_pri
  };
  std::vector<Item> items;
  for (size_t i = 0; i < a.masks.size(); ++i)
    if (a.masks[i]) items.push_back({a.masks[i], std::max<int64_t>(a.mask_bytes, 1), int(i)});
  if (a.cpu_to_pri) items.push_back({a.cpu_to_pri, std::max<int64_t>(a.cpu_to_pri_bytes, 1), -1});
  std::stable_sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.addr < y.addr; });
  uint64_t last_line = 0;
  std::vector<int> prios;
  bool c2p = false;
  auto close = [&]() {
    if (out.empty()) return;
    std::sort(prios.begin(), prios.end());
    SeparateGroup& g = out.back();
    if (prios.empty())
      g.object = "cpupri.cpu_to_pri";
    else
      g.object = fmt::format("cpupri.pri_to_cpu[{}].mask{}", ranges(prios), c2p ? "+cpu_to_pri" : "");
    g.lines = int64_t(last_line - g.base / lb) + 1;
    prios.clear();
    c2p = false;
  };
  for (const Item& it : items) {
    const uint64_t first = it.addr / lb, last = (it.addr + uint64_t(it.bytes) - 1) / lb;
    if (out.empty() || first > last_line) {
      close();
      out.push_back({});
      out.back().base = first * lb;
      last_line = last;
    }
    last_line = std::max(last_line, last);
    SeparateGroup& g = out.back();
    g.members.push_back({it.prio < 0 ? std::string("cpupri.cpu_to_pri") : fmt::format("cpupri.pri_to_cpu[{}].mask", it.prio),
                         int64_t(it.addr - g.base), it.bytes});
    if (it.prio < 0)
      c2p = true;
    else
      prios.push_back(it.prio);
  }
  close();
  return out;
}

std::string implausible(const LearnedAddresses& a, const CpupriLayout& c) {
  if (a.rd < kKernelLow) return fmt::format("rd {:#x} is not a kernel address", a.rd);
  if (a.cpu_to_pri && a.cpu_to_pri < kKernelLow) return fmt::format("cpu_to_pri {:#x} is not a kernel address", a.cpu_to_pri);
  std::set<uint64_t> seen;
  const uint64_t rd_end = a.rd + uint64_t(c.root_domain_size);
  for (uint64_t m : a.masks) {
    if (m < kKernelLow) return fmt::format("a pri_to_cpu[].mask pointer {:#x} is not a kernel address", m);
    if (!seen.insert(m).second) return fmt::format("two pri_to_cpu[].mask pointers are both {:#x}", m);
    if (m + uint64_t(a.mask_bytes) > a.rd && m < rd_end) return fmt::format("a mask {:#x} lies inside the root_domain", m);
  }
  if (a.cpu_to_pri && seen.count(a.cpu_to_pri)) return "cpu_to_pri equals a mask pointer";
  if (a.nohz_idle_mask && (seen.count(a.nohz_idle_mask) || a.nohz_idle_mask == a.cpu_to_pri))
    return "nohz.idle_cpus_mask equals a cpupri pointer";
  return "";
}

std::optional<std::pair<std::string, int64_t>> learned_placement(const CoherenceLayout& L, const std::string& name) {
  for (const SeparateGroup& g : separate_groups(L))
    for (const MemberLayout& m : g.members)
      if (m.name == name) return std::make_pair(g.object, m.offset);
  return std::nullopt;
}

int64_t root_domain_skew(const CoherenceLayout& L) {
  return L.learned && L.learned->rd ? int64_t(L.learned->rd % uint64_t(L.line_bytes)) : 0;
}


namespace {

using namespace objects;

std::optional<CpupriLayout> read_cpupri(const struct btf* btf, int line_bytes, std::string& why) {
  const int rd_id = btf__find_by_name_kind(btf, "root_domain", BTF_KIND_STRUCT);
  if (rd_id <= 0) {
    why = "no struct root_domain in BTF";
    return std::nullopt;
  }
  const struct btf_type* rd = btf__type_by_id(btf, uint32_t(rd_id));
  auto rd_ms = btf_members_of(btf, rd);
  uint32_t cp_type = 0;
  const MemberLayout* cp_m = find_member(rd_ms, "cpupri", &cp_type);
  const struct btf_type* cp = cp_m ? btf_resolved(btf, cp_type) : nullptr;
  if (!cp || !btf_is_struct(cp)) {
    why = "struct root_domain has no struct cpupri member 'cpupri'";
    return std::nullopt;
  }
  auto cp_ms = btf_members_of(btf, cp);
  uint32_t arr_type = 0;
  const MemberLayout* p2c = find_member(cp_ms, "pri_to_cpu", &arr_type);
  const MemberLayout* c2p = find_member(cp_ms, "cpu_to_pri");
  const struct btf_type* arr = p2c ? btf_resolved(btf, arr_type) : nullptr;
  if (!arr || !btf_is_array(arr) || !c2p) {
    why = "struct cpupri lacks the array pri_to_cpu[] or cpu_to_pri";
    return std::nullopt;
  }
  const struct btf_array* a = btf_array(arr);
  const struct btf_type* vec = btf_resolved(btf, a->type);
  if (!vec || !btf_is_struct(vec)) {
    why = "cpupri.pri_to_cpu[] is not an array of struct cpupri_vec";
    return std::nullopt;
  }
  auto v_ms = btf_members_of(btf, vec);
  uint32_t mask_type = 0;
  const MemberLayout* mask = find_member(v_ms, "mask", &mask_type);
  if (!mask) {
    why = "struct cpupri_vec has no member 'mask'";
    return std::nullopt;
  }
  CpupriLayout l;
  l.root_domain_size = int64_t(rd->size);
  l.cpupri_offset = cp_m->offset;
  l.cpupri_size = int64_t(cp->size);
  l.pri_to_cpu_offset = p2c->offset;
  l.nr_prios = int(a->nelems);
  l.vec_size = int64_t(vec->size);
  if (auto* c = find_member(v_ms, "count")) {
    l.count_offset = c->offset;
    l.count_size = c->size;
  }
  l.mask_offset = mask->offset;
  cpumask_shape(btf, mask_type, l.mask_is_pointer, l.mask_bytes);
  l.cpu_to_pri_offset = c2p->offset;
  if (l.nr_prios <= 0 || l.vec_size <= 0) {
    why = "struct cpupri has an empty pri_to_cpu[]";
    return std::nullopt;
  }
  const int64_t v0 = l.vec_offset(0);
  const int64_t first = line_of(v0, line_bytes), last = line_of(v0 + l.vec_size - 1, line_bytes);
  const int64_t cp_first = line_of(l.cpupri_offset, line_bytes);
  const int64_t cp_last = line_of(l.cpupri_offset + std::max<int64_t>(l.cpupri_size, 1) - 1, line_bytes);
  for (auto& [m, t] : rd_ms) {
    if (m.name == "cpupri" || m.size <= 0) continue;
    const int64_t a = line_of(m.offset, line_bytes), b = line_of(m.offset + m.size - 1, line_bytes);
    if (b >= first && a <= last) l.vec0_line_sharers.push_back(m);
    if (b >= cp_first && a <= cp_last) l.cpupri_line_sharers.push_back(m);
  }
  return l;
}

void cpupri_lines(const CoherenceLayout& L, std::vector<LineDef>& out) {
  const int lb = L.line_bytes;
  if (!L.cpupri) {
    LineDef d;
    d.id = "cpupri.vec[0]";
    d.object = "root_domain";
    d.allocation = "in root_domain (kzalloc)";
    d.fields = {{"vec[0].count", std::nullopt, std::nullopt}, {"vec[0].mask", std::nullopt, std::nullopt}};
    d.assumption = "cpupri layout not in BTF: pri_to_cpu[0] assumed in a line of its own";
    out.push_back(std::move(d));
    LineDef c;
    c.id = "cpupri.cpu_to_pri";
    c.object = "cpu_to_pri[]";
    c.line_offset = 0;
    c.allocation = "separate, address unknown until learned";
    c.fields = {{"cpu_to_pri[cpu]", std::nullopt, 4}};
    c.cpus_per_line = lb / 4;
    c.assumption = fmt::format("cpupri layout not in BTF: cpu_to_pri[] assumed an int array, {} CPUs per line", lb / 4);
    out.push_back(std::move(c));
    return;
  }
  const CpupriLayout& c = *L.cpupri;
  // Every byte range of interest in root_domain, line by line.
  struct Range {
    std::string name;
    int64_t off, size;
  };
  std::map<int64_t, std::vector<Range>> by_line;
  auto add = [&](std::string name, int64_t off, int64_t size) {
    for (int64_t k = line_of(off, lb); k <= line_of(off + std::max<int64_t>(size, 1) - 1, lb); ++k)
      by_line[k].push_back({name, off, size});
  };
  for (int i = 0; i < c.nr_prios; ++i) {
    const int64_t v = c.vec_offset(i);
    if (c.count_offset) add(fmt::format("vec[{}].count", i), v + *c.count_offset, c.count_size);
    add(fmt::format("vec[{}].mask ({})", i, c.mask_is_pointer ? "pointer" : "inline bitmap"),
        v + c.mask_offset, c.mask_is_pointer ? 8 : c.mask_bytes);
  }
  add("cpupri.cpu_to_pri (pointer)", c.cpupri_offset + c.cpu_to_pri_offset, 8);
  std::map<int64_t, bool> vec_lines;
  for (auto& [k, rs] : by_line) vec_lines[k] = true;
  // root_domain members (not cpupri) sharing any of these lines (offsets in root_domain).
  for (auto& m : c.cpupri_line_sharers)
    for (int64_t k = line_of(m.offset, lb); k <= line_of(m.offset + std::max<int64_t>(m.size, 1) - 1, lb); ++k)
      if (vec_lines.count(k)) by_line[k].push_back({m.name, m.offset, m.size});
  const int64_t vec0_line = line_of(c.vec_offset(0), lb);
  const bool rd_known = L.learned && L.learned->rd;
  for (auto& [k, rs] : by_line) {
    LineDef d;
    d.id = k == vec0_line ? "cpupri.vec[0]" : fmt::format("cpupri.line{}", k);
    d.object = "root_domain";
    d.line_offset = k * lb;
    d.allocation = "in root_domain (kzalloc)";
    for (auto& r : rs) d.fields.push_back({r.name, r.off, r.size});
    std::stable_sort(d.fields.begin(), d.fields.end(), [](const LineField& a, const LineField& b) { return *a.offset < *b.offset; });
    if (rd_known) {
      d.address = L.learned->rd + uint64_t(k * lb);
      d.address_known = true;
      if (L.learned->rd % uint64_t(lb))
        d.assumption = fmt::format("root_domain at {:#x} is not line-aligned: offsets are from rd, its lines shift by {} B",
                                   L.learned->rd, L.learned->rd % uint64_t(lb));
    } else {
      d.assumption = "root_domain assumed line-aligned (kzalloc from a power-of-two kmalloc cache); its address is "
                     "unknown until learned";
    }
    out.push_back(std::move(d));
  }
  if (const auto groups = separate_groups(L); !groups.empty()) {
    // Learned: one LineDef per line of each group of separate allocations that share lines.
    for (const SeparateGroup& g : groups)
      for (int64_t k = 0; k < g.lines; ++k) {
        LineDef d;
        d.id = g.lines == 1 ? g.object : fmt::format("{}.line{}", g.object, k);
        d.object = g.object;
        d.line_offset = k * lb;
        d.allocation = fmt::format("separate, learned ({})", L.learned->source);
        d.address = g.base + uint64_t(k * lb);
        d.address_known = true;
        for (const MemberLayout& m : g.members)
          if (overlaps(m.offset, m.size, k * lb, (k + 1) * lb)) d.fields.push_back({m.name, m.offset, m.size});
        if (g.object.find("cpu_to_pri") != std::string::npos) d.cpus_per_line = lb / 4;
        out.push_back(std::move(d));
      }
    return;
  }
  if (c.mask_is_pointer) {
    for (int i = 0; i < c.nr_prios; ++i) {
      LineDef d;
      d.id = fmt::format("cpupri.vec[{}].mask", i);
      d.object = fmt::format("cpupri.vec[{}].mask bitmap", i);
      d.line_offset = 0;
      d.allocation = "separate, address unknown until learned";
      d.fields.push_back({fmt::format("vec[{}].mask bits", i), 0, std::nullopt});
      d.assumption = "CPUMASK_OFFSTACK=y: a separate cpumask_size() B kmalloc object; adjacent priorities' bitmaps may "
                     "share a slab line, known only once the addresses are learned";
      out.push_back(std::move(d));
    }
  }
  LineDef p;
  p.id = "cpupri.cpu_to_pri";
  p.object = "cpu_to_pri[]";
  p.line_offset = 0;
  p.allocation = "separate, address unknown until learned";
  p.fields = {{"cpu_to_pri[cpu]", 0, 4}};
  p.cpus_per_line = lb / 4;
  p.assumption = fmt::format("kcalloc(nr_cpu_ids, 4 B): {} CPUs per {} B line, CPU c in line c/{} when the array "
                             "starts a line (address unknown until learned)",
                             lb / 4, lb, lb / 4);
  out.push_back(std::move(p));
}

class Cpupri : public HotObject {
 public:
  std::string_view name() const override { return "cpupri"; }

  void read(const ReadInputs& in, CoherenceLayout& l) const override {
    if (!in.btf) {
      l.notes.push_back("no BTF: the cpupri lines are modeled on an assumption (pri_to_cpu[0] alone, cpu_to_pri[] "
                        "4 B per CPU)");
      return;
    }
    std::string why;
    l.cpupri = read_cpupri(in.btf, in.line_bytes, why);
    if (l.cpupri) {
      auto& c = *l.cpupri;
      l.notes.push_back(fmt::format(
          "cpupri: at root_domain+{} ({} B root_domain from {}); {} vectors of {} B, count {}, mask {}; "
          "cpu_to_pri at cpupri+{}; sharing pri_to_cpu[0]'s line: {}",
          c.cpupri_offset, c.root_domain_size, in.btf_source, c.nr_prios, c.vec_size,
          c.count_offset ? fmt::format("at {}", *c.count_offset) : std::string("absent (fix present)"),
          c.mask_is_pointer ? fmt::format("pointer at {}", c.mask_offset)
                            : fmt::format("inline {} B at {}", c.mask_bytes, c.mask_offset),
          c.cpu_to_pri_offset, c.vec0_line_sharers.empty() ? "nothing" : join_names(c.vec0_line_sharers)));
    } else {
      l.notes.push_back(fmt::format("cpupri: {} ({}): the cpupri lines are modeled on an assumption", why, in.btf_source));
    }
  }

  void lines(const CoherenceLayout& L, std::vector<LineDef>& out) const override { cpupri_lines(L, out); }

  std::optional<FieldTarget> field_target(const std::string& f, bool per_cpu, int ncpus,
                                          const CoherenceLayout& L) const override {
    if (f.rfind("cpupri.", 0) != 0 || !L.cpupri) return std::nullopt;
    const CpupriLayout& cp = *L.cpupri;
    const int64_t skew = root_domain_skew(L);
    if (f == "cpupri.cpu_to_pri") {
      // Learned: in the group of separate allocations it shares lines with (separate_groups()).
      if (auto at = learned_placement(L, f))
        return FieldTarget{at->first, "cpupri", "", at->second, per_cpu ? FieldTarget::int32 : FieldTarget::fixed, 0};
      return FieldTarget{"cpupri.cpu_to_pri", "cpupri", "cpu_to_pri[] (kcalloc'd ints) modeled as starting on a line boundary",
                         0, per_cpu ? FieldTarget::int32 : FieldTarget::fixed, 0};
    }
    int i = -1;
    char what[16] = {};
    if (std::sscanf(f.c_str(), "cpupri.pri_to_cpu[%d].%15s", &i, what) != 2 || i < 0 || i >= cp.nr_prios)
      return std::nullopt;
    const std::string w = what;
    if (w == "count") {
      if (!cp.count_offset) return std::nullopt;
      return FieldTarget{"root_domain", "cpupri",
                         L.learned && L.learned->rd ? "" : "root_domain modeled as starting on a line boundary (kzalloc'd, kmalloc-2k or larger)",
                         skew + cp.vec_offset(i) + *cp.count_offset, FieldTarget::fixed, 0};
    }
    if (w == "mask") {
      if (cp.mask_is_pointer) {
        const std::string name = fmt::format("cpupri.pri_to_cpu[{}].mask", i);
        if (auto at = learned_placement(L, name)) return FieldTarget::cpumask(at->first, "cpupri", at->second, ncpus, "", per_cpu);
        return FieldTarget::cpumask(name, "cpupri", 0, ncpus, kSeparate, per_cpu);
      }
      return FieldTarget::cpumask("root_domain", "cpupri", skew + cp.vec_offset(i) + cp.mask_offset, cp.mask_bytes * 8, "",
                                  per_cpu);
    }
    return std::nullopt;
  }

  std::optional<std::string> line_name(const std::string& object, int64_t line, const CoherenceLayout& L) const override {
    if (object == "root_domain" && L.cpupri) {
      const CpupriLayout& cp = *L.cpupri;
      int lo = -1, hi = -1;
      const int64_t skew = root_domain_skew(L);
      for (int i = 0; i < cp.nr_prios; ++i) {
        const int64_t a = line_of(skew + cp.vec_offset(i), L.line_bytes),
                      b = line_of(skew + cp.vec_offset(i) + cp.vec_size - 1, L.line_bytes);
        if (a <= line && line <= b) {
          if (lo < 0) lo = i;
          hi = i;
        }
      }
      if (lo < 0) return fmt::format("root_domain line {}", line);
      return lo == hi ? fmt::format("root_domain line {} (cpupri vec {})", line, lo)
                      : fmt::format("root_domain line {} (cpupri vecs {}-{})", line, lo, hi);
    }
    if (object.rfind("cpupri.", 0) != 0) return std::nullopt;
    // A bitmap (or a group of them) alone is named by itself; cpu_to_pri[] by its line.
    if (line == 0 && object.find(".mask") != std::string::npos) return object;
    return fmt::format("{} line {}", object, line);
  }

  Fix fix(const CoherenceLayout& l) const override {
    Fix f{"cpupri_count_removed", "cpupri_vec.count", std::nullopt, "", "removed (fix present)", "present (fix absent)",
          "cpupri_vec.count", "gone", "present", "cpupri_vec.count removed", "cpupri_set"};
    if (l.cpupri)
      f.present = !l.cpupri->count_offset.has_value();
    else
      f.reason = "struct cpupri_vec not found in BTF";
    return f;
  }

  std::vector<WhatIf> what_ifs() const override {
    return {{"cpupri_count", "sched/cpupri: remove the count field from struct cpupri_vec", "cpupri", true, 2}};
  }

  std::string what_if_reason(const WhatIf&, const CoherenceLayout& l) const override {
    if (!l.cpupri) return "cpupri layout unknown";
    if (!l.cpupri->count_offset) return "this kernel has it: cpupri_vec.count is gone";
    return "";
  }

  void apply(const WhatIf& w, CoherenceLayout& L) const override {
    if (w.id != "cpupri_count" || !L.cpupri || !L.cpupri->count_offset) return;
    CpupriLayout& cp = *L.cpupri;
    const int64_t mask_size = cp.mask_is_pointer ? 8 : cp.mask_bytes;
    const int64_t old_vec = cp.vec_size;
    cp.count_offset.reset();
    cp.count_size = 0;
    cp.mask_offset = 0;
    cp.vec_size = mask_size;
    cp.cpu_to_pri_offset -= (old_vec - cp.vec_size) * cp.nr_prios;
  }

  std::string assume(int, CoherenceLayout& L) const override {
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
    return "cpupri_vec with count, cpupri at root_domain+184";
  }

  nlohmann::json to_json(const CoherenceLayout& l) const override {
    if (!l.cpupri) return nullptr;
    const auto& c = *l.cpupri;
    nlohmann::json sharers = nlohmann::json::array();
    for (auto& m : c.vec0_line_sharers) sharers.push_back(member_json(m));
    nlohmann::json cp_sharers = nlohmann::json::array();
    for (auto& m : c.cpupri_line_sharers) cp_sharers.push_back(member_json(m));
    return {{"root_domain_size", c.root_domain_size},
            {"cpupri_offset", c.cpupri_offset},
            {"cpupri_size", c.cpupri_size},
            {"pri_to_cpu_offset", c.pri_to_cpu_offset},
            {"nr_prios", c.nr_prios},
            {"vec_size", c.vec_size},
            {"count_offset", c.count_offset ? nlohmann::json(*c.count_offset) : nlohmann::json(nullptr)},
            {"count_size", c.count_size},
            {"mask_offset", c.mask_offset},
            {"mask_is_pointer", c.mask_is_pointer},
            {"mask_bytes", c.mask_bytes},
            {"cpu_to_pri_offset", c.cpu_to_pri_offset},
            {"vec0_line_sharers", sharers},
            {"cpupri_line_sharers", cp_sharers}};
  }

  void from_json(const nlohmann::json& cj, CoherenceLayout& l) const override {
    if (cj.is_null()) return;
    CpupriLayout c;
    c.root_domain_size = checked(cj, "root_domain_size", "cpupri", 1);
    c.cpupri_offset = checked(cj, "cpupri_offset", "cpupri");
    c.cpupri_size = checked(cj, "cpupri_size", "cpupri", 1);
    if (c.cpupri_offset + c.cpupri_size > c.root_domain_size)
      throw std::runtime_error("coherence layout: cpupri outside struct root_domain");
    c.pri_to_cpu_offset = checked(cj, "pri_to_cpu_offset", "cpupri");
    c.nr_prios = int(checked(cj, "nr_prios", "cpupri", 1, 1024));
    c.vec_size = checked(cj, "vec_size", "cpupri", 1, 65536);
    if (c.pri_to_cpu_offset + c.nr_prios * c.vec_size > c.cpupri_size)
      throw std::runtime_error("coherence layout: cpupri.pri_to_cpu[] outside struct cpupri");
    if (!cj.at("count_offset").is_null()) {
      c.count_offset = checked(cj, "count_offset", "cpupri");
      c.count_size = checked(cj, "count_size", "cpupri", 1);
      if (*c.count_offset + c.count_size > c.vec_size)
        throw std::runtime_error("coherence layout: cpupri_vec.count outside struct cpupri_vec");
    }
    c.mask_offset = checked(cj, "mask_offset", "cpupri");
    c.mask_is_pointer = cj.at("mask_is_pointer").get<bool>();
    c.mask_bytes = checked(cj, "mask_bytes", "cpupri");
    if (c.mask_offset + (c.mask_is_pointer ? 8 : c.mask_bytes) > c.vec_size)
      throw std::runtime_error("coherence layout: cpupri_vec.mask outside struct cpupri_vec");
    c.cpu_to_pri_offset = checked(cj, "cpu_to_pri_offset", "cpupri");
    if (c.cpu_to_pri_offset + 8 > c.cpupri_size)
      throw std::runtime_error("coherence layout: cpupri.cpu_to_pri outside struct cpupri");
    const auto& sj = cj.at("vec0_line_sharers");
    if (!sj.is_array() || sj.size() > 256) throw std::runtime_error("coherence layout: cpupri.vec0_line_sharers malformed");
    for (auto& m : sj) c.vec0_line_sharers.push_back(member_from(m, "cpupri.vec0_line_sharers[]", c.root_domain_size));
    const auto& aj = cj.at("cpupri_line_sharers");
    if (!aj.is_array() || aj.size() > 256) throw std::runtime_error("coherence layout: cpupri.cpupri_line_sharers malformed");
    for (auto& m : aj) c.cpupri_line_sharers.push_back(member_from(m, "cpupri.cpupri_line_sharers[]", c.root_domain_size));
    l.cpupri = std::move(c);
  }
};

}  // namespace

const HotObject& cpupri_object() {
  static const Cpupri o;
  return o;
}

}  // namespace schedhot
