// The tick-broadcast probes (bpf/tick_bcast.bpf.c): bcast_lock (calls of each function
// that takes tick_broadcast_lock) and bcast_wait (lock:contention_begin/end on it, with
// the lock's address from kallsyms/System.map or learned from contention stacks).
#include <algorithm>
#include <bit>
#include <cstdlib>

#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/learn.h"
#include "probe/modules/fields.h"
#include "probe/resolve.h"
#include "schedhot.skel.h"

namespace schedhot {

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

using namespace fields;

class BcastLock : public ProbeModule {
 public:
  BcastLock() {
    ProbeSpec& p = spec_;
    p.id = SH_P_BCAST_LOCK;
    p.name = "bcast_lock";
    p.target = "tick_broadcast_lock (the functions that take it)";
    p.what = "calls of each function that takes tick_broadcast_lock (an upper bound on acquisitions)";
    p.kind = ProbeKind::sites;
    p.symbols.assign(kBcastSites.begin(), kBcastSites.end());
    p.slot.slot_words = sizeof(sh_bcast_lock_slot) / W;
    p.slot.fields = {array("calls", SH_WORDS(sh_bcast_lock_slot, calls), SH_BCAST_SITES,
                             "calls per lock-taking function, in kBcastSites order")};
    p.primary = "calls";
    p.columns = {{"bcast_lock/s", "calls"}};
    p.details_list_zeros = true;  // every site, called or not
    // tick-broadcast.c: every counted function takes raw_spin_lock(&tick_broadcast_lock)
    p.accesses = {{"calls", "", -1, 0, "tick_broadcast_lock", true,
                   "tick-broadcast.c: raw_spin_lock(&tick_broadcast_lock) (queued_spin_lock: cmpxchg) and its unlock",
                   "one acquisition per call (an upper bound: some paths return before the lock)"}};
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int i) const override {
    if ((role != ProgRole::site && role != ProgRole::exit) || i < 0 || i >= SH_BCAST_SITES) return nullptr;
    // Per site (BCAST_SITE(i) in tick_bcast.bpf.c): an fentry and a kprobe program, and
    // their exits (the holder state, AttachOptions::bcast_holder).
#define SH_SITE_PROGS(kind)                                                                            \
  {s->progs.bcast_lock__##kind##_0, s->progs.bcast_lock__##kind##_1, s->progs.bcast_lock__##kind##_2,           \
   s->progs.bcast_lock__##kind##_3, s->progs.bcast_lock__##kind##_4, s->progs.bcast_lock__##kind##_5,           \
   s->progs.bcast_lock__##kind##_6, s->progs.bcast_lock__##kind##_7}
    bpf_program* fentry[SH_BCAST_SITES] = SH_SITE_PROGS(fentry);
    bpf_program* kprobe[SH_BCAST_SITES] = SH_SITE_PROGS(kprobe);
    bpf_program* fexit[SH_BCAST_SITES] = SH_SITE_PROGS(fexit);
    bpf_program* kretprobe[SH_BCAST_SITES] = SH_SITE_PROGS(kretprobe);
#undef SH_SITE_PROGS
    const bool exit = role == ProgRole::exit;
    return b == Backend::fentry ? (exit ? fexit : fentry)[i] : b == Backend::kprobe ? (exit ? kretprobe : kprobe)[i] : nullptr;
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.bcast_lock_slots; }
  /// Attached where the machine never takes the path: say so (no broadcast device, ARAT).
  /// With the sites' exits attached (AttachOptions::bcast_holder): the sites that keep the
  /// holder state, enabled in the object now that their exits are in.
  void after_attach(AttachContext& ctx) const override {
    uint32_t mask = 0;
    int asked = 0;
    std::string exit_why;
    for (size_t i = 0; i < ctx.status.sites.size() && i < SH_BCAST_SITES; ++i) {
      const SiteStatus& ss = ctx.status.sites[i];
      if (ss.exit_attached) mask |= 1u << i;
      if (ss.exit_attached || !ss.exit_error.empty()) ++asked;
      if (!ss.exit_error.empty() && exit_why.empty()) exit_why = ss.exit_error;
    }
    if (asked > 0) {
      if (ctx.skel) ctx.skel->bss->sh_bcast_exit_mask = mask;
      ctx.status.notes.push_back(fmt::format("{}: {} of {} attached sites keep each CPU's holder state{}",
                                             kHolderNote, std::popcount(mask), asked,
                                             exit_why.empty() ? "" : " (" + exit_why + ")"));
    }
    std::vector<std::string> why;
    if (ctx.host.broadcast_device == "<NULL>") why.push_back("no tick broadcast device");
    if (ctx.host.arat) why.push_back("ARAT present (the local APIC timer keeps running in deep idle states)");
    if (!why.empty()) {
      std::string s = "attached, path not in use on this machine: ";
      for (size_t i = 0; i < why.size(); ++i) s += (i ? ", " : "") + why[i];
      ctx.status.notes.push_back(s);
    }
  }
  std::vector<std::string> meta_labels() const override { return {kBcastSites.begin(), kBcastSites.end()}; }

};

/// Reads contention stacks until tick_broadcast_lock's address is learned, then sets it
/// in the BPF object and replaces the "address unknown" note.
class LockLearnPoller : public ProbePoller {
 public:
  LockLearnPoller(schedhot_bpf* skel, std::unique_ptr<LockLearner> l) : skel_(skel), learner_(std::move(l)) {}
  bool poll(int timeout_ms, ProbeStatus& st) override {
    if (!learner_) return false;
    learner_->poll(timeout_ms);
    auto found = learner_->take_result();
    if (!found) return false;
    skel_->bss->sh_bcast_lock_addr = found->addr;
    skel_->bss->sh_bcast_learn = 0;
    for (auto& n : st.notes)
      if (n.rfind(kLockAddrUnknownNote, 0) == 0)
        n = fmt::format("tick_broadcast_lock at {:#x} learned from {} contention stacks (first non-lock frame {})",
                        found->addr, found->votes, found->frame);
    learner_.reset();
    return true;
  }
  bool done() const override { return !learner_; }

