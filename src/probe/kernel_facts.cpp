#include "probe/kernel_facts.h"
#include "sys/privileges.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/status.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

/// The first line of a /proc file, "" when unreadable.
std::string first_line(const char* path) {
  std::string s;
  if (FILE* f = std::fopen(path, "re")) {
    char buf[64];
    if (std::fgets(buf, sizeof buf, f)) s = buf;
    std::fclose(f);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/// Why /proc/kallsyms shows every address as 0 (kallsyms_show_value()): kptr_restrict 2
/// hides them from everyone; else a process without CAP_SYSLOG sees them only with
/// kptr_restrict 0 and perf_event_paranoid <= 1.
std::string kallsyms_hidden_reason() {
  const bool syslog = (effective_capabilities().value_or(0) >> 34) & 1;  // CAP_SYSLOG
  const std::string kptr = first_line("/proc/sys/kernel/kptr_restrict");
  const std::string paranoid = first_line("/proc/sys/kernel/perf_event_paranoid");
  if (kptr == "2" || syslog) return fmt::format("/proc/kallsyms addresses are hidden (kernel.kptr_restrict {})", kptr);
  return fmt::format("/proc/kallsyms addresses are hidden without CAP_SYSLOG (kernel.kptr_restrict {}, "
                     "kernel.perf_event_paranoid {})", kptr, paranoid);
}

/// Raw BTF (magic 0xeB9F) says its own length in its header (hdr_len + str_off + str_len):
/// a file of another size is damaged or padded (libbpf would read, and keep, all of it).
/// "" when the sizes agree or the file is not raw BTF (an ELF vmlinux is checked by libbpf).
std::string raw_btf_size_problem(const std::string& path, uint64_t file_bytes) {
  unsigned char h[24];
  FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) return "";
  const size_t n = std::fread(h, 1, sizeof h, fp);
  std::fclose(fp);
  if (n < sizeof h || h[0] != 0x9f || h[1] != 0xeb) return "";
  auto u32 = [&](int off) { return uint32_t(h[off]) | uint32_t(h[off + 1]) << 8 | uint32_t(h[off + 2]) << 16 | uint32_t(h[off + 3]) << 24; };
  const uint64_t want = uint64_t(u32(4)) + u32(16) + u32(20);
  if (want == file_bytes) return "";
  return fmt::format("raw BTF whose header says {} bytes, in a file of {} bytes (damaged or padded)", want, file_bytes);
}

/// The ELF machine number this build runs on (EM_*), 0 when unknown.
uint16_t running_elf_machine(const std::string& uname_machine) {
  if (uname_machine == "x86_64") return 62;                                   // EM_X86_64
  if (uname_machine == "aarch64") return 183;                                 // EM_AARCH64
  if (uname_machine == "ppc64le" || uname_machine == "ppc64") return 21;      // EM_PPC64
  return 0;
}

const char* elf_machine_name(uint16_t m) {
  switch (m) {
    case 3: return "i386";
    case 21: return "PowerPC64";
    case 40: return "ARM";
    case 62: return "x86-64";
    case 183: return "AArch64";
    case 243: return "RISC-V";
    default: return "another architecture";
  }
}

/// An ELF --btf FILE must be a vmlinux of this machine and, when its banner ("Linux version
/// R ...", in its first 256 MiB) names one, of the running release: another architecture's or
/// release's types would relocate the programs and lay out the hot lines wrongly, and nothing
/// else would say so. "" when it fits, or when the file is not ELF (raw BTF names neither).
std::string foreign_vmlinux_problem(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return "";
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) { ::close(*p); delete p; });
  struct stat st {};
  unsigned char h[20];
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ::pread(fd, h, sizeof h, 0) != ssize_t(sizeof h) ||
      std::memcmp(h, "\x7f" "ELF", 4) != 0)
    return "";
  const uint16_t mach = h[5] == 2 ? uint16_t(h[18] << 8 | h[19]) : uint16_t(h[18] | h[19] << 8);
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  const uint16_t want = running_elf_machine(u.machine);
  if (want && mach != want)
    return fmt::format("an ELF file for {} (e_machine {}), not for this {} machine", elf_machine_name(mach), mach,
                       u.machine);
  // The banner, read in 1 MiB pieces that overlap by the pattern's and a release's length.
  static constexpr char kBanner[] = "Linux version ";
  constexpr size_t kPiece = 1 << 20, kKeep = 256, kMax = size_t(256) << 20;
  std::string buf;
  for (off_t off = 0; off < st.st_size && size_t(off) < kMax;) {
    const size_t keep = buf.size() > kKeep ? kKeep : buf.size();
    buf.erase(0, buf.size() - keep);
    const size_t old = buf.size();
    buf.resize(old + kPiece);
    const ssize_t n = ::pread(fd, buf.data() + old, kPiece, off);
    if (n <= 0) break;
    buf.resize(old + size_t(n));
    off += n;
    for (size_t at = buf.find(kBanner); at != std::string::npos; at = buf.find(kBanner, at + 1)) {
      const size_t b = at + sizeof kBanner - 1, e = buf.find_first_of(" \n", b);
      if (e == std::string::npos || e - b > 64) continue;  // cut off at the piece's end, or not a release
      const std::string rel = buf.substr(b, e - b);
      if (rel.find_first_not_of("0123456789") == 0) continue;  // prose, not "Linux version 6.1..."
      if (rel != u.release)
        return fmt::format("the vmlinux of Linux {} (its banner), not of the running {}", scrub_controls(rel),
                           u.release);
      return "";
    }
  }
  return "";
}

