#include "analysis/tails_exact.h"

#include <algorithm>

#include <fmt/format.h>

#include "sys/json_text.h"

namespace schedhot {

TailExactJoin::TailExactJoin(const TailAccumulator& tails, size_t rules, uint64_t max_scan)
    : tails_(tails), rules_(rules), max_scan_(max_scan) {}

void TailExactJoin::Gen::clear() {
  for (auto& v : by_cpu) v.clear();
  for (auto& v : by_line) v.clear();
}

void TailExactJoin::access(uint64_t ts_ns, uint32_t cpu, uint32_t line, bool /*write*/, bool transfer) {
  // cannot happen: line ids are dense over a layout's lines, CPUs below the replay's ncpus
  if (line >= (1u << 31) || cpu >= (1u << 20)) return;
  Gen& g = gen_[cur_];
  if (cpu >= g.by_cpu.size()) g.by_cpu.resize(size_t(cpu) + 1);
  if (line >= g.by_line.size()) g.by_line.resize(size_t(line) + 1);
  g.by_cpu[cpu].push_back({ts_ns, line, transfer ? 1u : 0u});
  g.by_line[line].push_back(ts_ns);
  if (line >= stamp_.size()) {
    stamp_.resize(size_t(line) + 1, 0);
    own_.resize(size_t(line) + 1, 0);
  }
  if (transfer) ++transfers_;
}

void TailExactJoin::add(const ExactBatch* exact, const CatchBatch* caught) {
  if (exact && caught) {
    std::vector<char> seen(rules_.size(), 0);  // rules with an event in this interval
    const Gen* gens[2] = {&gen_[1 - cur_], &gen_[cur_]};  // time order
    // The cap grows with what the interval holds (16 scans per buffered access, at least
    // 1 Mi), bounded by max_scan_: a small interval's events cannot cost a large one's.
    uint64_t held = 0;
    for (const Gen* g : gens)
      for (const auto& v : g->by_cpu) held += v.size();
    const uint64_t cap = std::min<uint64_t>(max_scan_, std::max<uint64_t>(uint64_t(1) << 20, 16 * held));
    uint64_t scanned = 0;
    for (const CaughtEvent& e : caught->events) {
      const int ri = tails_.rule_of(e.probe);
      if (ri < 0 || size_t(ri) >= rules_.size()) continue;
      Rule& r = rules_[size_t(ri)];
      if (scanned > cap) {
        ++r.skipped;
        continue;
      }
      ++r.events;
      if (!seen[size_t(ri)]) {
        seen[size_t(ri)] = 1;
        r.lost = exact->lost > UINT64_MAX - r.lost ? UINT64_MAX : r.lost + exact->lost;
      }
      const uint64_t from = e.ts_ns >= e.dur_ns ? e.ts_ns - e.dur_ns : 0, to = e.ts_ns;
      // (a): CPU c's own accesses inside, the lines they reach stamped with this event's serial.
      const uint64_t s = ++serial_;
      uint64_t own = 0, xfers = 0;
      touched_.clear();
      for (const Gen* g : gens) {
        if (e.cpu >= g->by_cpu.size()) continue;
        const std::vector<Access>& v = g->by_cpu[e.cpu];
        auto it = std::lower_bound(v.begin(), v.end(), from, [](const Access& a, uint64_t t) { return a.ts_ns < t; });
        for (; it != v.end() && it->ts_ns <= to; ++it) {
          ++own;
          const uint32_t l = it->line;
          if (stamp_[l] != s) {
            stamp_[l] = s;
            own_[l] = 0;
            touched_.push_back(l);
          }
          ++own_[l];
          if (it->transfer) {
            ++xfers;
            if (l >= r.lines.size()) r.lines.resize(size_t(l) + 1);
            ++r.lines[l].first;
          }
        }
      }
      scanned += own + 1;
      if (!own) continue;
      ++r.with_accesses;
      r.transfers += xfers;
      if (xfers) ++r.with_transfers;
      // (b): the other CPUs' accesses inside to those lines (before c's first one too): all
      // the line's accesses inside less c's own.
      for (uint32_t l : touched_) {
        uint64_t all = 0;
        for (const Gen* g : gens) {
          if (l >= g->by_line.size()) continue;
          const std::vector<uint64_t>& t = g->by_line[l];
          all += uint64_t(std::upper_bound(t.begin(), t.end(), to) - std::lower_bound(t.begin(), t.end(), from));
        }
        const uint64_t other = all - std::min(all, own_[l]);
        if (!other) continue;
        r.other += other;
        if (l >= r.lines.size()) r.lines.resize(size_t(l) + 1);
        r.lines[l].second += other;
      }
    }
  }
  // Keep this interval's accesses for the next one's events (their windows may start here).
  cur_ = 1 - cur_;
  gen_[cur_].clear();
}

nlohmann::json TailExactJoin::json(size_t rule, const ExactAccumulator& acc) const {
  if (!acc.any() || rule >= rules_.size()) return nullptr;
  const Rule& r = rules_[rule];
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < r.lines.size(); ++id)
    if (r.lines[id].first || r.lines[id].second) ids.push_back(id);
  std::vector<std::string> names(r.lines.size());
  for (uint32_t id : ids) names[id] = acc.line_name(id);
  const size_t n = std::min(kTopLines, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](uint32_t a, uint32_t b) {
    if (r.lines[a].first != r.lines[b].first) return r.lines[a].first > r.lines[b].first;
    if (r.lines[a].second != r.lines[b].second) return r.lines[a].second > r.lines[b].second;
    return names[a] < names[b];
  });
  nlohmann::json lines = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t id = ids[i];
    const LineKey& k = acc.line_key(id);
    lines.push_back({{"name", names[id]},
                     {"object", k.object},
                     {"line", k.line},
                     {"transfers", r.lines[id].first},
                     {"other_accesses", r.lines[id].second}});
  }
  return {{"events", r.events},
          {"with_accesses", r.with_accesses},
          {"with_transfers", r.with_transfers},
          {"transfers", r.transfers},
          {"other_accesses", r.other},
          {"lines", lines},
          {"window_transfers", transfers_},
          {"lost", r.lost},
          {"lower_bound", r.lost > 0},
          {"not_looked_at", r.skipped}};
}

