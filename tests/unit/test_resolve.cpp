// Attach resolution on fixture kallsyms/BTF lists (src/probe/resolve.h).
#include <gtest/gtest.h>
#include <cerrno>

#include "probe/catalog.h"
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

// Without BTF, libbpf's ESRCH read "no vmlinux BTF (No such process)".
TEST(Btf, MissingVmlinuxBtfSaysWhereAndWhatToDo) {
  EXPECT_EQ(describe_vmlinux_btf_error(ESRCH, false),
            "no vmlinux BTF: /sys/kernel/btf/vmlinux not present (kernel built without CONFIG_DEBUG_INFO_BTF?), nor a "
            "vmlinux with BTF under /boot or /lib/modules; give --btf FILE");
  EXPECT_EQ(describe_vmlinux_btf_error(EACCES, true),
            "no vmlinux BTF: /sys/kernel/btf/vmlinux cannot be read as BTF (EACCES, Permission denied); give --btf FILE");
  EXPECT_EQ(describe_vmlinux_btf_error(ESRCH, false).find("No such process"), std::string::npos);
}

namespace {
KernelFacts no_btf_facts(bool kprobes) {
  KernelFacts f = make_facts(k612, {}, {}, kprobes);
  f.btf = false;
  f.btf_error = describe_vmlinux_btf_error(ESRCH, false);
  return f;
}
}  // namespace

// Without BTF the tracepoint list is unknown: "tracepoint hrtimer_expire_entry not in this
// kernel" was a guess, and false.
TEST(Btf, WithoutBtfNoTracepointIsSaidMissing) {
  KernelFacts f = no_btf_facts(true);
  Plan p = resolve_probe(spec("nohz_exit"), f, BackendPref::automatic);
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].backend, Backend::kprobe);
  std::vector<std::string> errors;
  for (auto& t : p.skipped) errors.push_back(t.error);
  EXPECT_EQ(errors, (std::vector<std::string>{f.btf_error, "proxy: tracepoint programs need vmlinux BTF (tp_btf, and "
                                                           "CO-RE for raw_tp)"}));
  Plan tp = resolve_probe(spec("idle"), f, BackendPref::automatic);
  ASSERT_EQ(tp.skipped.size(), 1u);
  EXPECT_EQ(tp.skipped[0].error, f.btf_error);
}

// record and top said only "no probe could attach"; when every probe failed for one reason
// it is named.
TEST(Btf, CommonFailureNamesTheSharedCause) {
  KernelFacts f = no_btf_facts(false);
  std::vector<ProbeStatus> st;
  for (const ProbeSpec& s : probe_catalog()) {
    Plan p = resolve_probe(s, f, BackendPref::automatic);
    ProbeStatus ps;
    ps.probe = s.name;
    ps.tried = p.skipped;
    for (auto& t : p.skipped) ps.reason += (ps.reason.empty() ? "" : "; ") + t.error;
    st.push_back(ps);
  }
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
