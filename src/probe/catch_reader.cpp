#include "probe/catch_reader.h"

#include <algorithm>
#include <string_view>
#include <cstring>
#include <unistd.h>

#include "schedhot/abi.h"

namespace schedhot {

StackSymbolizer::StackSymbolizer(const SymbolTable* syms) : syms_(syms) {
  if (const Symbol* e = syms_ ? syms_->find("_etext") : nullptr) text_end_ = e->addr;
}

std::vector<StackFrame> StackSymbolizer::frames(const std::vector<uint64_t>& ips) {
  std::vector<StackFrame> out;
  out.reserve(ips.size());
  for (uint64_t ip : ips) {
    auto it = cache_.find(ip);
    if (it == cache_.end()) {
      StackFrame f;
      // Past the core kernel's text (a module, BPF code) no symbol of the table covers it:
      // the nearest one below would name the wrong function.
      const bool core = !text_end_ || ip < text_end_;
      if (syms_ && !syms_->addresses_hidden() && core)
        if (auto s = syms_->symbolize(ip); s && s->second < (1u << 20)) f = {s->first->name, s->second};
      it = cache_.emplace(ip, std::move(f)).first;
    }
    out.push_back(it->second);
  }
  return out;
}

bool parse_catch_record(const void* data, uint32_t size, RawCaught& out) {
  if (size < sizeof(sh_catch_rec)) return false;
  sh_catch_rec r;
  std::memcpy(&r, data, sizeof r);
  CaughtEvent& e = out.ev;
  e = CaughtEvent{};
  e.ts_ns = r.ts;
  e.dur_ns = r.dur_ns;
  e.cpu = r.cpu;
  e.probe = r.probe;
  e.flags = r.flags;
  e.pid = r.pid;
  e.tgid = r.tgid;
  e.comm.assign(r.comm, strnlen(r.comm, sizeof r.comm));
  for (char& c : e.comm)
    if (c < 0x20 || c > 0x7e) c = '?';
  e.detail = r.detail;
  e.irq_ns = r.irq_ns;
  e.softirq_ns = r.softirq_ns;
  e.nmi_ns = r.nmi_ns;
  // Steal time only with its flag, and within the event (the program clips it): else not kept.
  e.steal_ns = (r.flags & SH_CATCH_F_STEAL) ? std::min(r.steal_ns, r.dur_ns) : 0;
  out.ips.clear();
  if (r.stack_bytes > 0) {
    const size_t n = std::min<size_t>(size_t(r.stack_bytes) / sizeof(uint64_t), SH_CATCH_FRAMES);
    out.ips.assign(r.stack, r.stack + n);
  }
  return true;
}

void trim_tracing_frames(std::vector<StackFrame>& frames) {
  static constexpr std::string_view kMachinery[] = {
      "bpf_",           "__bpf_",        "__traceiter_", "trace_call_bpf", "perf_trace_", "kprobe_",
      "__kprobe_",      "kretprobe_",    "__kretprobe_", "rethook_",       "arch_rethook_", "fprobe_",
      "__fprobe_",      "ftrace_",       "opt_pre_handler", "optimized_callback", "aggr_pre_handler",
      "pre_handler_kretprobe", "trampoline_handler", "kprobe_ftrace_handler", "invoke_bpf_prog"};
  size_t n = 0;
  for (; n < frames.size(); ++n) {
    const std::string& s = frames[n].sym;
    const bool machinery = s.empty() || std::any_of(std::begin(kMachinery), std::end(kMachinery),
                                                    [&](std::string_view p) { return s.rfind(p, 0) == 0; });
    if (!machinery) break;
  }
  if (n == frames.size()) return;  // nothing but machinery (or no symbols at all): kept as it is
  frames.erase(frames.begin(), frames.begin() + std::ptrdiff_t(n));
}

CatchBatch make_catch_batch(std::vector<RawCaught>& recs, StackSymbolizer& sym) {
  std::stable_sort(recs.begin(), recs.end(), [](const RawCaught& a, const RawCaught& b) { return a.ev.ts_ns < b.ev.ts_ns; });
  CatchBatch b;
  std::map<std::vector<uint64_t>, uint32_t> seen;  // stack addresses -> index + 1
  for (RawCaught& r : recs) {
    if (!r.ips.empty()) {
      auto [it, added] = seen.emplace(r.ips, uint32_t(b.stacks.size() + 1));
      if (added) {
        b.stacks.push_back(sym.frames(r.ips));
        trim_tracing_frames(b.stacks.back());
      }
      r.ev.stack = it->second;
    }
    b.events.push_back(std::move(r.ev));
  }
  recs.clear();
  return b;
}

size_t CatchReader::default_pages(uint32_t ncpus) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t per_cpu = (size_t(16) << 20) / std::max<uint32_t>(ncpus, 1);
  size_t pages = 1;
  while (pages < 64 && pages * 2 * page <= per_cpu) pages *= 2;
  return pages;
}

CatchReader::CatchReader(int map_fd, uint32_t ncpus, const SymbolTable* syms, size_t pages, int fails_fd)
    : PerfDrain(map_fd, ncpus, pages ? pages : default_pages(ncpus), "--catch", fails_fd), sym_(syms) {
  start("schedhot-catch");
}

CatchReader::~CatchReader() { stop(); }

void CatchReader::on_record(int, const void* data, uint32_t size) {
  RawCaught r;
  if (pending_.size() >= kMaxPending) {
    ++lost_;
    return;
  }
  if (parse_catch_record(data, size, r)) pending_.push_back(std::move(r));
}

void CatchReader::on_lost(int, uint64_t cnt) { lost_ += cnt; }

CatchBatch CatchReader::take(uint64_t upto_ns) {
  std::vector<RawCaught> due;
  uint64_t lost;
  {
    std::lock_guard lk(mu_);
    consume();  // what the kernel has written by now belongs to this interval
    auto keep = std::stable_partition(pending_.begin(), pending_.end(),
                                      [&](const RawCaught& r) { return r.ev.ts_ns <= upto_ns; });
    due.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(keep));
    pending_.erase(pending_.begin(), keep);
    lost = lost_;
    lost_ = 0;
  }
  if (due.size() > kMaxPerTake) {  // a frame the reader would refuse: the excess counts as lost
    lost += due.size() - kMaxPerTake;
    due.resize(kMaxPerTake);
  }
  for (RawCaught& r : due)
    if (r.ev.ts_ns <= taken_upto_) r.ev.ts_ns = taken_upto_ + 1;  // late for its interval
  taken_upto_ = upto_ns;
  CatchBatch b = make_catch_batch(due, sym_);  // outside the lock: the thread goes on reading
  b.lost = lost;
  return b;
}

}  // namespace schedhot
