// Attach resolution on fixture kallsyms/BTF lists (src/probe/resolve.h).
#include <gtest/gtest.h>

#include "probe/catalog.h"
#include "probe/resolve.h"
#include "probe/status.h"

using namespace schedhot;

namespace {

KernelFacts make_facts(const std::string& kallsyms, std::initializer_list<const char*> btf_funcs,
                       std::initializer_list<const char*> tps = {}, bool kprobes = true) {
  KernelFacts f;
  f.btf = true;
  for (auto* s : btf_funcs) f.btf_funcs.insert(s);
  for (auto* s : tps) f.tracepoints.insert(s);
  f.kprobes = kprobes;
  if (!kprobes) f.kprobes_reason = "kprobes not built into this kernel";
  f.kallsyms = SymbolTable::parse(kallsyms);
  return f;
}

const ProbeSpec& spec(const char* name) { return *find_probe(name); }

// Debian 6.12 / 7.3: nohz_balancer_kick inlined into sched_balance_trigger.
const char* k612 =
    "ffffffff81100000 T sched_balance_trigger\n"
    "ffffffff81100400 T nohz_balance_exit_idle\n"
    "ffffffff81100500 T nohz_balance_enter_idle\n"
    "ffffffff81100600 T cpupri_set\n"
    "ffffffff81100700 T cpupri_find\n"
    "ffffffff81100710 T cpupri_find_fitness\n"
    "ffffffff81100800 T __tick_broadcast_oneshot_control\n"
    "ffffffff81100900 T tick_broadcast_offline\n"
    "ffffffff82000000 d tick_broadcast_lock\n";

// Debian 6.1: the caller is trigger_load_balance.
const char* k61 =
    "ffffffff81100000 T trigger_load_balance\n"
    "ffffffff81100400 T nohz_balance_exit_idle\n";

}  // namespace

TEST(Resolve, InlinedTargetUsesTheCaller612) {
  KernelFacts f = make_facts(k612, {"sched_balance_trigger"});
  Plan p = resolve_probe(spec("nohz_kick"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].backend, Backend::fentry);
  EXPECT_EQ(p.candidates[0].symbol, "sched_balance_trigger");
  EXPECT_EQ(p.candidates[0].via, "via sched_balance_trigger (nohz_balancer_kick inlined)");
  EXPECT_EQ(p.candidates[1].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[1].symbol, "sched_balance_trigger");
}

TEST(Resolve, InlinedTargetUsesTheCaller61) {
  KernelFacts f = make_facts(k61, {"trigger_load_balance"});
  Plan p = resolve_probe(spec("nohz_kick"), f, BackendPref::automatic);
  ASSERT_FALSE(p.candidates.empty());
  EXPECT_EQ(p.candidates[0].symbol, "trigger_load_balance");
  EXPECT_EQ(p.candidates[0].via, "via trigger_load_balance (nohz_balancer_kick inlined)");
}

TEST(Resolve, NotInlinedTargetIsUsedDirectly) {
  KernelFacts f = make_facts(std::string(k612) + "ffffffff81200000 t nohz_balancer_kick\n", {"nohz_balancer_kick"});
  Plan p = resolve_probe(spec("nohz_kick"), f, BackendPref::automatic);
  ASSERT_FALSE(p.candidates.empty());
  EXPECT_EQ(p.candidates[0].symbol, "nohz_balancer_kick");
  EXPECT_EQ(p.candidates[0].via, "");
}

