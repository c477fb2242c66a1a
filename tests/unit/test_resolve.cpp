// Attach resolution on fixture kallsyms/BTF lists (src/probe/resolve.h).
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/catalog.h"
#include "probe/kernel_facts.h"
#include "probe/resolve.h"
#include "probe/status.h"
#include "sample/sample.h"

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
  // A .part.N clone is the tail of the function, not a copy of it: attaching it beside the
  // function would count a call twice. It is not a candidate, and a note says what is missed.
  KernelFacts f = make_facts("ffffffff81100000 T cpupri_find_fitness\nffffffff81100100 t cpupri_find_fitness.part.0\n"
                             "ffffffff81100200 t cpupri_find_fitness.cold\n",
                             {"cpupri_find_fitness"});
  Plan p = resolve_probe(spec("cpupri_find"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].backend, Backend::fentry);
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_find_fitness");
  EXPECT_EQ(p.candidates[1].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[1].symbol, "cpupri_find_fitness");
  ASSERT_EQ(p.copies.size(), 1u);
  EXPECT_TRUE(p.ambiguous.empty());
  ASSERT_EQ(p.notes.size(), 2u);
  EXPECT_NE(p.notes[0].find("cpupri_find_fitness.cold"), std::string::npos);
  EXPECT_EQ(p.notes[1].rfind("cpupri_find_fitness.part.0 is a split-off part of cpupri_find_fitness (partial inlining), "
                             "not a copy: not probed",
                             0),
            0u)
      << p.notes[1];
}

TEST(Resolve, OnlyAPartCloneIsUsed) {
  KernelFacts f = make_facts("ffffffff81100100 t cpupri_find_fitness.part.0\n", {});
  Plan p = resolve_probe(spec("cpupri_find"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_find_fitness.part.0");
  EXPECT_EQ(p.via, "(compiler clone cpupri_find_fitness.part.0 of cpupri_find_fitness)");
}

TEST(Resolve, TwoIsraClonesAreBothPlanned) {
  // Both clones run (each call enters one): a kprobe candidate for each, by name (the
  // names are unique), into the same probe; the plan says there are two copies.
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set.isra.0\nffffffff81100900 t cpupri_set.isra.1\n", {});
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  ASSERT_EQ(p.copies.size(), 2u);
  EXPECT_EQ(p.copies[0].symbol, "cpupri_set.isra.0");
  EXPECT_EQ(p.copies[1].addr, 0xffffffff81100900ull);
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_set.isra.0");
  EXPECT_EQ(p.candidates[0].copy, 0);
  EXPECT_EQ(p.candidates[0].addr, 0u) << "a unique name is attached by name";
  EXPECT_EQ(p.candidates[0].via, "(compiler clone cpupri_set.isra.0 of cpupri_set)");
  EXPECT_EQ(p.candidates[1].symbol, "cpupri_set.isra.1");
  EXPECT_EQ(p.candidates[1].copy, 1);
  EXPECT_EQ(p.candidates[1].via, "(compiler clone cpupri_set.isra.1 of cpupri_set)");
  EXPECT_EQ(p.via, "(2 copies of cpupri_set (compiler clones))");
  ASSERT_EQ(p.ambiguous.size(), 1u);
  EXPECT_EQ(describe_ambiguity(p.ambiguous[0]),
            "ambiguous: 2 addresses for cpupri_set in kallsyms (0xffffffff81100600, 0xffffffff81100900)");
}

TEST(Resolve, ClonesWithAndWithoutBtf) {
  // No kprobes: the clone with BTF gets fentry, the other has no candidate, and why.
  KernelFacts f = make_facts("ffffffff81100500 T cpupri_set\nffffffff81100600 t cpupri_set.constprop.0\n"
                             "ffffffff81100900 t cpupri_set.isra.1\n",
                             {"cpupri_set", "cpupri_set.constprop.0"}, {}, /*kprobes=*/false);
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  ASSERT_EQ(p.copies.size(), 3u);
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].symbol, "cpupri_set");
  EXPECT_EQ(p.candidates[0].copy, 0);
  EXPECT_EQ(p.candidates[0].via, "");
  EXPECT_EQ(p.candidates[1].symbol, "cpupri_set.constprop.0");
  EXPECT_EQ(p.candidates[1].copy, 1);
  EXPECT_EQ(p.via, "(3 copies of cpupri_set (the function, 2 compiler clones))");
  bool said = false;
  for (auto& s : p.skipped) said |= s.backend == Backend::fentry && s.symbol == "cpupri_set.isra.1";
  EXPECT_TRUE(said);
}

