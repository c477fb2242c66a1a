// The cpupri hot object: struct cpupri / cpupri_vec (kernel/sched/cpupri.h) inside struct
// root_domain (kernel/sched/sched.h), and its separate allocations (OFFSTACK pri_to_cpu[i]
// bitmaps, the kcalloc'd cpu_to_pri[]) once their addresses are learned. See
// ../shared/kernel-notes.md section 2.2 for the per-version layouts. Bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "probe/objects/object.h"

namespace schedhot {

struct LearnedAddresses;

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

/// The separate allocations of layout.learned grouped by shared lines (sorted by address;
/// two allocations whose byte ranges touch a common line_bytes line are in one group).
/// Empty when nothing was learned. O(n log n) in the allocations.
std::vector<SeparateGroup> separate_groups(const CoherenceLayout& layout);

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

}  // namespace schedhot
