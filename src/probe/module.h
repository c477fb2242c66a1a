// A probe module: everything schedhot knows about one probe, in one place next to its
// bpf/*.bpf.c (src/probe/modules/<family>.cpp): its ProbeSpec (targets, candidates, proxy,
// slot fields), its typed program handles in the skeleton, what it configures before the
// BPF object loads (.rodata), what it checks before trying and notes after attaching, the
// labels of its counter arrays, why it can be blind, its per-CPU table columns
// (ProbeSpec::columns) and its own report section. The catalog (catalog.h) is the list
// of modules; code outside a module asks the module rather than testing a probe's name.
//
// Adding a probe family: its slot struct (and sh_probe_id) in include/schedhot/abi.h, its
// programs in bpf/<family>.bpf.c and its module(s) in src/probe/modules/<family>.cpp, each
// registered there with SCHEDHOT_PROBE_MODULE(Class, SH_P_...) (below). Nothing else: CMake
// finds both files by glob, and probe_modules() orders the registered modules by the
// sh_probe_id each was registered with.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "probe/catalog.h"
#include "probe/kernel_facts.h"
#include "probe/status.h"
#include "sys/host.h"

struct schedhot_bpf;
struct bpf_program;
struct bpf_map;

namespace schedhot {

struct Plan;

/// What a program does for its probe: the entry or exit of a function (fentry/fexit or
/// kprobe/kretprobe, ProbeKind::function), a site's entry (ProbeKind::sites, index = the
/// site), or a tracepoint program (index into the candidate's TpProgram list).
enum class ProgRole { entry, exit, site, tracepoint };

/// Something a probe services after attaching (bcast_wait's address learner): ProbeSet::poll
/// calls it; it returns true when it changed the probe's status.
class ProbePoller {
 public:
  virtual ~ProbePoller() = default;
  /// Services its work for up to timeout_ms; true when st was changed.
  virtual bool poll(int timeout_ms, ProbeStatus& st) = 0;
  /// Done: the poller can be dropped.
  virtual bool done() const = 0;
};

/// What after_attach works with. skel is null when there is no real BPF object (the unit
/// tests' fake loader); a module then only writes notes.
struct AttachContext {
  ProbeStatus& status;
  const KernelFacts& facts;
  const HostInfo& host;
  schedhot_bpf* skel = nullptr;            ///< the probe's (first) loaded object
  std::unique_ptr<ProbePoller>* poller = nullptr;  ///< set it to keep servicing the probe
};

/// --catch: what a caught event's detail word (abi.h sh_catch_rec.detail) is read with,
/// from the run's META (a recording's, or the live run's).
struct CaughtRun {
  int cpupri_nr_prios = 101;  ///< cpupri's pri_to_cpu[] length (101 since v5.11)
  /// The run's status of probe id (enum sh_probe_id), null when the run did not have it.
  std::function<const ProbeStatus*(uint16_t id)> status;
};

/// A probe's counts over a report's window, summed over all CPUs, as a module's report
/// section reads them (analysis/report.cpp implements it over model's Interval; probe/ does
/// not include model/).
class WindowTotals {
 public:
  virtual ~WindowTotals() = default;
  /// The window's delta of each element of counter array `field`, as many as the
  /// recording's layout has; empty when the recording has no such field.
  virtual std::vector<uint64_t> array(std::string_view field) const = 0;
};

class ProbeModule {
 public:
  virtual ~ProbeModule() = default;
  /// The probe's spec (catalog entry), filled by the module's constructor.
  const ProbeSpec& spec() const { return spec_; }

  /// The skeleton's program for (backend, role, index), nullptr when the probe has none
  /// (e.g. no exit program of an untimed probe). Typed: skel->progs.NAME.
  virtual bpf_program* program(schedhot_bpf* skel, Backend b, ProgRole role, int index) const = 0;
  /// The skeleton's slots map of this probe (skel->maps.NAME_slots).
  virtual bpf_map* slots_map(schedhot_bpf* skel) const = 0;
  /// Sizes this probe's maps in a freshly opened object: for all CPUs when `kept` (the
  /// object is this probe's), else 1 entry. Default: the slots map only.
  virtual void size_maps(schedhot_bpf* skel, bool kept, uint32_t ncpus) const;
  /// Writes this probe's .rodata in a freshly opened object (every object gets every
  /// module's configuration, as the .rodata is the object's). Default: nothing.
  virtual void configure(schedhot_bpf* skel, const KernelFacts& facts) const;