TEST(Resolve, SameNameFunctionsAreKprobedByAddress) {
  // Two static functions named cpupri_set: fentry attaches by name (the kernel picks one),
  // so with kprobes each copy gets a kprobe at its address and fentry is not planned.
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set\nffffffff81300000 t cpupri_set\n", {"cpupri_set"});
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  ASSERT_EQ(p.copies.size(), 2u);
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[0].addr, 0xffffffff81100600ull);
  EXPECT_EQ(p.candidates[0].copy, 0);
  EXPECT_EQ(p.candidates[1].backend, Backend::kprobe);
  EXPECT_EQ(p.candidates[1].addr, 0xffffffff81300000ull);
  EXPECT_EQ(p.candidates[1].copy, 1);
  EXPECT_EQ(p.via, "(2 copies of cpupri_set (2 functions of this name))");
  ASSERT_EQ(p.ambiguous.size(), 1u);
  EXPECT_EQ(p.ambiguous[0].addrs.size(), 2u);
  bool said = false;
  for (auto& s : p.skipped)
    said |= s.error == "fentry: cpupri_set has 2 addresses and fentry attaches by name (the kernel picks one)";
  EXPECT_TRUE(said);
}

TEST(Resolve, SameNameFunctionsWithoutKprobesGetOneFentry) {
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set\nffffffff81300000 t cpupri_set\n", {"cpupri_set"}, {},
                             /*kprobes=*/false);
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].backend, Backend::fentry);
  EXPECT_EQ(p.candidates[0].copy, 0);
}

TEST(Resolve, ARepeatedLineIsNotAnotherCopy) {
  KernelFacts f = make_facts("ffffffff81100600 t cpupri_set\nffffffff81100600 t cpupri_set\n", {"cpupri_set"});
  Plan p = resolve_probe(spec("cpupri_set"), f, BackendPref::automatic);
  EXPECT_EQ(p.copies.size(), 1u);
  EXPECT_TRUE(p.ambiguous.empty());
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[1].addr, 0u);
}

TEST(Resolve, ASiteWithTwoClonesSaysWhatIsMissed) {
  KernelFacts f = make_facts("ffffffff81100800 t __tick_broadcast_oneshot_control.isra.0\n"
                             "ffffffff81100880 t __tick_broadcast_oneshot_control.isra.1\n",
                             {});
  Plan p = resolve_probe(spec("bcast_lock"), f, BackendPref::automatic);
  ASSERT_EQ(p.sites.size(), static_cast<size_t>(SH_BCAST_SITES));
  EXPECT_EQ(p.sites[0], "__tick_broadcast_oneshot_control.isra.0");
  ASSERT_EQ(p.ambiguous.size(), 1u);
  EXPECT_EQ(p.ambiguous[0].name, "__tick_broadcast_oneshot_control");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "2 copies of __tick_broadcast_oneshot_control (compiler clones): site "
                        "__tick_broadcast_oneshot_control is probed at __tick_broadcast_oneshot_control.isra.0 only; "
                        "calls to __tick_broadcast_oneshot_control.isra.1 are missed");
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
  KernelFacts f = make_facts(k612, {"nohz_balance_exit_idle"}, {"hrtimer_expire_entry", "hrtimer_expire_exit"});
  Plan a = resolve_probe(spec("nohz_exit"), f, BackendPref::automatic);
  ASSERT_EQ(a.candidates.size(), 3u);
  EXPECT_EQ(a.candidates[0].backend, Backend::fentry);
  EXPECT_EQ(a.candidates[1].backend, Backend::kprobe);
  EXPECT_TRUE(a.candidates[2].proxy);
  ASSERT_EQ(a.candidates[2].programs.size(), 2u);
  EXPECT_EQ(a.candidates[2].programs[0].tracepoint, "hrtimer_expire_entry");
  EXPECT_EQ(a.candidates[2].programs[1].tracepoint, "hrtimer_expire_exit");
  // Without the exit tracepoint there is no proxy: it is skipped with the missing name.
  Plan half = resolve_probe(spec("nohz_exit"), make_facts(k612, {"nohz_balance_exit_idle"}, {"hrtimer_expire_entry"}),
                            BackendPref::proxy);
  EXPECT_TRUE(half.candidates.empty());
  ASSERT_EQ(half.skipped.size(), 1u);
  EXPECT_NE(half.skipped[0].error.find("hrtimer_expire_exit"), std::string::npos) << half.skipped[0].error;
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

