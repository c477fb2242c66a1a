#include "probe/attach.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/exact_reader.h"
#include "probe/module.h"
#include "probe/records.h"
#include "probe/steal_clock.h"
#include "schedhot.skel.h"

namespace schedhot {

namespace {

// ---- libbpf log capture -------------------------------------------------------

thread_local std::string* g_log = nullptr;
bool g_verbose = false;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[4096];
  va_list copy;
  va_copy(copy, args);
  vsnprintf(buf, sizeof buf, fmt, copy);
  va_end(copy);
  if (g_log && g_log->size() < (1u << 20)) *g_log += buf;
  if (g_verbose && level != LIBBPF_DEBUG) fputs(buf, stderr);
  return 0;
}

/// The most telling line of a failed load's log: the verifier's last complaint.
std::string log_hint(const std::string& log) {
  std::string best;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    std::string line = log.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? log.size() : eol + 1;
    if (line.find("-- END") != std::string::npos) break;
    if (line.empty() || line.rfind("libbpf:", 0) == 0 || line.rfind("processed ", 0) == 0) continue;
    best = line;
  }
  if (best.size() > 160) best = best.substr(0, 157) + "...";
  return best;
}

// ---- the libbpf loader -------------------------------------------------------------

struct SkelDeleter {
  void operator()(schedhot_bpf* s) const { schedhot_bpf__destroy(s); }
};
using SkelPtr = std::unique_ptr<schedhot_bpf, SkelDeleter>;

/// One loaded object: its skeleton, links and (for a probe's first object) mapped slots.
struct Loaded {
  SkelPtr skel;
  std::vector<struct bpf_link*> links;
  void* slots = nullptr;
  size_t map_bytes = 0;
  ~Loaded() {
    for (auto* l : links) bpf_link__destroy(l);
    if (slots) munmap(slots, map_bytes);
  }
};