 private:
  schedhot_bpf* skel_;
  std::unique_ptr<LockLearner> learner_;
};

bool has_note(const ProbeStatus& st, std::string_view prefix, std::string_view part = {}) {
  return std::any_of(st.notes.begin(), st.notes.end(), [&](const std::string& n) {
    return n.rfind(prefix, 0) == 0 && (part.empty() || n.find(part) != std::string::npos);
  });
}

class BcastWait : public ProbeModule {
 public:
  BcastWait() {
    ProbeSpec& p = spec_;
    p.id = SH_P_BCAST_WAIT;
    p.name = "bcast_wait";
    p.target = "tick_broadcast_lock (lock:contention_begin/end)";
    p.what = "contentions on tick_broadcast_lock and the wait time";
    p.kind = ProbeKind::tracepoint;
    p.tp_programs = {{"contention_begin", false, "5.19"}, {"contention_end", false, "5.19"}};
    p.slot.slot_words = sizeof(sh_bcast_wait_slot) / W;
    p.slot.fields = {counter("contentions", SH_WORDS(sh_bcast_wait_slot, contentions), "contention_begin on the lock"),
                       counter("ends", SH_WORDS(sh_bcast_wait_slot, ends), "contention_end on the lock (timed)"),
                       counter("all_locks", SH_WORDS(sh_bcast_wait_slot, all_locks), "contention_begin on any lock"),
                       counter("learn_sent", SH_WORDS(sh_bcast_wait_slot, learn_sent), "stacks sent to learn the address"),
                       priv(SH_WORDS(sh_bcast_wait_slot, ts), 1),
                       hist("lat", SH_WORDS(sh_bcast_wait_slot, lat), "wait time contention_begin -> end, ns")};
    catch_fields(p.slot.fields, SH_WORDS(sh_bcast_wait_slot, c));
    p.primary = "contentions";
    p.fleet = FleetShow::rate;  // its histogram is a wait: severity has it, not a p99 column
    p.wait_lock = "tick_broadcast_lock";
    p.secondary = {"all_locks"};
    p.accesses = {{"contentions", "", -1, 0, "tick_broadcast_lock", false,
                   "qspinlock.c queued_spin_lock_slowpath(): the waiter spins reading the lock word",
                   "one read per contention (a waiter re-reads the line each time the holder writes it)"}};
    p.hist = "lat";
    p.hist_what = "wait time";
    p.columns = {{"bcast_wait/s", "contentions"}};
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int index) const override {
    if (b != Backend::tracepoint || role != ProgRole::tracepoint) return nullptr;
    return index == 0 ? s->progs.bcast_wait__tp_begin : index == 1 ? s->progs.bcast_wait__tp_end : nullptr;
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.bcast_wait_slots; }
  /// Also the learning perf buffer: one ring per CPU in this probe's object only.
  void size_maps(schedhot_bpf* s, bool kept, uint32_t ncpus) const override {
    ProbeModule::size_maps(s, kept, ncpus);
    bpf_map__set_max_entries(s->maps.bcast_learn_events, kept ? ncpus : 1);
  }
  /// The lock's address (plan_lock_address): set it, or start learning it; and the
  /// host's contention_begin visibility.
  void after_attach(AttachContext& ctx) const override {
    ProbeStatus& bw = ctx.status;
    LockAddressPlan a = plan_lock_address(ctx.facts);
    bw.notes.push_back(a.note);
    if (!a.ambiguous.empty()) bw.ambiguous.push_back({"tick_broadcast_lock", a.ambiguous, a.ambiguous_in});
    if (ctx.skel && a.addr) {
      ctx.skel->bss->sh_bcast_lock_addr = a.addr;
    } else if (ctx.skel && a.learn) {
      ctx.skel->bss->sh_bcast_learn = 1;
      auto learner = std::make_unique<LockLearner>(ctx.skel, ctx.facts.kallsyms);
      if (!learner->ok())
        bw.notes.push_back("learning unavailable: " + learner->error());
      else if (ctx.poller)
        *ctx.poller = std::make_unique<LockLearnPoller>(ctx.skel, std::move(learner));
    }
    bw.notes.push_back("contention_begin visibility: " + spinlock_blind_spot(ctx.host));
  }
  /// A host whose spinlocks emit no contention events (virt_spin_lock), or the lock's
  /// address never learned (its contentions cannot be told from other locks').
  std::string blind_reason(const HostInfo& host, const ProbeStatus& st) const override {
    if (host.spinlock == SpinlockMode::virt_spin_lock) return spinlock_blind_spot(host);
    if (has_note(st, kLockAddrUnknownNote, kLockAddrUnlearnable))
      return "tick_broadcast_lock's address is unknown and cannot be learned without kallsyms addresses: its "
             "contentions cannot be told from other locks'";
    if (has_note(st, kLockAddrUnknownNote))
      return "tick_broadcast_lock's address was not learned (no contention stack with a tick-broadcast function as "
             "its first non-lock frame): its contentions cannot be told from other locks'";
    return "";
  }

