#include "sys/privileges.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace schedhot {

std::optional<uint64_t> effective_capabilities() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0) {
      try {
        return std::stoull(line.substr(7), nullptr, 16);
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  return std::nullopt;
}

std::string missing_privileges() {
  const std::optional<uint64_t> caps = effective_capabilities();
  if (!caps) return "";  // cannot tell; let the kernel decide
  const unsigned long long eff = *caps;
  const unsigned long long sys_admin = 1ull << 21, perfmon = 1ull << 38, bpf = 1ull << 39;
  if (eff & sys_admin) return "";
  if ((eff & bpf) && (eff & perfmon)) return "";
  std::string miss;
  if (!(eff & bpf)) miss += "CAP_BPF";
  if (!(eff & perfmon)) miss += std::string(miss.empty() ? "" : ", ") + "CAP_PERFMON";
  return fmt::format("needs root, or CAP_BPF and CAP_PERFMON (missing: {}); run it with sudo", miss);
}

std::string raise_memlock() {
  struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_MEMLOCK, &r) != 0)
    return fmt::format("could not raise RLIMIT_MEMLOCK: {} (fine on kernels >= 5.11)", strerror(errno));
  return "";
}

}  // namespace schedhot