/// Reads vmlinux BTF: from path (--btf) when not empty, else libbpf's search. A bad path
/// throws; a kernel without BTF leaves f.btf false with the reason in f.btf_error.
/// Loads the BTF and reads its facts into f; returns it (the caller frees it) or nullptr.
struct btf* read_btf(KernelFacts& f, const std::string& path) {
  struct btf* btf = nullptr;
  if (!path.empty()) {
    // Only a regular file: libbpf would read a FIFO or /dev/zero without end.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw std::runtime_error(fmt::format("--btf {}: {} ({})", path, strerror(errno), errno_name(errno)));
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(fmt::format("--btf {}: not a regular file", path));
    if (std::string why = raw_btf_size_problem(path, uint64_t(st.st_size)); !why.empty())
      throw std::runtime_error(fmt::format("--btf {}: {}", path, why));
    if (std::string why = foreign_vmlinux_problem(path); !why.empty())
      throw std::runtime_error(fmt::format("--btf {}: {}: its types would place the probes' fields and the hot "
                                           "lines wrongly",
                                           path, why));
    btf = btf__parse(path.c_str(), nullptr);
    if (!btf) {
      const int e = errno;
      // libbpf's own codes (LIBBPF_ERRNO__FORMAT = 4001 ...) are not errno values.
      char lerr[128];
      libbpf_strerror(-e, lerr, sizeof lerr);
      throw std::runtime_error(fmt::format("--btf {}: no BTF in it (neither raw BTF nor an ELF file with a .BTF "
                                           "section: {})",
                                           path, e >= 4000 ? std::string(lerr) : errno_name(e) + ", " + strerror(e)));
    }
    f.btf_path = path;
  } else {
    btf = btf__load_vmlinux_btf();
    if (!btf) {
      const int e = errno;
      f.btf = false;
      f.btf_error = describe_vmlinux_btf_error(e, ::access(kSysfsVmlinuxBtf, F_OK) == 0, f.release);
      return nullptr;
    }
  }
  f.btf = true;
  f.kernel_btf = ::access(kSysfsVmlinuxBtf, F_OK) == 0;
  const unsigned n = btf__type_cnt(btf);
  for (unsigned id = 1; id < n; ++id) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    if (!t) continue;
    const char* name = btf__name_by_offset(btf, t->name_off);
    if (!name || !*name) continue;
    if (btf_is_func(t)) {
      f.btf_funcs.insert(name);
    } else if (btf_is_typedef(t) && strncmp(name, "btf_trace_", 10) == 0) {
      f.tracepoints.insert(name + 10);
    }
  }
  int cp = btf__find_by_name_kind(btf, "cpupri", BTF_KIND_STRUCT);
  if (cp > 0) {
    const struct btf_type* t = btf__type_by_id(btf, cp);
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
      const char* mn = btf__name_by_offset(btf, m->name_off);
      if (!mn || strcmp(mn, "pri_to_cpu") != 0) continue;
      const struct btf_type* at = btf__type_by_id(btf, m->type);
      if (at && btf_is_array(at)) f.cpupri_nr_prios = static_cast<int>(btf_array(at)->nelems);
    }
  }
  return btf;
}

constexpr const char* kSysfsLineSize = "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size";

