// The generic attach loop (src/probe/attacher.h) on fixture KernelFacts and a fake
// BpfLoader that fails per (backend, symbol) with a chosen errno: refusals shared across
// probes, fallbacks, the tried list, sites, copies, reasons and the modules' notes; the
// sites probe's steps one by one; the modules' table columns and report sections.
#include <gtest/gtest.h>
#include <cerrno>
#include <map>

#include <nlohmann/json.hpp>

#include "probe/attacher.h"
#include "probe/module.h"

using namespace schedhot;

namespace {

KernelFacts make_facts(const std::string& kallsyms, std::initializer_list<const char*> btf_funcs,
                       std::initializer_list<const char*> tps = {}) {
  KernelFacts f;
  f.btf = true;
  for (auto* s : btf_funcs) f.btf_funcs.insert(s);
  for (auto* s : tps) f.tracepoints.insert(s);
  f.kprobes = true;
  f.kallsyms = SymbolTable::parse(kallsyms);
  return f;
}

/// A loader that "loads" everything unless told otherwise: fail_load[(backend, key)] fails
/// the load with that errno (at_load, as the verifier or a policy does), fail_attach the
/// attach. key: the target symbol, or the probe name for tracepoint programs.
class FakeLoader : public BpfLoader {
 public:
  using Key = std::pair<Backend, std::string>;
  std::map<Key, int> fail_load, fail_attach;
  int fail_map = 0;  ///< errno for map_slots, 0 = maps
  std::vector<LoadRequest> requests;
  std::vector<LoadHandle> released;
  std::vector<bool> live;

  static std::string key_of(const LoadRequest& r, const ProgRequest& p) {
    return p.backend == Backend::tracepoint ? r.module->spec().name : p.target;
  }
  LoadResult load_attach(const LoadRequest& req) override {
    requests.push_back(req);
    LoadResult r;
    for (auto& p : req.progs)
      if (auto it = fail_load.find({p.backend, key_of(req, p)}); it != fail_load.end()) {
        r.err = it->second;
        r.at_load = true;
        r.error = describe_attach_error(p.backend, r.err, req.what);
        return r;
      }
    for (auto& p : req.progs) {
      auto it = fail_attach.find({p.backend, key_of(req, p)});
      int e = it == fail_attach.end() ? 0 : it->second;
      if (req.partial) {
        r.attach_errs.push_back(e);
      } else if (e) {
        r.err = e;
        r.error = describe_attach_error(p.backend, e, p.target.empty() ? req.what : p.target);
        return r;
      }
    }
    r.handle = static_cast<LoadHandle>(live.size());
    live.push_back(true);
    return r;
  }
  SlotMapping map_slots(LoadHandle) override {
    if (fail_map) return {nullptr, fail_map};
    return {words_, 0};
  }
  void release(LoadHandle h) override {
    released.push_back(h);
    live.at(size_t(h)) = false;
  }
  schedhot_bpf* object(LoadHandle) override { return nullptr; }
  std::vector<int> program_fds(LoadHandle) override { return {}; }
  /// Requests of one probe, in order.
  std::vector<LoadRequest> of(const char* probe) const {
    std::vector<LoadRequest> v;
    for (auto& r : requests)
      if (r.module->spec().name == probe) v.push_back(r);
    return v;
  }
  int live_count() const { return static_cast<int>(std::count(live.begin(), live.end(), true)); }

 private:
  uint64_t words_[8] = {};
};

const char* k612 =
    "ffffffff81100400 T nohz_balance_exit_idle\n"
    "ffffffff81100500 T nohz_balance_enter_idle\n"
    "ffffffff81100600 T cpupri_set\n"
    "ffffffff81100710 T cpupri_find_fitness\n"
    "ffffffff81100800 T __tick_broadcast_oneshot_control\n"
    "ffffffff81100900 T tick_broadcast_offline\n"
    "ffffffff81100a00 t nohz_csd_func\n"
    "ffffffff81100b00 T tick_nohz_handler\n";

AttachOptions only(std::vector<std::string> names) {
  AttachOptions o;
  o.only = std::move(names);
  return o;
}

const std::string kFentryRefused = "fentry refused: EPERM (kernel lockdown or an LSM denies BPF tracing programs)";
const std::string kKprobeRefused = "kprobe refused: EPERM (lockdown, or CAP_PERFMON missing)";

}  // namespace