/// BpfLoader on libbpf and the skeleton: each load is a fresh schedhot_bpf with only
/// the requested programs autoloaded, every module's .rodata written and maps sized.
class LibbpfLoader : public BpfLoader {
 public:
  /// exact: every object records --exact records into one perf map, created here.
  LibbpfLoader(const KernelFacts& facts, uint32_t ncpus, bool exact, bool gaps, bool catch_armed, bool holder,
               uint32_t catch_probes)
      : facts_(facts), ncpus_(ncpus), catch_probes_(catch_probes) {
    if (catch_armed && holder) {
      holders_fd_ = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sh_bcast_holders", sizeof(uint32_t),
                                   sizeof(sh_bcast_holder), ncpus, nullptr);
      if (holders_fd_ < 0)
        throw std::runtime_error(fmt::format("--catch: cannot create the bcast_wait holder map: {}", strerror(errno)));
    }
    if (catch_armed) {
      catch_rules_fd_ = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sh_catch_rules", sizeof(uint32_t), sizeof(sh_catch_rule),
                                       SH_NPROBES, nullptr);
      catch_events_fd_ = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "sh_catch_events", sizeof(uint32_t),
                                        sizeof(uint32_t), ncpus, nullptr);
      irq_rings_fd_ = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "sh_irq_rings", sizeof(uint32_t), sizeof(sh_irq_ring),
                                     1, nullptr);
      catch_fails_fd_ = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "sh_catch_fails", sizeof(uint32_t),
                                       sizeof(uint64_t), 1, nullptr);
      if (catch_rules_fd_ < 0 || catch_events_fd_ < 0 || irq_rings_fd_ < 0 || catch_fails_fd_ < 0)
        throw std::runtime_error(fmt::format("--catch: cannot create its maps: {}", strerror(errno)));
      const StealClock sc = find_steal_clock(facts_.btf_path);
      steal_reason_ = sc.reason;
      steal_rq_delta_ = sc.rq_delta;
    }
    if (gaps) {
      LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
      gap_fd_ = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sh_gap_slots", sizeof(uint32_t), sizeof(sh_gap_slot), ncpus, &mo);
      routes_fd_ = gap_fd_ < 0 ? -1
                               : bpf_map_create(BPF_MAP_TYPE_ARRAY, "sh_gap_routes", sizeof(uint32_t),
                                                sizeof(sh_gap_route), SH_NPROBES * SH_GAP_ROUTE_WORDS, nullptr);
      if (gap_fd_ < 0 || routes_fd_ < 0)
        throw std::runtime_error(fmt::format("cannot create the gap state maps: {}", strerror(errno)));
    }
    {
      // The change marks (abi.h struct sh_cpu_marks): without them (a kernel that refuses
      // the map) the sampler compares every word, as before them.
      LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
      marks_fd_ = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sh_slot_marks", sizeof(uint32_t), sizeof(sh_cpu_marks), ncpus, &mo);
    }
    if (!exact) return;
    exact_fd_ = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "sh_exact_events", sizeof(uint32_t), sizeof(uint32_t),
                               ncpus, nullptr);
    if (exact_fd_ < 0)
      throw std::runtime_error(fmt::format("--exact: cannot create the perf event map: {}", strerror(errno)));
    fails_fd_ = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "sh_exact_fails", sizeof(uint32_t), sizeof(uint64_t), 1,
                               nullptr);
    if (fails_fd_ < 0)
      throw std::runtime_error(fmt::format("--exact: cannot create the failed-record map: {}", strerror(errno)));
  }
  ~LibbpfLoader() override {
    objs_.clear();
    if (exact_fd_ >= 0) close(exact_fd_);
    if (fails_fd_ >= 0) close(fails_fd_);
    if (gap_fd_ >= 0) close(gap_fd_);
    if (marks_fd_ >= 0) close(marks_fd_);
    if (routes_fd_ >= 0) close(routes_fd_);
    for (int fd : {catch_rules_fd_, catch_events_fd_, irq_rings_fd_, holders_fd_, catch_fails_fd_})
      if (fd >= 0) close(fd);
  }
  /// --catch's shared maps (bpf/common.bpf.h), -1 without --catch.
  int catch_rules_fd() const { return catch_rules_fd_; }
  int catch_events_fd() const { return catch_events_fd_; }
  /// The shared per-CPU count of caught events the perf map refused (bpf/common.bpf.h
  /// sh_catch_fails), -1 without --catch.
  int catch_fails_fd() const { return catch_fails_fd_; }
  /// --catch: "" when every object reads the paravirt steal clock (sh_catch_steal = 1), else why not.
  const std::string& steal_reason() const { return steal_reason_; }

  /// --catch's interrupt accounting (bpf/catch.bpf.c): its programs in an object of their
  /// own, attached; the NMI one only where its tracepoint exists. "" when the hard-IRQ and
  /// softirq programs are attached (then every probe's object loaded after this gets
  /// sh_catch_irq = 1), else why not.
  std::string load_irq_accounting(LoadHandle& handle) {
    std::string log;
    g_log = &log;
    auto o = std::make_unique<Loaded>();
    LIBBPF_OPTS(bpf_object_open_opts, open_opts,
                .btf_custom_path = facts_.btf_path.empty() ? nullptr : facts_.btf_path.c_str());
    o->skel.reset(schedhot_bpf__open_opts(&open_opts));
    g_log = nullptr;
    if (!o->skel) return fmt::format("cannot open the BPF object: {}", strerror(errno));
    schedhot_bpf* s = o->skel.get();
    struct bpf_program* prog;
    bpf_object__for_each_program(prog, s->obj) bpf_program__set_autoload(prog, false);
    for (const ProbeModule* m : probe_modules()) {
      m->configure(s, facts_);
      m->size_maps(s, false, ncpus_);
    }
    if (int e = share_catch_maps(s)) return fmt::format("cannot share the interrupt rings: {}", errno_name(-e));
    struct bpf_program* hard[] = {s->progs.catch__irq_entry, s->progs.catch__irq_exit, s->progs.catch__softirq_entry,
                                  s->progs.catch__softirq_exit};
    for (auto* p : hard) bpf_program__set_autoload(p, true);
    // Where they exist: the NMI handler, and x86's system vectors (the APIC timer and IPIs
    // are hard interrupts without irq_handler_entry), entries after their exits.
    struct bpf_program* optional[] = {s->progs.catch__nmi,
                                      s->progs.catch__local_timer_exit,          s->progs.catch__local_timer_entry,
                                      s->progs.catch__reschedule_exit,           s->progs.catch__reschedule_entry,
                                      s->progs.catch__call_function_exit,        s->progs.catch__call_function_entry,
                                      s->progs.catch__call_function_single_exit, s->progs.catch__call_function_single_entry,
                                      s->progs.catch__irq_work_exit,             s->progs.catch__irq_work_entry};
    for (auto* p : optional) bpf_program__set_autoload(p, true);
    g_log = &log;
    int e = schedhot_bpf__load(s);
    if (e) {  // perhaps only the NMI program (a kernel without nmi:nmi_handler): again without it
      o->skel.reset();
      g_log = nullptr;
      return fmt::format("its programs did not load: {}", errno_name(-e));
    }
    g_log = nullptr;
    for (auto* p : hard) {
      struct bpf_link* l = bpf_program__attach(p);
      if (!l) return fmt::format("{} did not attach: {}", bpf_program__name(p), errno_name(errno));
      o->links.push_back(l);
    }
    if (struct bpf_link* l = bpf_program__attach(optional[0])) o->links.push_back(l);
    for (size_t i = 1; i + 1 < std::size(optional); i += 2) {  // (exit, entry): both or neither
      struct bpf_link* x = bpf_program__attach(optional[i]);
      if (!x) continue;
      struct bpf_link* n = bpf_program__attach(optional[i + 1]);
      if (!n) {
        bpf_link__destroy(x);
        continue;
      }
      o->links.push_back(x);
      o->links.push_back(n);
    }
    irq_ok_ = true;
    handle = static_cast<LoadHandle>(objs_.size());
    objs_.push_back(std::move(o));
    modules_.push_back(nullptr);
    return "";
  }
  /// The shared gap state maps (bpf/common.bpf.h sh_gap_slots, sh_gap_routes), -1 without.
  int gap_fd() const { return gap_fd_; }
  /// The shared change marks (bpf/common.bpf.h sh_slot_marks), -1 when not created.
  int marks_fd() const { return marks_fd_; }
  int routes_fd() const { return routes_fd_; }
  /// The shared --exact perf map, -1 without --exact.
  int exact_fd() const { return exact_fd_; }
  /// The shared per-CPU count of records the perf map refused (bpf/common.bpf.h
  /// sh_exact_fails), -1 without --exact.
  int fails_fd() const { return fails_fd_; }

  LoadResult load_attach(const LoadRequest& req) override {
    LoadResult r;
    std::string log;
    g_log = &log;
    auto obj = std::make_unique<Loaded>();
    bool ok = load(req, *obj, r, log) && attach(req, *obj, r);
    g_log = nullptr;
    if (!ok) return r;
    r.handle = static_cast<LoadHandle>(objs_.size());
    objs_.push_back(std::move(obj));
    modules_.push_back(req.module);
    return r;
  }

  SlotMapping map_slots(LoadHandle h) override {
    Loaded& o = *objs_.at(size_t(h));
    const ProbeModule* m = modules_.at(size_t(h));
    struct bpf_map* map = m->slots_map(o.skel.get());
    size_t bytes = size_t(bpf_map__value_size(map)) * bpf_map__max_entries(map);
    long page = sysconf(_SC_PAGESIZE);
    bytes = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);
    if (p == MAP_FAILED) return {nullptr, errno};
    o.slots = p;
    o.map_bytes = bytes;
    return {static_cast<const uint64_t*>(p), 0};
  }

  void release(LoadHandle h) override {
    if (h >= 0 && size_t(h) < objs_.size()) objs_[size_t(h)].reset();
  }

  schedhot_bpf* object(LoadHandle h) override {
    return h >= 0 && size_t(h) < objs_.size() && objs_[size_t(h)] ? objs_[size_t(h)]->skel.get() : nullptr;
  }

  std::vector<int> program_fds(LoadHandle h) override {
    std::vector<int> fds;
    schedhot_bpf* o = object(h);
    if (!o) return fds;
    struct bpf_program* prog;
    bpf_object__for_each_program(prog, o->obj) {
      int fd = bpf_program__fd(prog);
      if (fd >= 0) fds.push_back(fd);
    }
    return fds;
  }

 private:
  /// Opens a skeleton with every program off, every module's .rodata set and maps sized
  /// (req.module's for all CPUs, the others' 1 entry), enables req.progs and loads it.
  bool load(const LoadRequest& req, Loaded& o, LoadResult& r, const std::string& log) {
    const ProbeModule& mod = *req.module;
    // --btf: libbpf relocates CO-RE accesses against FILE instead of /sys/kernel/btf/vmlinux.
    LIBBPF_OPTS(bpf_object_open_opts, open_opts,
                .btf_custom_path = facts_.btf_path.empty() ? nullptr : facts_.btf_path.c_str());
    o.skel.reset(schedhot_bpf__open_opts(&open_opts));
    if (!o.skel) return fail(r, EINVAL, fmt::format("cannot open the BPF object: {}", strerror(errno)));
    schedhot_bpf* s = o.skel.get();
    struct bpf_program* prog;
    bpf_object__for_each_program(prog, s->obj) bpf_program__set_autoload(prog, false);
    for (const ProbeModule* m : probe_modules()) {
      m->configure(s, facts_);
      m->size_maps(s, m == &mod, ncpus_);
    }
    if (exact_fd_ >= 0) {
      s->rodata->sh_exact = 1;
      int e = bpf_map__reuse_fd(s->maps.sh_exact_events, exact_fd_);
      if (!e) e = bpf_map__reuse_fd(s->maps.sh_exact_fails, fails_fd_);
      if (e) return fail(r, -e, fmt::format("--exact: cannot share the perf event maps: {}", errno_name(-e)));
    }
    if (catch_rules_fd_ >= 0) {
      if (int e = share_catch_maps(s)) return fail(r, -e, fmt::format("--catch: cannot share its maps: {}", errno_name(-e)));
    }
    if (holders_fd_ >= 0) {
      s->rodata->sh_bcast_hold = 1;
      s->rodata->sh_bcast_ncpus = ncpus_;
      if (int e = bpf_map__reuse_fd(s->maps.sh_bcast_holders, holders_fd_))
        return fail(r, -e, fmt::format("--catch: cannot share the holder map: {}", errno_name(-e)));
    }
    if (gap_fd_ >= 0) {
      s->rodata->sh_gaps = 1;
      int e = bpf_map__reuse_fd(s->maps.sh_gap_slots, gap_fd_);
      if (!e) e = bpf_map__reuse_fd(s->maps.sh_gap_routes, routes_fd_);
      if (e) return fail(r, -e, fmt::format("cannot share the gap state maps: {}", errno_name(-e)));
    }
    if (marks_fd_ >= 0) {
      s->rodata->sh_marks = 1;
      if (int e = bpf_map__reuse_fd(s->maps.sh_slot_marks, marks_fd_))
        return fail(r, -e, fmt::format("cannot share the change marks map: {}", errno_name(-e)));
    }
    if (req.share_slots != kNoLoad) {
      schedhot_bpf* first = object(req.share_slots);
      struct bpf_map* mine = mod.slots_map(s);
      int e = first ? bpf_map__reuse_fd(mine, bpf_map__fd(mod.slots_map(first))) : -ENOENT;
      if (e)
        return fail(r, -e, fmt::format("cannot share the {} map with another copy: {}", bpf_map__name(mine),
                                       errno_name(-e)));
    }
    for (auto& p : req.progs) {
      prog = mod.program(s, p.backend, p.role, p.index);
      if (!prog)
        return fail(r, ENOENT, fmt::format("internal: {} has no {} program for this role", mod.spec().name,
                                           to_string(p.backend)));
      bpf_program__set_autoload(prog, true);
      if (p.backend == Backend::fentry) {
        int e = bpf_program__set_attach_target(prog, 0, p.target.c_str());
        if (e) {
          // A sites object reports the failure per site as the load's (as before).
          if (req.partial) return fail(r, EINVAL, describe_attach_error(p.backend, EINVAL, p.target));
          return fail(r, -e, describe_attach_error(p.backend, -e, p.target));
        }
      }
    }
    int e = schedhot_bpf__load(s);
    if (!e) return true;
    Backend b = req.progs.empty() ? Backend::none : req.progs.front().backend;
    fail(r, -e, "");
    r.at_load = true;
    std::string hint = log.find("BEGIN PROG LOAD LOG") != std::string::npos ? log_hint(log) : "";
    if (!hint.empty() && r.err != EPERM)
      r.error = fmt::format("{} program for {} rejected by the verifier ({}): {}", to_string(b), req.what,
                            errno_name(r.err), hint);
    else
      r.error = describe_attach_error(b, -e, req.what);
    return false;
  }

  /// Attaches each enabled program with its backend: all or nothing, or (partial) each
  /// on its own with its errno in r.attach_errs.
  bool attach(const LoadRequest& req, Loaded& o, LoadResult& r) {
    for (auto& p : req.progs) {
      struct bpf_program* prog = req.module->program(o.skel.get(), p.backend, p.role, p.index);
      struct bpf_link* link = nullptr;
      if (p.backend == Backend::kprobe && p.addr) {
        // A name with several addresses: by address (perf kprobe PMU: kprobe_addr).
        LIBBPF_OPTS(bpf_kprobe_opts, ko, .offset = static_cast<size_t>(p.addr), .retprobe = p.retprobe);
        link = bpf_program__attach_kprobe_opts(prog, nullptr, &ko);
      } else if (p.backend == Backend::kprobe) {
        link = bpf_program__attach_kprobe(prog, p.retprobe, p.target.c_str());
      } else {
        link = bpf_program__attach(prog);
      }
      if (req.partial) {
        r.attach_errs.push_back(link ? 0 : errno);
        if (link) o.links.push_back(link);
        continue;
      }
      if (!link) {
        int ae = errno ? errno : EINVAL;
        return fail(r, ae, describe_attach_error(p.backend, ae, p.target.empty() ? req.what : p.target));
      }
      o.links.push_back(link);
    }
    return true;
  }

  /// Arms --catch in s (sh_catch_armed, sh_catch_irq when the interrupt programs are on)
  /// and points its maps at the shared ones; 0 or -errno.
  int share_catch_maps(schedhot_bpf* s) {
    s->rodata->sh_catch_armed = 1;
    s->rodata->sh_catch_irq = irq_ok_ ? 1 : 0;
    s->rodata->sh_catch_steal = steal_reason_.empty() ? catch_probes_ : 0;
    s->rodata->sh_steal_rq_delta = steal_rq_delta_;
    int e = bpf_map__reuse_fd(s->maps.sh_catch_rules, catch_rules_fd_);
    if (!e) e = bpf_map__reuse_fd(s->maps.sh_catch_events, catch_events_fd_);
    if (!e) e = bpf_map__reuse_fd(s->maps.sh_irq_rings, irq_rings_fd_);
    if (!e) e = bpf_map__reuse_fd(s->maps.sh_catch_fails, catch_fails_fd_);
    return e;
  }

  static bool fail(LoadResult& r, int err, std::string error) {
    r.err = err;
    r.error = std::move(error);
    return false;
  }

  const KernelFacts& facts_;
  uint32_t ncpus_;
  std::vector<std::unique_ptr<Loaded>> objs_;
  std::vector<const ProbeModule*> modules_;  // by handle, for map_slots
  int exact_fd_ = -1, fails_fd_ = -1, gap_fd_ = -1, routes_fd_ = -1, marks_fd_ = -1;
  int catch_rules_fd_ = -1, catch_events_fd_ = -1, irq_rings_fd_ = -1, catch_fails_fd_ = -1;
  int holders_fd_ = -1;  ///< bcast_wait's holder state (AttachOptions::bcast_holder), -1 without
  bool irq_ok_ = false;  ///< load_irq_accounting() attached the interrupt programs
  std::string steal_reason_;  ///< --catch: "" when the programs read the steal clock (sh_catch_steal != 0)
  uint32_t catch_probes_ = 0;  ///< AttachOptions::catch_probes: whose events read it
  int64_t steal_rq_delta_ = 0;  ///< where they find it (bpf/common.bpf.h sh_steal_rq_delta)
};

}  // namespace