std::string tail_exact_text(const nlohmann::json& tail) {
  if (!tail.contains("exact") || !tail["exact"].is_object()) return "";
  const auto& x = tail["exact"];
  const uint64_t events = x["events"].get<uint64_t>();
  if (events == 0) return "  exact: no caught event ended in an interval with --exact records\n";
  const uint64_t with = x["with_transfers"].get<uint64_t>(), xfers = x["transfers"].get<uint64_t>(),
                 other = x["other_accesses"].get<uint64_t>(), own = x["with_accesses"].get<uint64_t>();
  const bool all = tail.contains("events_received") && tail["events_received"].is_number_unsigned() &&
                   tail["events_received"].get<uint64_t>() == events;
  std::string out = fmt::format("  exact: of {} caught{}, ", events, all ? "" : " in intervals with --exact records");
  if (with == 0) {
    out += "none took a coherence transfer inside";
  } else {
    std::string items;
    for (const auto& l : x["lines"]) {
      const uint64_t n = l["transfers"].get<uint64_t>();
      if (n) items += fmt::format("{}{} {}", items.empty() ? "" : ", ", scrub_controls(l["name"].get<std::string>()), n);
    }
    out += fmt::format("{} took coherence transfers inside ({} in all{}{})", with, xfers, items.empty() ? "" : ": ", items);
  }
  out += fmt::format("; other CPUs touched their lines {} time{} inside", other, other == 1 ? "" : "s");
  if (own < events) out += fmt::format(" ({} had no --exact record of their CPU inside)", events - own);
  if (x.contains("not_looked_at") && x["not_looked_at"].is_number_unsigned() && x["not_looked_at"].get<uint64_t>())
    out += fmt::format("; {} not looked at (the join's cap on accesses scanned per interval: 16 per access held, "
                       "1 Mi to 64 Mi)",
                       x["not_looked_at"].get<uint64_t>());
  if (const uint64_t lost = x["lost"].get<uint64_t>())
    out += fmt::format("; {} --exact records lost in their intervals: lower bounds", lost);
  return out + "\n";
}

}  // namespace schedhot
