#include "sys/host.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sys/cpulist.h"
#include "sys/json_text.h"

namespace schedhot {

namespace fs = std::filesystem;

bool read_file(const std::string& path, std::string& out) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.clear();
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (out.size() + size_t(in.gcount()) > kMaxReadBytes) return false;
    out.append(buf, size_t(in.gcount()));
  }
  return !in.bad();
}

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

int read_int(const std::string& path, int dflt = -1) {
  std::string s;
  if (!read_file(path, s)) return dflt;
  try {
    return std::stoi(trim(s));
  } catch (...) {
    return dflt;
  }
}

std::vector<int> read_cpulist_file(const std::string& path) {
  std::string s;
  if (!read_file(path, s)) return {};
  try {
    return parse_cpulist(trim(s));
  } catch (...) {
    return {};
  }
}

#if defined(__x86_64__) || defined(__i386__)
void read_cpuid(HostInfo& h) {
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d)) h.hypervisor = (c >> 31) & 1;
  if (__get_cpuid(6, &a, &b, &c, &d)) h.arat = h.arat || ((a >> 2) & 1);
  if (!h.hypervisor) {
    h.spinlock = SpinlockMode::native;
    return;
  }
  __cpuid(0x40000000, a, b, c, d);
  char sig[13] = {};
  std::memcpy(sig, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  h.hypervisor_vendor = sig;
  while (!h.hypervisor_vendor.empty() && h.hypervisor_vendor.back() == ' ') h.hypervisor_vendor.pop_back();  // "bhyve bhyve "
  if (h.hypervisor_vendor == "KVMKVMKVM") {
    __cpuid(0x40000001, a, b, c, d);
    bool pv_unhalt = (a >> 7) & 1;   // KVM_FEATURE_PV_UNHALT
    bool realtime = d & 1;           // KVM_HINTS_REALTIME
    if (realtime)
      h.spinlock = SpinlockMode::native;
    else
      h.spinlock = pv_unhalt ? SpinlockMode::pv_qspinlock : SpinlockMode::virt_spin_lock;
  } else if (h.hypervisor_vendor == "XenVMMXenVMM" || h.hypervisor_vendor == "Microsoft Hv") {
    // Xen and Hyper-V install their own paravirt spinlocks when the host offers them
    h.spinlock = SpinlockMode::other_hypervisor;
  } else {
    // QEMU TCG, VMware, ...: native_pv_lock_init() keeps virt_spin_lock_key on
    h.spinlock = SpinlockMode::virt_spin_lock;
  }
}
#else
/// No CPUID (arm64): virt_spin_lock() and the PV spinlocks are x86's; an arm64 guest's
/// queued spinlocks are the native ones (arch/arm64 has no paravirt spinlock), and
/// "arat"/"hypervisor" are x86 cpuinfo flags, which arm64's /proc/cpuinfo does not have.
void read_cpuid(HostInfo& h) { h.spinlock = SpinlockMode::native; }
#endif

void read_timer_list(const std::string& root, HostInfo& h) {
  std::string text;
  if (!read_file(root + "/proc/timer_list", text)) return;
  std::istringstream in(text);
  std::string line;
  bool in_bcast = false;
  while (std::getline(in, line)) {
    if (line.rfind("Broadcast device", 0) == 0) {
      in_bcast = true;
      continue;
    }
    if (in_bcast && line.rfind("Clock Event Device:", 0) == 0) {
      h.broadcast_device = trim(line.substr(strlen("Clock Event Device:")));
      in_bcast = false;
    }
    if (line.rfind("tick_broadcast_mask:", 0) == 0) h.broadcast_mask = trim(line.substr(20));
    if (line.rfind("tick_broadcast_oneshot_mask:", 0) == 0) h.broadcast_oneshot_mask = trim(line.substr(28));
  }
}

}  // namespace

std::string hypervisor_name(const std::string& signature) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"KVMKVMKVM", "KVM"},          {"TCGTCGTCGTCG", "QEMU TCG"}, {"Microsoft Hv", "Hyper-V"},
      {"XenVMMXenVMM", "Xen"},       {"VMwareVMware", "VMware"},   {"VBoxVBoxVBox", "VirtualBox"},
      {"bhyve bhyve ", "bhyve"},     {"ACRNACRNACRN", "ACRN"},     {" lrpepyh  vr", "Parallels"},
      {"QNXQVMBSQG", "QNX"},
  };
  if (signature.empty()) return "bare metal";
  if (signature == "yes") return "hypervisor";
  for (const auto& [sig, name] : kNames)
    if (signature == sig) return name;
  return signature;
}