ProbeSet::ProbeSet(const KernelFacts& facts, const HostInfo& host, const AttachOptions& opts) {
  g_verbose = opts.verbose;
  libbpf_set_print(libbpf_print);
  int n = libbpf_num_possible_cpus();
  if (n <= 0) throw std::runtime_error(fmt::format("cannot count possible CPUs: {}", strerror(-n)));
  ncpus_ = static_cast<uint32_t>(n);
  auto loader = std::make_unique<LibbpfLoader>(facts, ncpus_, opts.exact, opts.gaps, opts.catch_armed,
                                               opts.bcast_holder, opts.catch_probes);
  if (opts.catch_armed) {
    catch_irq_reason_ = loader->load_irq_accounting(catch_irq_handle_);  // first: the probes' objects then read the rings
    catch_rules_fd_ = loader->catch_rules_fd();
    catch_steal_reason_ = loader->steal_reason();
  }
  const int catch_events_fd = loader->catch_events_fd(), catch_fails_fd = loader->catch_fails_fd();
  const int exact_fd = loader->exact_fd(), fails_fd = loader->fails_fd();
  gap_routes_fd_ = loader->routes_fd();
  if (loader->gap_fd() >= 0) {
    gap_bytes_ = sizeof(sh_gap_slot) * size_t(ncpus_);
    const long page = sysconf(_SC_PAGESIZE);
    gap_bytes_ = (gap_bytes_ + size_t(page) - 1) / size_t(page) * size_t(page);
    void* p = mmap(nullptr, gap_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, loader->gap_fd(), 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("cannot map the gap state: {}", strerror(errno)));
    gap_slots_ = static_cast<sh_gap_slot*>(p);
    gap_samples_per_s_ = opts.gap_samples_per_s;
    // Until the first interval shows the rates: every event (period 1). A CPU's first
    // interval costs the full price; the next ones at most about gap_samples_per_s.
  }
  if (loader->marks_fd() >= 0) {
    const long page = sysconf(_SC_PAGESIZE);
    marks_bytes_ = (sizeof(sh_cpu_marks) * size_t(ncpus_) + size_t(page) - 1) / size_t(page) * size_t(page);
    void* p = mmap(nullptr, marks_bytes_, PROT_READ, MAP_SHARED, loader->marks_fd(), 0);
    if (p != MAP_FAILED) marks_live_ = static_cast<const sh_cpu_marks*>(p);
  }
  loader_ = std::move(loader);
  probes_ = attach_all(facts, host, opts, *loader_);
  marks_.resize(probes_.size());
  for (size_t i = 0; i < marks_.size(); ++i) {
    marks_[i].live = marks_live_;
    marks_[i].probe = static_cast<uint32_t>(i);
  }
  for (auto& p : probes_) status_.push_back(p.status);
  if (exact_fd >= 0) exact_ = std::make_unique<ExactReader>(exact_fd, ncpus_, 0, fails_fd);
  if (catch_events_fd >= 0)
    catch_ = std::make_unique<CatchReader>(catch_events_fd, ncpus_, facts.kallsyms.empty() ? nullptr : &facts.kallsyms,
                                           0, catch_fails_fd);
}