TEST(Attach, FentryEpermRefusesFentryForTheLaterProbes) {
  KernelFacts f = make_facts(k612, {"nohz_balance_exit_idle", "nohz_balance_enter_idle"});
  FakeLoader L;
  L.fail_load[{Backend::fentry, "nohz_balance_exit_idle"}] = EPERM;
  auto v = attach_all(f, HostInfo{}, only({"nohz_exit", "nohz_enter"}), L);
  // nohz_enter never tries fentry: kprobe at once, with the refusal in its tried list.
  auto enter = L.of("nohz_enter");
  ASSERT_EQ(enter.size(), 1u);
  EXPECT_EQ(enter[0].progs.at(0).backend, Backend::kprobe);
  const ProbeStatus& st = v[SH_P_NOHZ_ENTER].status;
  EXPECT_TRUE(st.attached);
  EXPECT_EQ(st.backend, Backend::kprobe);
  // Sorted by backend: the refusal, then the proxy the plan ruled out (no tick_stop).
  ASSERT_EQ(st.tried.size(), 2u);
  EXPECT_EQ(st.tried[0].backend, Backend::fentry);
  EXPECT_EQ(st.tried[0].error, kFentryRefused);
  EXPECT_EQ(st.tried[1].backend, Backend::tracepoint);
  EXPECT_EQ(st.tried[1].error, "proxy: tracepoint tick_stop not in this kernel");
  EXPECT_EQ(v[SH_P_NOHZ_EXIT].status.backend, Backend::kprobe);
}

TEST(Attach, KprobeFallbackWithoutRefusingFentryForOthers) {
  // ESRCH while attaching is about that function, not a policy: cpupri_find still tries fentry.
  KernelFacts f = make_facts(k612, {"cpupri_set", "cpupri_find_fitness"});
  FakeLoader L;
  L.fail_attach[{Backend::fentry, "cpupri_set"}] = ESRCH;
  auto v = attach_all(f, HostInfo{}, only({"cpupri_set", "cpupri_find"}), L);
  const ProbeStatus& set = v[SH_P_CPUPRI_SET].status;
  EXPECT_TRUE(set.attached);
  EXPECT_EQ(set.backend, Backend::kprobe);
  EXPECT_EQ(set.symbol, "cpupri_set");
  ASSERT_EQ(set.tried.size(), 2u);
  EXPECT_EQ(set.tried[0].error, "fentry: no BTF function cpupri_set (ESRCH)");
  EXPECT_EQ(set.tried[1].error, "proxy: tracepoint sched_switch not in this kernel");
  EXPECT_EQ(v[SH_P_CPUPRI_FIND].status.backend, Backend::fentry);
  // Timed probe: the exit program first, then the entry; kretprobe then kprobe.
  auto set_reqs = L.of("cpupri_set");
  ASSERT_EQ(set_reqs.size(), 2u);
  ASSERT_EQ(set_reqs[1].progs.size(), 2u);
  EXPECT_EQ(set_reqs[1].progs[0].role, ProgRole::exit);
  EXPECT_TRUE(set_reqs[1].progs[0].retprobe);
  EXPECT_EQ(set_reqs[1].progs[1].role, ProgRole::entry);
}

// The tick proxy matches the tick timer by its function's address: hidden (kptr_restrict)
// or absent, it would count nothing, so it is not tried and the probe says why.
/// nohz_exit attached through L where fentry and kprobes are refused (EPERM): its status.
static ProbeStatus nohz_exit_without_function_probes(const KernelFacts& f, FakeLoader& L) {
  L.fail_load[{Backend::fentry, "nohz_balance_exit_idle"}] = EPERM;
  L.fail_load[{Backend::kprobe, "nohz_balance_exit_idle"}] = EPERM;
  return attach_all(f, HostInfo{}, only({"nohz_exit"}), L)[SH_P_NOHZ_EXIT].status;
}

TEST(Attach, TickProxyNotTriedWithoutTheTickTimersAddress) {
  KernelFacts f = make_facts("ffffffff81100400 T nohz_balance_exit_idle\n", {"nohz_balance_exit_idle"},
                             {"hrtimer_expire_entry", "hrtimer_expire_exit"});
  f.kallsyms_error = "addresses hidden (kptr_restrict)";
  FakeLoader L;
  const ProbeStatus st = nohz_exit_without_function_probes(f, L);
  EXPECT_FALSE(st.attached);
  EXPECT_EQ(L.of("nohz_exit").size(), 2u) << "fentry and kprobe tried, the proxy not";
  bool said = false;
  for (const auto& t : st.tried)
    said |= t.error.find("tick timer's address is unknown") != std::string::npos &&
            t.error.find("kptr_restrict") != std::string::npos;
  EXPECT_TRUE(said) << st.reason;
  EXPECT_NE(st.reason.find("tick timer's address is unknown"), std::string::npos) << st.reason;
  // With fentry allowed the address does not matter.
  FakeLoader ok;
  EXPECT_TRUE(attach_all(f, HostInfo{}, only({"nohz_exit"}), ok)[SH_P_NOHZ_EXIT].status.attached);
}