TEST(DataSymbol, AmbiguousInKallsymsIsNotGuessed) {
  // Two variables named tick_broadcast_lock: no address (bcast_wait then learns it or
  // stays blind), and the System.map is not asked either: it has the same two.
  KernelFacts f = make_facts("ffffffff83b00000 T _stext\nffffffff83c00000 T schedule\n"
                             "ffffffff84000040 b tick_broadcast_lock\nffffffff84001080 b tick_broadcast_lock\n",
                             {});
  f.system_map = SymbolTable::parse("ffffffff81100000 T _stext\nffffffff81200000 T schedule\n"
                                    "ffffffff81600040 b tick_broadcast_lock\n");
  f.system_map_path = "/boot/System.map-x";
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0u);
  EXPECT_EQ(d.source, "tick_broadcast_lock is ambiguous: 2 addresses (0xffffffff84000040, 0xffffffff84001080) in "
                      "kallsyms; not filtering on a guess");
  EXPECT_EQ(d.ambiguous, (std::vector<uint64_t>{0xffffffff84000040ull, 0xffffffff84001080ull}));
  EXPECT_EQ(d.ambiguous_in, "kallsyms");
}

TEST(DataSymbol, AmbiguousInSystemMapIsNotGuessed) {
  KernelFacts f = make_facts("ffffffff83b00000 T _stext\nffffffff83c00000 T schedule\n", {});
  f.system_map = SymbolTable::parse("ffffffff81100000 T _stext\nffffffff81200000 T schedule\n"
                                    "ffffffff81600040 b tick_broadcast_lock\nffffffff81600100 d tick_broadcast_lock\n");
  f.system_map_path = "/boot/System.map-x";
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0u);
  EXPECT_EQ(d.source, "tick_broadcast_lock is ambiguous: 2 addresses (0xffffffff84000040, 0xffffffff84000100) in "
                      "/boot/System.map-x; not filtering on a guess")
      << "the addresses are the running kernel's (KASLR offset 0x2a00000 applied)";
}

TEST(DataSymbol, AnAmbiguousAnchorDoesNotVote) {
  // schedule twice in the System.map: it is not an anchor, so two anchors remain and agree.
  KernelFacts f = make_facts("ffffffff83b00000 T _stext\nffffffff83c00000 T schedule\nffffffff83d00000 T cpupri_set\n", {});
  f.system_map = SymbolTable::parse("ffffffff81100000 T _stext\nffffffff81200000 T schedule\nffffffff81250000 t schedule\n"
                                    "ffffffff81300000 T cpupri_set\nffffffff82000040 d tick_broadcast_lock\n");
  f.system_map_path = "m";
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0xffffffff82000040ull + 0x2a00000ull) << d.source;
  EXPECT_NE(d.source.find("checked on 2 symbols"), std::string::npos) << d.source;
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

// A line with address 0 is not a missing line: kallsyms lists data symbols here
// (CONFIG_KALLSYMS_ALL=y), only the address is withheld.
TEST(DataSymbol, ListedWithAddressZeroIsNotBlamedOnKallsymsAll) {
  KernelFacts f = make_facts("ffffffff81100000 T sched_balance_trigger\n0000000000000000 d tick_broadcast_lock\n", {});
  DataAddress d = resolve_data_symbol("tick_broadcast_lock", f);
  EXPECT_EQ(d.addr, 0u);
  EXPECT_EQ(d.source,
            "tick_broadcast_lock is in /proc/kallsyms with address 0 (hidden from this reader); no --system-map given");
}

namespace {
// /proc/kallsyms as kernel.kptr_restrict shows it: names, every address 0 (read_kernel_facts
// sets this kallsyms_error for such a table).
KernelFacts hidden_facts() {
  KernelFacts f = make_facts("0000000000000000 T sched_balance_trigger\n0000000000000000 T __tick_broadcast_oneshot_control\n"
                             "0000000000000000 d tick_broadcast_lock\n",
                             {});
  EXPECT_TRUE(f.kallsyms.addresses_hidden());
  f.kallsyms_error = "/proc/kallsyms addresses are hidden (kernel.kptr_restrict, or not root)";
  return f;
}
}  // namespace

