#include "probe/layout.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace schedhot {

namespace {

constexpr int64_t kMaxBytes = int64_t(1) << 20;  // no struct here comes near 1 MiB

bool valid_line_bytes(int n) { return n >= 16 && n <= 4096 && (n & (n - 1)) == 0; }

std::string name_of(const struct btf* btf, uint32_t off) {
  const char* n = btf__name_by_offset(btf, off);
  return n ? n : "";
}

/// The type after typedefs and modifiers (const, volatile, ...), or nullptr.
const struct btf_type* resolved(const struct btf* btf, uint32_t id) {
  const int r = btf__resolve_type(btf, id);
  return r < 0 ? nullptr : btf__type_by_id(btf, uint32_t(r));
}

/// The members of struct type t, each with its byte offset and resolved size.
std::vector<std::pair<MemberLayout, uint32_t>> members_of(const struct btf* btf, const struct btf_type* t) {
  std::vector<std::pair<MemberLayout, uint32_t>> out;
  const struct btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    MemberLayout ml;
    ml.name = name_of(btf, m->name_off);
    ml.offset = int64_t(btf_member_bit_offset(t, uint32_t(i)) / 8);
    const auto sz = btf__resolve_size(btf, m->type);
    ml.size = sz < 0 ? 0 : int64_t(sz);
    out.emplace_back(std::move(ml), m->type);
  }
  return out;
}

/// A cpumask_var_t member: pointer (OFFSTACK=y) or inline bitmap (bytes).
void cpumask_shape(const struct btf* btf, uint32_t type_id, bool& is_pointer, int64_t& bytes) {
  const struct btf_type* t = resolved(btf, type_id);
  is_pointer = t && btf_is_ptr(t);
  if (is_pointer) {
    bytes = 0;
  } else {
    const auto sz = btf__resolve_size(btf, type_id);
    bytes = sz < 0 ? 0 : int64_t(sz);
  }
}

const MemberLayout* find_member(const std::vector<std::pair<MemberLayout, uint32_t>>& ms, std::string_view name,
                                uint32_t* type = nullptr) {
  for (auto& [m, t] : ms)
    if (m.name == name) {
      if (type) *type = t;
      return &m;
    }
  return nullptr;
}

std::optional<NohzLayout> read_nohz(const struct btf* btf, std::vector<std::string>& notes) {
  const uint32_t n = btf__type_cnt(btf);
  std::vector<NohzLayout> found;
  for (uint32_t id = 1; id < n; ++id) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    if (!t || !btf_is_struct(t) || !name_of(btf, t->name_off).empty()) continue;
    auto ms = members_of(btf, t);
    uint32_t mask_type = 0;
    const MemberLayout* mask = find_member(ms, "idle_cpus_mask", &mask_type);
    const MemberLayout* hb = find_member(ms, "has_blocked");
    if (!hb) hb = find_member(ms, "has_blocked_load");
    const MemberLayout* nb = find_member(ms, "next_balance");
    const MemberLayout* nbl = find_member(ms, "next_blocked");
    if (!mask || !hb || !nb || !nbl) continue;
    NohzLayout l;
    l.size = int64_t(t->size);
    l.idle_cpus_mask = *mask;
    cpumask_shape(btf, mask_type, l.mask_is_pointer, l.mask_bytes);
    l.has_blocked = *hb;
    l.next_balance = *nb;
    l.next_blocked = *nbl;
    if (auto* m = find_member(ms, "nr_cpus")) l.nr_cpus = *m;
    if (auto* m = find_member(ms, "needs_update")) l.needs_update = *m;
    for (auto& [m, ty] : ms) {
      if (m.name == "idle_cpus_mask" || m.name == hb->name || m.name == "next_balance" || m.name == "next_blocked" ||
          m.name == "nr_cpus" || m.name == "needs_update")
        continue;
      l.other_members.push_back(m);
    }
    found.push_back(std::move(l));
  }
  if (found.size() > 1)
    notes.push_back(fmt::format("nohz: {} anonymous BTF structs have the nohz members; the first is used", found.size()));
  if (found.empty()) return std::nullopt;
  return found.front();
}

