// The nohz hot object (kernel/sched/fair.c): its BTF reading, lines, fields, fix
// (nohz.nr_cpus removed, 5d86d542, v7.0), what-ifs, Debian shape and JSON.
#include "probe/objects/nohz.h"

#include <algorithm>
#include <stdexcept>

#include <bpf/btf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/layout.h"

namespace schedhot {

std::vector<MemberLayout> NohzLayout::members() const {
  std::vector<MemberLayout> v{idle_cpus_mask, has_blocked, next_balance, next_blocked};
  if (nr_cpus) v.push_back(*nr_cpus);
  if (needs_update) v.push_back(*needs_update);
  v.insert(v.end(), other_members.begin(), other_members.end());
  std::stable_sort(v.begin(), v.end(), [](const MemberLayout& a, const MemberLayout& b) { return a.offset < b.offset; });
  return v;
}

namespace {

using namespace objects;

std::optional<NohzLayout> read_nohz(const struct btf* btf, std::vector<std::string>& notes) {
  const uint32_t n = btf__type_cnt(btf);
  std::vector<NohzLayout> found;
  for (uint32_t id = 1; id < n; ++id) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    if (!t || !btf_is_struct(t) || !btf_name(btf, t->name_off).empty()) continue;
    auto ms = btf_members_of(btf, t);
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

class Nohz : public HotObject {
 public:
  std::string_view name() const override { return "nohz"; }

  void read(const ReadInputs& in, CoherenceLayout& l) const override {
    if (!in.btf) {
      l.notes.push_back("no BTF: the nohz line is modeled on an assumption (all its fields in one line, as in 6.1-7.3)");
    } else {
      l.nohz = read_nohz(in.btf, l.notes);
      if (l.nohz) {
        auto& n = *l.nohz;
        l.notes.push_back(fmt::format(
            "nohz: {} B anonymous struct from {}; idle_cpus_mask {}; nr_cpus {}; {}", n.size, in.btf_source,
            n.mask_is_pointer ? "a pointer (CPUMASK_OFFSTACK=y: bitmap in a separate allocation)"
                              : fmt::format("an inline {} B bitmap", n.mask_bytes),
            n.nr_cpus ? fmt::format("at {}", n.nr_cpus->offset) : std::string("absent (fix present)"),
            n.has_blocked.name));
      } else {
        l.notes.push_back(fmt::format(
            "nohz: no anonymous struct with idle_cpus_mask, has_blocked[_load], next_balance, next_blocked in {} "
            "(CONFIG_NO_HZ_COMMON=n?): the nohz line is modeled on an assumption (all its fields in one line)",
            in.btf_source));
      }
    }
    if (l.nohz && in.syms && !in.syms->addresses_hidden()) {
      auto all = in.syms->find_all("nohz");
      if (all.size() == 1) l.nohz->address = all.front()->addr;
    }
  }

  void lines(const CoherenceLayout& L, std::vector<LineDef>& out) const override {
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

  std::optional<FieldTarget> field_target(const std::string& f, bool per_cpu, int ncpus,
                                          const CoherenceLayout& L) const override {
    if (f.rfind("nohz.", 0) != 0 || !L.nohz) return std::nullopt;
    const NohzLayout& n = *L.nohz;
    const std::string m = f.substr(5);
    if (m == "idle_cpus_mask") {
      if (n.mask_is_pointer) {
        // Learned: the bitmap's offset in its first line (learn_addresses()); else line-aligned.
        if (L.learned && L.learned->nohz_idle_mask)
          return FieldTarget::cpumask("nohz.idle_cpus_mask", "nohz",
                                      int64_t(L.learned->nohz_idle_mask % uint64_t(L.line_bytes)), ncpus,
                                      "slab neighbours of the learned bitmap not known", per_cpu);
        return FieldTarget::cpumask("nohz.idle_cpus_mask", "nohz", 0, ncpus, kSeparate, per_cpu);
      }
      return FieldTarget::cpumask("nohz", "nohz", n.idle_cpus_mask.offset, n.mask_bytes * 8, "", per_cpu);
    }
    const MemberLayout* mem = nullptr;
    if (m == "nr_cpus" && n.nr_cpus) mem = &*n.nr_cpus;
    if (m == "has_blocked") mem = &n.has_blocked;
    if (m == "needs_update" && n.needs_update) mem = &*n.needs_update;
    if (m == "next_balance") mem = &n.next_balance;
    if (m == "next_blocked") mem = &n.next_blocked;
    if (!mem) return std::nullopt;
    return FieldTarget{"nohz", "nohz", "", mem->offset, FieldTarget::fixed, 0};
  }

  std::optional<std::string> line_name(const std::string& object, int64_t line, const CoherenceLayout&) const override {
    if (object != "nohz" && object != "nohz.idle_cpus_mask") return std::nullopt;
    if (line == 0) return object;
    return fmt::format("{} line {}", object, line);
  }

  Fix fix(const CoherenceLayout& l) const override {
    Fix f{"nohz_nr_cpus_removed", "nohz.nr_cpus", std::nullopt, "", "removed (fix present)", "present (fix absent)",
          "nohz.nr_cpus", "gone", "present", "nohz.nr_cpus removed", "nohz_exit"};
    if (l.nohz)
      f.present = !l.nohz->has_nr_cpus();
    else
      f.reason = "nohz struct not found in BTF";
    return f;
  }

  std::vector<WhatIf> what_ifs() const override {
    return {
        {"nohz_nr_cpus", "sched/fair: remove nohz.nr_cpus and use the weight of the cpumask (5d86d542, v7.0)", "nohz", true, 1},
        {"ilb_mc_capable", "nohz/sched: disable ilb on !mc_capable() (2010)", "nohz", false, 4},
    };
  }

  std::string what_if_reason(const WhatIf& w, const CoherenceLayout& l) const override {
    if (w.id == "ilb_mc_capable")
      return "the code it changes (select_nohz_load_balancer() owning nohz.load_balancer) is gone: the ILB "
             "became a push model and nohz.load_balancer was removed long before the kernels schedhot traces; "
             "nothing to replay";
    if (!l.nohz) return "nohz layout unknown";
    if (!l.nohz->nr_cpus) return "this kernel has it: nohz.nr_cpus is gone";
    return "";
  }

  void apply(const WhatIf& w, CoherenceLayout& L) const override {
    if (w.id != "nohz_nr_cpus" || !L.nohz || !L.nohz->nr_cpus) return;
    NohzLayout& n = *L.nohz;
    n.nr_cpus.reset();
    std::vector<MemberLayout*> ms = {&n.idle_cpus_mask, &n.has_blocked, &n.next_balance, &n.next_blocked};
    if (n.needs_update) ms.push_back(&*n.needs_update);
    for (auto& o : n.other_members) ms.push_back(&o);
    relayout(ms);
  }

  std::string assume(int major, CoherenceLayout& L) const override {
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
    return major < 7 ? "nohz with nr_cpus" : "nohz without nr_cpus";
  }

  nlohmann::json to_json(const CoherenceLayout& l) const override {
    if (!l.nohz) return nullptr;
    const auto& n = *l.nohz;
    nlohmann::json others = nlohmann::json::array();
    for (auto& m : n.other_members) others.push_back(member_json(m));
    return {{"size", n.size},
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

  void from_json(const nlohmann::json& nj, CoherenceLayout& l) const override {
    if (nj.is_null()) return;
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
};

}  // namespace

const HotObject& nohz_object() {
  static const Nohz o;
  return o;
}

}  // namespace schedhot