TEST(LockAddress, KnownAddressIsUsed) {
  LockAddressPlan p = plan_lock_address(make_facts(k612, {}));
  EXPECT_EQ(p.addr, 0xffffffff82000000ull);
  EXPECT_FALSE(p.learn);
  EXPECT_EQ(p.note, "tick_broadcast_lock at 0xffffffff82000000 from kallsyms");
}

TEST(LockAddress, LearnedWhenKallsymsHasTextAddresses) {
  LockAddressPlan p = plan_lock_address(make_facts(k61, {}));
  EXPECT_EQ(p.addr, 0u);
  EXPECT_TRUE(p.learn);
  EXPECT_EQ(p.note, "tick_broadcast_lock address unknown (tick_broadcast_lock not in /proc/kallsyms "
                    "(CONFIG_KALLSYMS_ALL=n); no --system-map given): learning it from contention stacks whose "
                    "first non-lock frame is a tick-broadcast function");
}

// kptr_restrict: stacks cannot be symbolized, so saying "learning it" was false; the learner
// is not started and the probe is blind.
TEST(LockAddress, HiddenKallsymsAddressesCannotBeLearned) {
  KernelFacts f = hidden_facts();
  LockAddressPlan p = plan_lock_address(f);
  EXPECT_EQ(p.addr, 0u);
  EXPECT_FALSE(p.learn);
  EXPECT_EQ(p.note, "tick_broadcast_lock address unknown (/proc/kallsyms addresses are hidden (kernel.kptr_restrict, "
                    "or not root); no --system-map given): cannot learn it from contention stacks without symbol "
                    "addresses; bcast_wait is blind");
  EXPECT_EQ(p.note.rfind(kLockAddrUnknownNote, 0), 0u) << "blind_reason() keys on this prefix";

  // A System.map cannot be placed without kallsyms addresses either (no KASLR offset).
  f.system_map = SymbolTable::parse("ffffffff81100000 T sched_balance_trigger\nffffffff82000040 d tick_broadcast_lock\n");
  f.system_map_path = "/boot/System.map-x";
  p = plan_lock_address(f);
  EXPECT_FALSE(p.learn);
  EXPECT_NE(p.note.find("cannot measure the KASLR offset for /boot/System.map-x): cannot learn it"), std::string::npos)
      << p.note;

  // The views say why it is blind, and not "was not learned (no contention stack ...)".
  Meta m = make_meta(HostInfo{}, 2, {});
  const int bw = m.probe_index("bcast_wait");
  ASSERT_GE(bw, 0);
  m.probes[bw].status.attached = true;
  m.probes[bw].status.notes = {plan_lock_address(hidden_facts()).note};
  EXPECT_EQ(blind_reason(m, bw),
            "tick_broadcast_lock's address is unknown and cannot be learned without kallsyms addresses: its "
            "contentions cannot be told from other locks'");
  m.probes[bw].status.notes = {plan_lock_address(make_facts(k61, {})).note};
  EXPECT_NE(blind_reason(m, bw).find("was not learned"), std::string::npos);
}

// Without BTF, libbpf's ESRCH read "no vmlinux BTF (No such process)". The message says why,
// that nothing can attach (every program is CO-RE, kprobes too) and what --btf FILE must be
// (issue 33: Debian's 6.1 ppc64el kernel has no BTF).
TEST(Btf, MissingVmlinuxBtfSaysWhereAndWhatToDo) {
  const std::string need =
      "schedhot's BPF programs are CO-RE and load only against this kernel's types, so nothing can attach; give "
      "--btf FILE: the BTF of exactly 6.1.0-57-powerpc64le (raw BTF, or an ELF vmlinux with a .BTF section), e.g. "
      "made by `pahole --btf_encode_detached=FILE VMLINUX` from its vmlinux with debug info (Debian: "
      "linux-image-6.1.0-57-powerpc64le-dbg); with it the kprobe and raw tracepoint programs load, not fentry or "
      "tp_btf ones (idle, bcast_wait), which need the kernel's own BTF";
  EXPECT_EQ(describe_vmlinux_btf_error(ESRCH, false, "6.1.0-57-powerpc64le"),
            "no vmlinux BTF: /sys/kernel/btf/vmlinux not present (kernel built without CONFIG_DEBUG_INFO_BTF?), nor a "
            "vmlinux with BTF under /boot or /lib/modules; " + need);
  EXPECT_EQ(describe_vmlinux_btf_error(EACCES, true, "6.1.0-57-powerpc64le"),
            "no vmlinux BTF: /sys/kernel/btf/vmlinux cannot be read as BTF (EACCES, Permission denied); " + need);
  EXPECT_EQ(describe_vmlinux_btf_error(ESRCH, false, "x").find("No such process"), std::string::npos);
  EXPECT_NE(describe_vmlinux_btf_error(ESRCH, false, "").find("the BTF of exactly this kernel"), std::string::npos);
}