TEST(Attach, ProxyWhenFentryAndKprobeAreRefusedAndTriedInOrder) {
  KernelFacts f = make_facts(k612, {"nohz_balance_exit_idle"}, {"hrtimer_expire_entry", "hrtimer_expire_exit"});
  FakeLoader L;
  const ProbeStatus st = nohz_exit_without_function_probes(f, L);
  EXPECT_TRUE(st.attached);
  EXPECT_TRUE(st.proxy);
  EXPECT_EQ(st.backend, Backend::tracepoint);
  EXPECT_EQ(st.symbol, "tp_btf/hrtimer_expire_entry, tp_btf/hrtimer_expire_exit");
  ASSERT_EQ(st.tried.size(), 2u);
  EXPECT_EQ(st.tried[0].error, kFentryRefused);
  EXPECT_EQ(st.tried[1].error, kKprobeRefused);
  auto reqs = L.of("nohz_exit");
  ASSERT_EQ(reqs.size(), 3u);
  ASSERT_EQ(reqs[2].progs.size(), 2u);
  EXPECT_EQ(reqs[2].progs.at(0).role, ProgRole::tracepoint);
  EXPECT_EQ(reqs[2].progs.at(0).index, 0);
  EXPECT_EQ(reqs[2].progs.at(1).index, 1);
  EXPECT_EQ(L.live_count(), 1);
}

TEST(Attach, NothingAttachesGivesEveryReasonOnce) {
  KernelFacts f = make_facts(k612, {"nohz_balance_enter_idle"});  // no tick_stop tracepoint: no proxy
  FakeLoader L;
  L.fail_load[{Backend::fentry, "nohz_balance_enter_idle"}] = EPERM;
  L.fail_load[{Backend::kprobe, "nohz_balance_enter_idle"}] = EPERM;
  auto v = attach_all(f, HostInfo{}, only({"nohz_enter"}), L);
  const ProbeStatus& st = v[SH_P_NOHZ_ENTER].status;
  EXPECT_FALSE(st.attached);
  EXPECT_EQ(st.reason.rfind(kFentryRefused + "; " + kKprobeRefused, 0), 0u) << st.reason;
  EXPECT_EQ(L.live_count(), 0);
}

TEST(Attach, SitesMixFentryAndKprobeInOneObject) {
  KernelFacts f = make_facts(k612, {"__tick_broadcast_oneshot_control", "tick_broadcast_offline"});
  FakeLoader L;
  L.fail_load[{Backend::fentry, "tick_broadcast_offline"}] = EBUSY;
  HostInfo host;
  host.arat = true;
  auto v = attach_all(f, host, only({"bcast_lock"}), L);
  const ProbeStatus& st = v[SH_P_BCAST_LOCK].status;
  EXPECT_TRUE(st.attached);
  EXPECT_EQ(st.backend, Backend::fentry);
  EXPECT_EQ(st.via, "(fentry and kprobe mixed)");
  EXPECT_EQ(st.symbol, "2 of 8 functions");
  ASSERT_EQ(st.sites.size(), static_cast<size_t>(SH_BCAST_SITES));
  EXPECT_EQ(st.sites[0].backend, Backend::fentry);
  EXPECT_EQ(st.sites[3].backend, Backend::kprobe);
  EXPECT_TRUE(st.sites[3].attached);
  EXPECT_EQ(st.sites[1].error, "tick_handle_oneshot_broadcast not in this kernel");
  // Trials: site 0 fentry, site 3 fentry (EBUSY), site 3 kprobe; then one final object.
  auto reqs = L.of("bcast_lock");
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_TRUE(reqs[3].partial);
  ASSERT_EQ(reqs[3].progs.size(), 2u);
  EXPECT_EQ(reqs[3].progs[0].index, 0);
  EXPECT_EQ(reqs[3].progs[1].index, 3);
  EXPECT_EQ(reqs[3].progs[1].backend, Backend::kprobe);
  EXPECT_EQ(L.live_count(), 1);  // the trials are released
  // The module's note: ARAT keeps the path unused.
  ASSERT_FALSE(st.notes.empty());
  EXPECT_EQ(st.notes.back(), "attached, path not in use on this machine: ARAT present (the local APIC timer keeps "
                             "running in deep idle states)");
}

