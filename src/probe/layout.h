// Cacheline layout of the shared hot kernel data that schedhot's probes touch, read from
// the traced kernel (BTF, kallsyms), never hard-coded: the anonymous `nohz` struct
// (kernel/sched/fair.c), struct cpupri / cpupri_vec (kernel/sched/cpupri.h) inside struct
// root_domain (kernel/sched/sched.h), and tick_broadcast_lock (kernel/time/tick-broadcast.c).
// Also which of the seed patches this kernel has (nohz.nr_cpus and cpupri_vec.count
// removed; tick_broadcast_lock alone in its line). All offsets and sizes are in bytes.
// See ../shared/kernel-notes.md sections 2.1-2.3 for the per-version layouts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "probe/kallsyms.h"

struct btf;  // libbpf

namespace schedhot {

/// One member of a kernel struct, as BTF gives it: name, byte offset in its struct, byte
/// size (btf__resolve_size of its type).
struct MemberLayout {
  std::string name;
  int64_t offset = 0;
  int64_t size = 0;
};

/// The anonymous `static struct { ... } nohz ____cacheline_aligned;` of kernel/sched/fair.c
/// (CONFIG_NO_HZ_COMMON), found in BTF as the anonymous struct whose members include
/// idle_cpus_mask, has_blocked (<= 6.19) or has_blocked_load (7.0+), next_balance and
/// next_blocked. needs_update (v5.16+) and nr_cpus (<= 6.19) are optional.
struct NohzLayout {
  int64_t size = 0;                     ///< sizeof the struct (64 on the 6.18 VM)
  MemberLayout idle_cpus_mask;          ///< cpumask_var_t: 8 B pointer or the inline bitmap
  /// CONFIG_CPUMASK_OFFSTACK=y: idle_cpus_mask is a pointer to a separate kmalloc'd bitmap
  /// of cpumask_size() bytes; false: the bitmap is inline (mask_bytes bytes, NR_CPUS bits).
  bool mask_is_pointer = false;
  int64_t mask_bytes = 0;               ///< inline bitmap bytes; 0 when mask_is_pointer
  std::optional<MemberLayout> nr_cpus;  ///< atomic_t; absent when the first seed's fix is in (5d86d542, v7.0)
  MemberLayout has_blocked;             ///< .name says which: "has_blocked" or "has_blocked_load"
  std::optional<MemberLayout> needs_update;  ///< absent before v5.16
  MemberLayout next_balance;
  MemberLayout next_blocked;
  std::vector<MemberLayout> other_members;   ///< members none of the above (a future field)
  /// &nohz from the symbol table when it is readable (KALLSYMS_ALL, or a System.map:
  /// link-time address), else nullopt.
  std::optional<uint64_t> address;

  bool has_nr_cpus() const { return nr_cpus.has_value(); }
  /// Every member in offset order (the named ones and other_members).
  std::vector<MemberLayout> members() const;
};

/// struct cpupri embedded in struct root_domain (rd->cpupri), kernel/sched/cpupri.h and
/// kernel/sched/sched.h. Offsets of vector i: cpupri_offset + pri_to_cpu_offset +
/// i * vec_size (+ count_offset / mask_offset), from the start of the root_domain.
struct CpupriLayout {
  int64_t root_domain_size = 0;         ///< sizeof(struct root_domain)
  int64_t cpupri_offset = 0;            ///< offsetof(struct root_domain, cpupri)
  int64_t cpupri_size = 0;              ///< sizeof(struct cpupri)
  int64_t pri_to_cpu_offset = 0;        ///< offsetof(struct cpupri, pri_to_cpu)
  int nr_prios = 0;                     ///< pri_to_cpu[] elements: 101 since v5.11, 102 before
  int64_t vec_size = 0;                 ///< sizeof(struct cpupri_vec)
  /// offsetof(struct cpupri_vec, count); nullopt when the cpupri seed patch removed it.
  std::optional<int64_t> count_offset;
  int64_t count_size = 0;               ///< sizeof count (4), 0 when absent
  int64_t mask_offset = 0;              ///< offsetof(struct cpupri_vec, mask)
  bool mask_is_pointer = false;         ///< cpumask_var_t is a pointer (CPUMASK_OFFSTACK=y)
  int64_t mask_bytes = 0;               ///< inline bitmap bytes; 0 when mask_is_pointer
  int64_t cpu_to_pri_offset = 0;        ///< offsetof(struct cpupri, cpu_to_pri) (an int* to a kcalloc'd array)
  /// root_domain members other than cpupri whose bytes overlap a line (of the line size
  /// given to read_coherence_layout) that pri_to_cpu[0] occupies: rto_mask, rto_cpu, ...
  /// Offsets are within struct root_domain.
  std::vector<MemberLayout> vec0_line_sharers;
  /// root_domain members other than cpupri that share any line with struct cpupri (a
  /// superset of vec0_line_sharers: also the members after cpu_to_pri, e.g. pd).
  std::vector<MemberLayout> cpupri_line_sharers;