namespace {
KernelFacts no_btf_facts(bool kprobes) {
  KernelFacts f = make_facts(k612, {}, {}, kprobes);
  f.btf = false;
  f.btf_error = describe_vmlinux_btf_error(ESRCH, false, "6.12.0");
  return f;
}
}  // namespace

// Without BTF the tracepoint list is unknown: "tracepoint hrtimer_expire_entry not in this
// kernel" was a guess, and false. Nor is a kprobe tried: its program is CO-RE as well, and
// libbpf loads no program of an object with CO-RE relocations without the kernel's BTF.
TEST(Btf, WithoutBtfNothingIsTriedAndTracepointsAreNotSaidMissing) {
  KernelFacts f = no_btf_facts(true);
  Plan p = resolve_probe(spec("nohz_exit"), f, BackendPref::automatic);
  EXPECT_TRUE(p.candidates.empty());
  std::vector<std::string> errors;
  for (auto& t : p.skipped) errors.push_back(t.error);
  EXPECT_EQ(errors, (std::vector<std::string>{f.btf_error, f.btf_error, "proxy: tracepoint programs need vmlinux BTF "
                                                                       "(tp_btf, and CO-RE for raw_tp)"}));
  Plan tp = resolve_probe(spec("idle"), f, BackendPref::automatic);
  ASSERT_EQ(tp.skipped.size(), 1u);
  EXPECT_EQ(tp.skipped[0].error, f.btf_error);
  Plan sites = resolve_probe(spec("bcast_lock"), f, BackendPref::automatic);
  EXPECT_TRUE(sites.candidates.empty());
  for (auto& t : sites.skipped) EXPECT_EQ(t.error, f.btf_error);
}

// record and top said only "no probe could attach"; when every probe failed for one reason
// it is named.
namespace {
// Every catalog probe's status as attach would leave it when the plan tried nothing.
std::vector<ProbeStatus> unattached_statuses(const KernelFacts& f) {
  std::vector<ProbeStatus> st;
  for (const ProbeSpec& s : probe_catalog()) {
    Plan p = resolve_probe(s, f, BackendPref::automatic);
    EXPECT_TRUE(p.candidates.empty()) << s.name;
    ProbeStatus ps;
    ps.probe = s.name;
    ps.tried = p.skipped;
    for (auto& t : p.skipped) ps.reason += (ps.reason.empty() ? "" : "; ") + t.error;
    st.push_back(ps);
  }
  return st;
}
}  // namespace

TEST(Btf, CommonFailureNamesTheSharedCause) {
  // kprobes built in (Debian's 6.1 ppc64el): still nothing loads, for the same one reason
  EXPECT_EQ(common_failure(unattached_statuses(no_btf_facts(true))), no_btf_facts(true).btf_error);
  KernelFacts f = no_btf_facts(false);
  std::vector<ProbeStatus> st = unattached_statuses(f);
  EXPECT_EQ(common_failure(st), f.btf_error);
  st[0].reason = "not selected (--probes)";  // left out: not a failure
  st[0].tried.clear();
  EXPECT_EQ(common_failure(st), f.btf_error);
  st[1].reason = "fentry refused: EPERM";  // one probe failed for another reason
  EXPECT_EQ(common_failure(st), "");
  st[1].attached = true;
  EXPECT_EQ(common_failure(st), "") << "a probe attached: nothing to explain";
}