std::vector<int> read_online_cpus(const std::string& root) {
  return read_cpulist_file(root + "/sys/devices/system/cpu/online");
}

HostInfo read_host_info(const std::string& root) {
  HostInfo h;
  if (root.empty()) {
    struct utsname u {};
    if (uname(&u) == 0) {
      h.hostname = u.nodename;
      h.kernel_release = u.release;
      h.kernel_version = u.version;
      h.machine = u.machine;
    }
  } else {
    std::string s;
    if (read_file(root + "/proc/sys/kernel/hostname", s)) h.hostname = trim(s);
    if (read_file(root + "/proc/sys/kernel/osrelease", s)) h.kernel_release = trim(s);
  }
  const std::string cpu = root + "/sys/devices/system/cpu";
  auto possible = read_cpulist_file(cpu + "/possible");
  h.possible_cpus = possible.empty() ? 0 : possible.back() + 1;
  h.online = read_cpulist_file(cpu + "/online");
  int line = read_int(cpu + "/cpu0/cache/index0/coherency_line_size", 0);
  if (valid_line_bytes(line)) h.cacheline_bytes = line;  // else the default 64

  // NUMA: node -> cpus
  std::vector<int> node_of(h.possible_cpus > 0 ? h.possible_cpus : 0, -1);
  std::error_code ec;
  for (auto& e : fs::directory_iterator(root + "/sys/devices/system/node", ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind("node", 0) != 0 || n.size() < 5 || !isdigit(static_cast<unsigned char>(n[4]))) continue;
    int node = std::atoi(n.c_str() + 4);
    for (int c : read_cpulist_file(e.path().string() + "/cpulist"))
      if (c >= 0 && c < static_cast<int>(node_of.size())) node_of[c] = node;
  }
  for (int c : h.online) {
    CpuTopology t;
    t.cpu = c;
    std::string base = cpu + "/cpu" + std::to_string(c);
    t.package = read_int(base + "/topology/physical_package_id");
    t.die = read_int(base + "/topology/die_id");
    t.core = read_int(base + "/topology/core_id");
    int best_level = -1;
    for (int i = 0; i < 8; ++i) {
      std::string idx = base + "/cache/index" + std::to_string(i);
      int level = read_int(idx + "/level");
      if (level < 0) continue;
      if (level >= best_level) {
        best_level = level;
        int id = read_int(idx + "/id");
        if (id < 0) {
          auto shared = read_cpulist_file(idx + "/shared_cpu_list");
          id = shared.empty() ? -1 : shared.front();
        }
        t.llc = id;
      }
    }
    t.node = (c < static_cast<int>(node_of.size())) ? node_of[c] : -1;
    h.topology.push_back(t);
  }

  std::string info;
  if (read_file(root + "/proc/cpuinfo", info)) {
    auto pos = info.find("\nflags");
    if (pos != std::string::npos) {
      auto end = info.find('\n', pos + 1);
      std::string flags = " " + info.substr(pos + 1, end - pos - 1) + " ";
      h.arat = flags.find(" arat ") != std::string::npos;
      h.hypervisor = flags.find(" hypervisor ") != std::string::npos;
    }
  }
  if (root.empty()) read_cpuid(h);
  std::string drv;
  if (read_file(cpu + "/cpuidle/current_driver", drv)) h.cpuidle_driver = trim(drv);
  read_timer_list(root, h);
  return h;
}

const char* to_string(SpinlockMode m) {
  switch (m) {
    case SpinlockMode::native: return "native";
    case SpinlockMode::pv_qspinlock: return "pv_qspinlock";
    case SpinlockMode::virt_spin_lock: return "virt_spin_lock";
    case SpinlockMode::other_hypervisor: return "other_hypervisor";
  }
  return "native";
}

SpinlockMode spinlock_mode_from_string(const std::string& s) {
  if (s == "pv_qspinlock") return SpinlockMode::pv_qspinlock;
  if (s == "virt_spin_lock") return SpinlockMode::virt_spin_lock;
  if (s == "other_hypervisor") return SpinlockMode::other_hypervisor;
  return SpinlockMode::native;
}

