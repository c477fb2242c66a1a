// The gap model (src/model/gaps.h) checked on real accesses: replays a recording made with
// `record --exact`, feeding its records both to the ownership machine (the exact count) and
// to GapTracker (the probes' per-CPU gap state, built here from the records' times), and
// prints per line the independent-arrivals model, the gap model and the exact count.
//   build/tests/schedhot_gap_replay REC.shot...
// Analysis knobs (environment), for what README "Cachelines" and issue 29's note report:
//   GAP_PER=OBJECT      per interval, the gap model and the exact count of OBJECT's lines
//   GAP_DUMP=OBJECT     the first GAP_DUMP_N (400) records touching OBJECT after GAP_FROM seconds (3)
//   GAP_BIN_MS=X        the gap model run on bins of X ms with the others' rates of each bin
//                       (the time-binned variant that was measured and rejected)
//   GAP_DUTY=ON/PERIOD[@PHASE],...  calibration by short exact windows (issue 29), held out:
//                       exact for ON s of every PERIOD s (from PHASE s, 0 by default); over
//                       each window the per-line factor exact/estimate of the gap model and
//                       of independent arrivals, carried to the following intervals; the
//                       calibrated figures compared with the exact count of the intervals
//                       outside the windows (the recording is exact throughout: the truth)
//   GAP_CAL_MIN=N       a window with fewer exact transfers of a line than N (50) keeps the
//                       line's previous factor (said per line: windows skipped, factor age)
//   GAP_CAL_WARM=1      a window's exact count from the ownership state of all the records
//                       before it (default: from its own records only, as a recorder that
//                       is exact only in the windows would count)
//   GAP_CAL_FACTORS=1   print every window's factors of every line
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/gaps.h"
#include "model/interval.h"
#include "model/lines.h"
#include "store/recording.h"

using namespace schedhot;

