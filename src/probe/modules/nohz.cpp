// The nohz idle-balancing probes (bpf/nohz.bpf.c): nohz_exit, nohz_enter, nohz_kick.
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/modules/fields.h"
#include "probe/resolve.h"
#include "schedhot.skel.h"

namespace schedhot {

namespace {

using namespace fields;

class NohzExit : public ProbeModule {
 public:
  NohzExit() {
    ProbeSpec& p = spec_;
    p.id = SH_P_NOHZ_EXIT;
    p.name = "nohz_exit";
    p.target = "nohz_balance_exit_idle";
    p.what = "calls (every busy tick), duration, and calls that cleared the CPU from nohz.idle_cpus_mask";
    p.symbols = {"nohz_balance_exit_idle"};
    p.timed = true;
    p.proxy = ProxySpec{{{"hrtimer_expire_entry", false}, {"hrtimer_expire_exit", false}},
                        "proxy: busy tick (the tick timer's tp_btf/hrtimer_expire_exit where rq->idle_balance is clear)",
                        "counts ticks, not calls: misses calls from CPU hotplug, counts ticks on inactive or "
                        "null-domain CPUs where sched_balance_trigger() returns first; needs high-resolution "
                        "timers; no duration; measured -0.2 to +0.0 % (6.12 QEMU guest, mixed load, tests/vm, 4 runs)",
                        {"nested", "orphan_exits", "lat"}};
    p.slot.slot_words = sizeof(sh_nohz_exit_slot) / W;
    func_fields(p.slot.fields, SH_WORDS(sh_nohz_exit_slot, f));
    p.slot.fields.push_back(counter("worked", SH_WORDS(sh_nohz_exit_slot, worked),
                                      "calls with rq->nohz_tick_stopped set: wrote the nohz cacheline"));
    p.slot.fields.push_back(priv(SH_WORDS(sh_nohz_exit_slot, tick), 1));  // the tick proxy's, entry to exit
    p.primary = "calls";
    p.fleet = FleetShow::rate_p99;
    p.secondary = {"worked"};
    p.hist = "lat";
    p.columns = {{"nohz_exit/s", "calls"}, {"exit_work/s", "worked"}};
    // fair.c nohz_balance_exit_idle(), when rq->nohz_tick_stopped (kernel-notes 1.1)
    p.accesses = {
        {"worked", "", -1, 0, "nohz.idle_cpus_mask[cpu]", true,
         "fair.c nohz_balance_exit_idle(): cpumask_clear_cpu(rq->cpu, nohz.idle_cpus_mask) (lock btr)", ""},
        {"worked", "", -1, 0, "nohz.nr_cpus", true, "fair.c nohz_balance_exit_idle(): atomic_dec(&nohz.nr_cpus) (<= 6.19)", ""},
    };
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int index) const override {
    if (b == Backend::tracepoint) {
      if (role != ProgRole::tracepoint) return nullptr;
      return index == 0 ? s->progs.nohz_exit__tp_tick : index == 1 ? s->progs.nohz_exit__tp_tick_exit : nullptr;
    }
    return function_program(b, role, s->progs.nohz_exit__fentry, s->progs.nohz_exit__fexit, s->progs.nohz_exit__kprobe,
                            s->progs.nohz_exit__kretprobe);
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.nohz_exit_slots; }
  /// The proxy tells the tick timer by its function: tick_nohz_handler (6.9+) or tick_sched_timer.
  void configure(schedhot_bpf* s, const KernelFacts& facts) const override {
    s->rodata->sh_tick_fn[0] = text_addr(facts, "tick_nohz_handler");
    s->rodata->sh_tick_fn[1] = text_addr(facts, "tick_sched_timer");
  }
  /// Without either address (hidden by kptr_restrict, or neither symbol) the proxy would match
  /// no timer and count nothing: it is not tried, and says why; fentry and kprobes still are.
  bool check(const KernelFacts& facts, Plan& plan, ProbeStatus&, std::vector<AttachTry>& failures) const override {
    if (text_addr(facts, "tick_nohz_handler") || text_addr(facts, "tick_sched_timer")) return true;
    std::erase_if(plan.candidates, [&](const Candidate& c) {
      if (!c.proxy) return false;
      failures.push_back({Backend::tracepoint, "",
                          fmt::format("proxy: the tick timer's address is unknown (tick_nohz_handler, "
                                      "tick_sched_timer: {})",
                                      facts.kallsyms_error.empty() ? "not in /proc/kallsyms" : facts.kallsyms_error)});
      return true;
    });
    return true;
  }

};

class NohzEnter : public ProbeModule {
 public:
  NohzEnter() {
    ProbeSpec& p = spec_;
    p.id = SH_P_NOHZ_ENTER;
    p.name = "nohz_enter";
    p.target = "nohz_balance_enter_idle";
    p.what = "calls (tick stopped on the idle path) and first calls that set the CPU in nohz.idle_cpus_mask";
    p.symbols = {"nohz_balance_enter_idle"};
    p.timed = false;
    p.proxy = ProxySpec{{{"tick_stop", false}},
                        "proxy: timer:tick_stop(success=1) on the idle task",
                        "1:1 with calls except the function's early returns (inactive, isolated or "
                        "null-domain CPUs), which the proxy still counts; measured 0.0 % (6.12 QEMU "
                        "guest, mixed load, tests/vm)"};
    p.slot.slot_words = sizeof(sh_nohz_enter_slot) / W;
    p.slot.fields = {counter("calls", SH_WORDS(sh_nohz_enter_slot, calls), "function entries"),
                       counter("first", SH_WORDS(sh_nohz_enter_slot, first),
                               "calls with rq->nohz_tick_stopped clear: set the mask bit")};
    p.primary = "calls";
    p.secondary = {"first"};
    p.columns = {{"nohz_enter/s", "calls"}};
    // fair.c nohz_balance_enter_idle() (kernel-notes 1.2)
    p.accesses = {
        {"calls", "", -1, 0, "nohz.has_blocked", true,
         "fair.c nohz_balance_enter_idle(): WRITE_ONCE(nohz.has_blocked, 1), every call", ""},
        {"first", "", -1, 0, "nohz.idle_cpus_mask[cpu]", true,
         "fair.c nohz_balance_enter_idle(): cpumask_set_cpu(cpu, nohz.idle_cpus_mask) (lock bts)", ""},
        {"first", "", -1, 0, "nohz.nr_cpus", true, "fair.c nohz_balance_enter_idle(): atomic_inc(&nohz.nr_cpus) (<= 6.19)", ""},
        {"first", "", -1, 0, "nohz.needs_update", true, "fair.c nohz_balance_enter_idle(): WRITE_ONCE(nohz.needs_update, 1)", ""},
    };
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int index) const override {
    if (b == Backend::tracepoint)
      return role == ProgRole::tracepoint && index == 0 ? s->progs.nohz_enter__tp_tick_stop : nullptr;
    return function_program(b, role, s->progs.nohz_enter__fentry, nullptr, s->progs.nohz_enter__kprobe, nullptr);
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.nohz_enter_slots; }

};

class NohzKick : public ProbeModule {
 public:
  NohzKick() {
    ProbeSpec& p = spec_;
    p.id = SH_P_NOHZ_KICK;
    p.name = "nohz_kick";
    p.target = "nohz_balancer_kick";
    p.what = "calls (every tick of an active CPU) and duration";
    p.symbols = {"nohz_balancer_kick"};
    p.inline_hosts = {"sched_balance_trigger", "trigger_load_balance"};
    p.timed = true;
    p.slot.slot_words = sizeof(sh_nohz_kick_slot) / W;
    func_fields(p.slot.fields, SH_WORDS(sh_nohz_kick_slot, f));
    p.slot.fields.push_back(counter("idle_ticks", SH_WORDS(sh_nohz_kick_slot, idle_ticks),
                                      "calls with rq->idle_balance set (return at once)"));
    p.primary = "calls";
    p.fleet = FleetShow::rate_p99;
    p.secondary = {"idle_ticks"};
    p.hist = "lat";
    p.columns = {{"nohz_kick/s", "calls"}};
    // fair.c nohz_balancer_kick() on a busy tick (calls - idle_ticks; kernel-notes 1.3)
    p.accesses = {
        {"calls", "idle_ticks", -1, 0, "nohz.nr_cpus", false,
         "fair.c nohz_balancer_kick(): atomic_read(&nohz.nr_cpus), the first check of every busy tick (<= 6.19)", ""},
        {"calls", "idle_ticks", -1, 0, "nohz.has_blocked", false,
         "fair.c nohz_balancer_kick(): READ_ONCE(nohz.has_blocked) (7.0+: the first check)",
         "read on every busy tick; <= 6.19 skips it while nohz.nr_cpus is 0"},
        {"calls", "idle_ticks", -1, 0, "nohz.next_balance", false,
         "fair.c nohz_balancer_kick(): time_before(now, nohz.next_balance)",
         "read on every busy tick; skipped while nohz.nr_cpus is 0 (<= 6.19)"},
    };
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int) const override {
    return function_program(b, role, s->progs.nohz_kick__fentry, s->progs.nohz_kick__fexit, s->progs.nohz_kick__kprobe,
                            s->progs.nohz_kick__kretprobe);
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.nohz_kick_slots; }

};

SCHEDHOT_PROBE_MODULE(NohzExit, SH_P_NOHZ_EXIT);
SCHEDHOT_PROBE_MODULE(NohzEnter, SH_P_NOHZ_ENTER);
SCHEDHOT_PROBE_MODULE(NohzKick, SH_P_NOHZ_KICK);

}  // namespace

}  // namespace schedhot