std::string spinlock_blind_spot(const HostInfo& h) {
  switch (h.spinlock) {
    case SpinlockMode::native:
      return "native qspinlock: the first waiter spins on the pending bit and emits no "
             "contention_begin, so two-way contention is invisible (3+ waiters are seen)";
    case SpinlockMode::pv_qspinlock:
      return "paravirt qspinlock (KVM PV_UNHALT): every slowpath entry emits contention_begin";
    case SpinlockMode::virt_spin_lock:
      return "hypervisor without paravirt spinlocks: virt_spin_lock() is a test-and-set loop "
             "that emits no contention events at all, so spinlock contention is unobservable here";
    case SpinlockMode::other_hypervisor:
      return "hypervisor " + h.hypervisor_vendor +
             ": its paravirt spinlocks are not modelled; contention events may be missing";
  }
  return "";
}

void to_json(nlohmann::json& j, const HostInfo& h) {
  nlohmann::json topo = nlohmann::json::array();
  for (auto& t : h.topology)
    topo.push_back({{"cpu", t.cpu}, {"package", t.package}, {"die", t.die}, {"core", t.core},
                    {"llc", t.llc}, {"node", t.node}});
  j = {{"hostname", h.hostname},
       {"kernel_release", h.kernel_release},
       {"kernel_version", h.kernel_version},
       {"machine", h.machine},
       {"possible_cpus", h.possible_cpus},
       {"online", format_cpulist(h.online)},
       {"cacheline_bytes", h.cacheline_bytes},
       {"topology", topo},
       {"arat", h.arat},
       {"hypervisor", h.hypervisor},
       {"hypervisor_vendor", h.hypervisor_vendor},
       {"spinlock", to_string(h.spinlock)},
       {"cpuidle_driver", h.cpuidle_driver},
       {"broadcast_device", h.broadcast_device},
       {"broadcast_mask", h.broadcast_mask},
       {"broadcast_oneshot_mask", h.broadcast_oneshot_mask}};
}

void from_json(const nlohmann::json& j, HostInfo& h) {
  // Each key named when it is not what it should be (json_value, sys/json_text.h).
  h.hostname = json_value(j, "hostname", "");
  h.kernel_release = json_value(j, "kernel_release", "");
  h.kernel_version = json_value(j, "kernel_version", "");
  h.machine = json_value(j, "machine", "");
  h.possible_cpus = json_value(j, "possible_cpus", 0);
  h.online = parse_cpulist(json_value(j, "online", ""));
  h.cacheline_bytes = json_value(j, "cacheline_bytes", 64);
  h.topology.clear();
  if (j.contains("topology") && j["topology"].is_array())
    for (size_t i = 0; i < j["topology"].size(); ++i)
      json_reading("topology[" + std::to_string(i) + "]", [&] {
        const nlohmann::json& t = j["topology"][i];
        h.topology.push_back({json_value(t, "cpu", -1), json_value(t, "package", -1), json_value(t, "die", -1),
                              json_value(t, "core", -1), json_value(t, "llc", -1), json_value(t, "node", -1)});
      });
  h.arat = json_value(j, "arat", false);
  h.hypervisor = json_value(j, "hypervisor", false);
  h.hypervisor_vendor = json_value(j, "hypervisor_vendor", "");
  h.spinlock = spinlock_mode_from_string(json_value(j, "spinlock", "native"));
  h.cpuidle_driver = json_value(j, "cpuidle_driver", "");
  h.broadcast_device = json_value(j, "broadcast_device", "");
  h.broadcast_mask = json_value(j, "broadcast_mask", "");
  h.broadcast_oneshot_mask = json_value(j, "broadcast_oneshot_mask", "");
}

const char* topo_level_name(TopoLevel l) {
  switch (l) {
    case TopoLevel::cpu: return "cpu";
    case TopoLevel::core: return "core";
    case TopoLevel::llc: return "llc";
    case TopoLevel::node: return "node";
    case TopoLevel::package: return "package";
  }
  return "?";
}

TopoLevel parse_topo_level(std::string_view s) {
  for (TopoLevel l : {TopoLevel::cpu, TopoLevel::core, TopoLevel::llc, TopoLevel::node, TopoLevel::package})
    if (s == topo_level_name(l)) return l;
  throw std::invalid_argument("no topology level '" + std::string(s) + "'");
}

}  // namespace schedhot