void ProbeSet::set_catch_rule(uint32_t probe, uint64_t threshold_ns, uint32_t per_sec) {
  if (catch_rules_fd_ < 0) throw std::runtime_error("no --catch: no rule map");
  sh_catch_rule r{};
  r.threshold_ns = threshold_ns;
  r.per_sec = per_sec;
  if (bpf_map_update_elem(catch_rules_fd_, &probe, &r, BPF_ANY) != 0)
    throw std::runtime_error(fmt::format("--catch: cannot write the rule of probe {}: {}", probe, strerror(errno)));
}

ProbeSet::~ProbeSet() { detach(); }

void ProbeSet::set_gap_routes(const std::vector<std::pair<uint32_t, sh_gap_route>>& routes) {
  if (gap_routes_fd_ < 0) return;
  for (const auto& [i, r] : routes) {
    const uint32_t key = i;
    if (key >= SH_NPROBES * SH_GAP_ROUTE_WORDS) continue;
    if (bpf_map_update_elem(gap_routes_fd_, &key, &r, BPF_ANY) != 0)
      throw std::runtime_error(fmt::format("cannot write the gap state's routes: {}", strerror(errno)));
  }
}

std::optional<GapBatch> ProbeSet::take_gaps(uint64_t mono_ns) {
  if (!gap_slots_) return std::nullopt;
  const size_t n = size_t(ncpus_) * SH_GAP_LINES;
  if (!gap_started_) {
    gap_prev_.assign(n, sh_gap_line{});
    gap_full_prev_.assign(ncpus_, 0);
    gap_events_prev_.assign(ncpus_, 0);
    gap_samples_prev_.assign(ncpus_, 0);
  }
  const double secs = gap_started_ && mono_ns > gap_last_ns_ ? double(mono_ns - gap_last_ns_) / 1e9 : 0;
  GapBatch b;
  b.from_ns = gap_last_ns_;
  for (uint32_t c = 0; c < ncpus_; ++c) {
    sh_gap_slot& s = gap_slots_[c];
    const uint64_t full = __atomic_load_n(&s.full, __ATOMIC_RELAXED);
    b.full += full - gap_full_prev_[c];
    gap_full_prev_[c] = full;
    const uint64_t events = __atomic_load_n(&s.events, __ATOMIC_RELAXED);
    if (secs > 0) {
      // Written only when it changes: the slot's first line is the CPU's own (BPF writes
      // its countdown there), so each write moves that line once.
      const uint32_t period = gap_period(double(events - gap_events_prev_[c]) / secs, gap_samples_per_s_);
      if (__atomic_load_n(&s.period, __ATOMIC_RELAXED) != period) __atomic_store_n(&s.period, period, __ATOMIC_RELAXED);
    }
    const uint64_t samples = __atomic_load_n(&s.samples, __ATOMIC_RELAXED);
    // Each access's gap was recorded when its predecessor was sampled (abi.h "Sampling"):
    // 1 in events / samples of this CPU's events; 1 when every event was.
    const uint64_t ev = events - gap_events_prev_[c], sm = samples - gap_samples_prev_[c];
    const double scale = sm > 0 && ev > sm ? double(ev) / double(sm) : 1.0;
    gap_events_prev_[c] = events;
    gap_samples_prev_[c] = samples;
    const size_t at = b.counts.size();
    for (uint32_t i = 0; i < SH_GAP_LINES; ++i) {
      const sh_gap_line& e = s.line[i];
      const uint32_t id = __atomic_load_n(&e.id, __ATOMIC_RELAXED);
      if (id == 0) break;  // entries are claimed in order
      sh_gap_line& prev = gap_prev_[size_t(c) * SH_GAP_LINES + i];
      if (prev.id != id) prev = sh_gap_line{};  // claimed since (never freed: only from 0)
      prev.id = id;
      GapCounts g;
      g.cpu = c;
      g.line = id - 1;
      bool moved = false;
      auto delta = [&](const uint32_t* now, uint32_t* was, std::array<uint32_t, SH_GAP_BUCKETS>& out) {
        for (uint32_t k = 0; k < SH_GAP_BUCKETS; ++k) {
          const uint32_t v = __atomic_load_n(&now[k], __ATOMIC_RELAXED);
          out[k] = v - was[k];  // u32 counters: the difference modulo 2^32
          moved |= out[k] != 0;
          was[k] = v;
        }
      };
      delta(e.ww, prev.ww, g.ww);
      delta(e.wa, prev.wa, g.wa);
      delta(e.ra, prev.ra, g.ra);
      if (!moved) continue;
      scale_gap_counts(g, scale, gap_round_);
      // Two entries of one line (a program nested in another's claim): one count.
      auto same = std::find_if(b.counts.begin() + std::ptrdiff_t(at), b.counts.end(),
                               [&](const GapCounts& x) { return x.line == g.line; });
      if (same != b.counts.end()) {
        for (uint32_t k = 0; k < SH_GAP_BUCKETS; ++k) {
          same->ww[k] += g.ww[k];
          same->wa[k] += g.wa[k];
          same->ra[k] += g.ra[k];
        }
        continue;
      }
      b.counts.push_back(g);
    }
    std::sort(b.counts.begin() + std::ptrdiff_t(at), b.counts.end(),
              [](const GapCounts& x, const GapCounts& y) { return x.line < y.line; });
  }
  const bool first = !gap_started_;
  gap_started_ = true;
  gap_last_ns_ = mono_ns;
  if (first) return std::nullopt;
  return b;
}