// BTF from a file (--btf) on a kernel without its own: fentry and tp_btf cannot load (the
// kernel checks them against its BTF), kprobes can (CO-RE relocated against the file).
TEST(Btf, FileBtfWithoutKernelBtfLeavesKprobes) {
  KernelFacts f = make_facts(k612, {"sched_balance_trigger"}, {"hrtimer_expire_entry", "cpu_idle"});
  f.kernel_btf = false;
  const std::string why =
      "needs the kernel's own BTF (/sys/kernel/btf/vmlinux not present; BTF from a file serves symbol lookup and CO-RE "
      "only)";
  Plan p = resolve_probe(spec("nohz_kick"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].backend, Backend::kprobe);
  ASSERT_FALSE(p.skipped.empty());
  EXPECT_EQ(p.skipped[0].error, "fentry " + why);
  Plan tp = resolve_probe(spec("idle"), f, BackendPref::automatic);
  EXPECT_TRUE(tp.candidates.empty());
  ASSERT_EQ(tp.skipped.size(), 1u);
  EXPECT_EQ(tp.skipped[0].error, "tp_btf " + why);
}

TEST(CopyStatus, BothClonesAttached) {
  ProbeStatus st;
  st.attached = true;
  st.backend = Backend::kprobe;
  st.symbol = "cpupri_set.isra.0";
  std::vector<CopyStatus> c = {{"cpupri_set.isra.0", 0xffffffff81100600ull, Backend::kprobe, true, ""},
                               {"cpupri_set.isra.1", 0xffffffff81100900ull, Backend::kprobe, true, ""}};
  summarize_copies(st, c, "2 copies of cpupri_set (compiler clones)", "(2 copies of cpupri_set (compiler clones))");
  EXPECT_EQ(st.symbol, "cpupri_set.isra.0, cpupri_set.isra.1");
  EXPECT_EQ(st.via, "(2 copies of cpupri_set (compiler clones))");
  ASSERT_EQ(st.notes.size(), 1u);
  EXPECT_EQ(st.notes[0], "2 copies of cpupri_set (compiler clones); attached both");
  EXPECT_EQ(st.copies.size(), 2u);
}

TEST(CopyStatus, OneCopyMissedIsNamed) {
  ProbeStatus st;
  st.attached = true;
  st.backend = Backend::fentry;
  std::vector<CopyStatus> c = {
      {"cpupri_set.isra.0", 1, Backend::fentry, true, ""},
      {"cpupri_set.isra.1", 2, Backend::none, false,
       "fentry: no BTF function cpupri_set.isra.1; kprobes not built into this kernel"}};
  summarize_copies(st, c, "2 copies of cpupri_set (compiler clones)", "(2 copies of cpupri_set (compiler clones))");
  EXPECT_EQ(st.symbol, "cpupri_set.isra.0");
  ASSERT_EQ(st.notes.size(), 1u);
  EXPECT_EQ(st.notes[0], "2 copies of cpupri_set (compiler clones); attached cpupri_set.isra.0 only: cpupri_set.isra.1 "
                         "(fentry: no BTF function cpupri_set.isra.1; kprobes not built into this kernel) could not be "
                         "attached; its calls are missed");
}

TEST(CopyStatus, SameNameCopiesAreToldApartByAddressAndMixedBackendsSaid) {
  ProbeStatus st;
  st.attached = true;
  st.backend = Backend::fentry;
  std::vector<CopyStatus> c = {{"f", 0x10, Backend::fentry, true, ""}, {"f", 0x20, Backend::kprobe, true, ""}};
  summarize_copies(st, c, "2 copies of f (2 functions of this name)", "(x)");
  EXPECT_EQ(st.symbol, "f at 0x10, f at 0x20");
  EXPECT_EQ(st.notes.at(0), "2 copies of f (2 functions of this name); attached both (fentry and kprobe mixed)");
}

TEST(CopyStatus, ProxyKeepsItsLabels) {
  ProbeStatus st;
  st.attached = true;
  st.proxy = true;
  st.backend = Backend::tracepoint;
  st.symbol = "tp_btf/x";
  st.via = "";
  std::vector<CopyStatus> c = {{"a.isra.0", 1, Backend::none, false, "e1"}, {"a.isra.1", 2, Backend::none, false, "e2"}};
  summarize_copies(st, c, "2 copies of a (compiler clones)", "(2 copies of a (compiler clones))");
  EXPECT_EQ(st.symbol, "tp_btf/x");
  EXPECT_EQ(st.via, "");
  EXPECT_EQ(st.notes.at(0), "2 copies of a (compiler clones); none could be attached, the tracepoint proxy stands in for all of them");
}

