// CPU list strings as the kernel prints them (Documentation/admin-guide/cputopology.rst):
// "0-3,8,10-11". Used for /sys/devices/system/cpu/online and for CPU filters.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace schedhot {

/// Parses a kernel CPU list ("0-3,8"); returns the CPUs in ascending order, without
/// duplicates. Throws std::invalid_argument with a one-line message on bad syntax, on a
/// reversed range, or on a CPU id >= max_cpu (when max_cpu > 0).
std::vector<int> parse_cpulist(std::string_view text, int max_cpu = 0);

/// Formats CPUs (any order, duplicates allowed) as a compact kernel CPU list ("0-3,8").
std::string format_cpulist(std::vector<int> cpus);

}  // namespace schedhot