  /// A caught wait's detail (abi.h SH_HOLD_D_*: who held the lock when the wait began)
  /// says something only where bcast_lock kept each CPU's holder state: its note
  /// "holder state: N of M ..." with N > 0.
  bool caught_detail_kept(const CaughtRun& run) const override {
    const ProbeStatus* bl = run.status ? run.status(SH_P_BCAST_LOCK) : nullptr;
    if (!bl) return false;
    for (const std::string& n : bl->notes)
      if (n.rfind(kHolderNote, 0) == 0 && n.size() > kHolderNote.size() + 2)
        return std::strtoull(n.c_str() + kHolderNote.size() + 2, nullptr, 10) > 0;
    return false;
  }
  /// "holder CPU 3 in __tick_broadcast_oneshot_control", or why none was seen.
  std::string caught_detail_text(uint64_t detail, const CaughtRun&) const override {
    const uint64_t cpu = SH_HOLD_D_CPU(detail), site = SH_HOLD_D_SITE(detail), cands = SH_HOLD_D_CANDS(detail);
    if (!cpu)
      return "holder not seen (no other CPU inside a lock-taking site and not waiting: the lock may have just passed "
             "to a waiter)";
    const std::string where = site < kBcastSites.size() ? kBcastSites[site] : fmt::format("site {}", site);
    return cands > 1 ? fmt::format("holder CPU {} in {} (the earliest in of {} CPUs inside a site)", cpu - 1, where, cands)
                     : fmt::format("holder CPU {} in {}", cpu - 1, where);
  }
  /// holder_cpu (null: not seen), holder_site (a kBcastSites name), holder_candidates and
  /// holder_inside_ns (how long the holder had been inside its site when the wait began).
  void caught_detail_fields(uint64_t detail, nlohmann::json& o) const override {
    const uint64_t cpu = SH_HOLD_D_CPU(detail), site = SH_HOLD_D_SITE(detail);
    o["holder_cpu"] = cpu ? nlohmann::json(cpu - 1) : nlohmann::json(nullptr);
    o["holder_site"] = !cpu ? nlohmann::json(nullptr)
                       : site < kBcastSites.size() ? nlohmann::json(kBcastSites[site]) : nlohmann::json(site);
    o["holder_candidates"] = SH_HOLD_D_CANDS(detail);
    o["holder_inside_ns"] = cpu ? nlohmann::json(SH_HOLD_D_INSIDE_NS(detail)) : nlohmann::json(nullptr);
  }
  /// A holder CPU or a candidate count past the machine's CPUs, or a site that is none.
  std::string caught_detail_error(uint64_t detail, uint32_t ncpus) const override {
    if (SH_HOLD_D_CPU(detail) <= ncpus && SH_HOLD_D_SITE(detail) < SH_BCAST_SITES && SH_HOLD_D_CANDS(detail) <= ncpus)
      return "";
    return fmt::format("names holder CPU {} site {} of {} candidates ({} CPUs, {} sites)",
                       int64_t(SH_HOLD_D_CPU(detail)) - 1, SH_HOLD_D_SITE(detail), SH_HOLD_D_CANDS(detail), ncpus,
                       SH_BCAST_SITES);
  }

};

SCHEDHOT_PROBE_MODULE(BcastLock, SH_P_BCAST_LOCK);
SCHEDHOT_PROBE_MODULE(BcastWait, SH_P_BCAST_WAIT);

}  // namespace

}  // namespace schedhot