namespace {

/// One interval of a recording, as the calibration study needs it: its start (s after the
/// first sample), length, records, and per line the transfers (counts, not rates) of the
/// exact replay (continuous state), the gap model and independent arrivals.
struct Slice {
  double t0 = 0, dt = 0;
  /// The interval has an EXACT frame and no CPU has gone offline since the recording began:
  /// the records of a CPU that went offline are refused from then on (README Limits), while
  /// its counters still move, so later intervals have no exact truth to compare with.
  bool has_exact = false;
  ExactBatch batch;
  std::map<LineKey, double> exact, gap, ia;
};

struct Duty {
  double on = 1, period = 10, phase = 0;
  std::string text;
};

std::vector<Duty> parse_duties(const char* s) {
  std::vector<Duty> out;
  std::string all(s ? s : "");
  size_t p = 0;
  while (p < all.size()) {
    size_t q = all.find(',', p);
    if (q == std::string::npos) q = all.size();
    const std::string one = all.substr(p, q - p);
    Duty d;
    d.text = one;
    if (std::sscanf(one.c_str(), "%lf/%lf@%lf", &d.on, &d.period, &d.phase) >= 2 && d.on > 0 && d.period > d.on)
      out.push_back(d);
    else
      std::fprintf(stderr, "GAP_DUTY: '%s' is not ON/PERIOD[@PHASE] with 0 < ON < PERIOD, skipped\n", one.c_str());
    p = q + 1;
  }
  return out;
}

/// The per-line result of one duty on one recording.
struct CalLine {
  std::string name;
  double secs = 0;                       ///< hold-out seconds
  double exact = 0, gap = 0, ia = 0;     ///< hold-out transfers
  double cal_gap = 0, cal_ia = 0;        ///< calibrated hold-out transfers
  double uncal_s = 0;                    ///< hold-out seconds with no factor yet (estimate as is)
  int windows = 0, used = 0;             ///< calibration windows; with enough exact transfers
  double max_age = 0;                    ///< s from the end of the factor's window to the end of an interval it scaled
  double fg_min = 0, fg_max = 0, fi_min = 0, fi_max = 0;    ///< factors over the used windows
  double sg_min = 0, sg_max = 0, si_min = 0, si_max = 0;    ///< factor(k)/factor(k-1), consecutive used windows
  int steps = 0;
};

bool within(double est, double ex) { return ex > 0 && std::fabs(est / ex - 1) <= 0.15; }

struct Tally {
  int lines = 0, model = 0, gap = 0, cal_gap = 0, cal_ia = 0;
};

/// Runs one duty over a recording's slices; prints the table; returns the tally of lines
/// with >= 100 hold-out exact transfers.
Tally calibrate(const Meta& meta, const std::vector<Slice>& sl, const std::vector<LineSummary>& lines, const Duty& d,
                double min_xfers, bool warm, bool show_factors) {
  constexpr double eps = 1e-3;  // sample times jitter by a few ms
  auto on = [&](const Slice& s) {
    const double t = s.t0 + s.dt / 2 - d.phase;  // the interval's middle decides
    return t >= 0 && std::fmod(t, d.period) < d.on;
  };
  // Windows: runs of consecutive "on" slices within one period.
  struct Win {
    size_t a = 0, b = 0;  // slices [a, b)
    double end = 0;
  };
  std::vector<Win> wins;
  for (size_t i = 0; i < sl.size(); ++i) {
    if (!on(sl[i]) || !sl[i].has_exact) continue;
    const long per = long(std::floor((sl[i].t0 + sl[i].dt / 2 - d.phase) / d.period + eps));
    if (!wins.empty() && wins.back().b == i &&
        long(std::floor((sl[wins.back().a].t0 + sl[wins.back().a].dt / 2 - d.phase) / d.period + eps)) == per) {
      wins.back().b = i + 1;
    } else {
      wins.push_back({i, i + 1, 0});
    }
    wins.back().end = sl[i].t0 + sl[i].dt;
  }
  // Each window's exact count per line: a fresh ownership machine over its records (cold),
  // or the continuous replay's (warm).
  std::vector<std::map<LineKey, double>> wex(wins.size());
  for (size_t w = 0; w < wins.size(); ++w) {
    if (warm) {
      for (size_t i = wins[w].a; i < wins[w].b; ++i)
        for (const auto& [k, x] : sl[i].exact) wex[w][k] += x;
      continue;
    }
    ExactAccumulator acc(meta);
    for (size_t i = wins[w].a; i < wins[w].b; ++i) acc.add(sl[i].dt, sl[i].batch);
    for (const LineSummary& l : lines)
      if (auto t = acc.traffic(l.key)) wex[w][l.key] = t->total() * acc.seconds();
  }
  double hold_s = 0;
  int hold_n = 0;
  std::vector<CalLine> out;
  for (const LineSummary& l : lines) {
    CalLine c;
    c.name = l.name;
    c.windows = int(wins.size());
    double fg = 0, fi = 0, fend = 0;  // current factors (0: none yet), their window's end
    double pfg = 0, pfi = 0;
    bool first = true;
    size_t next_w = 0;
    std::string fl;
    for (size_t i = 0; i < sl.size(); ++i) {
      if (next_w < wins.size() && i == wins[next_w].a) {
        // A window: its factors replace the current ones when it saw enough transfers.
        double e = wex[next_w].count(l.key) ? wex[next_w].at(l.key) : 0, g = 0, m = 0;
        for (size_t j = wins[next_w].a; j < wins[next_w].b; ++j) {
          g += sl[j].gap.count(l.key) ? sl[j].gap.at(l.key) : 0;
          m += sl[j].ia.count(l.key) ? sl[j].ia.at(l.key) : 0;
        }
        char buf[96];
        if (e >= min_xfers && g > 0 && m > 0) {
          fg = e / g;
          fi = e / m;
          fend = wins[next_w].end;
          ++c.used;
          if (first) {
            c.fg_min = c.fg_max = fg;
            c.fi_min = c.fi_max = fi;
          } else {
            c.fg_min = std::min(c.fg_min, fg), c.fg_max = std::max(c.fg_max, fg);
            c.fi_min = std::min(c.fi_min, fi), c.fi_max = std::max(c.fi_max, fi);
          }
          if (pfg > 0) {
            const double sg = fg / pfg, si = fi / pfi;
            if (c.steps == 0) {
              c.sg_min = c.sg_max = sg;
              c.si_min = c.si_max = si;
            } else {
              c.sg_min = std::min(c.sg_min, sg), c.sg_max = std::max(c.sg_max, sg);
              c.si_min = std::min(c.si_min, si), c.si_max = std::max(c.si_max, si);
            }
            ++c.steps;
          }
          pfg = fg, pfi = fi;
          first = false;
          std::snprintf(buf, sizeof buf, " %.1f:%.3f/%.3f", sl[wins[next_w].a].t0, fg, fi);
        } else {
          pfg = pfi = 0;  // a skipped window breaks the consecutive pairs
          std::snprintf(buf, sizeof buf, " %.1f:skip(%.0f exact, factor kept)", sl[wins[next_w].a].t0, e);
        }
        fl += buf;
        i = wins[next_w].b - 1;
        ++next_w;
        continue;
      }
      // A hold-out interval: after the first window only (before it there is nothing to carry).
      if (wins.empty() || i < wins[0].b || !sl[i].has_exact) continue;
      if (&l == &lines.front()) hold_s += sl[i].dt, ++hold_n;
      const double e = sl[i].exact.count(l.key) ? sl[i].exact.at(l.key) : 0;
      const double g = sl[i].gap.count(l.key) ? sl[i].gap.at(l.key) : 0;
      const double m = sl[i].ia.count(l.key) ? sl[i].ia.at(l.key) : 0;
      c.secs += sl[i].dt;
      c.exact += e, c.gap += g, c.ia += m;
      if (fg > 0) {
        c.cal_gap += fg * g, c.cal_ia += fi * m;
        c.max_age = std::max(c.max_age, sl[i].t0 + sl[i].dt - fend);
      } else {
        c.cal_gap += g, c.cal_ia += m;
        c.uncal_s += sl[i].dt;
      }
    }
    if (show_factors) std::printf("    F %-40s gap/ia factors by window start:%s\n", l.name.c_str(), fl.c_str());
    out.push_back(c);
  }
  std::printf("  duty %s: exact %g s of every %g s from %g s, %zu window(s), hold-out %d intervals %.1f s, %s windows, min %g exact per window\n",
              d.text.c_str(), d.on, d.period, d.phase, wins.size(), hold_n, hold_s, warm ? "warm" : "cold", min_xfers);
  std::printf("    %-40s %9s %8s %8s %8s %8s %9s %6s %15s %15s %15s %15s\n", "line", "exact/s", "model/ex", "gap/ex", "calgap/ex",
              "calia/ex", "win used", "age s", "gap f min-max", "gap step", "ia f min-max", "ia step");
  Tally t;
  for (const CalLine& c : out) {
    if (c.exact <= 0 && c.gap <= 0 && c.ia < 1) continue;
    const bool big = c.exact >= 100;
    auto r = [&](double x) { return c.exact > 0 ? x / c.exact : 0.0; };
    auto mark = [&](double x) { return big ? (within(x, c.exact) ? ' ' : '!') : '-'; };
    char steps_g[32] = "-", steps_i[32] = "-", fg[32] = "-", fi[32] = "-";
    if (c.used) {
      std::snprintf(fg, sizeof fg, "%.3f-%.3f", c.fg_min, c.fg_max);
      std::snprintf(fi, sizeof fi, "%.3f-%.3f", c.fi_min, c.fi_max);
    }
    if (c.steps) {
      std::snprintf(steps_g, sizeof steps_g, "%.3f-%.3f", c.sg_min, c.sg_max);
      std::snprintf(steps_i, sizeof steps_i, "%.3f-%.3f", c.si_min, c.si_max);
    }
    std::printf("    %-40s %9.1f %7.2f%c %7.3f%c %8.3f%c %7.3f%c %4d/%-4d %6.1f %15s %15s %15s %15s%s%s\n", c.name.c_str(),
                c.secs > 0 ? c.exact / c.secs : 0, r(c.ia), mark(c.ia), r(c.gap), mark(c.gap), r(c.cal_gap), mark(c.cal_gap),
                r(c.cal_ia), mark(c.cal_ia), c.used, c.windows, c.max_age, fg, steps_g, fi, steps_i,
                c.used < c.windows ? "  (windows below the minimum kept the previous factor)" : "",
                c.uncal_s > 0 ? "  (part of the hold-out before any factor: uncalibrated)" : "");
    if (!big) continue;
    ++t.lines;
    t.model += within(c.ia, c.exact), t.gap += within(c.gap, c.exact);
    t.cal_gap += within(c.cal_gap, c.exact), t.cal_ia += within(c.cal_ia, c.exact);
  }
  std::printf("    within 15 %% of the hold-out exact count (lines with >= 100 hold-out exact transfers: %d): model %d, gap %d, "
              "calibrated gap %d, calibrated ia %d\n",
              t.lines, t.model, t.gap, t.cal_gap, t.cal_ia);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const char* dump = getenv("GAP_DUMP");
  int dumped = 0;
  const int dump_n = atoi(getenv("GAP_DUMP_N") ?: "400");
  const char* per = getenv("GAP_PER");
  const uint64_t bin_ns = uint64_t(atof(getenv("GAP_BIN_MS") ?: "0") * 1e6);
  uint64_t cur_bin = 0;
  std::map<LineKey, double> bin_x;
  const std::vector<Duty> duties = parse_duties(getenv("GAP_DUTY"));
  const double cal_min = atof(getenv("GAP_CAL_MIN") ?: "50");
  const bool cal_warm = atoi(getenv("GAP_CAL_WARM") ?: "0") != 0;
  const bool cal_factors = atoi(getenv("GAP_CAL_FACTORS") ?: "0") != 0;
  std::vector<Tally> totals(duties.size());
  for (int f = 1; f < argc; ++f) {
    auto rd = RecordingReader::open(argv[f]);
    const Meta& meta = rd->meta();
    const CoherenceLayout layout = layout_of(meta);
    LinePlan plan(meta, layout);
    TopologyIndex topo(meta.host.topology);
    CoherenceAccumulator model(meta);
    ExactAccumulator exact(meta);
    GapTracker gaps;
    std::map<LineKey, uint32_t> ids;
    std::vector<LineKey> keys;
    std::map<LineKey, double> gap_x;  // transfers x seconds
    Sample prev, s;
    bool have = false;
    double secs = 0;
    // GAP_DUTY: every interval's per-line counts (the exact and gap counts as differences
    // of the continuous accumulator's running totals).
    std::vector<Slice> slices;
    CoherenceAccumulator one_model(meta);
    std::map<LineKey, std::pair<double, double>> cum;  // exact, gap transfers so far
    size_t full_online = 0;  // CPUs online in the first sample (0: not known)
    bool all_online = true;  // no CPU has gone offline so far
    int incomplete = 0;      // intervals with EXACT frames left out (after a CPU went offline)
    while (rd->next(s)) {
      if (have) {
        Interval iv(meta, prev, s);
        if (iv.seconds() > 0) {
          model.add(iv);
          if (s.exact) {
            exact.add(iv.seconds(), *s.exact);
            for (const ExactRecord& r : s.exact->records)
              for (const auto& [k, w] : plan.event_lines(r.probe, r.word, int(r.cpu))) {
                auto [it, fresh] = ids.emplace(k, uint32_t(keys.size()));
                if (fresh) keys.push_back(k);
                if (bin_ns && r.ts_ns / bin_ns != cur_bin) {
                  for (uint32_t id : gaps.lines()) {
                    auto g = gaps.take(id);
                    bin_x[keys[id]] += gap_model(topo, g, bin_ns / 1e9).total() * (bin_ns / 1e9);
                  }
                  cur_bin = r.ts_ns / bin_ns;
                }
                gaps.feed({r.ts_ns, r.cpu, it->second, w});
                if (dump && k.object == dump && dumped < dump_n && secs > atof(getenv("GAP_FROM") ?: "3")) {
                  std::printf("D %llu cpu %u %c probe %u word %u\n", (unsigned long long)r.ts_ns, r.cpu, w ? 'W' : 'R', r.probe, r.word);
                  ++dumped;
                }
              }
          }
          std::unique_ptr<ExactAccumulator> one;
          if (per && s.exact) {
            one = std::make_unique<ExactAccumulator>(meta);
            one->add(iv.seconds(), *s.exact);
          }
          for (uint32_t id : bin_ns ? std::vector<uint32_t>{} : gaps.lines()) {
            auto g = gaps.take(id);
            const double gx = gap_model(topo, g, iv.seconds()).total();
            gap_x[keys[id]] += gx * iv.seconds();
            if (one && keys[id].object == per) {
              auto t = one->traffic(keys[id]);
              std::printf("I t=%5.1f %s line %lld gap %9.1f exact %9.1f ratio %.2f\n", secs, per, (long long)keys[id].line, gx,
                          t ? t->total() : 0.0, t && t->total() > 0 ? gx / t->total() : 0.0);
            }
          }
          if (!duties.empty()) {
            Slice sc;
            sc.t0 = secs;
            sc.dt = iv.seconds();
            if (!s.online.empty() && s.online.size() < full_online) all_online = false;
            sc.has_exact = bool(s.exact) && all_online;
            incomplete += bool(s.exact) && !all_online;
            if (s.exact) {
              sc.batch = *s.exact;
              for (const LineKey& k : keys) {
                const auto e = exact.traffic(k), g = exact.gap_traffic(k);
                const double ce = e ? e->total() * exact.seconds() : 0, cg = g ? g->total() * exact.seconds() : 0;
                auto& [pe, pg] = cum[k];
                if (ce - pe > 0) sc.exact[k] = ce - pe;
                if (cg - pg > 0) sc.gap[k] = cg - pg;
                pe = ce, pg = cg;
              }
            }
            for (const LineSummary& l : one_model.of(iv).lines) sc.ia[l.key] = l.traffic.total() * iv.seconds();
            slices.push_back(std::move(sc));
          }
          secs += iv.seconds();
        }
      }
      if (!have) full_online = s.online.size();
      prev = s;
      have = true;
    }
    const CoherenceSummary sum = model.summary();
    std::printf("%s: %.1f s, %llu exact records, %llu lost\n", argv[f], secs, (unsigned long long)exact.records(),
                (unsigned long long)exact.lost());
    for (const LineSummary& l : sum.lines) {
      auto ex = exact.traffic(l.key);
      const double e = ex ? ex->total() : 0, g = (bin_ns ? bin_x[l.key] : gap_x[l.key]) / secs, m = l.traffic.total();
      std::printf("  %-44s model %9.1f  gap %9.1f  exact %9.1f /s   model/exact %6.2f  gap/exact %6.3f  (exact %6.0f)\n",
                  l.name.c_str(), m, g, e, e > 0 ? m / e : 0, e > 0 ? g / e : 0, ex ? e * exact.seconds() : 0);
    }
    if (!duties.empty() && exact.any()) {
      std::printf("  calibration by exact windows (%zu intervals, %.2f s each on average; %d left out: a CPU had gone offline, "
                  "its records refused since):\n",
                  slices.size(), slices.empty() ? 0.0 : secs / double(slices.size()), incomplete);
      if (const char* o = getenv("GAP_CAL_SLICES"))  // per interval: OBJECT's lines' exact, gap and ia counts
        for (const Slice& sc : slices)
          for (const auto& [k, x] : sc.ia)
            if (k.object == o) {
              const double e = sc.exact.count(k) ? sc.exact.at(k) : 0, g = sc.gap.count(k) ? sc.gap.at(k) : 0;
              std::printf("    S t=%5.2f dt=%.2f %s line %lld exact %7.0f gap %8.1f ia %8.1f  gap/ex %6.2f ia/ex %6.2f\n", sc.t0,
                          sc.dt, o, (long long)k.line, e, g, x, e > 0 ? g / e : 0, e > 0 ? x / e : 0);
            }
      for (size_t d = 0; d < duties.size(); ++d) {
        const Tally t = calibrate(meta, slices, sum.lines, duties[d], cal_min, cal_warm, cal_factors);
        totals[d].lines += t.lines, totals[d].model += t.model, totals[d].gap += t.gap;
        totals[d].cal_gap += t.cal_gap, totals[d].cal_ia += t.cal_ia;
      }
    } else if (!duties.empty()) {
      std::printf("  calibration: no EXACT frames in this recording, skipped\n");
    }
  }
  for (size_t d = 0; d < duties.size(); ++d)
    std::printf("ALL duty %-10s lines %3d within 15 %%: model %3d  gap %3d  calibrated gap %3d  calibrated ia %3d\n",
                duties[d].text.c_str(), totals[d].lines, totals[d].model, totals[d].gap, totals[d].cal_gap, totals[d].cal_ia);
}
