// The RT push/pull cpupri probes (bpf/cpupri.bpf.c): cpupri_set, cpupri_find.
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/modules/fields.h"
#include "schedhot.skel.h"

namespace schedhot {

namespace {

using namespace fields;

/// cpupri_set's priority classes (struct sh_cpupri_set_slot.trans), in SH_CP_* order.
const char* kClass[SH_CP_NCLASS] = {"INVALID", "NORMAL", "RT", "HIGHER"};

class CpupriSet : public ProbeModule {
 public:
  CpupriSet() {
    ProbeSpec& p = spec_;
    p.id = SH_P_CPUPRI_SET;
    p.name = "cpupri_set";
    p.target = "cpupri_set";
    p.what = "calls, duration, old->new priority class transitions, writes per cpupri vector";
    p.symbols = {"cpupri_set"};
    p.timed = true;
    p.proxy = ProxySpec{{{"sched_switch", false}},
                        "proxy: cpu_to_pri[cpu] changes seen at tp_btf/sched_switch",
                        "lower bound: a change undone before the next context switch is missed; no duration; "
                        "measured -1.4 to -6.1 % (6.12 QEMU guest, mixed load, tests/vm)",
                        {"noop", "nested", "orphan_exits", "lat"}};
    p.slot.slot_words = sizeof(sh_cpupri_set_slot) / W;
    func_fields(p.slot.fields, SH_WORDS(sh_cpupri_set_slot, f));
    p.slot.fields.push_back(counter("noop", SH_WORDS(sh_cpupri_set_slot, noop), "calls with new == old"));
    p.slot.fields.push_back(array("trans", SH_WORDS(sh_cpupri_set_slot, trans), SH_CP_NCLASS * SH_CP_NCLASS,
                                    "transitions [old class*4 + new class], classes INVALID NORMAL RT HIGHER"));
    p.slot.fields.push_back(array("vec_set", SH_WORDS(sh_cpupri_set_slot, vec_set), SH_CPUPRI_VECS,
                                    "cpumask_set_cpu on pri_to_cpu[i]"));
    p.slot.fields.push_back(array("vec_clear", SH_WORDS(sh_cpupri_set_slot, vec_clear), SH_CPUPRI_VECS,
                                    "cpumask_clear_cpu on pri_to_cpu[i]"));
    p.slot.fields.push_back(priv(SH_WORDS(sh_cpupri_set_slot, last_pri), 1));
    p.primary = "calls";
    p.fleet = FleetShow::rate_p99;
    p.secondary = {"noop"};
    p.hist = "lat";
    // cpupri.c cpupri_set() (kernel-notes 2.2): vec_set[i] / vec_clear[i] count the writes
    // to pri_to_cpu[i]; every call that changes the priority stores cpu_to_pri[cpu].
    p.accesses = {
        {"vec_set", "", FieldAccess::kEachElement, 0, "cpupri.pri_to_cpu[#].mask[cpu]", true,
         "cpupri.c cpupri_set(): cpumask_set_cpu(cpu, vec->mask) (lock bts)", ""},
        {"vec_set", "", FieldAccess::kEachElement, 0, "cpupri.pri_to_cpu[#].count", true,
         "cpupri.c cpupri_set(): atomic_inc(&vec->count) after smp_mb__before_atomic()", ""},
        {"vec_clear", "", FieldAccess::kEachElement, 0, "cpupri.pri_to_cpu[#].count", true,
         "cpupri.c cpupri_set(): atomic_dec(&vec->count), then smp_mb__after_atomic()", ""},
        {"vec_clear", "", FieldAccess::kEachElement, 0, "cpupri.pri_to_cpu[#].mask[cpu]", true,
         "cpupri.c cpupri_set(): cpumask_clear_cpu(cpu, vec->mask) (lock btr)", ""},
        {"calls", "", -1, 0, "cpupri.cpu_to_pri[cpu]", false, "cpupri.c cpupri_set(): oldpri = *currpri", ""},
        {"calls", "noop", -1, 0, "cpupri.cpu_to_pri[cpu]", true, "cpupri.c cpupri_set(): *currpri = newpri", ""},
    };
    p.default_hist = true;
    p.columns = {{"cpupri_set/s", "calls"}, {"set_p99", "lat", ColumnKind::p99, "cpupri_set_p99_ns"}};
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int index) const override {
    if (b == Backend::tracepoint)
      return role == ProgRole::tracepoint && index == 0 ? s->progs.cpupri_set__tp_switch : nullptr;
    return function_program(b, role, s->progs.cpupri_set__fentry, s->progs.cpupri_set__fexit,
                            s->progs.cpupri_set__kprobe, s->progs.cpupri_set__kretprobe);
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.cpupri_set_slots; }
  /// The number of cpupri priorities: struct cpupri.pri_to_cpu[]'s length from BTF, 101 when unknown.
  void configure(schedhot_bpf* s, const KernelFacts& facts) const override {
    s->rodata->sh_cpupri_nr_prios = facts.cpupri_nr_prios ? static_cast<uint32_t>(facts.cpupri_nr_prios) : 101;
  }
  /// trans[old*4 + new]: "RT->NORMAL".
  std::optional<std::string> label(const std::string& field, uint32_t i) const override {
    if (field != "trans") return std::nullopt;
    return fmt::format("{}->{}", kClass[i / SH_CP_NCLASS], kClass[i % SH_CP_NCLASS]);
  }
  /// "vectors": which cpupri vectors the window wrote, each index one pri_to_cpu[] entry
  /// ({"3": {"set": 5, "clear": 5}}, the written ones only).
  void add_report_section(const WindowTotals& t, nlohmann::json& report) const override {
    const std::vector<uint64_t> set = t.array("vec_set"), clear = t.array("vec_clear");
    nlohmann::json vecs = nlohmann::json::object();
    for (size_t i = 0; i < set.size(); ++i) {
      const uint64_t c = i < clear.size() ? clear[i] : 0;
      if (set[i] || c) vecs[std::to_string(i)] = {{"set", set[i]}, {"clear", c}};
    }
    report["vectors"] = vecs;
  }
  /// "vectors written: [3] +5/-5 [4] +1/-0".
  std::string report_section_text(const nlohmann::json& report) const override {
    if (!report.contains("vectors") || report["vectors"].empty()) return "";
    std::string items;
    for (auto& [idx, v] : report["vectors"].items())
      items += fmt::format(" [{}] +{}/-{}", idx, v["set"].get<uint64_t>(), v["clear"].get<uint64_t>());
    return "vectors written:" + items;
  }
  /// The caught call's transition, old->new priority class ("RT->NORMAL"): the detail word
  /// is (old priority + 1) << 16 | (new priority + 1), classed as bpf/cpupri.bpf.c
  /// sh_cpupri_class() does for the run's number of priorities.
  std::string caught_detail_text(uint64_t detail, const CaughtRun& run) const override {
    const int oldp = static_cast<int>((detail >> 16) & 0xffff) - 1, newp = static_cast<int>(detail & 0xffff) - 1;
    auto cls = [&run](int pri) -> const char* {
      if (pri < 0) return "INVALID";
      if (run.cpupri_nr_prios == 101) return pri == 0 ? "NORMAL" : pri == 100 ? "HIGHER" : "RT";
      return pri <= 1 ? "NORMAL" : "RT";
    };
    return fmt::format("{}->{}", cls(oldp), cls(newp));
  }
};

class CpupriFind : public ProbeModule {
 public:
  CpupriFind() {
    ProbeSpec& p = spec_;
    p.id = SH_P_CPUPRI_FIND;
    p.name = "cpupri_find";
    p.target = "cpupri_find_fitness";
    p.what = "calls (cpupri_find tail-calls cpupri_find_fitness), duration, calls that found CPUs";
    p.symbols = {"cpupri_find_fitness", "cpupri_find"};
    p.timed = true;
    p.slot.slot_words = sizeof(sh_cpupri_find_slot) / W;
    func_fields(p.slot.fields, SH_WORDS(sh_cpupri_find_slot, f));
    p.slot.fields.push_back(counter("found", SH_WORDS(sh_cpupri_find_slot, found), "calls returning 1"));
    p.primary = "calls";
    p.secondary = {"found"};
    p.hist = "lat";
    p.columns = {{"cpupri_find/s", "calls"}};
    // cpupri.c __cpupri_find() for idx = 0 .. task_pri-1 (kernel-notes 2.2)
    p.accesses = {
        {"calls", "", -1, 0, "cpupri.pri_to_cpu[0].count", false,
         "cpupri.c __cpupri_find(): atomic_read(&vec->count), then smp_rmb()",
         "only vector 0 (NORMAL) is counted: the search reads vectors 0 .. task_pri-1, so higher ones are a lower bound"},
        {"calls", "", -1, 0, "cpupri.pri_to_cpu[0].mask", false,
         "cpupri.c __cpupri_find(): cpumask_any_and(&p->cpus_mask, vec->mask)", "read only when count was non-zero"},
    };
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int) const override {
    return function_program(b, role, s->progs.cpupri_find__fentry, s->progs.cpupri_find__fexit,
                            s->progs.cpupri_find__kprobe, s->progs.cpupri_find__kretprobe);
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.cpupri_find_slots; }

};

SCHEDHOT_PROBE_MODULE(CpupriSet, SH_P_CPUPRI_SET);
SCHEDHOT_PROBE_MODULE(CpupriFind, SH_P_CPUPRI_FIND);

}  // namespace

}  // namespace schedhot