/// cpu0's L1d line size from sysfs (what HostInfo::cacheline_bytes reads), 64 when
/// unreadable or not a power of two in 16..4096 (*read false then).
int sysfs_line_bytes(bool* read) {
  int v = 0;
  if (FILE* fp = std::fopen(kSysfsLineSize, "r")) {
    if (std::fscanf(fp, "%d", &v) != 1) v = 0;
    std::fclose(fp);
  }
  *read = v >= 16 && v <= 4096 && (v & (v - 1)) == 0;
  return *read ? v : 64;
}

void read_kprobes(KernelFacts& f) {
  if (access("/sys/bus/event_source/devices/kprobe/type", R_OK) == 0 ||
      access("/sys/kernel/tracing/kprobe_events", F_OK) == 0 ||
      access("/sys/kernel/debug/tracing/kprobe_events", F_OK) == 0) {
    f.kprobes = true;
    return;
  }
  f.kprobes = false;
  f.kprobes_reason =
      "kprobes not built into this kernel (CONFIG_KPROBES=n: no kprobe PMU in "
      "/sys/bus/event_source/devices, no kprobe_events in tracefs)";
}

}  // namespace

std::string describe_vmlinux_btf_error(int err, bool sysfs_present, const std::string& release) {
  // What --btf FILE must be: schedhot's programs carry CO-RE relocations, which libbpf
  // resolves against the running kernel's own types before it loads any program (kprobes
  // included), so nothing attaches without them.
  const std::string rel = release.empty() ? "this kernel" : release;
  const std::string need = fmt::format(
      "schedhot's BPF programs are CO-RE and load only against this kernel's types, so nothing can attach; give "
      "--btf FILE: the BTF of exactly {} (raw BTF, or an ELF vmlinux with a .BTF section), e.g. made by `pahole "
      "--btf_encode_detached=FILE VMLINUX` from its vmlinux with debug info (Debian: linux-image-{}-dbg); with it "
      "the kprobe and raw tracepoint programs load, not fentry or tp_btf ones (idle, bcast_wait), which need the "
      "kernel's own BTF",
      rel, release.empty() ? "RELEASE" : release);
  if (!sysfs_present)
    return fmt::format("no vmlinux BTF: {} not present (kernel built without CONFIG_DEBUG_INFO_BTF?), nor a vmlinux "
                       "with BTF under /boot or /lib/modules; {}",
                       kSysfsVmlinuxBtf, need);
  return fmt::format("no vmlinux BTF: {} cannot be read as BTF ({}, {}); {}", kSysfsVmlinuxBtf, errno_name(err),
                     strerror(err), need);
}

KernelFacts read_kernel_facts(const std::string& system_map_path, const std::string& btf_path) {
  KernelFacts f;
  struct utsname u {};
  if (uname(&u) == 0) f.release = u.release;
  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  std::unique_ptr<struct btf, void (*)(struct btf*)> btf(nullptr, btf__free);
  try {
    btf.reset(read_btf(f, btf_path));
  } catch (...) {
    libbpf_set_print(old);
    throw;
  }
  libbpf_set_print(old);
  read_kprobes(f);
  std::string err;
  auto ks = SymbolTable::load("/proc/kallsyms", &err);
  if (!ks) {
    f.kallsyms_error = err;
  } else {
    f.kallsyms = std::move(*ks);
    if (f.kallsyms.addresses_hidden())
      f.kallsyms_error = kallsyms_hidden_reason();
  }
  if (!system_map_path.empty()) {
    auto sm = SymbolTable::load(system_map_path, &err);
    if (!sm) throw std::runtime_error(fmt::format("--system-map: {}", err));
    f.system_map = std::move(*sm);
    f.system_map_path = system_map_path;
  }
  const SymbolTable* syms = f.system_map ? &*f.system_map : (f.kallsyms_error.empty() ? &f.kallsyms : nullptr);
  bool line_read = false;
  f.layout = read_coherence_layout(btf.get(), syms, sysfs_line_bytes(&line_read),
                                   btf ? (f.btf_path.empty() ? std::string(kSysfsVmlinuxBtf) : f.btf_path) : "",
                                   f.system_map ? f.system_map_path : "/proc/kallsyms");
  if (!line_read && !f.layout.notes.empty())  // notes[0] is the cacheline size
    f.layout.notes[0] = fmt::format("cacheline size 64 B (assumed: {} not readable)", kSysfsLineSize);
  return f;
}

}  // namespace schedhot