  /// Byte offset of pri_to_cpu[i] in struct root_domain.
  int64_t vec_offset(int i) const { return cpupri_offset + pri_to_cpu_offset + int64_t(i) * vec_size; }
};

/// tick_broadcast_lock (`static __cacheline_aligned_in_smp DEFINE_RAW_SPINLOCK`,
/// kernel/time/tick-broadcast.c). BTF has no VAR for it: its address comes from the symbol
/// table, which holds static data only with CONFIG_KALLSYMS_ALL (or from a System.map).
struct BcastLockLayout {
  /// nullopt: unknown, see reason. From a System.map it is the link-time address: KASLR
  /// moves the kernel by a multiple of 2 MiB, so alignment and neighbours still hold.
  std::optional<uint64_t> address;
  std::string reason;                   ///< why unknown ("unknown: KALLSYMS_ALL off ..."), "" when known
  std::string source;                   ///< where the address was read ("/proc/kallsyms", a System.map path)
  int64_t lock_bytes = 0;               ///< sizeof(raw_spinlock_t) from BTF, 0 unknown
  std::optional<bool> aligned;          ///< address % line_bytes == 0
  /// Other core-kernel symbols whose address lies in the lock's line (any type: kallsyms
  /// has no sizes, so a symbol starting before the line and reaching into it is not seen).
  std::vector<Symbol> neighbours;
  /// aligned and no neighbour in the line; nullopt when the address is unknown.
  std::optional<bool> own_line;
};

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

/// A group of separate allocations (learned addresses) whose lines touch: modeled as one
/// object of lines, starting at the line holding its lowest byte.
struct SeparateGroup {
  /// "cpupri.pri_to_cpu[3].mask" (alone), "cpupri.pri_to_cpu[0-7].mask" (bitmaps sharing
  /// lines), "cpupri.cpu_to_pri", "cpupri.pri_to_cpu[100].mask+cpu_to_pri".
  std::string object;
  uint64_t base = 0;                    ///< address of its first line (line-aligned)
  int64_t lines = 0;                    ///< lines it spans
  /// Members: "cpupri.pri_to_cpu[i].mask" or "cpupri.cpu_to_pri", byte offset from base, bytes.
  std::vector<MemberLayout> members;
};

/// What read_coherence_layout found. line_bytes is the cacheline size used for every
/// "which line" fact (sysfs coherency_line_size, HostInfo::cacheline_bytes).
struct CoherenceLayout {
  int line_bytes = 64;
  std::string btf_source;               ///< where the BTF came from ("" unknown)
  std::optional<NohzLayout> nohz;
  std::optional<CpupriLayout> cpupri;
  BcastLockLayout bcast_lock;
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

/// The separate allocations of layout.learned grouped by shared lines (sorted by address;
/// two allocations whose byte ranges touch a common line_bytes line are in one group).
/// Empty when nothing was learned. O(n log n) in the allocations.
std::vector<SeparateGroup> separate_groups(const CoherenceLayout& layout);

/// The lowest kernel address: x86-64 with 5-level paging (LA57, e.g. QEMU's -cpu max) puts
/// the direct map at 0xff11000000000000 (Documentation/arch/x86/x86_64/mm.rst), 4-level at
/// 0xffff888000000000; arm64 with 52-bit VAs starts at 0xfff0000000000000.
inline constexpr uint64_t kKernelLow = 0xff00000000000000ull;

/// The plausibility checks applied to learned addresses, used by learn_addresses() (probe/learn_addr.h): every address
/// in the kernel half (>= 0xff00000000000000: x86-64 with 4- or 5-level paging, arm64), the masks distinct and none
/// inside the root_domain. "" when plausible, else what is wrong (one line).
std::string implausible(const LearnedAddresses& a, const CpupriLayout& c);

/// Where a separate allocation ("cpupri.pri_to_cpu[i].mask", "cpupri.cpu_to_pri") lies
/// when learned: its group's object and its byte offset from the group's base; nullopt
/// when not learned.
std::optional<std::pair<std::string, int64_t>> learned_placement(const CoherenceLayout& layout, const std::string& name);

/// rd % line_bytes when the root_domain's address was learned, else 0 (assumed aligned).
int64_t root_domain_skew(const CoherenceLayout& layout);

/// The line index of a byte offset: floor(offset / line_bytes) (negative offsets floor down).
int64_t line_of(int64_t offset, int line_bytes);

/// One field in a modeled line. offset: bytes from the start of LineDef::object (nullopt
/// when not known: the line is modeled on LineDef::assumption); size: bytes (nullopt:
/// unknown until learned, e.g. an OFFSTACK bitmap of cpumask_size() bytes).
struct LineField {
  std::string name;
  std::optional<int64_t> offset;
  std::optional<int64_t> size;
};

/// One cacheline the coherence model tracks.
struct LineDef {
  /// "nohz" (or "nohz.line<k>" when the struct spans lines), "nohz.idle_cpus_mask" (the
  /// separate OFFSTACK bitmap), "cpupri.vec[0]" (the line holding pri_to_cpu[0]'s first
  /// byte), "cpupri.line<k>" (line k of root_domain, grouping the vectors in it),
  /// "cpupri.vec[<i>].mask" (an OFFSTACK bitmap), "cpupri.cpu_to_pri", "tick_broadcast_lock".
  std::string id;
  /// What offsets are relative to: "nohz", "root_domain", "cpu_to_pri[]",
  /// "nohz.idle_cpus_mask bitmap", "cpupri.vec[i].mask bitmap", "tick_broadcast_lock line".
  std::string object;
  std::optional<int64_t> line_offset;   ///< start of this line from the start of object
  std::vector<LineField> fields;        ///< every field that overlaps the line
  /// "static", "in root_domain (kzalloc)", or "separate, address unknown until learned".
  std::string allocation;
  /// The line's address: known for static data found in the symbol table. The hook for BPF
  /// address learning (cp->pri_to_cpu[i].mask, cp->cpu_to_pri, rd): set it and address_known.
  std::optional<uint64_t> address;
  bool address_known = false;
  /// For a per-CPU element array (cpu_to_pri[]): elements (CPUs) per line, else 0.
  int cpus_per_line = 0;
  /// "" when every fact came from BTF/kallsyms; else what is assumed, one line.
  std::string assumption;
};

/// The lines the coherence model tracks for this layout, in a fixed order: nohz lines,
/// cpupri lines (root_domain lines holding vectors, OFFSTACK mask bitmaps, cpu_to_pri[]),
/// tick_broadcast_lock. A missing layout still yields its line(s) with assumption set.
std::vector<LineDef> modeled_lines(const CoherenceLayout& layout);

/// Which seed-patch fixes this kernel already has. nullopt = unknown, *_reason says why.
struct FixesPresent {
  std::optional<bool> nohz_nr_cpus_removed;  ///< nohz.nr_cpus gone (5d86d542, v7.0)
  std::string nohz_reason;
  std::optional<bool> cpupri_count_removed;  ///< cpupri_vec.count gone (the cpupri seed)
  std::string cpupri_reason;
  std::optional<bool> bcast_lock_own_line;   ///< tick_broadcast_lock aligned and alone in its line
  std::string bcast_reason;
};

/// Fix detection from a layout (BTF for nohz and cpupri; kallsyms for the lock).
FixesPresent fixes_present(const CoherenceLayout& layout);

/// One line for `probes` / `info`, e.g. "fixes: nohz.nr_cpus present (fix absent);
/// cpupri_vec.count present (fix absent); tick_broadcast_lock unknown (KALLSYMS_ALL off (...))".
std::string to_string(const FixesPresent& f);

/// JSON of a CoherenceLayout (objects; absent layouts are null). from_json checks every
/// number (offsets and sizes in 0..1 MiB, members inside their struct, line_bytes a power
/// of two in 16..4096, nr_prios in 1..1024) and throws std::runtime_error with a one-line
/// message on anything out of range or malformed.
void to_json(nlohmann::json& j, const CoherenceLayout& l);
void from_json(const nlohmann::json& j, CoherenceLayout& l);

}  // namespace schedhot