TEST(Attach, SiteThatFailsInTheFinalObjectIsNotCounted) {
  KernelFacts f = make_facts(k612, {"__tick_broadcast_oneshot_control", "tick_broadcast_offline"});
  FakeLoader L;
  // Attaches alone, then fails in the final object (partial: only that site).
  struct OnceLoader : FakeLoader {
    LoadResult load_attach(const LoadRequest& req) override {
      LoadResult r = FakeLoader::load_attach(req);
      if (req.partial) r.attach_errs.at(1) = EBUSY;
      return r;
    }
  } L2;
  auto v = attach_all(f, HostInfo{}, only({"bcast_lock"}), L2);
  const ProbeStatus& st = v[SH_P_BCAST_LOCK].status;
  EXPECT_TRUE(st.attached);
  EXPECT_EQ(st.symbol, "1 of 8 functions");
  EXPECT_FALSE(st.sites[3].attached);
  EXPECT_EQ(st.sites[3].error, "fentry on tick_broadcast_offline refused: EBUSY (too many trampolines on it)");
}

/// bcast_lock alone, as with a bcast_wait rule at start (AttachOptions::bcast_holder).
AttachOptions holder_options() {
  AttachOptions o = only({"bcast_lock"});
  o.bcast_holder = true;
  return o;
}

// A bcast_wait rule at start: the final object has each site's exit program, exits
// first; an exit that fails leaves its site counted, without the holder state.
TEST(Attach, SiteExitsForTheHolderStateComeFirstAndMayFailAlone) {
  KernelFacts f = make_facts(k612, {"__tick_broadcast_oneshot_control", "tick_broadcast_offline"});
  struct ExitFails : FakeLoader {
    LoadResult load_attach(const LoadRequest& req) override {
      LoadResult r = FakeLoader::load_attach(req);
      if (req.partial)
        for (size_t k = 0; k < req.progs.size(); ++k)
          if (req.progs[k].role == ProgRole::exit && req.progs[k].target == "tick_broadcast_offline")
            r.attach_errs.at(k) = EBUSY;
      return r;
    }
  } L;
  L.fail_load[{Backend::fentry, "tick_broadcast_offline"}] = EBUSY;  // site 3 is a kprobe
  auto v = attach_all(f, HostInfo{}, holder_options(), L);
  const ProbeStatus& st = v[SH_P_BCAST_LOCK].status;
  EXPECT_TRUE(st.attached);
  EXPECT_EQ(st.symbol, "2 of 8 functions");
  auto reqs = L.of("bcast_lock");
  ASSERT_FALSE(reqs.empty());
  const LoadRequest& fin = reqs.back();
  EXPECT_TRUE(fin.partial);
  ASSERT_EQ(fin.progs.size(), 4u);
  EXPECT_EQ(fin.progs[0].role, ProgRole::exit);
  EXPECT_EQ(fin.progs[0].backend, Backend::fentry);
  EXPECT_FALSE(fin.progs[0].retprobe);
  EXPECT_EQ(fin.progs[1].role, ProgRole::exit);
  EXPECT_EQ(fin.progs[1].backend, Backend::kprobe);
  EXPECT_TRUE(fin.progs[1].retprobe) << "a kprobe site's exit is its kretprobe";
  EXPECT_EQ(fin.progs[2].role, ProgRole::site);
  EXPECT_EQ(fin.progs[3].role, ProgRole::site);
  EXPECT_TRUE(st.sites[0].exit_attached);
  EXPECT_TRUE(st.sites[3].attached) << "its calls are still counted";
  EXPECT_FALSE(st.sites[3].exit_attached);
  EXPECT_EQ(st.sites[3].exit_error, describe_attach_error(Backend::kprobe, EBUSY, "tick_broadcast_offline"));
  EXPECT_TRUE(std::any_of(st.notes.begin(), st.notes.end(), [](const std::string& n) {
    return n.rfind("holder state: 1 of 2 attached sites keep each CPU's holder state (kprobe on tick_broadcast_offline", 0) == 0;
  })) << (st.notes.empty() ? "" : st.notes.front());
}

