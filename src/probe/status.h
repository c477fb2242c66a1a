// ProbeStatus: how a probe attached, or exactly why it could not. Everything that
// prints probe state reads a ProbeStatus; only the attacher (attach.cpp) decides it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "probe/catalog.h"

namespace schedhot {

/// One failed attempt (backend + symbol) and its reason.
struct AttachTry {
  Backend backend = Backend::none;
  std::string symbol;
  std::string error;  ///< one line, errno name and meaning
};

/// One lock-taking site of a ProbeKind::sites probe.
struct SiteStatus {
  std::string site;     ///< function name from kBcastSites
  std::string symbol;   ///< resolved symbol ("" when absent)
  Backend backend = Backend::none;
  bool attached = false;
  std::string error;    ///< why not, when !attached
  /// Its exit program (AttachOptions::bcast_holder: the holder state) attached too; else
  /// exit_error says why (the site's calls are still counted).
  bool exit_attached = false;
  std::string exit_error;
};

/// One copy (entry point) of a function probe's target: compiler clones and same-name
/// functions are each attached, into the probe's one set of per-CPU slots.
struct CopyStatus {
  std::string symbol;               ///< kallsyms name
  uint64_t addr = 0;                ///< 0 when unknown (kallsyms hidden or unusable)
  Backend backend = Backend::none;  ///< what it attached with, when attached
  bool attached = false;
  std::string error;                ///< why not, when !attached ("" when never tried)
};

/// A symbol name with several addresses in a symbol table, and what was done about it.
struct AmbiguousSymbol {
  std::string name;             ///< "tick_broadcast_lock", "cpupri_set"
  std::vector<uint64_t> addrs;  ///< every address (in the running kernel)
  std::string table;            ///< "kallsyms" or the System.map path
};

/// The attach outcome of one probe.
struct ProbeStatus {
  std::string probe;                ///< catalog name
  std::string target;               ///< what it observes
  bool attached = false;
  Backend backend = Backend::none;  ///< fentry, kprobe or tracepoint (tp_btf/raw_tp or a proxy)
  std::string symbol;               ///< resolved function, or the tracepoints used
  std::string via;                  ///< "via sched_balance_trigger (nohz_balancer_kick inlined)", clone note, ""
  bool proxy = false;               ///< a tracepoint stand-in, not the function itself
  std::string proxy_label;
  std::string proxy_error;          ///< the proxy's known error
  std::string reason;               ///< when !attached: why, one line per tried backend joined by "; "
  std::vector<AttachTry> tried;     ///< attempts that failed before the one that worked
  std::vector<SiteStatus> sites;    ///< ProbeKind::sites only
  std::vector<std::string> notes;   ///< path not in use, tracepoint blind spots, address source
  /// Function probes whose target has several copies: each, attached or why not; empty
  /// for one copy. symbol then lists the attached ones, "a, b".
  std::vector<CopyStatus> copies;
  /// Names this probe depends on that have several addresses (a function's copies, a
  /// data symbol such as tick_broadcast_lock, which is then not filtered on).
  std::vector<AmbiguousSymbol> ambiguous;

  /// "fentry", "kprobe", "tp_btf", "raw_tp", or the proxy label.
  std::string backend_label() const;
  /// "attached" / "unavailable: <reason>" in one line.
  std::string summary() const;
};

/// How a bcast_wait note starts while tick_broadcast_lock's address is still being learned
/// (src/probe/learn.h); once learned the note is replaced by the address and its source.
inline constexpr std::string_view kLockAddrUnknownNote = "tick_broadcast_lock address unknown";
/// In a kLockAddrUnknownNote note when the address cannot be learned either: contention
/// stacks cannot be symbolized without kallsyms addresses (hidden or unreadable).
inline constexpr std::string_view kLockAddrUnlearnable = "cannot learn it from contention stacks";

/// How bcast_lock's note starts when its sites' exits keep each CPU's holder state (abi.h
/// struct sh_bcast_holder): "holder state: N of M attached sites keep ...".
inline constexpr std::string_view kHolderNote = "holder state";
/// How bcast_wait's note starts when a bcast_wait rule was given but no holder state is kept.
inline constexpr std::string_view kHolderNotTrackedNote = "holder not tracked";

/// One-line meaning of an attach or load error: errno name, meaning, and the likely
/// cause for this backend (e.g. "fentry refused: EPERM (kernel lockdown or an LSM
/// denies BPF tracing programs)"). err is a positive errno.
std::string describe_attach_error(Backend b, int err, const std::string& what);
/// "EPERM" for 1, ... ; "errno N" when unknown.
std::string errno_name(int err);
/// A resolved symbol with its resolution label, for humans: "sched_balance_trigger
/// (nohz_balancer_kick inlined)" from ("sched_balance_trigger", "via sched_balance_trigger
/// (nohz_balancer_kick inlined)"); the label as is when it names another symbol.
std::string symbol_with_via(const std::string& symbol, const std::string& via);
/// Where an attached probe runs, for humans: its backend label (backend_label()) and
/// `where` (symbol_with_via()), "fentry cpupri_set"; a proxy's label already naming `where`
/// alone, and one that does not with `where` in parentheses: "proxy: timer:tick_stop(success=1)
/// on the idle task (tp_btf/tick_stop)".
std::string attach_text(const std::string& label, const std::string& where);
/// An unavailable probe's reason for a table row: the parenthesised explanations dropped,
/// "fentry refused: EPERM; kprobes not built into this kernel" from the full reason
/// (which `probes`, `info` and the JSON outputs keep).
std::string brief_reason(const std::string& reason);

/// The failure every probe that was tried shares (an error line found in each unattached,
/// selected probe's reason), e.g. "no vmlinux BTF: ...; kprobes not built into this
/// kernel"; "" when they failed for different reasons or a probe attached.
std::string common_failure(const std::vector<ProbeStatus>& statuses);

/// Fills an attach outcome from its copies (two or more; st.attached, backend and proxy
/// already set): symbol lists the attached copies ("a, b", "a at 0x.., a at 0x.." for
/// same-name ones), via becomes plan_via ("(2 copies of X (compiler clones))") unless a
/// proxy is used, notes get "WHAT; attached both" or "WHAT; attached a only: b (why)
/// could not be attached; its calls are missed" or "WHAT; none could be attached", and
/// st.copies = copies. what is describe_copies() of the plan.
void summarize_copies(ProbeStatus& st, const std::vector<CopyStatus>& copies, const std::string& what,
                      const std::string& plan_via);

/// "ambiguous: 2 addresses for cpupri_set in kallsyms (0x..., 0x...)", one line.
std::string describe_ambiguity(const AmbiguousSymbol& a);

/// JSON of a ProbeStatus (the README's schedhot.probes/1); from_json gives the defaults
/// (no copies, nothing ambiguous) for keys that older recordings lack.
void to_json(nlohmann::json& j, const ProbeStatus& s);
void from_json(const nlohmann::json& j, ProbeStatus& s);
Backend backend_from_string(const std::string& s);

}  // namespace schedhot
