// Privilege checks before touching BPF.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace schedhot {

/// "" when this process may load and attach tracing BPF programs (root, CAP_SYS_ADMIN,
/// or CAP_BPF + CAP_PERFMON); otherwise a one-line message naming what is missing.
std::string missing_privileges();

/// This process's effective capability set (/proc/self/status CapEff, bit n = capability
/// n, e.g. 1 << 34 CAP_SYSLOG); nullopt when it cannot be read.
std::optional<uint64_t> effective_capabilities();

/// Raises RLIMIT_MEMLOCK to unlimited (kernels before 5.11 charge BPF maps to it).
/// Returns "" or a one-line warning.
std::string raise_memlock();

}  // namespace schedhot