// When the object with the exits does not load, the entries alone are, as without a rule.
TEST(Attach, SiteExitsThatDoNotLoadCostNoCounts) {
  KernelFacts f = make_facts(k612, {"__tick_broadcast_oneshot_control", "tick_broadcast_offline"});
  struct NoExits : FakeLoader {
    LoadResult load_attach(const LoadRequest& req) override {
      for (auto& p : req.progs)
        if (p.role == ProgRole::exit) {
          requests.push_back(req);
          LoadResult r;
          r.err = E2BIG;
          r.at_load = true;
          r.error = "verifier: too big";
          return r;
        }
      return FakeLoader::load_attach(req);
    }
  } L;
  auto v = attach_all(f, HostInfo{}, holder_options(), L);
  const ProbeStatus& st = v[SH_P_BCAST_LOCK].status;
  EXPECT_TRUE(st.attached);
  EXPECT_EQ(st.symbol, "2 of 8 functions");
  EXPECT_TRUE(st.sites[0].attached);
  EXPECT_FALSE(st.sites[0].exit_attached);
  EXPECT_NE(st.sites[0].exit_error.find("did not load"), std::string::npos) << st.sites[0].exit_error;
  EXPECT_EQ(L.live_count(), 1);
  // Without the rule: no exit program is asked for.
  FakeLoader L2;
  auto v2 = attach_all(f, HostInfo{}, only({"bcast_lock"}), L2);
  for (const LoadRequest& r : L2.requests)
    for (const ProgRequest& p : r.progs) EXPECT_NE(p.role, ProgRole::exit);
  EXPECT_TRUE(v2[SH_P_BCAST_LOCK].status.sites[0].exit_error.empty());
}

TEST(Attach, EveryCloneCopyIsAttachedIntoTheFirstCopysSlots) {
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set.isra.0\n"
                             "ffffffff81100680 t cpupri_set.isra.1\n",
                             {});
  FakeLoader L;
  auto v = attach_all(f, HostInfo{}, only({"cpupri_set"}), L);
  const AttachedProbe& a = v[SH_P_CPUPRI_SET];
  EXPECT_TRUE(a.status.attached);
  EXPECT_EQ(a.status.backend, Backend::kprobe);
  ASSERT_EQ(a.handles.size(), 2u);
  ASSERT_EQ(a.status.copies.size(), 2u);
  EXPECT_TRUE(a.status.copies[0].attached);
  EXPECT_TRUE(a.status.copies[1].attached);
  auto reqs = L.of("cpupri_set");
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].share_slots, kNoLoad);
  EXPECT_EQ(reqs[1].share_slots, a.handles[0]);
  EXPECT_EQ(reqs[0].progs.at(1).target, "cpupri_set.isra.0");
  EXPECT_EQ(reqs[1].progs.at(1).target, "cpupri_set.isra.1");
}

TEST(Attach, ACopyThatFailsIsNamedAndTheOtherKept) {
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set.isra.0\n"
                             "ffffffff81100680 t cpupri_set.isra.1\n",
                             {});
  FakeLoader L;
  L.fail_attach[{Backend::kprobe, "cpupri_set.isra.1"}] = EILSEQ;
  auto v = attach_all(f, HostInfo{}, only({"cpupri_set"}), L);
  const AttachedProbe& a = v[SH_P_CPUPRI_SET];
  EXPECT_TRUE(a.status.attached);
  ASSERT_EQ(a.handles.size(), 1u);
  ASSERT_EQ(a.status.copies.size(), 2u);
  EXPECT_FALSE(a.status.copies[1].attached);
  EXPECT_NE(a.status.copies[1].error.find("kprobe: cpupri_set.isra.1 cannot be probed (errno 84: notrace or kprobe blacklist)"), std::string::npos)
      << a.status.copies[1].error;
}

TEST(Attach, IlbKickWithoutNohzCsdFuncTriesNothing) {
  KernelFacts f = make_facts("ffffffff81100400 T nohz_balance_exit_idle\n", {}, {"csd_queue_cpu", "csd_function_entry"});
  FakeLoader L;
  auto v = attach_all(f, HostInfo{}, only({"ilb_kick"}), L);
  EXPECT_TRUE(L.of("ilb_kick").empty());
  EXPECT_FALSE(v[SH_P_ILB_KICK].status.attached);
  EXPECT_EQ(v[SH_P_ILB_KICK].status.reason, "nohz_csd_func's address is unknown (not in /proc/kallsyms)");
  // kptr_restrict: kallsyms is readable, its addresses hidden; the reason says that.
  f.kallsyms_error = "/proc/kallsyms addresses are hidden (kernel.kptr_restrict, or not root)";
  v = attach_all(f, HostInfo{}, only({"ilb_kick"}), L);
  EXPECT_EQ(v[SH_P_ILB_KICK].status.reason,
            "nohz_csd_func's address is unknown (/proc/kallsyms addresses are hidden (kernel.kptr_restrict, or not root))");
}