void ProbeSet::detach() {
  exact_.reset();
  catch_.reset();
  if (catch_irq_handle_ != kNoLoad) loader_->release(catch_irq_handle_);
  catch_irq_handle_ = kNoLoad;
  if (gap_slots_) munmap(gap_slots_, gap_bytes_);
  gap_slots_ = nullptr;
  marks_.clear();
  if (marks_live_) munmap(const_cast<sh_cpu_marks*>(marks_live_), marks_bytes_);
  marks_live_ = nullptr;
  for (auto& p : probes_) {
    p.poller.reset();
    p.slots = nullptr;
    for (size_t i = p.handles.size(); i-- > 0;) loader_->release(p.handles[i]);
    p.handles.clear();
  }
}

std::vector<int> ProbeSet::program_fds() const {
  std::vector<int> fds;
  for (auto& p : probes_)
    for (LoadHandle h : p.handles) {
      auto v = loader_->program_fds(h);
      fds.insert(fds.end(), v.begin(), v.end());
    }
  return fds;
}

bool ProbeSet::read(size_t i, SlotWords& words) const {
  const uint64_t* slots = i < probes_.size() ? probes_[i].slots : nullptr;
  if (!slots) {
    words.clear();
    return false;
  }
  copy_slots(slots, ncpus_, probe_modules()[i]->spec().slot, words, nullptr, i < marks_.size() ? &marks_[i] : nullptr);
  return true;
}

void ProbeSet::add_note(size_t i, std::string note) {
  if (i >= status_.size()) return;
  status_[i].notes.push_back(std::move(note));
  if (std::find(noted_.begin(), noted_.end(), int(i)) == noted_.end()) noted_.push_back(int(i));
}

std::vector<int> ProbeSet::poll(int timeout_ms) {
  std::vector<int> changed;
  changed.swap(noted_);
  bool any = false;
  // --exact's records are read by ExactReader's own thread: nothing of them to service here.
  for (size_t i = 0; i < probes_.size(); ++i) {
    auto& poller = probes_[i].poller;
    if (!poller) continue;
    any = true;
    if (poller->poll(timeout_ms, status_[i]) && std::find(changed.begin(), changed.end(), int(i)) == changed.end())
      changed.push_back(static_cast<int>(i));
    if (poller->done()) poller.reset();
  }
  if (!any && timeout_ms > 0) usleep(static_cast<useconds_t>(timeout_ms) * 1000);
  return changed;
}

}  // namespace schedhot
