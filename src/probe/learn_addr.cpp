#include "probe/learn_addr.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "schedhot_learn.skel.h"
#include "sys/cpulist.h"

namespace schedhot {

namespace {

constexpr size_t kWords = sizeof(((struct schedhot_learn_bpf*)nullptr)->bss->sh_learn_word) / sizeof(uint64_t);

std::string assumed_lines(const CpupriLayout& c) {
  return c.mask_is_pointer
             ? fmt::format("root_domain assumed line-aligned; the {} OFFSTACK pri_to_cpu[].mask bitmaps and cpu_to_pri[] "
                           "each modeled as its own line",
                           c.nr_prios)
             : "root_domain assumed line-aligned; cpu_to_pri[] modeled as starting its own line";
}

/// What was learned of nohz.idle_cpus_mask's OFFSTACK bitmap, and whether it shares a
/// line with a learned cpupri allocation (cross-family sharing is said, not modeled).
std::string nohz_mask_note(const CoherenceLayout& L, bool tried) {
  const LearnedAddresses& a = *L.learned;
  if (!tried)
    return "nohz.idle_cpus_mask (OFFSTACK): &nohz is not in the symbol table (KALLSYMS_ALL off), so BPF cannot read "
           "its pointer: the bitmap stays modeled as its own line";
  if (!a.nohz_idle_mask)
    return "nohz.idle_cpus_mask (OFFSTACK): reading the pointer at &nohz failed or gave no kernel address: the bitmap "
           "stays modeled as its own line";
  const uint64_t lb = uint64_t(L.line_bytes);
  const uint64_t first = a.nohz_idle_mask / lb, last = (a.nohz_idle_mask + uint64_t(a.mask_bytes) - 1) / lb;
  std::string shared;
  for (const SeparateGroup& g : separate_groups(L))
    for (const MemberLayout& m : g.members) {
      const uint64_t mf = (g.base + uint64_t(m.offset)) / lb, ml = (g.base + uint64_t(m.offset + m.size) - 1) / lb;
      if (mf <= last && first <= ml) shared += (shared.empty() ? "" : ", ") + m.name;
    }
  return fmt::format("nohz.idle_cpus_mask (OFFSTACK): bitmap learned at {:#x} ({} B, offset {} in its line){}", a.nohz_idle_mask,
                     a.mask_bytes, a.nohz_idle_mask % lb,
                     shared.empty() ? "; it shares no line with a learned cpupri allocation"
                                    : fmt::format("; it shares a line with {}: modeled as separate lines (traffic between "
                                                  "the nohz and cpupri users of that line is not counted)",
                                                  shared));
}

}  // namespace


void learn_addresses(CoherenceLayout& L, const std::vector<int>& cpus, int nr_cpu_ids) {
  if (!L.cpupri) {
    L.notes.push_back("address learning: no cpupri layout (BTF): nothing to learn");
    return;
  }
  const CpupriLayout& c = *L.cpupri;
  auto fail = [&](const std::string& why) {
    L.notes.push_back(fmt::format("address learning by BPF failed ({}): {}", why, assumed_lines(c)));
  };
  std::vector<uint32_t> offs;
  if (c.mask_is_pointer)
    for (int i = 0; i < c.nr_prios; ++i) offs.push_back(uint32_t(c.vec_offset(i) + c.mask_offset));
  offs.push_back(uint32_t(c.cpupri_offset + c.cpu_to_pri_offset));
  if (offs.size() > kWords) return fail(fmt::format("{} pointers, the program reads at most {}", offs.size(), kWords));
  if (cpus.empty() || nr_cpu_ids <= 0) return fail("no online CPUs known");

  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  std::unique_ptr<schedhot_learn_bpf, void (*)(schedhot_learn_bpf*)> skel(schedhot_learn_bpf::open(), schedhot_learn_bpf::destroy);
  if (!skel) {
    const int e = errno;
    libbpf_set_print(old);
    return fail(fmt::format("open: {}", strerror(e)));
  }
  skel->rodata->sh_learn_nwords = uint32_t(offs.size());
  for (size_t i = 0; i < offs.size(); ++i) skel->rodata->sh_learn_off[i] = offs[i];
  // &nohz.idle_cpus_mask (the pointer), when &nohz is known and the mask is OFFSTACK.
  const bool nohz_mask = L.nohz && L.nohz->mask_is_pointer && L.nohz->address && *L.nohz->address >= kKernelLow;
  if (nohz_mask) skel->rodata->sh_learn_abs = *L.nohz->address + uint64_t(L.nohz->idle_cpus_mask.offset);
  const int le = schedhot_learn_bpf::load(skel.get());
  libbpf_set_print(old);
  if (le) return fail(fmt::format("load: {}", strerror(-le)));
  const int fd = bpf_program__fd(skel->progs.learn_addr);

  struct Seen {
    std::vector<int> cpus;
    std::vector<uint64_t> words;
  };
  uint64_t idle_mask = 0;  // the same on every CPU (one global)
  std::map<uint64_t, Seen> by_rd;  // rd -> CPUs and the words read there
  std::string first_error;
  for (int cpu : cpus) {
    LIBBPF_OPTS(bpf_test_run_opts, o, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = uint32_t(cpu));
    if (int r = bpf_prog_test_run_opts(fd, &o); r) {
      if (first_error.empty()) first_error = fmt::format("test run on CPU {}: {}", cpu, strerror(errno));
      continue;
    }
    const auto* b = skel->bss;
    if (b->sh_learn_cpu != uint32_t(cpu) || !b->sh_learn_rd || b->sh_learn_ok != offs.size()) {
      if (first_error.empty())
        first_error = !b->sh_learn_rd ? fmt::format("no this_rq()->rd on CPU {}", cpu)
                                      : fmt::format("{} of {} pointers read on CPU {}", b->sh_learn_ok, offs.size(), cpu);
      continue;
    }
    if (nohz_mask && b->sh_learn_abs_ok && !idle_mask) idle_mask = b->sh_learn_abs_word;
    Seen& s = by_rd[b->sh_learn_rd];
    s.cpus.push_back(cpu);
    if (s.words.empty()) s.words.assign(b->sh_learn_word, b->sh_learn_word + offs.size());
  }
  if (by_rd.empty()) return fail(first_error.empty() ? "no CPU ran the program" : first_error);
  // The root domain of the lowest CPU (cpus ascending: the first one run).
  auto pick = std::min_element(by_rd.begin(), by_rd.end(),
                               [](const auto& x, const auto& y) { return x.second.cpus.front() < y.second.cpus.front(); });
  LearnedAddresses a;
  a.rd = pick->first;
  a.cpus = pick->second.cpus;
  a.other_domains = int(by_rd.size()) - 1;
  const std::vector<uint64_t>& w = pick->second.words;
  if (c.mask_is_pointer) {
    a.masks.assign(w.begin(), w.begin() + c.nr_prios);
    a.mask_bytes = int64_t((nr_cpu_ids + 63) / 64) * 8;
  }
  a.cpu_to_pri = w.back();
  const int64_t cpumask_bytes = int64_t((nr_cpu_ids + 63) / 64) * 8;
  if (idle_mask >= kKernelLow) {
    a.nohz_idle_mask = idle_mask;
    a.mask_bytes = cpumask_bytes;
  }
  a.cpu_to_pri_bytes = int64_t(nr_cpu_ids) * 4;
  a.source = fmt::format("BPF (raw_tp test run) from this_rq()->rd on CPU{} {}", a.cpus.size() > 1 ? "s" : "",
                         format_cpulist(a.cpus));
  if (std::string bad = implausible(a, c); !bad.empty()) return fail("implausible: " + bad);
  L.learned = a;
  // Lines of the separate allocations before (each its own) and after the merge.
  const auto groups = separate_groups(L);
  int64_t merged = 0;
  for (auto& g : groups) merged += g.lines;
  const size_t allocs = a.masks.size() + 1;
  std::string note = fmt::format("learned by {}: root_domain at {:#x} ({}line-aligned)", a.source, a.rd,
                                 a.rd % uint64_t(L.line_bytes) ? "NOT " : "");
  if (c.mask_is_pointer)
    note += fmt::format("; {} OFFSTACK pri_to_cpu[].mask bitmaps ({} B each) and cpu_to_pri[] ({} B) at their "
                        "kmalloc addresses: {} separate allocations in {} modeled lines (each its own line before)",
                        a.masks.size(), a.mask_bytes, a.cpu_to_pri_bytes, allocs, merged);
  else
    note += fmt::format("; cpu_to_pri[] ({} B) at {:#x}: {} line(s)", a.cpu_to_pri_bytes, a.cpu_to_pri, merged);
  if (a.other_domains)
    note += fmt::format("; {} other root domain(s) on other CPUs (cpusets) not modeled", a.other_domains);
  if (!first_error.empty()) note += fmt::format("; some CPUs failed ({})", first_error);
  L.notes.push_back(note);
  if (L.nohz && L.nohz->mask_is_pointer) L.notes.push_back(nohz_mask_note(L, nohz_mask));
}

}  // namespace schedhot