TEST(Attach, IlbKickAttachesItsTwoTracepointsAndNotes) {
  KernelFacts f = make_facts(k612, {}, {"csd_queue_cpu", "csd_function_entry"});
  FakeLoader L;
  auto v = attach_all(f, HostInfo{}, only({"ilb_kick"}), L);
  const ProbeStatus& st = v[SH_P_ILB_KICK].status;
  EXPECT_TRUE(st.attached);
  EXPECT_EQ(st.symbol, "raw_tp/csd_queue_cpu, raw_tp/csd_function_entry");
  ASSERT_EQ(L.of("ilb_kick").at(0).progs.size(), 2u);
  EXPECT_EQ(L.of("ilb_kick").at(0).progs[1].index, 1);
  ASSERT_FALSE(st.notes.empty());
  EXPECT_EQ(st.notes.back().rfind("counts queued kicks;", 0), 0u);
}

TEST(Attach, UnselectedProbesAreNotTried) {
  KernelFacts f = make_facts(k612, {"cpupri_set"});
  FakeLoader L;
  auto v = attach_all(f, HostInfo{}, only({"cpupri_set"}), L);
  ASSERT_EQ(v.size(), static_cast<size_t>(SH_NPROBES));
  EXPECT_EQ(v[SH_P_IDLE].status.reason, "not selected (--probes)");
  for (auto& r : L.requests) EXPECT_EQ(r.module->spec().name, "cpupri_set");
}

TEST(Attach, SlotsThatCannotBeMappedUnattachAndRelease) {
  KernelFacts f = make_facts(k612, {"cpupri_set"});
  FakeLoader L;
  L.fail_map = ENOMEM;
  auto v = attach_all(f, HostInfo{}, only({"cpupri_set"}), L);
  EXPECT_FALSE(v[SH_P_CPUPRI_SET].status.attached);
  EXPECT_EQ(v[SH_P_CPUPRI_SET].status.reason, "cannot map the cpupri_set slots: Cannot allocate memory");
  EXPECT_EQ(L.live_count(), 0);
}

TEST(AttachSteps, TrySiteSkipsARefusedBackendOnceAndReleasesItsTrial) {
  KernelFacts f = make_facts(k612, {"__tick_broadcast_oneshot_control", "tick_broadcast_offline"});
  const ProbeModule& m = *find_module("bcast_lock");
  Plan plan = resolve_probe(m.spec(), f, BackendPref::automatic);
  FakeLoader L;
  Refusals refused;
  refused.fentry = kFentryRefused;
  std::vector<AttachTry> failures;
  std::optional<ProgRequest> worked;
  // Site 0: fentry is refused for good, so only kprobe is loaded, and released at once.
  SiteStatus s0 = try_site(m, plan, 0, L, refused, failures, "", worked);
  EXPECT_TRUE(s0.attached);
  EXPECT_EQ(s0.backend, Backend::kprobe);
  EXPECT_EQ(s0.symbol, "__tick_broadcast_oneshot_control");
  ASSERT_TRUE(worked.has_value());
  EXPECT_EQ(worked->backend, Backend::kprobe);
  EXPECT_EQ(worked->role, ProgRole::site);
  EXPECT_EQ(worked->index, 0);
  ASSERT_EQ(L.requests.size(), 1u);
  EXPECT_EQ(L.requests[0].progs.at(0).backend, Backend::kprobe);
  EXPECT_EQ(L.live_count(), 0);
  // Site 3 meets the same refusal: failures keeps it once.
  SiteStatus s3 = try_site(m, plan, 3, L, refused, failures, "", worked);
  EXPECT_TRUE(s3.attached);
  EXPECT_EQ(worked->index, 3);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].backend, Backend::fentry);
  EXPECT_EQ(failures[0].error, kFentryRefused);
  // Site 1 is not in this kernel: nothing is loaded.
  SiteStatus s1 = try_site(m, plan, 1, L, refused, failures, "", worked);
  EXPECT_FALSE(s1.attached);
  EXPECT_FALSE(worked.has_value());
  EXPECT_EQ(s1.error, "tick_handle_oneshot_broadcast not in this kernel");
  EXPECT_EQ(L.requests.size(), 2u);
}