TEST(Resolve, IsraCloneGetsAKprobeAndNoFentry) {
  // cpupri_set exists only as a clone with a changed signature: no BTF FUNC for it.
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set.isra.0\n", {});
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  ASSERT_GE(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_set.isra.0");
  EXPECT_EQ(p.candidates[0].via, "(compiler clone cpupri_set.isra.0 of cpupri_set)");
  bool fentry_skipped = false;
  for (auto& s : p.skipped)
    if (s.backend == Backend::fentry && s.error.find("no BTF function cpupri_set.isra.0") != std::string::npos)
      fentry_skipped = true;
  EXPECT_TRUE(fentry_skipped);
}

TEST(Resolve, PartCloneBesideTheExactSymbol) {
  KernelFacts f = make_facts("ffffffff81100000 T cpupri_find_fitness\nffffffff81100100 t cpupri_find_fitness.part.0\n"
                             "ffffffff81100200 t cpupri_find_fitness.cold\n",
                             {"cpupri_find_fitness"});
  Plan p = resolve_probe(spec("cpupri_find"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 3u);
  EXPECT_EQ(p.candidates[0].backend, Backend::fentry);
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_find_fitness");
  EXPECT_EQ(p.candidates[1].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[2].symbol, "cpupri_find_fitness.part.0");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("cpupri_find_fitness.cold"), std::string::npos);
}

TEST(Resolve, FallsBackToTheOlderName) {
  // Before v5.7 there is no cpupri_find_fitness.
  KernelFacts f = make_facts("ffffffff81100000 T cpupri_find\n", {"cpupri_find"});
  Plan p = resolve_probe(spec("cpupri_find"), f, BackendPref::automatic);
  ASSERT_FALSE(p.candidates.empty());
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_find");
}

TEST(Resolve, MissingSymbolHasNoCandidateAndSaysWhy) {
  KernelFacts f = make_facts("ffffffff81100000 T schedule\n", {"schedule"});
  Plan p = resolve_probe(spec("cpupri_find"), f, BackendPref::automatic);
  EXPECT_TRUE(p.candidates.empty());
  ASSERT_EQ(p.skipped.size(), 2u);
  EXPECT_EQ(p.skipped[0].error, "cpupri_find_fitness not in kallsyms (inlined or not built)");
  EXPECT_EQ(p.skipped[1].error, "cpupri_find not in kallsyms (inlined or not built)");
}

TEST(Resolve, ProxyIsLastAndOnlyForAuto) {
  KernelFacts f = make_facts(k612, {"nohz_balance_exit_idle"}, {"hrtimer_expire_entry"});
  Plan a = resolve_probe(spec("nohz_exit"), f, BackendPref::automatic);
  ASSERT_EQ(a.candidates.size(), 3u);
  EXPECT_EQ(a.candidates[0].backend, Backend::fentry);
  EXPECT_EQ(a.candidates[1].backend, Backend::kprobe);
  EXPECT_TRUE(a.candidates[2].proxy);
  EXPECT_EQ(a.candidates[2].programs[0].tracepoint, "hrtimer_expire_entry");
  Plan fe = resolve_probe(spec("nohz_exit"), f, BackendPref::fentry);
  ASSERT_EQ(fe.candidates.size(), 1u);
  EXPECT_EQ(fe.candidates[0].backend, Backend::fentry);
  Plan kp = resolve_probe(spec("nohz_exit"), f, BackendPref::kprobe);
  ASSERT_EQ(kp.candidates.size(), 1u);
  EXPECT_EQ(kp.candidates[0].backend, Backend::kprobe);
  Plan px = resolve_probe(spec("nohz_exit"), f, BackendPref::proxy);
  ASSERT_EQ(px.candidates.size(), 1u);
  EXPECT_TRUE(px.candidates[0].proxy);
  EXPECT_TRUE(resolve_probe(spec("nohz_kick"), f, BackendPref::proxy).candidates.empty()) << "no proxy for nohz_kick";
}

TEST(Resolve, NoKprobesIsAReasonNotACandidate) {
  KernelFacts f = make_facts(k612, {"cpupri_set"}, {}, /*kprobes=*/false);
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].backend, Backend::fentry);
  bool said = false;
  for (auto& s : p.skipped) said |= s.backend == Backend::kprobe && s.error == "kprobes not built into this kernel";
  EXPECT_TRUE(said);
}

TEST(Resolve, ResolutionIsKeptWhenNoBackendIsLeft) {
  // --backend kprobe on a kernel without kprobes: nothing to try, but the target was still
  // found (through its caller; the sites in kallsyms), so the reason is the backend.
  KernelFacts f = make_facts(k612, {"sched_balance_trigger"}, {}, /*kprobes=*/false);
  Plan kick = resolve_probe(spec("nohz_kick"), f, BackendPref::kprobe);
  EXPECT_TRUE(kick.candidates.empty());
  EXPECT_EQ(kick.via, "via sched_balance_trigger (nohz_balancer_kick inlined)");
  ASSERT_EQ(kick.skipped.size(), 1u);
  EXPECT_EQ(kick.skipped[0].error, "kprobes not built into this kernel");
  Plan sites = resolve_probe(spec("bcast_lock"), f, BackendPref::kprobe);
  EXPECT_TRUE(sites.candidates.empty());
  ASSERT_EQ(sites.sites.size(), static_cast<size_t>(SH_BCAST_SITES));
  EXPECT_EQ(sites.sites[0], "__tick_broadcast_oneshot_control");
  EXPECT_EQ(sites.sites[1], "");
  EXPECT_EQ(sites.sites[3], "tick_broadcast_offline");
  EXPECT_EQ(resolve_probe(spec("nohz_exit"), f, BackendPref::kprobe).via, "");
}

TEST(Resolve, SymbolWithVia) {
  EXPECT_EQ(symbol_with_via("sched_balance_trigger", "via sched_balance_trigger (nohz_balancer_kick inlined)"),
            "sched_balance_trigger (nohz_balancer_kick inlined)");
  EXPECT_EQ(symbol_with_via("cpupri_set.isra.0", "(compiler clone cpupri_set.isra.0 of cpupri_set)"),
            "cpupri_set.isra.0 (compiler clone cpupri_set.isra.0 of cpupri_set)");
  EXPECT_EQ(symbol_with_via("cpupri_set", ""), "cpupri_set");
}

