#include "probe/learn.h"

#include <cerrno>
#include <cstring>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/catalog.h"
#include "schedhot.skel.h"
#include "schedhot/abi.h"

namespace schedhot {

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

bool is_lock_or_trace(const std::string& n) {
  static const char* prefixes[] = {"bpf_", "__bpf_", "trace_", "__traceiter_", "perf_", "__perf_",
                                   "_raw_spin_", "_raw_read_", "_raw_write_", "do_raw_spin_", "queued_spin_",
                                   "native_queued_spin_", "__pv_queued_spin_", "pv_queued_spin_", "queued_read_",
                                   "queued_write_", "rt_spin_", "__lock_text"};
  for (const char* p : prefixes)
    if (starts_with(n, p)) return true;
  return false;
}

}  // namespace

bool is_tick_broadcast_function(const std::string& name) {
  // bcast_lock's sites (kBcastSites), the wrappers around the hot one, and the colder
  // lock-taking functions bcast_lock leaves out.
  static const char* more[] = {"___tick_broadcast_oneshot_control", "tick_broadcast_oneshot_control",
                               "tick_install_broadcast_device",     "tick_broadcast_update_freq",
                               "tick_suspend_broadcast",            "tick_resume_broadcast"};
  std::string base = clone_base(name);
  for (const char* f : kBcastSites)
    if (base == f) return true;
  for (const char* f : more)
    if (base == f) return true;
  return false;
}

std::optional<std::string> first_non_lock_frame(const SymbolTable& syms, std::span<const uint64_t> ips,
                                                std::string* name_out) {
  const Symbol* ls = syms.find("__lock_text_start");
  const Symbol* le = syms.find("__lock_text_end");
  for (uint64_t ip : ips) {
    if (!ip) break;
    if (ls && le && ip >= ls->addr && ip < le->addr) continue;
    auto s = syms.symbolize(ip);
    if (!s) return std::nullopt;
    if (is_lock_or_trace(s->first->name)) continue;
    if (name_out) *name_out = s->first->name;
    return fmt::format("{}+{:#x}", s->first->name, s->second);
  }
  return std::nullopt;
}

LockLearner::LockLearner(schedhot_bpf* skel, const SymbolTable& syms) : syms_(syms) {
  auto cb = [](void* ctx, int, void* data, __u32 size) {
    if (size < sizeof(sh_learn_event)) return;
    sh_learn_event ev;
    std::memcpy(&ev, data, sizeof ev);
    uint32_t n = ev.nframes > SH_LEARN_FRAMES ? SH_LEARN_FRAMES : ev.nframes;
    uint64_t ips[SH_LEARN_FRAMES];
    for (uint32_t i = 0; i < n; ++i) ips[i] = ev.ip[i];
    static_cast<LockLearner*>(ctx)->feed(ev.lock_addr, std::span<const uint64_t>(ips, n));
  };
  pb_ = perf_buffer__new(bpf_map__fd(skel->maps.bcast_learn_events), 8, cb, nullptr, this, nullptr);
  if (!pb_) error_ = fmt::format("cannot open the perf buffer: {}", strerror(errno));
}

LockLearner::~LockLearner() {
  if (pb_) perf_buffer__free(pb_);
}

void LockLearner::poll(int timeout_ms) {
  if (pb_) perf_buffer__poll(pb_, timeout_ms);
}

void LockLearner::feed(uint64_t lock_addr, std::span<const uint64_t> ips) {
  if (result_ || !lock_addr) return;
  std::string name;
  auto frame = first_non_lock_frame(syms_, ips, &name);
  if (!frame || !is_tick_broadcast_function(name)) return;
  int v = ++votes_[lock_addr];
  last_frame_ = *frame;
  if (v >= kVotesNeeded) result_ = LearnedLock{lock_addr, v, last_frame_};
}

std::optional<LearnedLock> LockLearner::take_result() {
  auto r = result_;
  if (r) result_.reset();
  return r;
}

}  // namespace schedhot
