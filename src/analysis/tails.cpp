#include "analysis/tails.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "model/histogram.h"
#include "probe/catalog.h"
#include "probe/module.h"
#include "probe/catch_rules.h"
#include "probe/steal_clock.h"
#include "sys/units.h"
#include "probe/layout.h"
#include "probe/objects/cpupri.h"
#include "schedhot/abi.h"

namespace schedhot {

std::string frame_text(const StackFrame& f) {
  if (f.sym.empty()) return "[unknown]";
  std::string s = f.sym;  // ';' joins frames in the text: a crafted symbol may not add one
  for (char& c : s)
    if (c == ';' || c == ' ') c = '_';
  return fmt::format("{}+0x{:x}", s, f.off);
}

std::string caught_probe_name(uint16_t id) {
  const auto& cat = probe_catalog();
  return id < cat.size() ? cat[id].name : fmt::format("probe{}", id);
}

std::string caught_detail_text(uint16_t probe, uint64_t detail, int nr_prios) {
  CaughtRun run;
  run.cpupri_nr_prios = nr_prios;
  return probe < probe_modules().size() ? probe_modules()[probe]->caught_detail_text(detail, run) : std::to_string(detail);
}

CaughtDetails::CaughtDetails(const Meta& meta) {
  run_.cpupri_nr_prios = cpupri_nr_prios(meta);
  CaughtRun with = run_;
  with.status = [&meta](uint16_t id) -> const ProbeStatus* {
    const int i = id < probe_catalog().size() ? meta.probe_index(probe_catalog()[id].name) : -1;
    return i < 0 ? nullptr : &meta.probes[size_t(i)].status;
  };
  for (const ProbeModule* m : probe_modules()) kept_.push_back(m->caught_detail_kept(with));
}

bool CaughtDetails::shown(const CaughtEvent& e) const {
  return (e.flags & SH_CATCH_F_DETAIL) && e.probe < kept_.size() && kept_[e.probe];
}

std::string CaughtDetails::text(const CaughtEvent& e) const {
  return shown(e) ? probe_modules()[e.probe]->caught_detail_text(e.detail, run_) : "";
}

nlohmann::json CaughtDetails::fields(const CaughtEvent& e) const {
  nlohmann::json o = nlohmann::json::object();
  if (shown(e)) probe_modules()[e.probe]->caught_detail_fields(e.detail, o);
  return o;
}

std::string steal_sentence(const nlohmann::json& sl) {
  if (sl.is_null()) return kStealNotKept;
  const uint64_t n = sl["events"].get<uint64_t>(), with = sl["with"].get<uint64_t>(),
                 not_kept = sl["not_kept"].get<uint64_t>();
  const std::string unread = not_kept ? fmt::format(" ({} more without a steal reading)", not_kept) : "";
  if (!with) return fmt::format("of {} caught, none had steal inside{}", n, unread);
  return fmt::format("of {} caught, {} had steal inside, {} total ({:.0f} % of their time): the vCPU waited for the "
                     "host{}",
                     n, with, format_ns_unit(double(sl["ns"].get<uint64_t>())),
                     sl["time_share_of_those"].get<double>() * 100, unread);
}

int cpupri_nr_prios(const Meta& meta) {
  return meta.layout && meta.layout->cpupri && meta.layout->cpupri->nr_prios ? meta.layout->cpupri->nr_prios : 101;
}

std::string stack_text(const std::vector<StackFrame>& frames) {
  std::string out;
  for (const StackFrame& f : frames) out += (out.empty() ? "" : " <- ") + frame_text(f);
  return out;
}

namespace {

/// Nearest-rank percentile p of sorted values.
uint64_t rank_percentile(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  k = std::clamp<size_t>(k, 1, sorted.size());
  return sorted[k - 1];
}

double share(uint64_t part, uint64_t whole) { return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; }

/// The entries of a count map, highest count first (then by key), at most top.
template <class Map>
std::vector<std::pair<std::string, uint64_t>> top_of(const Map& m, size_t top) {
  std::vector<std::pair<std::string, uint64_t>> v(m.begin(), m.end());
  const size_t n = std::min(top, v.size());
  std::partial_sort(v.begin(), v.begin() + static_cast<long>(n), v.end(),
                    [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  v.resize(n);
  return v;
}

/// Splits s at sep.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    const size_t e = s.find(sep, at);
    out.push_back(s.substr(at, e == std::string::npos ? std::string::npos : e - at));
    if (e == std::string::npos) return out;
    at = e + 1;
  }
}

}  // namespace

TailAccumulator::TailAccumulator(const Meta& meta) {
  rules_.resize(meta.catch_rules.size());
  const auto& cat = probe_catalog();
  rule_of_probe_.assign(cat.size(), -1);
  for (size_t r = 0; r < meta.catch_rules.size(); ++r)
    for (size_t id = 0; id < cat.size(); ++id)
      if (cat[id].name == meta.catch_rules[r].probe && rule_of_probe_[id] < 0) rule_of_probe_[id] = static_cast<int>(r);
  details_.emplace(meta);
}

void TailAccumulator::add_interval(const Meta& meta, const Sample& prev, const Interval& iv) {
  if (pct_.size() != meta.catch_rules.size()) pct_.assign(meta.catch_rules.size(), {});
  for (size_t ri = 0; ri < meta.catch_rules.size(); ++ri) {
    const CatchRule& cr = meta.catch_rules[ri];
    if (cr.percentile <= 0) continue;
    PercentileCheck& c = pct_[ri];
    const int p = meta.probe_index(cr.probe);
    const ProbeSpec* spec = find_probe(cr.probe);
    const std::vector<uint64_t> run = spec ? iv.first_summed(p, spec->hist) : std::vector<uint64_t>{};
    ++c.intervals;
    if (run.empty() || !iv.present(p)) {
      c.known = false;
      continue;
    }
    const uint64_t before = prev.seq == 0 ? 0 : c.last_th;  // 0: disarmed
    const bool known = prev.seq == 0 || c.known;
    const uint64_t after = percentile_threshold(run, cr.percentile);
    c.last_th = after;
    c.known = true;
    if (!known) continue;
    // Counts above a threshold over this interval; a disarmed rule (0) catches nothing.
    const std::vector<uint64_t> b = iv.buckets(p, spec->hist);
    auto above = [&](uint64_t th) {
      if (!th) return uint64_t{0};
      uint64_t n = 0;
      for (size_t i = sh_hist_index(th); i < b.size(); ++i) n += b[i];
      return n;
    };
    const uint64_t a = above(before), z = above(after);
    for (uint64_t th : {before, after})
      if (th) {
        c.min_th = c.min_th ? std::min(c.min_th, th) : th;
        c.max_th = std::max(c.max_th, th);
      }
    c.lower += std::min(a, z);
    c.upper += std::max(a, z);
    c.counted += iv.count(p, "caught") + iv.count(p, "catch_rate_drops") + iv.count(p, "catch_full_drops");
    ++c.checked;
  }
}

void TailAccumulator::add(const CatchBatch& b) {
  ++batches_;
  lost_ = b.lost > UINT64_MAX - lost_ ? UINT64_MAX : lost_ + b.lost;  // saturates: a crafted frame cannot wrap it to 0
  // Each stack's key, made once per batch (stacks are unique within a batch only).
  std::vector<std::string> keys(b.stacks.size());
  std::vector<char> made(b.stacks.size(), 0);
  for (const CaughtEvent& e : b.events) {
    if (e.probe >= rule_of_probe_.size() || rule_of_probe_[e.probe] < 0) continue;
    Rule& r = rules_[size_t(rule_of_probe_[e.probe])];
    ++r.received;
    r.max_ns = std::max(r.max_ns, e.dur_ns);
    if (r.durs.size() < kMaxDurations) {
      r.durs.push_back(e.dur_ns);
    } else {  // Algorithm R: each of the received so far kept with probability kMaxDurations / received
      rng_ ^= rng_ << 13;
      rng_ ^= rng_ >> 7;
      rng_ ^= rng_ << 17;
      const uint64_t j = rng_ % r.received;
      if (j < kMaxDurations) r.durs[j] = e.dur_ns;
    }
    if (e.stack == 0 || e.stack > b.stacks.size()) {
      ++r.no_stack;
    } else {
      const size_t si = e.stack - 1;
      if (!made[si]) {
        for (const StackFrame& f : b.stacks[si]) keys[si] += (keys[si].empty() ? "" : "\n") + frame_text(f);
        made[si] = 1;
      }
      if (auto it = r.stacks.find(keys[si]); it != r.stacks.end())
        ++it->second;
      else if (r.stacks.size() < kMaxKeys)
        r.stacks.emplace(keys[si], 1);
      else
        ++r.other_stacks;
    }
    std::string task = e.comm;
    task += '\0' + std::to_string(e.pid) + '\0' + std::to_string(e.tgid);
    if (auto it = r.tasks.find(task); it != r.tasks.end())
      ++it->second;
    else if (r.tasks.size() < kMaxKeys)
      r.tasks.emplace(std::move(task), 1);
    else
      ++r.other_tasks;
    if (e.flags & SH_CATCH_F_IRQ) {
      ++r.irq_events;
      const auto sat_add = [](uint64_t& a, uint64_t b) { a = b > UINT64_MAX - a ? UINT64_MAX : a + b; };
      sat_add(r.irq_dur_ns, e.dur_ns);
      if (e.flags & SH_CATCH_F_IRQ_MORE) ++r.irq_more;
      // Each is inside the event's window (bpf/common.bpf.h sh_irq_overlap clips them): a
      // crafted record's larger value is clipped to it, and the sums saturate.
      const uint64_t t[3] = {std::min(e.irq_ns, e.dur_ns), std::min(e.softirq_ns, e.dur_ns), std::min(e.nmi_ns, e.dur_ns)};
      for (int k = 0; k < 3; ++k)
        if (t[k]) {
          ++r.with[k];
          sat_add(r.ns[k], t[k]);
          sat_add(r.with_dur_ns[k], e.dur_ns);
        }
    }
    if (e.flags & SH_CATCH_F_STEAL) {
      const auto sat_add = [](uint64_t& a, uint64_t b) { a = b > UINT64_MAX - a ? UINT64_MAX : a + b; };
      ++r.steal_events;
      sat_add(r.steal_dur_ns, e.dur_ns);
      const uint64_t st = std::min(e.steal_ns, e.dur_ns);  // inside the window (the program clips it)
      if (st) {
        ++r.steal_with;
        sat_add(r.steal_ns, st);
        sat_add(r.steal_with_dur_ns, e.dur_ns);
      }
    }
    if (details_->shown(e)) ++r.detail[details_->text(e)];
  }
}

std::string TailAccumulator::detail_of(const CaughtEvent& e) const {
  return details_->text(e);
}

nlohmann::json TailAccumulator::json(const Meta& meta, const Interval& iv, size_t top,
                                     const std::vector<CatchRule>* rules) const {
  nlohmann::json out = nlohmann::json::array();
  const std::vector<CatchRule>& armed = rules && rules->size() == meta.catch_rules.size() ? *rules : meta.catch_rules;
  for (size_t ri = 0; ri < armed.size() && ri < rules_.size(); ++ri) {
    const CatchRule& cr = armed[ri];
    const Rule& r = rules_[ri];
    nlohmann::json t = {{"rule", cr.text},           {"probe", cr.probe},         {"asked_ns", cr.asked_ns},
                        {"percentile", cr.percentile}, {"threshold_ns", cr.threshold_ns}, {"per_sec", cr.per_sec}};
    // The slot counters over the window, and the histogram's count at and above the
    // threshold's bucket: equal unless an event was lost without being counted.
    const int p = meta.probe_index(cr.probe);
    const ProbeSpec* spec = find_probe(cr.probe);
    // What the duration is (the histogram's "runtime", "residency", "wait time"): an
    // event with no interrupt inside was the function's own time only for a runtime.
    t["duration_is"] = spec ? spec->hist_what : "runtime";
    const bool counted = p >= 0 && iv.present(p) && meta.probes[size_t(p)].slot.find("caught");
    const std::string blind_here = counted ? blind_reason(meta, p) : "";
    if (counted && !blind_here.empty()) {
      // A blind probe sees none of its events: its zeros would read as measured.
      for (const char* k : {"caught", "rate_drops", "full_drops", "histogram_above", "in_flight", "accounted"})
        t[k] = nullptr;
      t["blind"] = blind_here;
    } else if (counted) {
      const uint64_t caught = iv.count(p, "caught"), rate = iv.count(p, "catch_rate_drops"),
                     full = iv.count(p, "catch_full_drops");
      t["caught"] = caught;
      t["rate_drops"] = rate;
      t["full_drops"] = full;
      // Not checked: a blind probe counts nothing (0 = 0 says nothing) and a rule top's editor
      // changed mid-run had another threshold for part of the window (its NOTE says when).
      // A percentile rule moves its threshold each interval: checked per interval
      // (add_interval), between the counts above its two thresholds there.
      const std::string blind = blind_reason(meta, p);
      std::string edited;
      for (const std::string& n : meta.probes[size_t(p)].status.notes)
        if (n.rfind(kCatchEditedNote, 0) == 0) edited = n.substr(std::string_view(kCatchEditedNote).size() + 1);
      if (!blind.empty()) t["blind"] = blind;
      if (!edited.empty()) t["edited_live"] = edited;
      const PercentileCheck* pc = ri < pct_.size() && cr.percentile > 0 ? &pct_[ri] : nullptr;
      if (pc && blind.empty() && edited.empty()) {
        // Between the counts above the interval's two thresholds (add_interval), with one
        // event per CPU in flight at each edge of the checked intervals.
        t["histogram_above"] = nullptr;
        t["histogram_above_bounds"] = {pc->lower, pc->upper};
        t["intervals_checked"] = pc->checked;
        t["intervals"] = pc->intervals;
        t["in_flight"] = nullptr;
        t["accounted"] = pc->checked ? nlohmann::json(pc->counted + meta.ncpus >= pc->lower &&
                                                      pc->counted <= pc->upper + meta.ncpus)
                                     : nlohmann::json(nullptr);
        t["checked_counted"] = pc->counted;
        // The thresholds the checked intervals had armed (null: never armed in them).
        t["armed_thresholds_ns"] = pc->max_th ? nlohmann::json::array({pc->min_th, pc->max_th}) : nlohmann::json(nullptr);
      } else if (blind.empty() && edited.empty() && cr.percentile <= 0 && spec && !spec->hist.empty() &&
          meta.probes[size_t(p)].slot.find(spec->hist)) {
        // Per CPU: a sample copies a CPU's slot while its program may be between the
        // histogram's add and the counter's (bpf/common.bpf.h: sh_catch_note runs after
        // sh_hist_add and takes the stack in between), so each window edge can see one
        // event of each CPU in the histogram and not yet in a counter: a CPU's difference
        // is -1, 0 or 1 when nothing was lost uncounted, more otherwise. Never a counter
        // ahead of its histogram at an edge: the sampler reads the counters (witnesses)
        // before the slot and again with it, and copies it again when they moved
        // (copy_slots; before that, a sampler descheduled mid-copy under TCG recorded a CPU
        // 2 and 4 events ahead at the last sample, 6.1 and 6.12, 2026-12-07).
        // Totals equal: accounted (as before the per-CPU rule); a difference beyond one per
        // CPU: not; in between, each CPU is looked at (the TUI renders this every frame:
        // the common cases cost no pass over the CPUs).
        const size_t from = sh_hist_index(cr.threshold_ns);
        uint64_t above = 0;
        {
          const std::vector<uint64_t> b = iv.buckets(p, spec->hist);
          for (size_t i = from; i < b.size(); ++i) above += b[i];
        }
        const uint64_t counted = caught + rate + full;
        const uint64_t diff = above > counted ? above - counted : counted - above;
        bool each_within_one = diff == 0;
        if (diff > 0 && diff <= meta.ncpus) {
          each_within_one = true;
          for (uint32_t c = 0; c < meta.ncpus && each_within_one; ++c) {
            const int cpu = int(c);
            const std::vector<uint64_t> b = iv.buckets(p, spec->hist, cpu);
            uint64_t a = 0;
            for (size_t i = from; i < b.size(); ++i) a += b[i];
            const uint64_t n = iv.count(p, "caught", cpu) + iv.count(p, "catch_rate_drops", cpu) +
                               iv.count(p, "catch_full_drops", cpu);
            if (a > n + 1 || n > a + 1) each_within_one = false;
          }
        }
        t["histogram_above"] = above;
        t["in_flight"] = int64_t(above) - int64_t(counted);
        t["accounted"] = each_within_one;
      } else {
        t["histogram_above"] = nullptr;
        t["in_flight"] = nullptr;
        t["accounted"] = nullptr;
      }
    } else {
      for (const char* k : {"caught", "rate_drops", "full_drops", "histogram_above", "in_flight", "accounted"})
        t[k] = nullptr;
    }
    t["events_received"] = r.received;
    t["perf_lost"] = lost_;
    if (r.received) {
      std::vector<uint64_t> d = r.durs;
      std::sort(d.begin(), d.end());
      t["duration_ns"] = {{"count", r.received},
                          {"p50", rank_percentile(d, 50)},
                          {"p99", rank_percentile(d, 99)},
                          {"max", r.max_ns},
                          {"reservoir", r.received > d.size() ? nlohmann::json(d.size()) : nlohmann::json(nullptr)}};
    } else {
      t["duration_ns"] = nullptr;
    }
    nlohmann::json stacks = nlohmann::json::array();
    for (const auto& [key, n] : top_of(r.stacks, top))
      stacks.push_back({{"frames", split(key, '\n')}, {"count", n}, {"share", share(n, r.received)}});
    t["stacks"] = stacks;
    t["stacks_unique"] = r.stacks.size();
    t["no_stack"] = r.no_stack;
    t["other_stacks"] = r.other_stacks;
    nlohmann::json tasks = nlohmann::json::array();
    for (const auto& [key, n] : top_of(r.tasks, top)) {
      const std::vector<std::string> f = split(key, '\0');
      tasks.push_back({{"comm", f[0]},
                       {"pid", std::stoul(f[1])},
                       {"tgid", std::stoul(f[2])},
                       {"count", n},
                       {"share", share(n, r.received)}});
    }
    t["tasks"] = tasks;
    t["tasks_unique"] = r.tasks.size();
    if (r.irq_events) {
      nlohmann::json in = {{"events", r.irq_events}, {"lower_bound", r.irq_more > 0}, {"events_lower_bound", r.irq_more}};
      const char* names[3] = {"irq", "softirq", "nmi"};
      for (int k = 0; k < 3; ++k)
        in[names[k]] = {{"events", r.with[k]},
                        {"share", share(r.with[k], r.irq_events)},
                        {"ns", r.ns[k]},
                        {"time_share", share(r.ns[k], r.irq_dur_ns)},
                        {"time_share_of_those", share(r.ns[k], r.with_dur_ns[k])}};
      t["interrupts"] = in;
    } else {
      t["interrupts"] = nullptr;
    }
    if (r.steal_events) {
      t["steal"] = {{"events", r.steal_events},
                    {"not_kept", r.received - r.steal_events},
                    {"with", r.steal_with},
                    {"share", share(r.steal_with, r.steal_events)},
                    {"ns", r.steal_ns},
                    {"time_share", share(r.steal_ns, r.steal_dur_ns)},
                    {"time_share_of_those", share(r.steal_ns, r.steal_with_dur_ns)}};
    } else {
      t["steal"] = nullptr;
    }
    if (!r.detail.empty()) t["detail"] = r.detail;
    out.push_back(std::move(t));
  }
  return out;
}

uint64_t TailAccumulator::stack_count(size_t rule, const std::vector<std::string>& frames) const {
  if (rule >= rules_.size()) return 0;
  std::string key;
  for (const std::string& f : frames) key += (key.empty() ? "" : "\n") + f;
  const auto it = rules_[rule].stacks.find(key);
  return it == rules_[rule].stacks.end() ? 0 : it->second;
}

void FoldedStacks::add(const CatchBatch& b, const std::vector<char>* cpus) {
  std::vector<std::string> folded(b.stacks.size());
  std::vector<char> made(b.stacks.size(), 0);
  for (const CaughtEvent& e : b.events) {
    if (cpus && (e.cpu >= cpus->size() || !(*cpus)[e.cpu])) continue;
    std::string line = caught_probe_name(e.probe);
    if (e.stack == 0 || e.stack > b.stacks.size()) {
      line += ";[no stack]";
    } else {
      const size_t si = e.stack - 1;
      if (!made[si]) {
        const auto& fr = b.stacks[si];
        for (auto it = fr.rbegin(); it != fr.rend(); ++it) {  // outermost first
          std::string s = it->sym.empty() ? "[unknown]" : it->sym;
          // ';' separates frames and a space the count: neither may come from a symbol
          // (kallsyms has none; a crafted recording could add a frame or a count)
          for (char& c : s)
            if (c == ';' || c == ' ' || c == '\n' || c == '\t') c = '_';
          folded[si] += ";" + s;
        }
        made[si] = 1;
      }
      line += folded[si];
    }
    auto it = lines_.find(line);
    if (it == lines_.end() && (lines_.size() >= kMaxLines || bytes_ + line.size() > kMaxBytes)) {
      line = caught_probe_name(e.probe) + ";[other stacks]";
      it = lines_.find(line);
    }
    if (it == lines_.end()) {
      bytes_ += line.size();
      it = lines_.emplace(std::move(line), 0).first;
    }
    ++it->second;
    ++events_;
  }
}

std::string FoldedStacks::text() const {
  std::string out;
  for (const auto& [line, n] : lines_) out += fmt::format("{} {}\n", line, n);
  return out;
}

}  // namespace schedhot