TEST(CopyStatus, JsonRoundTripAndOlderRecordings) {
  ProbeStatus st;
  st.probe = "cpupri_set";
  st.attached = true;
  st.copies = {{"cpupri_set.isra.0", 0xffffffff81100600ull, Backend::kprobe, true, ""},
               {"cpupri_set.isra.1", 0, Backend::none, false, "why"}};
  st.ambiguous = {{"cpupri_set", {0xffffffff81100600ull, 0xffffffff81100900ull}, "kallsyms"}};
  nlohmann::json j = st;
  EXPECT_EQ(j["copies"][0]["address"], "0xffffffff81100600");
  EXPECT_EQ(j["copies"][1]["address"], "") << "unknown is empty, never 0x0";
  EXPECT_EQ(j["ambiguous"][0]["addresses"][1], "0xffffffff81100900");
  ProbeStatus back = j.get<ProbeStatus>();
  ASSERT_EQ(back.copies.size(), 2u);
  EXPECT_EQ(back.copies[0].addr, 0xffffffff81100600ull);
  EXPECT_EQ(back.copies[0].backend, Backend::kprobe);
  EXPECT_EQ(back.copies[1].error, "why");
  ASSERT_EQ(back.ambiguous.size(), 1u);
  EXPECT_EQ(back.ambiguous[0].addrs, st.ambiguous[0].addrs);
  EXPECT_EQ(back.ambiguous[0].table, "kallsyms");
  // A META written before the keys existed.
  ProbeStatus old = nlohmann::json::parse(R"({"probe":"cpupri_set","attached":true,"backend":"fentry","symbol":"cpupri_set"})")
                        .get<ProbeStatus>();
  EXPECT_TRUE(old.copies.empty());
  EXPECT_TRUE(old.ambiguous.empty());
  EXPECT_EQ(old.symbol, "cpupri_set");
}

// --btf FILE of another machine or release (issue 33's attacker: a ppc64le vmlinux on an x86
// host was taken, and its types silently placed the fields): an ELF's e_machine must be this
// machine's, and its banner's release the running one; raw BTF names neither and is taken.
TEST(Btf, AForeignVmlinuxIsRefusedByMachineAndRelease) {
  struct utsname u {};
  ASSERT_EQ(uname(&u), 0);
  const uint16_t mine = std::string(u.machine) == "x86_64"    ? 62
                        : std::string(u.machine) == "aarch64" ? 183
                                                              : 21;
  auto elf = [&](uint16_t machine, const std::string& banner) {
    std::string f(64, '\0');
    std::memcpy(f.data(), "\x7f" "ELF", 4);
    f[4] = 2;  // 64-bit
    f[5] = 1;  // little-endian
    f[18] = char(machine & 0xff);
    f[19] = char(machine >> 8);
    f += std::string(3 << 20, 'x') + banner + " (gcc) #1 SMP\n";  // past the first 1 MiB piece
    const std::string path = fmt::format("{}/schedhot_btf_{}_{}", ::testing::TempDir(), getpid(), machine);
    FILE* fp = std::fopen(path.c_str(), "wb");
    std::fwrite(f.data(), 1, f.size(), fp);
    std::fclose(fp);
    return path;
  };
  auto error_of = [](const std::string& path) {
    try {
      read_kernel_facts("", path);
    } catch (const std::exception& e) {
      std::remove(path.c_str());
      return std::string(e.what());
    }
    std::remove(path.c_str());
    return std::string();
  };
  const uint16_t other = mine == 21 ? 62 : 21;
  EXPECT_NE(error_of(elf(other, std::string("Linux version ") + u.release)).find(
                fmt::format("an ELF file for {} (e_machine {}), not for this {} machine", other == 21 ? "PowerPC64" : "x86-64",
                            other, u.machine)),
            std::string::npos);
  EXPECT_NE(error_of(elf(mine, "Linux version 9.9.9-elsewhere")).find(
                fmt::format("the vmlinux of Linux 9.9.9-elsewhere (its banner), not of the running {}", u.release)),
            std::string::npos);
  // this machine and release: past the check, refused by libbpf (no .BTF section in it)
  EXPECT_NE(error_of(elf(mine, std::string("Linux version ") + u.release)).find("no BTF in it"), std::string::npos);
}