TEST(AttachSteps, TrySiteThatFailsBothBackendsGivesBothErrors) {
  KernelFacts f = make_facts(k612, {"tick_broadcast_offline"});
  const ProbeModule& m = *find_module("bcast_lock");
  Plan plan = resolve_probe(m.spec(), f, BackendPref::automatic);
  FakeLoader L;
  L.fail_attach[{Backend::fentry, "tick_broadcast_offline"}] = EBUSY;
  L.fail_attach[{Backend::kprobe, "tick_broadcast_offline"}] = EINVAL;
  Refusals refused;
  std::vector<AttachTry> failures;
  std::optional<ProgRequest> worked;
  SiteStatus s = try_site(m, plan, 3, L, refused, failures, "", worked);
  EXPECT_FALSE(s.attached);
  EXPECT_FALSE(worked.has_value());
  EXPECT_EQ(s.error, describe_attach_error(Backend::fentry, EBUSY, "tick_broadcast_offline") + "; " +
                         describe_attach_error(Backend::kprobe, EINVAL, "tick_broadcast_offline"));
  EXPECT_EQ(failures.size(), 2u);
  EXPECT_TRUE(refused.fentry.empty());  // not a policy refusal: later probes still try fentry
  EXPECT_EQ(L.live_count(), 0);
}

TEST(AttachSteps, SitesObjectThatDoesNotLoadUnattachesEverySite) {
  const ProbeModule& m = *find_module("bcast_lock");
  std::vector<SiteStatus> sites(2);
  sites[0] = {"__tick_broadcast_oneshot_control", "__tick_broadcast_oneshot_control", Backend::fentry, true, ""};
  sites[1] = {"tick_broadcast_offline", "tick_broadcast_offline", Backend::kprobe, true, ""};
  std::vector<ProgRequest> progs = {{Backend::fentry, ProgRole::site, 0, "__tick_broadcast_oneshot_control"},
                                    {Backend::kprobe, ProgRole::site, 3, "tick_broadcast_offline"}};
  FakeLoader L;
  EXPECT_EQ(load_sites_object(m, {}, L, sites), kNoLoad);  // nothing worked alone: no object
  EXPECT_TRUE(L.requests.empty());
  L.fail_load[{Backend::kprobe, "tick_broadcast_offline"}] = E2BIG;
  EXPECT_EQ(load_sites_object(m, progs, L, sites), kNoLoad);
  ASSERT_EQ(L.requests.size(), 1u);
  EXPECT_TRUE(L.requests[0].partial);
  EXPECT_EQ(L.requests[0].progs.size(), 2u);
  EXPECT_FALSE(sites[0].attached);
  EXPECT_FALSE(sites[1].attached);
  EXPECT_EQ(sites[0].error, describe_attach_error(Backend::fentry, E2BIG, "__tick_broadcast_oneshot_control"));
  EXPECT_EQ(sites[1].error, describe_attach_error(Backend::kprobe, E2BIG, "tick_broadcast_offline"));
  // Nothing attached: conclude_sites gives the first resolved site's error as the reason.
  AttachedProbe out;
  out.status.sites = sites;
  conclude_sites(kNoLoad, L, {}, "", out);
  EXPECT_FALSE(out.status.attached);
  EXPECT_TRUE(out.handles.empty());
  EXPECT_EQ(out.status.reason, sites[0].error);
}

TEST(AttachSteps, ConcludeSitesCountsTheAttachedSitesAndKeepsTheObject) {
  std::vector<SiteStatus> sites(3);
  sites[0] = {"a", "a", Backend::kprobe, true, ""};
  sites[1] = {"b", "", Backend::none, false, "b not in this kernel"};
  sites[2] = {"c", "c", Backend::kprobe, true, ""};
  FakeLoader L;
  AttachedProbe out;
  out.status.sites = sites;
  conclude_sites(LoadHandle{7}, L, {}, "", out);
  EXPECT_TRUE(out.status.attached);
  EXPECT_EQ(out.status.backend, Backend::kprobe);
  EXPECT_EQ(out.status.symbol, "2 of 3 functions");
  EXPECT_EQ(out.status.via, "");  // kprobe only: not mixed
  EXPECT_EQ(out.handles, std::vector<LoadHandle>{7});
  EXPECT_TRUE(L.released.empty());
}