std::optional<CpupriLayout> read_cpupri(const struct btf* btf, int line_bytes, std::string& why) {
  const int rd_id = btf__find_by_name_kind(btf, "root_domain", BTF_KIND_STRUCT);
  if (rd_id <= 0) {
    why = "no struct root_domain in BTF";
    return std::nullopt;
  }
  const struct btf_type* rd = btf__type_by_id(btf, uint32_t(rd_id));
  auto rd_ms = members_of(btf, rd);
  uint32_t cp_type = 0;
  const MemberLayout* cp_m = find_member(rd_ms, "cpupri", &cp_type);
  const struct btf_type* cp = cp_m ? resolved(btf, cp_type) : nullptr;
  if (!cp || !btf_is_struct(cp)) {
    why = "struct root_domain has no struct cpupri member 'cpupri'";
    return std::nullopt;
  }
  auto cp_ms = members_of(btf, cp);
  uint32_t arr_type = 0;
  const MemberLayout* p2c = find_member(cp_ms, "pri_to_cpu", &arr_type);
  const MemberLayout* c2p = find_member(cp_ms, "cpu_to_pri");
  const struct btf_type* arr = p2c ? resolved(btf, arr_type) : nullptr;
  if (!arr || !btf_is_array(arr) || !c2p) {
    why = "struct cpupri lacks the array pri_to_cpu[] or cpu_to_pri";
    return std::nullopt;
  }
  const struct btf_array* a = btf_array(arr);
  const struct btf_type* vec = resolved(btf, a->type);
  if (!vec || !btf_is_struct(vec)) {
    why = "cpupri.pri_to_cpu[] is not an array of struct cpupri_vec";
    return std::nullopt;
  }
  auto v_ms = members_of(btf, vec);
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

std::string join_names(const std::vector<MemberLayout>& ms) {
  std::string s;
  for (auto& m : ms) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

/// True when the table holds static (local) data symbols: kallsyms lists them only with
/// CONFIG_KALLSYMS_ALL; a System.map always does.
bool has_static_data(const SymbolTable& t) {
  return std::any_of(t.symbols().begin(), t.symbols().end(), [](const Symbol& s) {
    return s.module.empty() && (s.type == 'd' || s.type == 'b');
  });
}

void read_bcast_lock(BcastLockLayout& b, const SymbolTable* syms, int line_bytes, const std::string& src) {
  const char* kName = "tick_broadcast_lock";
  if (!syms || syms->empty()) {
    b.reason = "unknown: no symbol table readable";
    return;
  }
  if (syms->addresses_hidden()) {
    b.reason = "unknown: symbol addresses hidden (kernel.kptr_restrict, or not root)";
    return;
  }
  auto all = syms->find_all(kName);
  if (all.empty()) {
    b.reason = has_static_data(*syms) ? "unknown: tick_broadcast_lock not in the symbol table "
                                        "(no GENERIC_CLOCKEVENTS_BROADCAST?)"
                                      : "unknown: KALLSYMS_ALL off (no static data symbols in the symbol table)";
    return;
  }
  if (all.size() > 1) {
    b.reason = fmt::format("unknown: {} symbols named tick_broadcast_lock", all.size());
    return;
  }
  const uint64_t addr = all.front()->addr;
  b.address = addr;
  b.source = src;
  b.aligned = addr % uint64_t(line_bytes) == 0;
  const uint64_t lo = addr - addr % uint64_t(line_bytes), hi = lo + uint64_t(line_bytes);
  for (const Symbol& s : syms->symbols()) {
    if (!s.module.empty() || s.addr < lo || s.addr >= hi || s.name == kName) continue;
    b.neighbours.push_back(s);
  }
  std::sort(b.neighbours.begin(), b.neighbours.end(), [](const Symbol& x, const Symbol& y) {
    return x.addr != y.addr ? x.addr < y.addr : x.name < y.name;
  });
  b.own_line = *b.aligned && b.neighbours.empty();
}

}  // namespace

int64_t line_of(int64_t offset, int line_bytes) {
  if (line_bytes <= 0) throw std::invalid_argument("line_of: line size must be positive");
  const int64_t q = offset / line_bytes;
  return (offset % line_bytes != 0 && offset < 0) ? q - 1 : q;
}

std::vector<MemberLayout> NohzLayout::members() const {
  std::vector<MemberLayout> v{idle_cpus_mask, has_blocked, next_balance, next_blocked};
  if (nr_cpus) v.push_back(*nr_cpus);
  if (needs_update) v.push_back(*needs_update);
  v.insert(v.end(), other_members.begin(), other_members.end());
  std::stable_sort(v.begin(), v.end(), [](const MemberLayout& a, const MemberLayout& b) { return a.offset < b.offset; });
  return v;
}

CoherenceLayout read_coherence_layout(const struct btf* btf, const SymbolTable* syms, int line_bytes,
                                      const std::string& btf_source, const std::string& syms_source) {
  if (!valid_line_bytes(line_bytes))
    throw std::invalid_argument(fmt::format("cacheline size {} is not a power of two in 16..4096", line_bytes));
  CoherenceLayout l;
  l.line_bytes = line_bytes;
  l.btf_source = btf_source;
  const std::string bsrc = btf_source.empty() ? "BTF" : btf_source;
  const std::string ssrc = syms_source.empty() ? "the symbol table" : syms_source;
  l.notes.push_back(fmt::format("cacheline size {} B", line_bytes));
  if (!btf) {
    l.notes.push_back("no BTF: the nohz line is modeled on an assumption (all its fields in one line, as in 6.1-7.3)");
    l.notes.push_back("no BTF: the cpupri lines are modeled on an assumption (pri_to_cpu[0] alone, cpu_to_pri[] "
                      "4 B per CPU)");
  } else {
    l.nohz = read_nohz(btf, l.notes);
    if (l.nohz) {
      auto& n = *l.nohz;
      l.notes.push_back(fmt::format(
          "nohz: {} B anonymous struct from {}; idle_cpus_mask {}; nr_cpus {}; {}", n.size, bsrc,
          n.mask_is_pointer ? "a pointer (CPUMASK_OFFSTACK=y: bitmap in a separate allocation)"
                            : fmt::format("an inline {} B bitmap", n.mask_bytes),
          n.nr_cpus ? fmt::format("at {}", n.nr_cpus->offset) : std::string("absent (fix present)"),
          n.has_blocked.name));
    } else {
      l.notes.push_back(fmt::format(
          "nohz: no anonymous struct with idle_cpus_mask, has_blocked[_load], next_balance, next_blocked in {} "
          "(CONFIG_NO_HZ_COMMON=n?): the nohz line is modeled on an assumption (all its fields in one line)",
          bsrc));
    }
    std::string why;
    l.cpupri = read_cpupri(btf, line_bytes, why);
    if (l.cpupri) {
      auto& c = *l.cpupri;
      l.notes.push_back(fmt::format(
          "cpupri: at root_domain+{} ({} B root_domain from {}); {} vectors of {} B, count {}, mask {}; "
          "cpu_to_pri at cpupri+{}; sharing pri_to_cpu[0]'s line: {}",
          c.cpupri_offset, c.root_domain_size, bsrc, c.nr_prios, c.vec_size,
          c.count_offset ? fmt::format("at {}", *c.count_offset) : std::string("absent (fix present)"),
          c.mask_is_pointer ? fmt::format("pointer at {}", c.mask_offset)
                            : fmt::format("inline {} B at {}", c.mask_bytes, c.mask_offset),
          c.cpu_to_pri_offset, c.vec0_line_sharers.empty() ? "nothing" : join_names(c.vec0_line_sharers)));
    } else {
      l.notes.push_back(fmt::format("cpupri: {} ({}): the cpupri lines are modeled on an assumption", why, bsrc));
    }
    const int lk = btf__find_by_name_kind(btf, "raw_spinlock", BTF_KIND_STRUCT);
    if (lk > 0) l.bcast_lock.lock_bytes = int64_t(btf__type_by_id(btf, uint32_t(lk))->size);
  }
  if (l.nohz && syms && !syms->addresses_hidden()) {
    auto all = syms->find_all("nohz");
    if (all.size() == 1) l.nohz->address = all.front()->addr;
  }
  read_bcast_lock(l.bcast_lock, syms, line_bytes, ssrc);
  auto& b = l.bcast_lock;
  if (b.address) {
    l.notes.push_back(fmt::format("tick_broadcast_lock: 0x{:x} from {}, {}line-aligned, {} neighbour(s) in its line",
                                  *b.address, ssrc, *b.aligned ? "" : "not ", b.neighbours.size()));
  } else {
    l.notes.push_back(fmt::format("tick_broadcast_lock: {}: its line is modeled on an assumption (alone in its line, "
                                  "__cacheline_aligned_in_smp)",
                                  b.reason));
  }
  return l;
}

CoherenceLayout read_coherence_layout_from(const std::string& btf_path, const SymbolTable* syms, int line_bytes,
                                           const std::string& syms_source) {
  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  struct btf* btf = btf_path.empty() ? btf__load_vmlinux_btf() : btf__parse(btf_path.c_str(), nullptr);
  const int e = errno;
  libbpf_set_print(old);
  const std::string src = btf_path.empty() ? "vmlinux BTF (libbpf search)" : btf_path;
  CoherenceLayout l;
  try {
    l = read_coherence_layout(btf, syms, line_bytes, btf ? src : "", syms_source);
  } catch (...) {
    btf__free(btf);
    throw;
  }
  btf__free(btf);
  if (!btf) l.notes.insert(l.notes.begin(), fmt::format("{}: no BTF read ({})", src, strerror(e)));
  return l;
}

// ---- modeled lines ----------------------------------------------------------------

namespace {

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

bool overlaps(int64_t off, int64_t size, int64_t lo, int64_t hi) { return off < hi && off + std::max<int64_t>(size, 1) > lo; }

void nohz_lines(const CoherenceLayout& L, std::vector<LineDef>& out) {
  const int lb = L.line_bytes;
  if (!L.nohz) {
    LineDef d;
    d.id = "nohz";
    d.object = "nohz";
    d.allocation = "static";
    for (const char* f : {"idle_cpus_mask", "nr_cpus", "has_blocked", "needs_update", "next_balance", "next_blocked"})
      d.fields.push_back({f, std::nullopt, std::nullopt});
    d.assumption = "nohz layout not in BTF: all fields assumed in one line (as in 6.1, 6.12, 6.18, 7.3)";
    out.push_back(std::move(d));
    return;
  }
  const NohzLayout& n = *L.nohz;
  const auto ms = n.members();
  // &nohz is ____cacheline_aligned (L1_CACHE_BYTES, which may be smaller than the line
  // size given); with its address known, its real offset into the first line is known too.
  const int64_t skew = n.address ? int64_t(*n.address % uint64_t(lb)) : 0;
  const int64_t span = line_of(std::max<int64_t>(n.size, 1) - 1 + skew, lb) + 1;
  for (int64_t k = 0; k < span; ++k) {
    LineDef d;
    d.id = span == 1 ? "nohz" : fmt::format("nohz.line{}", k);
    d.object = "nohz";
    d.line_offset = k * lb - skew;
    d.allocation = "static";
    const int64_t lo = *d.line_offset, hi = lo + lb;
    for (auto& m : ms)
      if (overlaps(m.offset, m.size, lo, hi)) {
        std::string name = m.name;
        if (m.name == "idle_cpus_mask" && !n.mask_is_pointer) name += " (inline bitmap)";
        if (m.name == "idle_cpus_mask" && n.mask_is_pointer) name += " (pointer)";
        d.fields.push_back({name, m.offset, m.size});
      }
    if (n.address) {
      d.address = *n.address + uint64_t(k * lb - skew);
      d.address_known = true;
    } else {
      d.assumption = "&nohz assumed to start a line (____cacheline_aligned; address not in the symbol table)";
    }
    out.push_back(std::move(d));
  }
  if (n.mask_is_pointer) {
    LineDef d;
    d.id = "nohz.idle_cpus_mask";
    d.object = "nohz.idle_cpus_mask bitmap";
    d.line_offset = 0;
    const uint64_t at = L.learned ? L.learned->nohz_idle_mask : 0;
    if (at) {
      // Learned (learn_addresses()): the bitmap's lines; offsets from the first one.
      d.allocation = fmt::format("separate, learned ({})", L.learned->source);
      d.address = at - at % uint64_t(lb);
      d.address_known = true;
      d.fields.push_back({"idle_cpus_mask bits", int64_t(at % uint64_t(lb)), L.learned->mask_bytes});
      d.assumption = "what else shares its slab line (other kmalloc objects) is not known";
    } else {
      d.allocation = "separate, address unknown until learned";
      d.fields.push_back({"idle_cpus_mask bits", 0, std::nullopt});
      d.assumption = "CPUMASK_OFFSTACK=y: a separate cpumask_size() B kmalloc object; its line (and what else is in "
                     "it) is unknown until the address is learned";
    }
    out.push_back(std::move(d));
  }
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

void bcast_line(const CoherenceLayout& L, std::vector<LineDef>& out) {
  const int lb = L.line_bytes;
  const BcastLockLayout& b = L.bcast_lock;
  LineDef d;
  d.id = "tick_broadcast_lock";
  d.object = "tick_broadcast_lock line";
  d.line_offset = 0;
  d.allocation = "static";
  const std::optional<int64_t> lock_size = b.lock_bytes > 0 ? std::optional<int64_t>(b.lock_bytes) : std::nullopt;
  if (b.address) {
    const uint64_t lo = *b.address - *b.address % uint64_t(lb);
    d.address = lo;
    d.address_known = true;
    d.fields.push_back({"tick_broadcast_lock", int64_t(*b.address - lo), lock_size});
    for (auto& s : b.neighbours) d.fields.push_back({s.name, int64_t(s.addr - lo), std::nullopt});
    std::stable_sort(d.fields.begin(), d.fields.end(), [](const LineField& x, const LineField& y) { return *x.offset < *y.offset; });
  } else {
    d.fields.push_back({"tick_broadcast_lock", 0, lock_size});
    d.assumption = fmt::format("{}: assumed alone at the start of its line (__cacheline_aligned_in_smp)", b.reason);
  }
  out.push_back(std::move(d));
}

}  // namespace

std::vector<LineDef> modeled_lines(const CoherenceLayout& layout) {
  std::vector<LineDef> out;
  nohz_lines(layout, out);
  cpupri_lines(layout, out);
  bcast_line(layout, out);
  return out;
}

// ---- fixes -------------------------------------------------------------------------

FixesPresent fixes_present(const CoherenceLayout& l) {
  FixesPresent f;
  if (l.nohz)
    f.nohz_nr_cpus_removed = !l.nohz->has_nr_cpus();
  else
    f.nohz_reason = "nohz struct not found in BTF";
  if (l.cpupri)
    f.cpupri_count_removed = !l.cpupri->count_offset.has_value();
  else
    f.cpupri_reason = "struct cpupri_vec not found in BTF";
  if (l.bcast_lock.own_line)
    f.bcast_lock_own_line = *l.bcast_lock.own_line;
  else
    f.bcast_reason = l.bcast_lock.reason.empty() ? "address unknown" : l.bcast_lock.reason;
  return f;
}

std::string to_string(const FixesPresent& f) {
  auto why = [](const std::string& reason) {
    return reason.rfind("unknown: ", 0) == 0 ? reason.substr(9) : reason;
  };
  auto field = [&](const std::optional<bool>& removed, const std::string& reason) {
    if (!removed) return fmt::format("unknown ({})", why(reason));
    return std::string(*removed ? "removed (fix present)" : "present (fix absent)");
  };
  std::string lock;
  if (!f.bcast_lock_own_line)
    lock = fmt::format("unknown ({})", why(f.bcast_reason));
  else
    lock = *f.bcast_lock_own_line ? "alone in its line" : "shares its line";
  return fmt::format("fixes: nohz.nr_cpus {}; cpupri_vec.count {}; tick_broadcast_lock {}",
                     field(f.nohz_nr_cpus_removed, f.nohz_reason), field(f.cpupri_count_removed, f.cpupri_reason), lock);
}

// ---- JSON --------------------------------------------------------------------------

namespace {

nlohmann::json member_json(const MemberLayout& m) { return {{"name", m.name}, {"offset", m.offset}, {"size", m.size}}; }

int64_t checked(const nlohmann::json& j, const char* key, const std::string& what, int64_t lo = 0, int64_t hi = kMaxBytes) {
  if (!j.contains(key)) throw std::runtime_error(fmt::format("coherence layout: {}.{} missing", what, key));
  const auto& v = j.at(key);
  if (!v.is_number_integer()) throw std::runtime_error(fmt::format("coherence layout: {}.{} is not an integer", what, key));
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi)
    throw std::runtime_error(fmt::format("coherence layout: {}.{} = {} out of range {}..{}", what, key, x, lo, hi));
  return x;
}

MemberLayout member_from(const nlohmann::json& j, const std::string& what, int64_t struct_size) {
  if (!j.is_object()) throw std::runtime_error(fmt::format("coherence layout: {} is not an object", what));
  MemberLayout m;
  m.name = j.at("name").get<std::string>();
  m.offset = checked(j, "offset", what);
  m.size = checked(j, "size", what);
  if (m.offset + m.size > struct_size)
    throw std::runtime_error(fmt::format("coherence layout: {} ({} B at {}) outside its {} B struct", what, m.size,
                                         m.offset, struct_size));
  return m;
}

}  // namespace

void to_json(nlohmann::json& j, const CoherenceLayout& l) {
  nlohmann::json nohz = nullptr, cpupri = nullptr;
  if (l.nohz) {
    const auto& n = *l.nohz;
    nlohmann::json others = nlohmann::json::array();
    for (auto& m : n.other_members) others.push_back(member_json(m));
    nohz = {{"size", n.size},
            {"idle_cpus_mask", member_json(n.idle_cpus_mask)},
            {"mask_is_pointer", n.mask_is_pointer},
            {"mask_bytes", n.mask_bytes},
            {"nr_cpus", n.nr_cpus ? member_json(*n.nr_cpus) : nlohmann::json(nullptr)},
            {"has_blocked", member_json(n.has_blocked)},
            {"needs_update", n.needs_update ? member_json(*n.needs_update) : nlohmann::json(nullptr)},
            {"next_balance", member_json(n.next_balance)},
            {"next_blocked", member_json(n.next_blocked)},
            {"other_members", others},
            {"address", n.address ? nlohmann::json(*n.address) : nlohmann::json(nullptr)}};
  }
  if (l.cpupri) {
    const auto& c = *l.cpupri;
    nlohmann::json sharers = nlohmann::json::array();
    for (auto& m : c.vec0_line_sharers) sharers.push_back(member_json(m));
    nlohmann::json cp_sharers = nlohmann::json::array();
    for (auto& m : c.cpupri_line_sharers) cp_sharers.push_back(member_json(m));
    cpupri = {{"root_domain_size", c.root_domain_size},
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
  const auto& b = l.bcast_lock;
  nlohmann::json neigh = nlohmann::json::array();
  for (auto& s : b.neighbours) neigh.push_back({{"name", s.name}, {"addr", s.addr}, {"type", std::string(1, s.type)}});
  j = {{"line_bytes", l.line_bytes},
       {"btf_source", l.btf_source},
       {"nohz", nohz},
       {"cpupri", cpupri},
       {"tick_broadcast_lock",
        {{"address", b.address ? nlohmann::json(*b.address) : nlohmann::json(nullptr)},
         {"reason", b.reason},
         {"source", b.source},
         {"lock_bytes", b.lock_bytes},
         {"aligned", b.aligned ? nlohmann::json(*b.aligned) : nlohmann::json(nullptr)},
         {"neighbours", neigh},
         {"own_line", b.own_line ? nlohmann::json(*b.own_line) : nlohmann::json(nullptr)}}},
       {"notes", l.notes}};
  if (l.learned) {
    const auto& a = *l.learned;
    j["learned"] = {{"source", a.source},         {"rd", a.rd},
                    {"cpus", a.cpus},             {"other_domains", a.other_domains},
                    {"cpu_to_pri", a.cpu_to_pri}, {"cpu_to_pri_bytes", a.cpu_to_pri_bytes},
                    {"masks", a.masks},           {"mask_bytes", a.mask_bytes}};
    if (a.nohz_idle_mask) j["learned"]["nohz_idle_mask"] = a.nohz_idle_mask;
  }
}

void from_json(const nlohmann::json& j, CoherenceLayout& out) {
  try {
    CoherenceLayout l;
    if (!j.is_object()) throw std::runtime_error("coherence layout: not an object");
    l.line_bytes = int(checked(j, "line_bytes", "layout", 16, 4096));
    if (!valid_line_bytes(l.line_bytes))
      throw std::runtime_error(fmt::format("coherence layout: line_bytes {} is not a power of two", l.line_bytes));
    l.btf_source = j.value("btf_source", "");
    if (const auto& nj = j.at("nohz"); !nj.is_null()) {
      NohzLayout n;
      n.size = checked(nj, "size", "nohz", 1);
      n.idle_cpus_mask = member_from(nj.at("idle_cpus_mask"), "nohz.idle_cpus_mask", n.size);
      n.mask_is_pointer = nj.at("mask_is_pointer").get<bool>();
      n.mask_bytes = checked(nj, "mask_bytes", "nohz");
      if (!n.mask_is_pointer && n.mask_bytes > n.idle_cpus_mask.size)
        throw std::runtime_error("coherence layout: nohz.mask_bytes larger than idle_cpus_mask");
      if (!nj.at("nr_cpus").is_null()) n.nr_cpus = member_from(nj.at("nr_cpus"), "nohz.nr_cpus", n.size);
      n.has_blocked = member_from(nj.at("has_blocked"), "nohz.has_blocked", n.size);
      if (n.has_blocked.name != "has_blocked" && n.has_blocked.name != "has_blocked_load")
        throw std::runtime_error(fmt::format("coherence layout: nohz.has_blocked named '{}'", n.has_blocked.name));
      if (!nj.at("needs_update").is_null())
        n.needs_update = member_from(nj.at("needs_update"), "nohz.needs_update", n.size);
      n.next_balance = member_from(nj.at("next_balance"), "nohz.next_balance", n.size);
      n.next_blocked = member_from(nj.at("next_blocked"), "nohz.next_blocked", n.size);
      const auto& oj = nj.at("other_members");
      if (!oj.is_array() || oj.size() > 64) throw std::runtime_error("coherence layout: nohz.other_members malformed");
      for (auto& m : oj) n.other_members.push_back(member_from(m, "nohz.other_members[]", n.size));
      if (nj.contains("address") && !nj.at("address").is_null()) n.address = nj.at("address").get<uint64_t>();
      l.nohz = std::move(n);
    }
    if (const auto& cj = j.at("cpupri"); !cj.is_null()) {
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
    const auto& bj = j.at("tick_broadcast_lock");
    auto& b = l.bcast_lock;
    if (!bj.at("address").is_null()) b.address = bj.at("address").get<uint64_t>();
    b.reason = bj.value("reason", "");
    b.source = bj.value("source", "");
    b.lock_bytes = checked(bj, "lock_bytes", "tick_broadcast_lock", 0, 4096);
    if (!bj.at("aligned").is_null()) b.aligned = bj.at("aligned").get<bool>();
    if (!bj.at("own_line").is_null()) b.own_line = bj.at("own_line").get<bool>();
    const auto& nb = bj.at("neighbours");
    if (!nb.is_array() || nb.size() > 4096) throw std::runtime_error("coherence layout: tick_broadcast_lock.neighbours malformed");
    for (auto& s : nb) {
      Symbol sym;
      sym.name = s.at("name").get<std::string>();
      sym.addr = s.at("addr").get<uint64_t>();
      const std::string t = s.value("type", "?");
      sym.type = t.size() == 1 ? t[0] : '?';
      if (b.address && (sym.addr / uint64_t(l.line_bytes) != *b.address / uint64_t(l.line_bytes)))
        throw std::runtime_error(fmt::format("coherence layout: neighbour {} is not in tick_broadcast_lock's line", sym.name));
      b.neighbours.push_back(std::move(sym));
    }
    if (!b.address && (b.aligned || b.own_line || !b.neighbours.empty()))
      throw std::runtime_error("coherence layout: tick_broadcast_lock facts without its address");
    l.notes = j.value("notes", std::vector<std::string>{});
    if (j.contains("learned") && !j.at("learned").is_null()) {
      const auto& aj = j.at("learned");
      if (!aj.is_object()) throw std::runtime_error("coherence layout: learned is not an object");
      LearnedAddresses a;
      a.source = aj.value("source", "");
      a.rd = aj.at("rd").get<uint64_t>();
      const auto& cj = aj.at("cpus");
      if (!cj.is_array() || cj.size() > 65536) throw std::runtime_error("coherence layout: learned.cpus malformed");
      for (auto& c : cj) {
        const int64_t cpu = c.get<int64_t>();
        if (cpu < 0 || cpu >= 65536 || (!a.cpus.empty() && cpu <= a.cpus.back()))
          throw std::runtime_error("coherence layout: learned.cpus not ascending CPU ids in 0..65535");
        a.cpus.push_back(int(cpu));
      }
      a.other_domains = int(checked(aj, "other_domains", "learned", 0, 65536));
      a.cpu_to_pri = aj.at("cpu_to_pri").get<uint64_t>();
      a.cpu_to_pri_bytes = checked(aj, "cpu_to_pri_bytes", "learned", 0, 4 * 65536);
      a.mask_bytes = checked(aj, "mask_bytes", "learned", 0, 65536 / 8);
      const auto& mj = aj.at("masks");
      if (!mj.is_array()) throw std::runtime_error("coherence layout: learned.masks is not an array");
      if (!mj.empty() && (!l.cpupri || !l.cpupri->mask_is_pointer || mj.size() != size_t(l.cpupri->nr_prios)))
        throw std::runtime_error("coherence layout: learned.masks without OFFSTACK pri_to_cpu[] masks of that count");
      for (auto& m : mj) a.masks.push_back(m.get<uint64_t>());
      a.nohz_idle_mask = aj.value("nohz_idle_mask", uint64_t(0));  // 1.3 recordings since 2026-12-04
      if (a.nohz_idle_mask && (!l.nohz || !l.nohz->mask_is_pointer || a.mask_bytes == 0))
        throw std::runtime_error("coherence layout: learned.nohz_idle_mask without an OFFSTACK nohz.idle_cpus_mask of known size");
      if (!l.cpupri && (a.rd || a.cpu_to_pri)) throw std::runtime_error("coherence layout: learned addresses without a cpupri layout");
      if ((a.cpu_to_pri && a.cpu_to_pri_bytes == 0) || (!a.masks.empty() && a.mask_bytes == 0))
        throw std::runtime_error("coherence layout: learned allocation of 0 bytes");
      auto wraps = [](uint64_t addr, int64_t bytes) { return addr && addr + uint64_t(bytes) < addr; };
      if (wraps(a.rd, l.cpupri ? l.cpupri->root_domain_size : 0) || wraps(a.cpu_to_pri, a.cpu_to_pri_bytes))
        throw std::runtime_error("coherence layout: learned address range wraps");
      for (uint64_t m : a.masks)
        if (wraps(m, a.mask_bytes)) throw std::runtime_error("coherence layout: learned address range wraps");
      if (wraps(a.nohz_idle_mask, a.mask_bytes)) throw std::runtime_error("coherence layout: learned address range wraps");
      l.learned = std::move(a);
    }
    out = std::move(l);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("coherence layout: {}", e.what()));
  }
}

}  // namespace schedhot
