// The tick_broadcast_lock hot object (`static __cacheline_aligned_in_smp DEFINE_RAW_SPINLOCK`,
// kernel/time/tick-broadcast.c): its address, alignment and neighbours from the symbol
// table. See ../shared/kernel-notes.md section 2.3.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/kallsyms.h"
#include "probe/objects/object.h"

namespace schedhot {

/// tick_broadcast_lock. BTF has no VAR for it: its address comes from the symbol table,
/// which holds static data only with CONFIG_KALLSYMS_ALL (or from a System.map).
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

}  // namespace schedhot