/// Window totals from a fixed table, for a module's report section.
struct FixedTotals : WindowTotals {
  std::map<std::string, std::vector<uint64_t>, std::less<>> arrays;
  std::vector<uint64_t> array(std::string_view field) const override {
    auto it = arrays.find(field);
    return it == arrays.end() ? std::vector<uint64_t>{} : it->second;
  }
};

TEST(Modules, CpupriSetReportsTheVectorsItWrote) {
  const ProbeModule& m = *find_module("cpupri_set");
  FixedTotals t;
  t.arrays["vec_set"] = {0, 5, 0, 2};
  t.arrays["vec_clear"] = {0, 5, 0};  // shorter: the missing element counts 0
  nlohmann::json j = nlohmann::json::object();
  m.add_report_section(t, j);
  EXPECT_EQ(j.dump(), R"({"vectors":{"1":{"clear":5,"set":5},"3":{"clear":0,"set":2}}})");
  EXPECT_EQ(m.report_section_text(j), "vectors written: [1] +5/-5 [3] +2/-0");
  // Nothing written: an empty object, and no details item.
  nlohmann::json none = nlohmann::json::object();
  m.add_report_section(FixedTotals{}, none);
  EXPECT_EQ(none.dump(), R"({"vectors":{}})");
  EXPECT_EQ(m.report_section_text(none), "");
  // Other modules add nothing.
  nlohmann::json other = nlohmann::json::object();
  find_module("cpupri_find")->add_report_section(t, other);
  EXPECT_EQ(other.dump(), "{}");
}

TEST(Modules, EveryProbeDeclaresItsTableColumnsOverItsOwnFields) {
  for (const ProbeModule* m : probe_modules()) {
    const ProbeSpec& s = m->spec();
    EXPECT_FALSE(s.columns.empty()) << s.name;
    for (const TableColumn& c : s.columns) {
      const Field* f = s.slot.find(c.field);
      ASSERT_NE(f, nullptr) << s.name << " " << c.header;
      if (c.kind == ColumnKind::p99)
        EXPECT_EQ(f->kind, FieldKind::hist) << s.name << " " << c.header;
      else  // a counter, or an array's sum (bcast_lock's calls over its sites)
        EXPECT_TRUE(f->kind == FieldKind::counter || f->kind == FieldKind::counter_array) << s.name << " " << c.header;
    }
  }
  EXPECT_EQ(find_module("idle")->spec().table_rank, -1);  // its column leads the table
  EXPECT_TRUE(find_module("bcast_lock")->spec().details_list_zeros);
  EXPECT_FALSE(find_module("cpupri_set")->spec().details_list_zeros);
}

TEST(Modules, LabelsAndBlindReasonComeFromTheModule) {
  EXPECT_EQ(find_module("cpupri_set")->label("trans", 2 * SH_CP_NCLASS + 1), "RT->NORMAL");
  EXPECT_EQ(find_module("ilb_kick")->label("flags", 3), "BALANCE|STATS");
  EXPECT_EQ(find_module("ilb_kick")->label("flags", 0), "none");
  EXPECT_FALSE(find_module("idle")->label("by_state", 1).has_value());
  EXPECT_EQ(find_module("bcast_lock")->meta_labels().size(), static_cast<size_t>(SH_BCAST_SITES));
  EXPECT_EQ(default_hist_probe(), "cpupri_set");
  ProbeStatus st;
  st.notes.push_back(std::string(kLockAddrUnknownNote) + ": learning");
  EXPECT_NE(find_module("bcast_wait")->blind_reason(HostInfo{}, st).find("was not learned"), std::string::npos);
  EXPECT_EQ(find_module("idle")->blind_reason(HostInfo{}, st), "");
  for (size_t i = 0; i < probe_modules().size(); ++i) EXPECT_EQ(probe_modules()[i]->spec().id, int(i));
}

// The modules register themselves (SCHEDHOT_PROBE_MODULE); the catalog's order is their
// sh_probe_id, whatever the link order: the order of probes, recordings' META and goldens.
TEST(Modules, RegisteredInProbeIdOrder) {
  ASSERT_EQ(probe_modules().size(), static_cast<size_t>(SH_NPROBES));
  const std::vector<std::string> first = {"nohz_exit",  "nohz_enter", "nohz_kick",  "ilb_kick", "cpupri_set",
                                          "cpupri_find", "bcast_lock", "bcast_wait", "idle"};
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(probe_modules().at(i)->spec().name, first[i]) << i;
  for (size_t i = 0; i < probe_catalog().size(); ++i) EXPECT_EQ(probe_catalog()[i].name, probe_modules()[i]->spec().name);
}