  /// Before trying: a failure that rules the probe out on this kernel (an address its BPF
  /// side needs is missing), appended to failures / status.ambiguous; returns false when
  /// nothing may be tried. May remove from plan the candidates it rules out alone (an
  /// address only the proxy needs), each with its failure. Default: true.
  virtual bool check(const KernelFacts& facts, Plan& plan, ProbeStatus& st, std::vector<AttachTry>& failures) const;
  /// After a successful attach: notes that depend on the machine, and BPF state to set.
  virtual void after_attach(AttachContext& ctx) const;

  /// Label of element `index` of counter array `field` ("RT->NORMAL", "BALANCE|STATS"),
  /// nullopt when the module has none (then the recording's labels or the index).
  virtual std::optional<std::string> label(const std::string& field, uint32_t index) const;
  /// Labels recorded in the probe's meta (ProbeMeta::labels): bcast_lock's sites. Default none.
  virtual std::vector<std::string> meta_labels() const;
  /// Why the probe, though attached, cannot see its events on `host` with this status; ""
  /// when it can. Default "".
  virtual std::string blind_reason(const HostInfo& host, const ProbeStatus& st) const;

  /// A report section of the probe's own, added to its object in the report's "probes"
  /// (report) from the window's totals: cpupri_set's "vectors". Default nothing.
  virtual void add_report_section(const WindowTotals& totals, nlohmann::json& report) const;
  /// That section as one item of the probe's line in the text report's details
  /// ("vectors written: [3] +5/-5"), from its report object; "" when there is nothing to
  /// show. Default "".
  virtual std::string report_section_text(const nlohmann::json& report) const;

  /// --catch: whether this probe's caught events' detail word says something in `run`
  /// (bcast_wait's: only where bcast_lock kept each CPU's holder state). Default true.
  virtual bool caught_detail_kept(const CaughtRun& run) const;
  /// A caught event's detail in words ("RT->NORMAL", "state 2", "holder CPU 3 in
  /// __tick_broadcast_oneshot_control"). Default: the number.
  virtual std::string caught_detail_text(uint64_t detail, const CaughtRun& run) const;
  /// The detail as fields of a per-event document (export's Perfetto args) added to out
  /// (an object): bcast_wait's holder_cpu, holder_site, ... Default none.
  virtual void caught_detail_fields(uint64_t detail, nlohmann::json& out) const;
  /// Why a decoded detail word cannot be this probe's on a machine of ncpus possible CPUs
  /// (a recording's damage: a holder CPU past them); "" when it can. Default "".
  virtual std::string caught_detail_error(uint64_t detail, uint32_t ncpus) const;

 protected:
  ProbeSpec spec_;
};

/// Every registered module, indexed by sh_probe_id: sorted by the order each was registered
/// with (SCHEDHOT_PROBE_MODULE), never by link order. Built on the first call, after static
/// initialization; throws std::logic_error when the registrations are not exactly
/// 0..SH_NPROBES-1 or a module's spec().id differs from its order.
const std::vector<const ProbeModule*>& probe_modules();
/// A module by probe name, or nullptr.
const ProbeModule* find_module(std::string_view name);

/// Returns a module's one instance (a function-local static: built on first use).
using ProbeModuleFactory = const ProbeModule& (*)();

/// Registers a module during static initialization (SCHEDHOT_PROBE_MODULE defines one per
/// module). order is the module's sh_probe_id: its index in probe_modules(). Only the factory
/// is kept; the module is built when probe_modules() is first called.
struct ProbeModuleRegistrar {
  ProbeModuleRegistrar(int order, ProbeModuleFactory factory);
};

}  // namespace schedhot

/// Registers ProbeModule subclass Class (default-constructible) at index order (its
/// sh_probe_id, SH_P_...) of probe_modules(). Use it once per module at namespace scope of its
/// src/probe/modules/<family>.cpp, after the class. The module objects are linked whole into
/// every program (CMake's schedhot_probe_modules OBJECT library), so none is dropped.
#define SCHEDHOT_PROBE_MODULE(Class, order)                                          \
  static const ::schedhot::ProbeModuleRegistrar schedhot_probe_module_##Class {     \
    (order), []() -> const ::schedhot::ProbeModule& {                                \
      static const Class instance;                                                   \
      return instance;                                                               \
    }                                                                                \
  }
