// What a recording needs to know about the machine it was made on, read from procfs,
// sysfs and CPUID. Every reader takes a root prefix so tests can point it at fixtures.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace schedhot {

/// Topology of one CPU from /sys/devices/system/cpu/cpuN/{topology,cache} and
/// /sys/devices/system/node. Ids are the kernel's; -1 when the kernel does not say.
struct CpuTopology {
  int cpu = -1;
  int package = -1;  ///< topology/physical_package_id
  int die = -1;      ///< topology/die_id
  int core = -1;     ///< topology/core_id (unique only within a package)
  int llc = -1;      ///< last-level cache: cache/indexN/id of the highest level, else its first CPU
  int node = -1;     ///< NUMA node
};

/// A level of the CPU topology (CpuTopology) that views group CPUs by, smallest first:
/// top/replay's topology view cycles core..package, diff --by takes cpu..node.
enum class TopoLevel { cpu, core, llc, node, package };
/// "cpu", "core", "llc", "node", "package".
const char* topo_level_name(TopoLevel l);
/// The level topo_level_name() names s; std::invalid_argument ("no topology level 'x'")
/// otherwise.
TopoLevel parse_topo_level(std::string_view s);

/// How queued spinlocks behave here, which decides what lock:contention_begin can see
/// (kernel/locking/qspinlock.c; arch/x86/kernel/kvm.c kvm_spinlock_init()).
enum class SpinlockMode {
  native,          ///< bare metal (or KVM realtime hint): first waiter (pending bit) untraced
  pv_qspinlock,    ///< KVM with PV_UNHALT: every slowpath entry traced
  virt_spin_lock,  ///< hypervisor without PV spinlocks: test-and-set, never traced
  other_hypervisor ///< Xen, Hyper-V, VMware...: not modelled
};

/// Host facts stored in every recording's metadata.
/// A cacheline size the coherence model can use: a power of two in 16..4096 bytes.
inline bool valid_line_bytes(int64_t b) { return b >= 16 && b <= 4096 && (b & (b - 1)) == 0; }

struct HostInfo {
  std::string hostname;
  std::string kernel_release;   ///< uname -r
  std::string kernel_version;   ///< uname -v
  std::string machine;          ///< uname -m
  int possible_cpus = 0;        ///< highest possible CPU id + 1 (BPF per-CPU map size)
  std::vector<int> online;      ///< online CPU ids
  int cacheline_bytes = 64;     ///< coherency_line_size of cpu0's L1d
  std::vector<CpuTopology> topology;  ///< one entry per online CPU
  bool arat = false;            ///< CPUID 6 EAX bit 2 / cpuinfo flag "arat": APIC timer keeps running in deep C-states
  bool hypervisor = false;      ///< CPUID 1 ECX bit 31
  std::string hypervisor_vendor;  ///< CPUID 0x40000000 signature, e.g. "KVMKVMKVM"
  SpinlockMode spinlock = SpinlockMode::native;
  std::string cpuidle_driver;   ///< /sys/devices/system/cpu/cpuidle/current_driver, "" if none
  std::string broadcast_device; ///< /proc/timer_list "Broadcast device": "<NULL>" or a clockevent name; "" if unreadable
  std::string broadcast_mask;   ///< tick_broadcast_mask from /proc/timer_list (hex)
  std::string broadcast_oneshot_mask;  ///< tick_broadcast_oneshot_mask (hex)
};

/// Reads the host facts. root prefixes every /proc and /sys path ("" for the live
/// system). CPUID facts are read only when root is empty. Never throws: a missing file
/// leaves its field at the default.
HostInfo read_host_info(const std::string& root = "");

/// The online CPUs now: root + /sys/devices/system/cpu/online parsed (ascending); empty
/// when it cannot be read or parsed. One small sysfs read: the live sampler calls it at
/// every sample.
std::vector<int> read_online_cpus(const std::string& root = "");

/// One-line description of what lock:contention_begin can and cannot see here.
std::string spinlock_blind_spot(const HostInfo& h);

/// The product behind a CPUID leaf 0x40000000 signature ("KVMKVMKVM" -> "KVM",
/// "TCGTCGTCGTCG" -> "QEMU TCG", "Microsoft Hv" -> "Hyper-V", ...); "" -> "bare metal",
/// "yes" (hypervisor bit without a signature) -> "hypervisor"; an unknown signature unchanged.
std::string hypervisor_name(const std::string& signature);
const char* to_string(SpinlockMode m);
SpinlockMode spinlock_mode_from_string(const std::string& s);

/// Files read whole (sysfs/procfs entries, kallsyms, a System.map) are at most this big.
inline constexpr size_t kMaxReadBytes = size_t(256) << 20;
/// Reads a whole regular file of at most kMaxReadBytes (/proc files included); false when
/// it cannot be opened, is not a regular file (a device, a FIFO: /dev/zero never ends), or
/// is larger.
bool read_file(const std::string& path, std::string& out);

void to_json(nlohmann::json& j, const HostInfo& h);
void from_json(const nlohmann::json& j, HostInfo& h);

}  // namespace schedhot
