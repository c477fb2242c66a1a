#include "probe/catalog.h"

#include <algorithm>
#include <cstddef>

namespace schedhot {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::fentry: return "fentry";
    case Backend::kprobe: return "kprobe";
    case Backend::tracepoint: return "tracepoint";
    case Backend::none: return "none";
  }
  return "none";
}

const char* to_string(FieldKind k) {
  switch (k) {
    case FieldKind::counter: return "counter";
    case FieldKind::counter_array: return "counter_array";
    case FieldKind::hist: return "hist";
    case FieldKind::priv: return "private";
  }
  return "counter";
}

const Field* SlotLayout::find(std::string_view name) const {
  for (auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

const std::array<const char*, SH_BCAST_SITES> kBcastSites = {
    "__tick_broadcast_oneshot_control",  // every TIMER_STOP idle enter/exit with C3STOP: the hot one
    "tick_handle_oneshot_broadcast",     // broadcast device IRQ, oneshot mode
    "tick_handle_periodic_broadcast",    // broadcast device IRQ, periodic mode
    "tick_broadcast_offline",            // CPU hotplug teardown
    "hotplug_cpu__broadcast_tick_pull",  // dead CPU takedown
    "tick_broadcast_control",            // cpuidle/ACPI on/off/force
    "tick_device_uses_broadcast",        // tick device setup (CPU online)
    "tick_broadcast_switch_to_oneshot",  // switch to oneshot (boot)
};

namespace {

constexpr uint32_t W = 8;  // bytes per word

#define WORDS(T, member) static_cast<uint32_t>(offsetof(T, member) / W)

Field counter(const char* name, uint32_t off, const char* doc) { return {name, off, 1, FieldKind::counter, doc}; }
Field array(const char* name, uint32_t off, uint32_t n, const char* doc) {
  return {name, off, n, FieldKind::counter_array, doc};
}
Field hist(const char* name, uint32_t off, const char* doc) {
  return {name, off, sizeof(sh_hist) / W, FieldKind::hist, doc};
}
Field priv(uint32_t off, uint32_t n) { return {"_private", off, n, FieldKind::priv, "BPF-private state"}; }

// The fields of an embedded struct sh_func at word offset base.
void func_fields(std::vector<Field>& v, uint32_t base) {
  v.push_back(counter("calls", base + WORDS(sh_func, calls), "function entries"));
  v.push_back(counter("nested", base + WORDS(sh_func, nested), "entries that found 4 open entries (exits lost); the timing stack was reset"));
  v.push_back(counter("orphan_exits", base + WORDS(sh_func, orphan_exits), "exits without a seen entry"));
  v.push_back(priv(base + WORDS(sh_func, t), sizeof(sh_timing) / W));
  v.push_back(hist("lat", base + WORDS(sh_func, lat), "entry-to-exit time, ns"));
}

std::vector<ProbeSpec> build() {
  std::vector<ProbeSpec> c(SH_NPROBES);

  {
    ProbeSpec& p = c[SH_P_NOHZ_EXIT];
    p.id = SH_P_NOHZ_EXIT;
    p.name = "nohz_exit";
    p.target = "nohz_balance_exit_idle";
    p.what = "calls (every busy tick), duration, and calls that cleared the CPU from nohz.idle_cpus_mask";
    p.symbols = {"nohz_balance_exit_idle"};
    p.timed = true;
    p.proxy = ProxySpec{{{"nohz_exit__tp_tick", "hrtimer_expire_entry", false}},
                        "proxy: busy tick (tp_btf/hrtimer_expire_entry of the tick timer where idle_cpu() is false)",
                        "counts ticks, not calls: misses calls from CPU hotplug, counts ticks on inactive or "
                        "null-domain CPUs where sched_balance_trigger() returns first; needs high-resolution "
                        "timers; no duration; measured -0.3 to +0.7 % (6.12 QEMU guest, mixed load, tests/vm)",
                        {"nested", "orphan_exits"}};
    p.map = "nohz_exit_slots";
    p.layout.slot_words = sizeof(sh_nohz_exit_slot) / W;
    func_fields(p.layout.fields, WORDS(sh_nohz_exit_slot, f));
    p.layout.fields.push_back(counter("worked", WORDS(sh_nohz_exit_slot, worked),
                                      "calls with rq->nohz_tick_stopped set: wrote the nohz cacheline"));
    p.primary = "calls";
    p.secondary = {"worked"};
    p.hist = "lat";
  }
  {
    ProbeSpec& p = c[SH_P_NOHZ_ENTER];
    p.id = SH_P_NOHZ_ENTER;
    p.name = "nohz_enter";
    p.target = "nohz_balance_enter_idle";
    p.what = "calls (tick stopped on the idle path) and first calls that set the CPU in nohz.idle_cpus_mask";
    p.symbols = {"nohz_balance_enter_idle"};
    p.timed = false;
    p.proxy = ProxySpec{{{"nohz_enter__tp_tick_stop", "tick_stop", false}},
                        "proxy: timer:tick_stop(success=1) on the idle task",
                        "1:1 with calls except the function's early returns (inactive, isolated or "
                        "null-domain CPUs), which the proxy still counts; measured 0.0 % (6.12 QEMU "
                        "guest, mixed load, tests/vm)"};
    p.map = "nohz_enter_slots";
    p.layout.slot_words = sizeof(sh_nohz_enter_slot) / W;
    p.layout.fields = {counter("calls", WORDS(sh_nohz_enter_slot, calls), "function entries"),
                       counter("first", WORDS(sh_nohz_enter_slot, first),
                               "calls with rq->nohz_tick_stopped clear: set the mask bit")};
    p.primary = "calls";
    p.secondary = {"first"};
  }
  {
    ProbeSpec& p = c[SH_P_NOHZ_KICK];
    p.id = SH_P_NOHZ_KICK;
    p.name = "nohz_kick";
    p.target = "nohz_balancer_kick";
    p.what = "calls (every tick of an active CPU) and duration";
    p.symbols = {"nohz_balancer_kick"};
    p.inline_hosts = {"sched_balance_trigger", "trigger_load_balance"};
    p.timed = true;
    p.map = "nohz_kick_slots";
    p.layout.slot_words = sizeof(sh_nohz_kick_slot) / W;
    func_fields(p.layout.fields, WORDS(sh_nohz_kick_slot, f));
    p.layout.fields.push_back(counter("idle_ticks", WORDS(sh_nohz_kick_slot, idle_ticks),
                                      "calls with rq->idle_balance set (return at once)"));
    p.primary = "calls";
    p.secondary = {"idle_ticks"};
    p.hist = "lat";
  }
  {
    ProbeSpec& p = c[SH_P_ILB_KICK];
    p.id = SH_P_ILB_KICK;
    p.name = "ilb_kick";
    p.target = "kick_ilb (csd:csd_queue_cpu, func == nohz_csd_func)";
    p.what = "ILB kicks queued by this CPU (by kick flags) and received by it as the ILB target";
    p.kind = ProbeKind::tracepoint;
    p.tp_programs = {{"ilb_kick__tp_queue", "csd_queue_cpu", true, "6.5"},
                     {"ilb_kick__tp_entry", "csd_function_entry", true, "6.5"}};
    p.map = "ilb_kick_slots";
    p.layout.slot_words = sizeof(sh_ilb_slot) / W;
    p.layout.fields = {counter("sent", WORDS(sh_ilb_slot, sent), "kicks queued by this CPU"),
                       counter("received", WORDS(sh_ilb_slot, received), "kicks run on this CPU"),
                       counter("sent_self", WORDS(sh_ilb_slot, sent_self), "kicks this CPU sent to itself"),
                       array("flags", WORDS(sh_ilb_slot, flags), SH_ILB_FLAGS,
                             "sent kicks by target rq->nohz_flags & 0xf (BALANCE=1 STATS=2 NEWILB=4 NEXT=8)")};
    p.primary = "sent";
    p.secondary = {"received"};
  }
  {
    ProbeSpec& p = c[SH_P_CPUPRI_SET];
    p.id = SH_P_CPUPRI_SET;
    p.name = "cpupri_set";
    p.target = "cpupri_set";
    p.what = "calls, duration, old->new priority class transitions, writes per cpupri vector";
    p.symbols = {"cpupri_set"};
    p.timed = true;
    p.proxy = ProxySpec{{{"cpupri_set__tp_switch", "sched_switch", false}},
                        "proxy: cpu_to_pri[cpu] changes seen at tp_btf/sched_switch",
                        "lower bound: a change undone before the next context switch is missed; no duration; "
                        "measured -1.4 to -6.1 % (6.12 QEMU guest, mixed load, tests/vm)",
                        {"noop", "nested", "orphan_exits"}};
    p.map = "cpupri_set_slots";
    p.layout.slot_words = sizeof(sh_cpupri_set_slot) / W;
    func_fields(p.layout.fields, WORDS(sh_cpupri_set_slot, f));
    p.layout.fields.push_back(counter("noop", WORDS(sh_cpupri_set_slot, noop), "calls with new == old"));
    p.layout.fields.push_back(array("trans", WORDS(sh_cpupri_set_slot, trans), SH_CP_NCLASS * SH_CP_NCLASS,
                                    "transitions [old class*4 + new class], classes INVALID NORMAL RT HIGHER"));
    p.layout.fields.push_back(array("vec_set", WORDS(sh_cpupri_set_slot, vec_set), SH_CPUPRI_VECS,
                                    "cpumask_set_cpu on pri_to_cpu[i]"));
    p.layout.fields.push_back(array("vec_clear", WORDS(sh_cpupri_set_slot, vec_clear), SH_CPUPRI_VECS,
                                    "cpumask_clear_cpu on pri_to_cpu[i]"));
    p.layout.fields.push_back(priv(WORDS(sh_cpupri_set_slot, last_pri), 1));
    p.primary = "calls";
    p.secondary = {"noop"};
    p.hist = "lat";
  }
  {
    ProbeSpec& p = c[SH_P_CPUPRI_FIND];
    p.id = SH_P_CPUPRI_FIND;
    p.name = "cpupri_find";
    p.target = "cpupri_find_fitness";
    p.what = "calls (cpupri_find tail-calls cpupri_find_fitness), duration, calls that found CPUs";
    p.symbols = {"cpupri_find_fitness", "cpupri_find"};
    p.timed = true;
    p.map = "cpupri_find_slots";
    p.layout.slot_words = sizeof(sh_cpupri_find_slot) / W;
    func_fields(p.layout.fields, WORDS(sh_cpupri_find_slot, f));
    p.layout.fields.push_back(counter("found", WORDS(sh_cpupri_find_slot, found), "calls returning 1"));
    p.primary = "calls";
    p.secondary = {"found"};
    p.hist = "lat";
  }
  {
    ProbeSpec& p = c[SH_P_BCAST_LOCK];
    p.id = SH_P_BCAST_LOCK;
    p.name = "bcast_lock";
    p.target = "tick_broadcast_lock (the functions that take it)";
    p.what = "calls of each function that takes tick_broadcast_lock (an upper bound on acquisitions)";
    p.kind = ProbeKind::sites;
    p.symbols.assign(kBcastSites.begin(), kBcastSites.end());
    p.map = "bcast_lock_slots";
    p.layout.slot_words = sizeof(sh_bcast_lock_slot) / W;
    p.layout.fields = {array("calls", WORDS(sh_bcast_lock_slot, calls), SH_BCAST_SITES,
                             "calls per lock-taking function, in kBcastSites order")};
    p.primary = "calls";
  }
  {
    ProbeSpec& p = c[SH_P_BCAST_WAIT];
    p.id = SH_P_BCAST_WAIT;
    p.name = "bcast_wait";
    p.target = "tick_broadcast_lock (lock:contention_begin/end)";
    p.what = "contentions on tick_broadcast_lock and the wait time";
    p.kind = ProbeKind::tracepoint;
    p.tp_programs = {{"bcast_wait__tp_begin", "contention_begin", false, "5.19"},
                     {"bcast_wait__tp_end", "contention_end", false, "5.19"}};
    p.map = "bcast_wait_slots";
    p.layout.slot_words = sizeof(sh_bcast_wait_slot) / W;
    p.layout.fields = {counter("contentions", WORDS(sh_bcast_wait_slot, contentions), "contention_begin on the lock"),
                       counter("ends", WORDS(sh_bcast_wait_slot, ends), "contention_end on the lock (timed)"),
                       counter("all_locks", WORDS(sh_bcast_wait_slot, all_locks), "contention_begin on any lock"),
                       counter("learn_sent", WORDS(sh_bcast_wait_slot, learn_sent), "stacks sent to learn the address"),
                       priv(WORDS(sh_bcast_wait_slot, ts), 1),
                       hist("lat", WORDS(sh_bcast_wait_slot, lat), "wait time contention_begin -> end, ns")};
    p.primary = "contentions";
    p.secondary = {"all_locks"};
    p.hist = "lat";
  }
  {
    ProbeSpec& p = c[SH_P_IDLE];
    p.id = SH_P_IDLE;
    p.name = "idle";
    p.target = "power:cpu_idle";
    p.what = "idle entries and exits, entries by idle state, idle residency";
    p.kind = ProbeKind::tracepoint;
    p.tp_programs = {{"idle__tp_cpu_idle", "cpu_idle", false}};
    p.map = "idle_slots";
    p.layout.slot_words = sizeof(sh_idle_slot) / W;
    p.layout.fields = {counter("entries", WORDS(sh_idle_slot, entries), "idle entries"),
                       counter("exits", WORDS(sh_idle_slot, exits), "idle exits"),
                       array("by_state", WORDS(sh_idle_slot, by_state), SH_IDLE_STATES,
                             "entries by idle state index (7 = 7 and deeper)"),
                       priv(WORDS(sh_idle_slot, ts), 1),
                       hist("lat", WORDS(sh_idle_slot, lat), "idle residency, ns")};
    p.primary = "exits";
    p.secondary = {"entries"};
    p.hist = "lat";
  }
  return c;
}

}  // namespace

const std::vector<ProbeSpec>& probe_catalog() {
  static const std::vector<ProbeSpec> c = build();
  return c;
}

const ProbeSpec* find_probe(std::string_view name) {
  for (auto& p : probe_catalog())
    if (p.name == name) return &p;
  return nullptr;
}

bool counter_observed(std::string_view name, bool proxy, std::string_view field) {
  const ProbeSpec* spec = proxy ? find_probe(name) : nullptr;
  if (!spec || !spec->proxy) return true;
  const auto& u = spec->proxy->unseen;
  return std::find(u.begin(), u.end(), field) == u.end();
}

}  // namespace schedhot
