// schedhot diff's document (analysis/diff.h; method in model/compare.h).
#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <map>
#include <string_view>
#include <cctype>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "model/compare.h"
#include "model/interval.h"
#include "model/interval_cursor.h"
#include "model/lines.h"
#include "probe/catalog.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/cpulist.h"
#include "sys/json_text.h"
#include "analysis/schema.h"
#include "analysis/tails.h"

namespace schedhot {

TopoLevel parse_diff_by(const std::string& s) {
  if (s != "package")
    for (TopoLevel l : {TopoLevel::cpu, TopoLevel::core, TopoLevel::llc, TopoLevel::node})
      if (s == topo_level_name(l)) return l;
  throw std::invalid_argument(fmt::format("--by '{}': one of cpu, core, llc, node", s));
}

namespace {

/// A line's per-interval transfers (transfers/s x seconds), zero where it had none.
struct LineSeries {
  std::string name;
  std::vector<double> total;
  std::set<std::string> probes;  ///< probes whose accesses to it missed in some interval
  std::map<std::string, std::vector<double>> groups;
};

/// The top stacks of each side a tail comparison merges.
constexpr size_t kTailStacks = 10;

/// Below this many intervals a side, diff warns that its bootstrap is too narrow (README).
constexpr size_t kMinIntervals = 10;

/// One side, read.
struct Side {
  Meta meta;
  uint32_t samples = 0;
  std::vector<double> seconds;             ///< per interval
  std::vector<HistSeries> hist;            ///< per probe
  std::vector<RateSeries> calls;           ///< per probe
  std::vector<uint64_t> max_ns;            ///< per probe
  std::vector<char> has_hist;              ///< per probe: latency events in the window (a proxy without duration: none)
  std::map<std::string, LineSeries> lines;  ///< by object:line
  std::vector<WhatIfResult> what_if;
  /// --catch: the window's caught events per rule (null without rules) and their summary
  /// (TailAccumulator::json over the window).
  std::shared_ptr<TailAccumulator> tails;
  nlohmann::json tails_json = nlohmann::json::array();
  /// The file is damaged after the window: "damaged at byte N (why) after the window",
  /// "" when intact (a window that reaches the damage is refused).
  std::string damage;
  /// "the window asked to end at +X s ends at the last sample (+Y s)", or "" (as report's
  /// window note).
  std::string note;
};

/// "cpu 2" < "cpu 10": runs of digits compare as numbers.
struct NaturalLess {
  bool operator()(const std::string& x, const std::string& y) const {
    size_t i = 0, j = 0;
    while (i < x.size() && j < y.size()) {
      if (std::isdigit(static_cast<unsigned char>(x[i])) && std::isdigit(static_cast<unsigned char>(y[j]))) {
        size_t i2 = i, j2 = j;
        while (i2 < x.size() && std::isdigit(static_cast<unsigned char>(x[i2]))) ++i2;
        while (j2 < y.size() && std::isdigit(static_cast<unsigned char>(y[j2]))) ++j2;
        const std::string_view a(x.data() + i, i2 - i), b(y.data() + j, j2 - j);
        const size_t za = a.find_first_not_of('0'), zb = b.find_first_not_of('0');
        const std::string_view na = za == a.npos ? "" : a.substr(za), nb = zb == b.npos ? "" : b.substr(zb);
        if (na.size() != nb.size()) return na.size() < nb.size();
        if (na != nb) return na < nb;
        i = i2, j = j2;
      } else {
        if (x[i] != y[j]) return x[i] < y[j];
        ++i, ++j;
      }
    }
    return x.size() - i < y.size() - j;
  }
};

std::string group_of(const Meta& m, TopoLevel by, uint32_t cpu) {
  if (by == TopoLevel::cpu) return fmt::format("cpu {}", cpu);
  for (auto& t : m.host.topology)
    if (t.cpu == static_cast<int>(cpu)) {
      if (by == TopoLevel::core) return fmt::format("core {}.{}", t.package, t.core);
      if (by == TopoLevel::llc) return fmt::format("llc {}", t.llc);
      return fmt::format("node {}", t.node);
    }
  return fmt::format("cpu {} (no topology)", cpu);
}

Side read_side(const DiffSide& ds, std::optional<TopoLevel> by, const std::atomic<bool>* stop) {
  std::unique_ptr<RecordingReader> r = RecordingReader::open(ds.file);  // throws one line with the path
  Side side;
  const Meta& meta = r->meta();
  const size_t np = meta.probes.size();
  side.hist.resize(np);
  side.calls.resize(np);
  side.max_ns.assign(np, 0);
  side.has_hist.assign(np, 0);
  std::vector<FieldRef> primary(np);
  std::vector<std::string> hist_field(np);
  for (size_t p = 0; p < np; ++p)
    if (const ProbeSpec* spec = find_probe(meta.probes[p].name)) {
      primary[p] = field_ref(meta, static_cast<int>(p), spec->primary);
      const Field* h = spec->hist.empty() ? nullptr : meta.probes[p].slot.find(spec->hist);
      if (h && h->kind == FieldKind::hist) hist_field[p] = spec->hist;
    }
  const SampleWindow w{ds.from_s, ds.to_s, meta.interval_ns};
  WindowedCursor cur(*r, r.get(), w, WindowCheck::any_edge, stop);
  cur.read_t0();
  if (WindowProblem pr = cur.seek_start(); pr.error == WindowError::none_after_from)
    throw std::runtime_error(fmt::format("{}: no samples in the window {}{}", ds.file, ds.window,
                                         pr.span_s ? fmt::format("; the samples span +0..+{:.2f} s", *pr.span_s) : ""));
  CoherenceAccumulator acc(meta);
  if (!meta.catch_rules.empty()) side.tails = std::make_shared<TailAccumulator>(meta);
  IntervalCursor ic(meta, {w, std::nullopt, PastWindow::stop, /*keep_first=*/true});
  size_t n = 0;
  while (ic.next(cur, stop)) {
    const Interval* ivp = ic.interval();
    if (!ivp) continue;
    const Interval& iv = *ivp;
    side.seconds.push_back(iv.seconds());
    if (side.tails && ic.cur().caught) side.tails->add(*ic.cur().caught);
    if (side.tails && ic.prev()) side.tails->add_interval(meta, *ic.prev(), iv);
    for (size_t p = 0; p < np; ++p) {
      const int pi = static_cast<int>(p);
      if (!iv.present(pi)) continue;
      side.calls[p].add(static_cast<double>(iv.count(primary[p])), iv.seconds());
      if (!hist_field[p].empty()) side.hist[p].add(iv.buckets(pi, hist_field[p]));
    }
    CoherenceSummary cs = acc.of(iv);
    if (side.what_if.empty()) side.what_if = cs.what_if;
    for (auto& l : cs.lines) {
      LineSeries& ls = side.lines[fmt::format("{}:{}", l.key.object, l.key.line)];
      ls.name = l.name;
      ls.total.resize(n + 1, 0);
      ls.total[n] = l.traffic.total() * iv.seconds();
      for (const auto& [pi, x] : l.by_probe)
        if (x > 0 && pi >= 0 && size_t(pi) < np) ls.probes.insert(meta.probes[size_t(pi)].name);
      if (by)
        for (auto& c : l.traffic.cpus) {
          auto& g = ls.groups[group_of(meta, *by, c.cpu)];
          g.resize(n + 1, 0);
          g[n] += c.total() * iv.seconds();
        }
    }
    ++n;
  }
  if (ic.stopped()) throw Interrupted{};
  side.samples = ic.samples();
  const bool past_window = ic.past_window();  // an intact sample after the window was read
  // The last intact sample read, seconds since the first (used only when none was past the
  // window: then it is the last one inside or before it).
  const double last_t = ic.seen_t();
  // Damage is a value (as report has it): a window wholly before it compares intact
  // samples, and says so; one that reaches it would compare a cut window, and is refused.
  if (const auto& dmg = r->damage()) {
    if (past_window || (ds.to_s >= 0 && last_t >= ds.to_s))
      side.damage = fmt::format("damaged at byte {} ({}) after the window: its samples are intact", dmg->offset, dmg->reason);
    else
      throw std::runtime_error(fmt::format(
          "{} is damaged at byte {} ({}) and {} reaches it; its intact samples span +0..+{:.2f} s: a window ending "
          "by then (--to, or --a/--b FROM:TO) is compared",
          ds.file, dmg->offset, dmg->reason, ds.window.empty() ? "the whole recording" : "the window " + ds.window, last_t));
  }
  if (!past_window && ds.to_s >= 0 && ds.to_s > last_t + w.slack_s())
    side.note = fmt::format("the window asked to end at +{:.2f} s ends at the last sample (+{:.2f} s)", ds.to_s, last_t);
  if (n < 1)
    throw std::runtime_error(fmt::format("{}: {} sample{} in {}, need two for an interval", ds.file, side.samples,
                                         side.samples == 1 ? "" : "s",
                                         ds.window.empty() ? "the recording" : "the window " + ds.window));
  Interval whole(meta, *ic.first(), *ic.last());
  for (size_t p = 0; p < np; ++p)
    if (!hist_field[p].empty() && whole.present(static_cast<int>(p)) &&
        counter_observed(meta.probes[p].name, meta.probes[p].status.proxy, hist_field[p])) {
      side.max_ns[p] = whole.hist(static_cast<int>(p), hist_field[p]).max_ns;
      side.hist[p].max_ns = side.max_ns[p];
      side.has_hist[p] = side.hist[p].total() > 0 ? 1 : 0;
    }
  if (side.tails) side.tails_json = side.tails->json(meta, whole, kTailStacks);
  for (auto& [k, ls] : side.lines) {
    ls.total.resize(n, 0);
    for (auto& [g, v] : ls.groups) v.resize(n, 0);
  }
  side.meta = meta;
  return side;
}

RateSeries series(const std::vector<double>& v, const std::vector<double>& sec) {
  RateSeries r;
  for (size_t i = 0; i < v.size() && i < sec.size(); ++i) r.add(v[i], sec[i]);
  return r;
}

nlohmann::json num_or_null(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json figure_json(const FigureDiff& d, bool tested) {
  nlohmann::json j{{"a", d.a}, {"b", d.b}, {"ratio", num_or_null(d.ratio)}};
  if (tested) {
    // No interval of B/A without A (ratio null); the verdict still says whether 0 -> B is real.
    j["interval"] = d.ratio ? nlohmann::json{std::exp(d.log_lo), std::exp(d.log_hi)} : nlohmann::json(nullptr);
    j["min_effect"] = d.min_effect;
    j["significant"] = d.significant;
  }
  return j;
}

/// Why probe p of m shows no figures, "" when it does: "not selected (--probes)" as info
/// and report say it, "unavailable" (could not attach), "blind: WHY".
std::string not_measured(const Meta& m, int p) {
  const ProbeStatus& st = m.probes[p].status;
  if (!st.attached) return st.reason.rfind("not selected", 0) == 0 ? "not selected (--probes)" : "unavailable";
  if (std::string b = blind_reason(m, p); !b.empty()) return "blind: " + b;
  return "";
}

std::vector<std::string> host_differences(const Side& a, const Side& b) {
  std::vector<std::string> out;
  const HostInfo &ha = a.meta.host, &hb = b.meta.host;
  if (ha.hostname != hb.hostname) out.push_back(fmt::format("host: {} (A) vs {} (B)", ha.hostname, hb.hostname));
  if (ha.kernel_release != hb.kernel_release)
    out.push_back(fmt::format("kernel: {} (A) vs {} (B)", ha.kernel_release, hb.kernel_release));
  if (a.meta.ncpus != b.meta.ncpus) out.push_back(fmt::format("CPUs: {} (A) vs {} (B)", a.meta.ncpus, b.meta.ncpus));
  for (const auto& [name, side] : {std::pair<const char*, const Side*>{"A", &a}, {"B", &b}})
    if (side->seconds.size() < kMinIntervals)
      out.push_back(fmt::format("{}: {} interval{}: with fewer than {} a side the bootstrap interval is too narrow, "
                                "so significance is overstated",
                                name, side->seconds.size(), side->seconds.size() == 1 ? "" : "s", kMinIntervals));
  if (ha.online != hb.online)
    out.push_back(fmt::format("online CPUs: {} (A) vs {} (B)", format_cpulist(ha.online), format_cpulist(hb.online)));
  if (a.meta.interval_ns != b.meta.interval_ns)
    out.push_back(fmt::format("sample interval: {} ms (A) vs {} ms (B)", a.meta.interval_ns / 1e6, b.meta.interval_ns / 1e6));
  if (ha.spinlock != hb.spinlock)
    out.push_back(fmt::format("spinlocks: {} (A) vs {} (B)", to_string(ha.spinlock), to_string(hb.spinlock)));
  for (size_t p = 0; p < a.meta.probes.size(); ++p) {
    const std::string& name = a.meta.probes[p].name;
    const int q = b.meta.probe_index(name);
    if (q < 0) {
      out.push_back(fmt::format("{}: only in A", name));
      continue;
    }
    const ProbeStatus &sa = a.meta.probes[p].status, &sb = b.meta.probes[q].status;
    const std::string na = not_measured(a.meta, static_cast<int>(p)), nb = not_measured(b.meta, q);
    if (na != nb) {
      out.push_back(fmt::format("{}: {} (A) vs {} (B)", name, na.empty() ? "measured" : na, nb.empty() ? "measured" : nb));
      continue;
    }
    if (!sa.attached || !sb.attached) continue;
    if (sa.proxy != sb.proxy)
      out.push_back(fmt::format("{}: a proxy ({}) on {} only: its figures are not the function's", name,
                                sa.proxy ? sa.proxy_label : sb.proxy_label, sa.proxy ? "A" : "B"));
    else if (sa.backend_label() != sb.backend_label())
      out.push_back(fmt::format("{}: backend {} (A) vs {} (B)", name, sa.backend_label(), sb.backend_label()));
  }
  for (auto& pb : b.meta.probes)
    if (a.meta.probe_index(pb.name) < 0) out.push_back(fmt::format("{}: only in B", pb.name));
  // A side recorded with the probes' gap state has the gap model's transfer figures where its
  // counts cover a line, one without it only the independent-arrivals model's (README "Which
  // estimate the figure is").
  if (a.meta.gap_lines.empty() != b.meta.gap_lines.empty())
    out.push_back(fmt::format("gap state recorded on {} only (the other made with --no-gap-state, or before it was the "
                              "default): where its gap counts cover a line, its "
                              "cacheline transfers are the gap model's and the other side's the independent-arrivals "
                              "model's (each side's report says which estimate it is)",
                              a.meta.gap_lines.empty() ? "B" : "A"));
  else if (!a.meta.gap_lines.empty() && (a.meta.gap_samples_per_s == 0) != (b.meta.gap_samples_per_s == 0))
    out.push_back(fmt::format("gap state sampled on {} only (the other noted every gap): the same model on a sample of "
                              "the gaps, scaled to the counted accesses; a sampled figure carries sampling noise",
                              a.meta.gap_samples_per_s ? "A" : "B"));
  // Only from recorded layouts: without one a side's fixes are unknown (info, report), not
  // the assumed Debian layout's.
  for (size_t i = 0; a.meta.layout && b.meta.layout && i < a.what_if.size() && i < b.what_if.size(); ++i)
    if (a.what_if[i].applies != b.what_if[i].applies)
      out.push_back(fmt::format("fix present on {} only: {}", a.what_if[i].applies ? "B" : "A", a.what_if[i].what.title));
  if (!a.meta.layout != !b.meta.layout)  // (both unknown: no difference to suspect; info says unknown)
    out.push_back(fmt::format("fixes unknown on {} (layout not recorded): fix differences not checked",
                              !a.meta.layout ? "A" : "B"));
  return out;
}

nlohmann::json side_json(const DiffSide& ds, const Side& s) {
  double sec = 0;
  for (double x : s.seconds) sec += x;
  nlohmann::json j = {{"file", ds.file},
          {"window", ds.window.empty() ? nlohmann::json(nullptr) : nlohmann::json(ds.window)},
          {"samples", s.samples},
          {"intervals", s.seconds.size()},
          {"seconds", sec},
          {"hostname", s.meta.host.hostname},
          {"kernel_release", s.meta.host.kernel_release},
          {"damage", s.damage.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.damage)}};
  if (!s.note.empty()) j["note"] = s.note;  // only then, as report's window note
  return j;
}


nlohmann::json ab(nlohmann::json a, nlohmann::json b) { return {{"a", std::move(a)}, {"b", std::move(b)}}; }

/// "tails": the caught events (--catch) of the rules both sides have for a probe, A vs B
/// (README "schedhot diff"); null when neither side has a rule.
nlohmann::json tails_diff(const Side& a, const Side& b) {
  const auto &ra = a.meta.catch_rules, &rb = b.meta.catch_rules;
  if (ra.empty() && rb.empty()) return nullptr;
  auto texts = [](const std::vector<CatchRule>& v) {
    std::vector<std::string> t;
    for (const CatchRule& r : v) t.push_back(r.text);
    return fmt::format("{}", fmt::join(t, ","));
  };
  nlohmann::json out = {{"note", nullptr}, {"rules", nlohmann::json::array()}, {"unmatched", nlohmann::json::array()}};
  if (ra.empty() || rb.empty()) {
    out["note"] = fmt::format("only {} has --catch rules ({}): no tails to compare", ra.empty() ? "B" : "A",
                              texts(ra.empty() ? rb : ra));
    return out;
  }
  auto index = [](const std::vector<CatchRule>& v, const std::string& probe) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].probe == probe) return static_cast<int>(i);
    return -1;
  };
  double sec_a = 0, sec_b = 0;
  for (double x : a.seconds) sec_a += x;
  for (double x : b.seconds) sec_b += x;
  for (size_t i = 0; i < ra.size(); ++i)
    if (index(rb, ra[i].probe) < 0) out["unmatched"].push_back({{"probe", ra[i].probe}, {"side", "A"}, {"rule", ra[i].text}});
  for (size_t i = 0; i < rb.size(); ++i)
    if (index(ra, rb[i].probe) < 0) out["unmatched"].push_back({{"probe", rb[i].probe}, {"side", "B"}, {"rule", rb[i].text}});
  for (size_t ia = 0; ia < ra.size(); ++ia) {
    const int ib = index(rb, ra[ia].probe);
    if (ib < 0) continue;
    const nlohmann::json &ta = a.tails_json.at(ia), &tb = b.tails_json.at(size_t(ib));
    const uint64_t na = ta["events_received"].get<uint64_t>(), nb = tb["events_received"].get<uint64_t>();
    // The slot counter where the probe counted (every caught event, received or not), else
    // the events received.
    auto caught = [](const nlohmann::json& t) {
      return t["caught"].is_null() ? t["events_received"].get<uint64_t>() : t["caught"].get<uint64_t>();
    };
    auto p99 = [](const nlohmann::json& t) { return t["duration_ns"].is_null() ? nlohmann::json(nullptr) : t["duration_ns"]["p99"]; };
    nlohmann::json row = {
        {"probe", ra[ia].probe},
        {"rule", ab(ra[ia].text, rb[size_t(ib)].text)},
        {"threshold_ns", ab(ra[ia].threshold_ns, rb[size_t(ib)].threshold_ns)},
        {"caught", ab(caught(ta), caught(tb))},
        {"caught_per_s", ab(sec_a > 0 ? caught(ta) / sec_a : 0.0, sec_b > 0 ? caught(tb) / sec_b : 0.0)},
        {"events_received", ab(na, nb)},
        {"p99_ns", ab(p99(ta), p99(tb))},
        // Each side's steal figures (report's tails[].steal, 1.6 recordings on a host with a
        // paravirt steal clock); null: not kept on that side.
        {"steal", ab(ta.value("steal", nlohmann::json(nullptr)), tb.value("steal", nlohmann::json(nullptr)))}};
    // The top stacks of each side, merged by content (frames with offsets); each one's count
    // on both sides (not only among the other's top), shares of the events received.
    std::map<std::string, std::vector<std::string>> merged;
    for (const nlohmann::json* t : {&ta, &tb})
      for (const auto& st : (*t)["stacks"]) {
        const std::vector<std::string> fr = st["frames"].get<std::vector<std::string>>();
        merged.emplace(fmt::format("{}", fmt::join(fr, "\n")), fr);
      }
    struct Row {
      std::string key;
      std::vector<std::string> frames;
      uint64_t ca, cb;
      double sa, sb;
    };
    std::vector<Row> rows;
    for (auto& [key, fr] : merged) {
      const uint64_t ca = a.tails->stack_count(ia, fr), cb = b.tails->stack_count(size_t(ib), fr);
      rows.push_back({key, fr, ca, cb, na ? double(ca) / double(na) : 0.0, nb ? double(cb) / double(nb) : 0.0});
    }
    std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
      return x.sa + x.sb != y.sa + y.sb ? x.sa + x.sb > y.sa + y.sb : x.key < y.key;
    });
    nlohmann::json stacks = nlohmann::json::array();
    for (const Row& r : rows) {
      // Only on one side: not among the other's counted stacks, and the other had none
      // uncounted (kMaxKeys) it could hide in.
      nlohmann::json marker = nullptr;
      if (r.ca == 0 && a.tails->other_stacks(ia) == 0) marker = "new in B";
      else if (r.cb == 0 && b.tails->other_stacks(size_t(ib)) == 0) marker = "gone in B";
      stacks.push_back({{"frames", r.frames}, {"a", {{"count", r.ca}, {"share", r.sa}}}, {"b", {{"count", r.cb}, {"share", r.sb}}},
                        {"marker", marker}});
    }
    row["stacks"] = stacks;
    out["rules"].push_back(std::move(row));
  }
  return out;
}

}  // namespace