TEST(Resolve, BriefReasonDropsTheExplanations) {
  EXPECT_EQ(brief_reason("fentry refused: EPERM (kernel lockdown or an LSM denies BPF tracing programs); kprobes not "
                         "built into this kernel (CONFIG_KPROBES=n: no kprobe PMU in /sys/bus/event_source/devices, "
                         "no kprobe_events in tracefs)"),
            "fentry refused: EPERM; kprobes not built into this kernel");
  EXPECT_EQ(brief_reason("not selected (--probes)"), "not selected");
  EXPECT_EQ(brief_reason("tracepoint csd_queue_cpu not in this kernel"), "tracepoint csd_queue_cpu not in this kernel");
  EXPECT_EQ(brief_reason("(all in parentheses)"), "(all in parentheses)") << "nothing left: the full reason";
}

TEST(Resolve, TracepointProbeNeedsItsTracepoints) {
  KernelFacts f = make_facts(k612, {}, {"contention_begin", "contention_end"});
  Plan ilb = resolve_probe(spec("ilb_kick"), f, BackendPref::automatic);
  EXPECT_TRUE(ilb.candidates.empty());
  ASSERT_EQ(ilb.skipped.size(), 1u);
  EXPECT_EQ(ilb.skipped[0].error, "tracepoint csd_queue_cpu not in this kernel (added in 6.5)");
  Plan bw = resolve_probe(spec("bcast_wait"), f, BackendPref::kprobe);  // --backend does not apply
  ASSERT_EQ(bw.candidates.size(), 1u);
  EXPECT_EQ(bw.candidates[0].backend, Backend::tracepoint);
}

TEST(Resolve, SitesKeepTheirOrderAndMarkAbsentOnes) {
  KernelFacts f = make_facts(k612, {"__tick_broadcast_oneshot_control"});
  Plan p = resolve_probe(spec("bcast_lock"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 2u);
  const Candidate& fe = p.candidates[0];
  ASSERT_EQ(fe.sites.size(), static_cast<size_t>(SH_BCAST_SITES));
  EXPECT_EQ(fe.sites[0], "__tick_broadcast_oneshot_control");
  EXPECT_EQ(fe.sites[3], "") << "tick_broadcast_offline has no BTF here: not an fentry site";
  const Candidate& kp = p.candidates[1];
  EXPECT_EQ(kp.sites[3], "tick_broadcast_offline");
  EXPECT_EQ(kp.sites[1], "") << "tick_handle_oneshot_broadcast is not in this kernel";
}

TEST(Resolve, BackendPrefParsing) {
  EXPECT_EQ(parse_backend_pref("auto"), BackendPref::automatic);
  EXPECT_EQ(parse_backend_pref("kprobe"), BackendPref::kprobe);
  EXPECT_THROW(parse_backend_pref("uprobe"), std::invalid_argument);
}

TEST(DataSymbol, FromKallsymsAll) {
  KernelFacts f = make_facts(k612, {});
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0xffffffff82000000ull);
  EXPECT_EQ(d.source, "kallsyms");
}

TEST(DataSymbol, MissingWithoutKallsymsAll) {
  KernelFacts f = make_facts("ffffffff81100000 T sched_balance_trigger\n", {});
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0u);
  EXPECT_EQ(d.source, "tick_broadcast_lock not in /proc/kallsyms (CONFIG_KALLSYMS_ALL=n); no --system-map given");
}

TEST(DataSymbol, FromSystemMapShiftedByKaslr) {
  // Running kernel relocated by +0x2a00000 against its System.map.
  KernelFacts f = make_facts("ffffffff83b00000 T _stext\nffffffff83c00000 T schedule\nffffffff83d00000 T cpupri_set\n", {});
  f.system_map = SymbolTable::parse(
      "ffffffff81100000 T _stext\nffffffff81200000 T schedule\nffffffff81300000 T cpupri_set\n"
      "ffffffff82000040 d tick_broadcast_lock\n");
  f.system_map_path = "/boot/System.map-x";
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0xffffffff82000040ull + 0x2a00000ull);
  EXPECT_NE(d.source.find("System.map /boot/System.map-x (KASLR offset 0x2a00000, checked on 3 symbols)"),
            std::string::npos)
      << d.source;
}

TEST(DataSymbol, MismatchedSystemMapIsRefused) {
  KernelFacts f = make_facts("ffffffff83b00000 T _stext\nffffffff83c00000 T schedule\n", {});
  f.system_map = SymbolTable::parse("ffffffff81100000 T _stext\nffffffff81200100 T schedule\n"
                                    "ffffffff82000040 d tick_broadcast_lock\n");
  f.system_map_path = "other.map";
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0u);
  EXPECT_NE(d.source.find("does not match the running kernel"), std::string::npos) << d.source;
}
