// Cacheline layout of the shared hot kernel data that schedhot's probes touch, read from
// the traced kernel (BTF, kallsyms), never hard-coded. Each hot object (src/probe/objects/:
// the anonymous `nohz` struct of kernel/sched/fair.c, struct cpupri in struct root_domain,
// tick_broadcast_lock) owns its part: how it is read, its lines, its fix and its JSON; this
// file holds what is generic (the layout holding the parts, the loops over hot_objects(),
// the learned addresses, line arithmetic). All offsets and sizes are in bytes.
// See ../shared/kernel-notes.md sections 2.1-2.3 for the per-version layouts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "probe/kallsyms.h"
#include "probe/objects/cpupri.h"
#include "probe/objects/nohz.h"
#include "probe/objects/object.h"
#include "probe/objects/tick_broadcast_lock.h"


namespace schedhot {

/// Addresses of struct cpupri's root_domain and separate allocations (kernel/sched/cpupri.c
/// cpupri_init(): one zalloc_cpumask_var() per pri_to_cpu[i].mask with
/// CONFIG_CPUMASK_OFFSTACK=y, then kcalloc(nr_cpu_ids, sizeof(int)) for cpu_to_pri), learned
/// from the running kernel (learn_addresses(), src/probe/learn_addr.h). 0 = not learned.
struct LearnedAddresses {
  std::string source;                   ///< "BPF (raw_tp test run): this_rq()->rd on CPU 0"
  uint64_t rd = 0;                      ///< the root_domain the lines are modeled on
  std::vector<int> cpus;                ///< the CPUs whose this_rq()->rd is rd (ascending)
  int other_domains = 0;                ///< other root domains seen (cpusets), not modeled
  uint64_t cpu_to_pri = 0;              ///< rd->cpupri.cpu_to_pri
  int64_t cpu_to_pri_bytes = 0;         ///< nr_cpu_ids * 4
  std::vector<uint64_t> masks;          ///< rd->cpupri.pri_to_cpu[i].mask (OFFSTACK only; else empty)
  int64_t mask_bytes = 0;               ///< cpumask_size(): BITS_TO_LONGS(nr_cpu_ids) * 8
  /// nohz.idle_cpus_mask's OFFSTACK bitmap (read at &nohz + the member's offset when &nohz
  /// is in the symbol table), 0 = not learned; cpumask_size() bytes (mask_bytes).
  uint64_t nohz_idle_mask = 0;
};

/// What read_coherence_layout found. line_bytes is the cacheline size used for every
/// "which line" fact (sysfs coherency_line_size, HostInfo::cacheline_bytes).
struct CoherenceLayout {
  int line_bytes = 64;
  std::string btf_source;               ///< where the BTF came from ("" unknown)
  // The hot objects' parts (probe/objects/*.h), each read and written by its object.
  std::optional<NohzLayout> nohz;        ///< nohz_object(); nullopt: not in BTF
  std::optional<CpupriLayout> cpupri;    ///< cpupri_object(); nullopt: not in BTF
  BcastLockLayout bcast_lock;            ///< tick_broadcast_lock_object()
  /// Learned addresses (nullopt: not learned, e.g. a recording made before learning or a
  /// kernel where the BPF run failed: the separate allocations are then each their own line).
  std::optional<LearnedAddresses> learned;
  /// One line each: what was read from where, and for each thing not found which line is
  /// then modeled on an assumption.
  std::vector<std::string> notes;
};

/// Reads the layout from btf (vmlinux BTF: btf__load_vmlinux_btf, or btf__parse of a
/// --btf FILE; may be nullptr: everything from BTF is then missing, with notes) and syms
/// (/proc/kallsyms or a System.map; may be nullptr or empty: the lock's address and
/// &nohz are then unknown). line_bytes must be a power of two in 16..4096, else
/// std::invalid_argument. btf_source / syms_source name the inputs in notes. Never throws
/// for a kernel that lacks a struct: that is a missing optional and a note.
CoherenceLayout read_coherence_layout(const struct btf* btf, const SymbolTable* syms, int line_bytes,
                                      const std::string& btf_source = "", const std::string& syms_source = "");

/// Loads vmlinux BTF from btf_path (a --btf FILE) or, when empty, libbpf's search
/// (/sys/kernel/btf/vmlinux first), and reads the layout as read_coherence_layout. A BTF
/// that cannot be loaded is a note, not an error (the lines are then modeled on assumptions).
CoherenceLayout read_coherence_layout_from(const std::string& btf_path, const SymbolTable* syms, int line_bytes,
                                           const std::string& syms_source = "");

/// The lowest kernel address of the architectures schedhot runs on (a plausibility bound for
/// learned addresses, also when an x86 host reads another's recording): x86-64 with 5-level
/// paging (LA57, e.g. QEMU's -cpu max) puts the direct map at 0xff11000000000000
/// (Documentation/arch/x86/x86_64/mm.rst), 4-level at 0xffff888000000000; arm64 with 52-bit
/// VAs starts at 0xfff0000000000000; ppc64's linear map at PAGE_OFFSET 0xc000000000000000
/// (arch/powerpc/include/asm/page.h; a 6.12 ppc64le guest's root_domain was at
/// 0xc000000003f30000). User addresses are below 2^57 on all three.
inline constexpr uint64_t kKernelLow = 0xc000000000000000ull;

/// The line index of a byte offset: floor(offset / line_bytes) (negative offsets floor down).
int64_t line_of(int64_t offset, int line_bytes);

/// The lines the coherence model tracks for this layout, in a fixed order: each hot
/// object's (HotObject::lines()) in hot_objects() order: nohz lines, cpupri lines
/// (root_domain lines holding vectors, OFFSTACK mask bitmaps, cpu_to_pri[]),
/// tick_broadcast_lock. A missing layout still yields its line(s) with assumption set.
std::vector<LineDef> modeled_lines(const CoherenceLayout& layout);

/// Which seed-patch fixes this kernel already has: one Fix per hot object, in
/// hot_objects() order (nohz.nr_cpus removed, 5d86d542, v7.0; cpupri_vec.count removed;
/// tick_broadcast_lock aligned and alone in its line).
struct FixesPresent {
  std::vector<Fix> fixes;
  /// The fix with key `key` ("nohz_nr_cpus_removed"): whether it is present, nullopt when
  /// unknown or no fix has that key.
  std::optional<bool> present(std::string_view key) const;
  /// The fix with key `key`, or nullptr.
  const Fix* find(std::string_view key) const;
};

/// Fix detection from a layout (BTF for nohz and cpupri; kallsyms for the lock): each
/// object's HotObject::fix().
FixesPresent fixes_present(const CoherenceLayout& layout);

/// The fixes with nothing known: every fix unknown for `reason` ("layout not recorded").
FixesPresent fixes_unknown(const std::string& reason);

/// One line for `probes` / `info`, e.g. "fixes: nohz.nr_cpus present (fix absent);
/// cpupri_vec.count present (fix absent); tick_broadcast_lock unknown (KALLSYMS_ALL off (...))".
std::string to_string(const FixesPresent& f);

/// The short form for the replay header: "fixes: nohz.nr_cpus gone, cpupri_vec.count
/// present, bcast_lock line ?" ("?" unknown).
std::string short_string(const FixesPresent& f);

/// The layout's sources in one line: "BTF /sys/kernel/btf/vmlinux; tick_broadcast_lock
/// 0xffffffff83a1c040 from /proc/kallsyms; cacheline 64 B" (each object's source_text()).
std::string layout_source_text(const CoherenceLayout& l);

/// The layout a recording without one is modeled on: Debian's distro shape for
/// kernel_release (CONFIG_CPUMASK_OFFSTACK=y; nohz with nr_cpus before 7.0; cpupri_vec with
/// count; tick_broadcast_lock in its own line: each object's assume()), with one note saying so.
CoherenceLayout assumed_layout(const std::string& kernel_release, int line_bytes);

/// JSON of a CoherenceLayout (line_bytes, btf_source, notes, learned, and each hot object's
/// part under its name, HotObject::to_json(); absent parts are null). from_json checks every
/// number (offsets and sizes in 0..1 MiB, members inside their struct, line_bytes a power
/// of two in 16..4096, nr_prios in 1..1024) and throws std::runtime_error with a one-line
/// message on anything out of range or malformed.
void to_json(nlohmann::json& j, const CoherenceLayout& l);
void from_json(const nlohmann::json& j, CoherenceLayout& l);

}  // namespace schedhot
