// Probe resolution, the pure half: from the catalog and the kernel's facts, the ordered
// list of attach candidates for a probe (fentry, kprobe, tracepoint proxy), with
// inlined targets mapped to their callers and compiler clones found. attach.cpp then
// tries the candidates for real. No BPF here, so fixtures can test every rule.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/catalog.h"
#include "probe/kernel_facts.h"
#include "probe/status.h"

namespace schedhot {

/// --backend: auto tries fentry, then kprobe, then the proxy; the others force one
/// (proxy: only the tracepoint stand-ins, to measure them against the real functions).
enum class BackendPref { automatic, fentry, kprobe, proxy };
/// Parses "auto" | "fentry" | "kprobe" | "proxy"; throws std::invalid_argument otherwise.
BackendPref parse_backend_pref(const std::string& s);

/// One way to attach a probe.
struct Candidate {
  Backend backend = Backend::none;
  std::string symbol;                ///< function to attach to (ProbeKind::function)
  std::vector<std::string> sites;    ///< per kBcastSites entry, resolved symbol or "" (ProbeKind::sites)
  std::vector<TpProgram> programs;   ///< tracepoint programs (tracepoint probes and proxies)
  std::string via;                   ///< "via HOST (TARGET inlined)" or "compiler clone X" or ""
  uint64_t addr = 0;                 ///< kprobe at this address rather than by name (a name with several addresses)
  int copy = -1;                     ///< index into Plan::copies (function candidates); -1 for tracepoint programs
  bool proxy = false;
  std::string proxy_label;
  std::string proxy_error;
};

/// One entry point of a function probe's target. A function can exist as several copies
/// that all run: compiler clones (foo.isra.0, foo.constprop.1) and same-name static
/// functions in different files. Each call enters exactly one copy, so every copy is
/// attached, into the same per-CPU slots, and the counts add up.
struct CodeCopy {
  std::string symbol;  ///< kallsyms name ("cpupri_set.isra.0")
  uint64_t addr = 0;   ///< its address; 0 when kallsyms hides addresses or is unusable
};

/// The candidates of one probe, best first, and why other options were not tried.
struct Plan {
  const ProbeSpec* spec = nullptr;
  std::vector<Candidate> candidates;
  std::vector<AttachTry> skipped;   ///< options ruled out without trying, with the reason
  std::vector<std::string> notes;   ///< facts worth printing (".cold part", kallsyms hidden)
  /// How the target was found whatever the backends allowed: "via HOST (TARGET inlined)",
  /// "(compiler clone X of Y)" or "" (function probes).
  std::string via;
  /// Per kBcastSites entry, the resolved symbol or "" when the kernel has none (sites probes).
  std::vector<std::string> sites;
  /// Function probes: the copies of the target (one for most kernels). Candidates name
  /// their copy; the attacher tries each copy's candidates in order and keeps every copy
  /// that attaches, then the proxy only when no copy did.
  std::vector<CodeCopy> copies;
  /// The name the copies are copies of ("cpupri_set").
  std::string copies_of;
  /// Names with several addresses: the target's copies when more than one, and each
  /// site with more than one (sites probes count only a site's first copy: see notes).
  std::vector<AmbiguousSymbol> ambiguous;
};

/// "2 copies of cpupri_set (compiler clones)" / "(2 functions of this name)" / both; "" for
/// one copy. For notes and the ambiguity line of `probes`.
std::string describe_copies(const Plan& p);

/// Resolves one probe against a kernel. Never fails: a probe with no candidate has its
/// reasons in skipped.
Plan resolve_probe(const ProbeSpec& spec, const KernelFacts& facts, BackendPref pref);

/// Where a data symbol's address came from.
struct DataAddress {
  uint64_t addr = 0;    ///< 0 when unknown
  std::string source;   ///< "kallsyms", "System.map /path (KASLR offset 0x...)", or why unknown
  /// When the name has several addresses (two variables of that name): all of them, as
  /// they would be in the running kernel, and addr stays 0; empty otherwise.
  std::vector<uint64_t> ambiguous;
  std::string ambiguous_in;  ///< "kallsyms" or the System.map path, with ambiguous
};

/// Address of a kernel data symbol (tick_broadcast_lock) in the running kernel:
/// /proc/kallsyms when it lists data symbols (CONFIG_KALLSYMS_ALL), else the System.map
/// given, shifted by the KASLR offset measured on text symbols both tables share. A name
/// with several addresses in the table used gives no address (never a guess): source then
/// says "NAME is ambiguous: N addresses (0x..., 0x...) in kallsyms; not filtering on a
/// guess". KASLR anchors with several addresses are not used.
DataAddress resolve_data_symbol(const std::string& name, const KernelFacts& facts);

/// How bcast_wait gets tick_broadcast_lock's address on this kernel.
struct LockAddressPlan {
  uint64_t addr = 0;   ///< the address (resolve_data_symbol), 0 when unknown
  bool learn = false;  ///< unknown but learnable: start the learner (src/probe/learn.h)
  /// bcast_wait's note: "tick_broadcast_lock at ADDR from SOURCE", or starting with
  /// kLockAddrUnknownNote: learning, or (with kLockAddrUnlearnable) blind.
  std::string note;
  std::vector<uint64_t> ambiguous;  ///< DataAddress::ambiguous: the name has several addresses
  std::string ambiguous_in;         ///< where ("kallsyms" or the System.map path)
};
/// The address from resolve_data_symbol; else learning from contention stacks, which needs
/// usable /proc/kallsyms addresses to symbolize them (not hidden by kptr_restrict, readable).
LockAddressPlan plan_lock_address(const KernelFacts& facts);

}  // namespace schedhot
