// The idle-load-balancer kick probe (bpf/nohz.bpf.c): ilb_kick, on csd:csd_queue_cpu and
// csd:csd_function_entry filtered on func == nohz_csd_func.
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/modules/fields.h"
#include "schedhot.skel.h"

namespace schedhot {

namespace {

using namespace fields;

/// nohz_csd_func's address, 0 when unknown or ambiguous (a filter on one of several
/// addresses would be a guess).
uint64_t nohz_csd_func_addr(const KernelFacts& facts) {
  return facts.kallsyms.find_all("nohz_csd_func").size() == 1 ? text_addr(facts, "nohz_csd_func") : 0;
}

class IlbKick : public ProbeModule {
 public:
  IlbKick() {
    ProbeSpec& p = spec_;
    p.id = SH_P_ILB_KICK;
    p.name = "ilb_kick";
    p.target = "kick_ilb (csd:csd_queue_cpu, func == nohz_csd_func)";
    p.what = "ILB kicks queued by this CPU (by kick flags) and received by it as the ILB target";
    p.kind = ProbeKind::tracepoint;
    p.tp_programs = {{"csd_queue_cpu", true, "6.5"}, {"csd_function_entry", true, "6.5"}};
    p.slot.slot_words = sizeof(sh_ilb_slot) / W;
    p.slot.fields = {counter("sent", SH_WORDS(sh_ilb_slot, sent), "kicks queued by this CPU"),
                       counter("received", SH_WORDS(sh_ilb_slot, received), "kicks run on this CPU"),
                       counter("sent_self", SH_WORDS(sh_ilb_slot, sent_self), "kicks this CPU sent to itself"),
                       array("flags", SH_WORDS(sh_ilb_slot, flags), SH_ILB_FLAGS,
                             "sent kicks by target rq->nohz_flags & 0xf (BALANCE=1 STATS=2 NEWILB=4 NEXT=8)")};
    p.primary = "sent";
    p.secondary = {"received"};
    p.columns = {{"ilb_sent/s", "sent"}, {"ilb_recv/s", "received"}};
    // fair.c kick_ilb() and _nohz_idle_balance() (kernel-notes 1.3, 1.4, 2.1)
    p.accesses = {
        {"flags", "", -1, 0x1, "nohz.next_balance", true,
         "fair.c kick_ilb(): nohz.next_balance = jiffies + 1 on a BALANCE kick",
         "kicks counted by the target's flags after the kick: a BALANCE bit left pending by an earlier kick counts too",
         "sent"},
        {"received", "", -1, 0, "nohz.idle_cpus_mask", false,
         "fair.c _nohz_idle_balance(): for_each_cpu_wrap(balance_cpu, nohz.idle_cpus_mask, ...)",
         "every received kick runs _nohz_idle_balance() (a kick cancelled by need_resched still counts)", "received"},
        {"received", "", -1, 0, "nohz.has_blocked", true,
         "fair.c _nohz_idle_balance(): WRITE_ONCE(nohz.has_blocked, 0) / nohz.needs_update / nohz.next_balance",
         "every received kick writes the nohz line once", "received"},
    };
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int index) const override {
    if (b != Backend::tracepoint || role != ProgRole::tracepoint) return nullptr;
    return index == 0 ? s->progs.ilb_kick__tp_queue : index == 1 ? s->progs.ilb_kick__tp_entry : nullptr;
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.ilb_kick_slots; }
  void configure(schedhot_bpf* s, const KernelFacts& facts) const override {
    s->rodata->sh_nohz_csd_func = nohz_csd_func_addr(facts);
  }
  /// The BPF side filters on nohz_csd_func: without its one address nothing can be tried.
  bool check(const KernelFacts& facts, Plan&, ProbeStatus& st, std::vector<AttachTry>& failures) const override {
    if (nohz_csd_func_addr(facts)) return true;
    auto all = facts.kallsyms.find_all("nohz_csd_func");
    if (all.size() > 1) {
      AmbiguousSymbol a{"nohz_csd_func", {}, "kallsyms"};
      for (auto* x : all) a.addrs.push_back(x->addr);
      st.ambiguous.push_back(a);
      failures.push_back({Backend::tracepoint, "",
                          fmt::format("nohz_csd_func is ambiguous: {} addresses in kallsyms; not filtering on a guess",
                                      all.size())});
    } else {
      // Hidden addresses (kptr_restrict) are not "unreadable": say what kallsyms said.
      failures.push_back({Backend::tracepoint, "",
                          fmt::format("nohz_csd_func's address is unknown ({})",
                                      facts.kallsyms_error.empty() ? "not in /proc/kallsyms" : facts.kallsyms_error)});
    }
    return false;
  }
  void after_attach(AttachContext& ctx) const override {
    ctx.status.notes.push_back(
        "counts queued kicks; a kick while one is pending, or with no idle CPU to kick, is not queued and not seen");
  }
  /// flags[i]: the target's nohz_flags & 0xf, "BALANCE|STATS", "none" for 0.
  std::optional<std::string> label(const std::string& field, uint32_t i) const override {
    if (field != "flags") return std::nullopt;
    if (!i) return "none";
    std::string s;
    const char* n[] = {"BALANCE", "STATS", "NEWILB", "NEXT"};
    for (int b = 0; b < 4; ++b)
      if (i & (1u << b)) s += (s.empty() ? "" : "|") + std::string(n[b]);
    return s;
  }

};

SCHEDHOT_PROBE_MODULE(IlbKick, SH_P_ILB_KICK);

}  // namespace

}  // namespace schedhot