nlohmann::json diff_document(const DiffRequest& req) {
  auto read = [&](const DiffSide& ds, const char* name) {  // errors say which side
    try {
      return read_side(ds, req.by, req.stop);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}: {}", name, e.what()));
    }
  };
  const Side a = read(req.a, "A"), b = read(req.b, "B");
  nlohmann::json d;
  d["schema"] = schema::diff;
  d["a"] = side_json(req.a, a);
  d["b"] = side_json(req.b, b);
  d["host_differences"] = host_differences(a, b);
  d["method"] = {{"bootstrap", "intervals"},          {"resamples", req.resamples},
                 {"confidence", kConfidence},         {"seed", kDiffSeed},
                 {"percentile_error", kPercentileRelError}, {"rate_min_effect", kRateMinEffect},
                 {"row_false_positive_bound", kRowFalsePositiveBound}};
  bool any = false;
  uint64_t stream = 0;
  nlohmann::json probes = nlohmann::json::array();
  for (size_t p = 0; p < a.meta.probes.size(); ++p) {
    const std::string& name = a.meta.probes[p].name;
    const int q = b.meta.probe_index(name);
    ++stream;
    nlohmann::json row{{"probe", name}};
    const std::string na = not_measured(a.meta, static_cast<int>(p)), nb = q < 0 ? "absent" : not_measured(b.meta, q);
    if (!na.empty() || !nb.empty()) {
      row["verdict"] = "not compared";
      // The same reason on both sides (a long blind reason) is said once.
      row["reason"] = na == nb ? fmt::format("A and B: {}", na)
                               : fmt::format("A: {}; B: {}", na.empty() ? "measured" : na, nb.empty() ? "measured" : nb);
      row["significant"] = false;
      probes.push_back(row);
      continue;
    }
    bool sig = false;
    const bool observed_a = counter_observed(name, a.meta.probes[p].status.proxy, find_probe(name) ? find_probe(name)->primary : "");
    const bool observed_b = counter_observed(name, b.meta.probes[q].status.proxy, find_probe(name) ? find_probe(name)->primary : "");
    const RateSeries &ca = a.calls[p], &cb = b.calls[q];
    if (observed_a && observed_b) {
      FigureDiff r = compare_rates(ca, cb, stream * 16, req.resamples);
      row["calls"] = {{"a", ca.total_events()}, {"b", cb.total_events()}};
      row["rate"] = figure_json(r, true);
      sig |= r.significant;
    } else {
      row["calls"] = nullptr;
      row["rate"] = nullptr;
    }
    const bool ha = a.has_hist[p], hb = b.has_hist[q];  // latency events in the window
    if (ha || hb) {
      auto pc = compare_percentiles(a.hist[p], b.hist[q], stream * 16 + 1, req.resamples);
      nlohmann::json lat;
      // One side unmeasured (0 calls, or a proxy without duration): its figures are null
      // ("-"), nothing is tested.
      auto one_sided = [&](nlohmann::json f) {
        if (!ha) f["a"] = nullptr;
        if (!hb) f["b"] = nullptr;
        if (!ha || !hb) {
          f["ratio"] = nullptr;
          if (f.contains("interval")) f["interval"] = nullptr;
        }
        return f;
      };
      for (size_t k = 0; k < 5; ++k) {
        lat[kPctNames[k]] = one_sided(figure_json(pc[k], true));
        sig |= pc[k].significant;
      }
      const double ma = static_cast<double>(a.max_ns[p]), mb = static_cast<double>(b.max_ns[q]);
      lat["max"] = one_sided({{"a", ma}, {"b", mb}, {"ratio", ma > 0 ? nlohmann::json(mb / ma) : nlohmann::json(nullptr)}});
      row["latency_ns"] = lat;
    } else {
      row["latency_ns"] = nullptr;
    }
    row["significant"] = sig;
    row["verdict"] = sig ? "significant" : "no change";
    any |= sig;
    probes.push_back(row);
  }
  d["probes"] = probes;
  nlohmann::json lines = nlohmann::json::array();
  auto line_fig = [&](const std::vector<double>* va, const std::vector<double>* vb) {
    static const std::vector<double> none;
    const RateSeries ra = series(va ? *va : std::vector<double>(a.seconds.size(), 0), a.seconds);
    const RateSeries rb = series(vb ? *vb : std::vector<double>(b.seconds.size(), 0), b.seconds);
    return compare_rates(ra, rb, ++stream * 16 + 2, req.resamples);
  };
  // The groups each machine has (its CPUs' cpu/core/llc/node), present or not in a line.
  std::set<std::string> groups_a, groups_b;
  if (req.by) {
    for (uint32_t c = 0; c < a.meta.ncpus; ++c) groups_a.insert(group_of(a.meta, *req.by, c));
    for (uint32_t c = 0; c < b.meta.ncpus; ++c) groups_b.insert(group_of(b.meta, *req.by, c));
  }
  std::map<std::string, std::string> keys;
  for (auto& [k, l] : a.lines) keys[k] = l.name;
  for (auto& [k, l] : b.lines) keys[k] = l.name;
  for (auto& [k, nm] : keys) {
    auto ia = a.lines.find(k), ib = b.lines.find(k);
    const LineSeries* la = ia == a.lines.end() ? nullptr : &ia->second;
    const LineSeries* lb = ib == b.lines.end() ? nullptr : &ib->second;
    FigureDiff f = line_fig(la ? &la->total : nullptr, lb ? &lb->total : nullptr);
    if (f.a == 0 && f.b == 0) continue;  // a line neither side touched
    // A line fed by a probe that the other side did not measure (unavailable, blind) would
    // compare traffic with part of its sources missing: shown, not tested.
    std::string why;
    for (const auto& [from, to, other] : {std::tuple{la, "B", &b}, std::tuple{lb, "A", &a}})
      if (from && why.empty())
        for (const std::string& pn : from->probes) {
          const int pi = other->meta.probe_index(pn);
          const std::string nm2 = pi < 0 ? "not recorded" : not_measured(other->meta, pi);
          if (!nm2.empty()) {
            why = fmt::format("{} {} on {}", pn, nm2, to);
            break;
          }
        }
    nlohmann::json row;
    if (why.empty()) {
      row = figure_json(f, true);
      any |= f.significant;
    } else {
      row = {{"a", f.a}, {"b", f.b}, {"ratio", nullptr}, {"reason", why}};
    }
    row["line"] = k;
    row["name"] = nm;
    if (req.by) {
      std::map<std::string, int, NaturalLess> groups;  // cpu 2 before cpu 10
      if (la) for (auto& [g, v] : la->groups) groups[g] = 1;
      if (lb) for (auto& [g, v] : lb->groups) groups[g] = 1;
      nlohmann::json by = nlohmann::json::array();
      for (auto& [g, one] : groups) {
        const std::vector<double>* ga = nullptr;
        const std::vector<double>* gb = nullptr;
        if (la && la->groups.count(g)) ga = &la->groups.at(g);
        if (lb && lb->groups.count(g)) gb = &lb->groups.at(g);
        FigureDiff fg = line_fig(ga, gb);
        nlohmann::json gj;
        const bool in_a = groups_a.count(g), in_b = groups_b.count(g);
        if (in_a && in_b && why.empty()) {
          gj = figure_json(fg, true);
          any |= fg.significant;
        } else {  // a CPU (core, LLC, node) one machine does not have: nothing to compare
          gj = {{"a", in_a ? nlohmann::json(fg.a) : nlohmann::json(nullptr)},  // or the line is not compared
                {"b", in_b ? nlohmann::json(fg.b) : nlohmann::json(nullptr)},
                {"ratio", nullptr}};
        }
        gj["group"] = g;
        by.push_back(gj);
      }
      row["by"] = by;
    }
    lines.push_back(row);
  }
  d["lines"] = lines;
  d["tails"] = tails_diff(a, b);
  d["by"] = req.by ? nlohmann::json(topo_level_name(*req.by)) : nlohmann::json(nullptr);
  d["significant"] = any;
  return d;
}

}  // namespace schedhot
