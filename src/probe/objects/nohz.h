// The nohz hot object: the anonymous `static struct { ... } nohz ____cacheline_aligned;` of
// kernel/sched/fair.c (CONFIG_NO_HZ_COMMON), and the separate OFFSTACK bitmap of its
// idle_cpus_mask. See ../shared/kernel-notes.md section 2.1 for the per-version layouts.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "probe/objects/object.h"

namespace schedhot {

/// The nohz struct, found in BTF as the anonymous struct whose members include
/// idle_cpus_mask, has_blocked (<= 6.19) or has_blocked_load (7.0+), next_balance and
/// next_blocked. needs_update (v5.16+) and nr_cpus (<= 6.19) are optional. Bytes.
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

}  // namespace schedhot
