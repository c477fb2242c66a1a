#include "analysis/cachelines.h"

#include <algorithm>
#include <fmt/format.h>

namespace schedhot {

namespace {

nlohmann::json opt_bool(const std::optional<bool>& b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); }

std::string fmt_rate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f}M", r / 1e6);
  if (r >= 1e4) return fmt::format("{:.1f}k", r / 1e3);
  if (r >= 100) return fmt::format("{:.0f}", r);
  return fmt::format("{:.1f}", r);
}

/// The probes of meta whose declared accesses reach `family` but that measure nothing
/// (unavailable or blind): their share of the line is missing from the figures.
std::vector<std::string> unmeasured(const Meta& meta, const std::string& family) {
  std::vector<std::string> out;
  for (size_t p = 0; p < meta.probes.size(); ++p) {
    const ProbeSpec* spec = find_probe(meta.probes[p].name);
    if (!spec) continue;
    bool touches = false;
    for (const FieldAccess& a : spec->accesses) touches |= a.field.rfind(family, 0) == 0;
    if (!touches) continue;
    const ProbeStatus& st = meta.probes[p].status;
    const std::string blind = blind_reason(meta, static_cast<int>(p));
    if (!st.attached) out.push_back(fmt::format("{}: unavailable ({})", meta.probes[p].name, st.reason));
    else if (!blind.empty()) out.push_back(fmt::format("{}: blind ({})", meta.probes[p].name, blind));
  }
  return out;
}

}  // namespace

nlohmann::json fixes_json(const FixesPresent& f) {
  nlohmann::json j;
  for (const Fix& x : f.fixes) j[x.key] = opt_bool(x.present);
  j["text"] = to_string(f);
  return j;
}

FixesPresent recording_fixes(const Meta& meta) {
  if (meta.layout) return fixes_present(*meta.layout);
  return fixes_unknown("layout not recorded");
}

nlohmann::json cachelines_json(const Meta& meta, const CoherenceSummary& s, const XferCost& cost, int top,
                               const ExactAccumulator* exact) {
  nlohmann::json c;
  // What xfers_per_s of each line is (its "exact" and "gap" say theirs): with the probes'
  // gap state, the gap model where its counts covered the line, each line saying its own.
  const bool gaps = !meta.gap_lines.empty();
  c["model"] = gaps ? "gap model of the probes' per-CPU gap histograms per interval (independent arrivals where a line had "
                      "none), time-averaged; an estimate, see README 'Cachelines'"
                    : "independent arrivals (Poisson) per interval, time-averaged; an estimate, see README 'Cachelines'";
  c["estimate"] = s.estimate;
  if (gaps) c["gap_full"] = s.gap_full;  // line accesses no CPU table kept (modeled from rates)
  // sampled gap state (abi.h "Sampling"): its target, gap samples per second per CPU
  if (gaps && meta.gap_samples_per_s && s.estimate != LineSummary::kIndependentArrivals)
    c["gap_samples_per_s"] = meta.gap_samples_per_s;
  c["line_bytes"] = s.line_bytes;
  c["cost_ns"] = nlohmann::json::object();
  for (int d = 0; d < kXferDistances; ++d) c["cost_ns"][to_string(XferDistance(d))] = cost.ns[size_t(d)];
  const CoherenceLayout L = layout_of(meta);
  c["layout"] = {{"recorded", meta.layout.has_value()}, {"btf", L.btf_source}, {"notes", s.notes}};
  c["fixes"] = fixes_json(recording_fixes(meta));
  nlohmann::json lines = nlohmann::json::array();
  for (const LineSummary& l : s.lines) {
    nlohmann::json j;
    j["name"] = l.name;
    j["object"] = l.key.object;
    j["line"] = l.key.line;
    j["family"] = l.family;
    if (gaps || l.estimate != LineSummary::kIndependentArrivals) j["estimate"] = l.estimate;
    j["fields"] = l.fields;
    j["assumptions"] = l.assumptions;
    j["reads_per_s"] = l.reads_per_s;
    j["writes_per_s"] = l.writes_per_s;
    j["xfers_per_s"] = l.traffic.total();
    j["read_xfers_per_s"] = l.traffic.read_xfers_per_s;
    j["write_xfers_per_s"] = l.traffic.write_xfers_per_s;
    j["bytes_per_s"] = l.traffic.total() * s.line_bytes;
    nlohmann::json by = nlohmann::json::object();
    for (int d = 0; d < kXferDistances; ++d) by[to_string(XferDistance(d))] = l.traffic.by_distance[size_t(d)];
    j["by_distance"] = by;
    j["stall_ns_per_s"] = stall_ns_per_s(l.traffic, cost);
    std::vector<CpuXfers> cpus = l.traffic.cpus;
    std::stable_sort(cpus.begin(), cpus.end(), [](const CpuXfers& a, const CpuXfers& b) { return a.total() > b.total(); });
    nlohmann::json tc = nlohmann::json::array();
    for (size_t i = 0; i < cpus.size() && static_cast<int>(i) < top; ++i)
      if (cpus[i].total() > 0) tc.push_back({{"cpu", cpus[i].cpu}, {"xfers_per_s", cpus[i].total()}});
    j["top_cpus"] = tc;
    nlohmann::json bp = nlohmann::json::object();
    for (auto [p, x] : l.by_probe)
      if (p >= 0 && p < static_cast<int>(meta.probes.size())) bp[meta.probes[size_t(p)].name] = x;
    j["by_probe"] = bp;
    j["unmeasured"] = unmeasured(meta, l.family);
    if (exact) {
      const std::optional<LineTraffic> touched = exact->traffic(l.key);
      const LineTraffic t = touched.value_or(LineTraffic{});
      nlohmann::json e;
      e["touched"] = touched.has_value();  // false: no record named it (its probes sent none)
      e["xfers_per_s"] = t.total();
      e["read_xfers_per_s"] = t.read_xfers_per_s;
      e["write_xfers_per_s"] = t.write_xfers_per_s;
      nlohmann::json eb = nlohmann::json::object();
      for (int d = 0; d < kXferDistances; ++d) eb[to_string(XferDistance(d))] = t.by_distance[size_t(d)];
      e["by_distance"] = eb;
      e["lost"] = exact->lost();
      e["lower_bound"] = exact->lost() > 0;
      e["ratio"] = t.total() > 0 ? nlohmann::json(l.traffic.total() / t.total()) : nlohmann::json(nullptr);
      j["exact"] = e;
      const LineTraffic g = exact->gap_traffic(l.key).value_or(LineTraffic{});
      nlohmann::json gj;
      gj["estimate"] = "gap model of the --exact records' per-CPU gaps";
      gj["xfers_per_s"] = g.total();
      gj["read_xfers_per_s"] = g.read_xfers_per_s;
      gj["write_xfers_per_s"] = g.write_xfers_per_s;
      gj["ratio"] = t.total() > 0 ? nlohmann::json(g.total() / t.total()) : nlohmann::json(nullptr);
      j["gap"] = gj;
    }
    lines.push_back(j);
  }
  c["lines"] = lines;
  nlohmann::json wi = nlohmann::json::array();
  for (const WhatIfResult& w : s.what_if) {
    nlohmann::json j = {{"id", w.what.id}, {"patch", w.what.title}, {"lines", w.what.family}, {"applies", w.applies}};
    if (!meta.layout) j["assumed_layout"] = true;  // applies / reason come from assumed_layout()
    if (!w.applies) {
      j["reason"] = meta.layout ? w.reason : w.reason + " (in the layout assumed for kernel " + meta.host.kernel_release + ")";
    } else {
      j["before_xfers_per_s"] = w.before_xfers_per_s;
      j["after_xfers_per_s"] = w.after_xfers_per_s;
      j["ratio"] = w.before_xfers_per_s > 0 ? nlohmann::json(w.after_xfers_per_s / w.before_xfers_per_s)
                                           : nlohmann::json(nullptr);
      j["before_stall_ns_per_s"] = w.before_stall_ns_per_s;
      j["after_stall_ns_per_s"] = w.after_stall_ns_per_s;
      if (gaps || w.estimate != LineSummary::kIndependentArrivals) j["estimate"] = w.estimate;
      if (const auto x = exact ? exact->what_if(w.what.id) : std::nullopt) {
        // The same accesses replayed on the patched layout: exactly, and by the gap model.
        const auto ratio = [](double b, double a) { return b > 0 ? nlohmann::json(a / b) : nlohmann::json(nullptr); };
        j["exact"] = {{"before_xfers_per_s", x->before_exact}, {"after_xfers_per_s", x->after_exact},
                      {"ratio", ratio(x->before_exact, x->after_exact)}};
        j["gap"] = {{"before_xfers_per_s", x->before_gap}, {"after_xfers_per_s", x->after_gap},
                    {"ratio", ratio(x->before_gap, x->after_gap)}};
      }
    }
    wi.push_back(j);
  }
  c["what_if"] = wi;
  if (exact) {
    nlohmann::json bp = nlohmann::json::object();
    for (const auto& [pw, n] : exact->by_word()) {
      const auto [p, w] = pw;
      if (p < 0 || p >= static_cast<int>(meta.probes.size())) continue;
      std::string name = fmt::format("word {}", w);
      for (const Field& f : meta.probes[size_t(p)].slot.fields)
        if (f.kind != FieldKind::priv && w >= f.offset && w < f.offset + f.nwords)
          name = f.kind == FieldKind::counter_array ? fmt::format("{}[{}]", f.name, w - f.offset) : f.name;
      bp[meta.probes[size_t(p)].name][name] = n;
    }
    c["exact"] = {{"records", exact->records()}, {"lost", exact->lost()}, {"skipped", exact->skipped()},
                  {"seconds", exact->seconds()}, {"by_probe", bp}};
  }
  return c;
}

std::string cachelines_text(const nlohmann::json& c) {
  if (c.is_null()) return "";
  std::string out;
  const auto& cost = c["cost_ns"];
  out += fmt::format(
      "\nCachelines (model: {}; {} B lines; xfer = an access that finds the line owned elsewhere; "
      "stall at smt {} llc {} package {} remote {} ns, estimates):\n",
      c.value("estimate", std::string(LineSummary::kIndependentArrivals)), c["line_bytes"].get<int>(), cost["smt"].get<double>(), cost["llc"].get<double>(), cost["package"].get<double>(),
      cost["remote"].get<double>());
  out += fmt::format("  {}\n", c["fixes"]["text"].get<std::string>());
  if (c["lines"].empty()) {
    out += "  no modeled line was accessed in the window\n";
  } else {
    out += fmt::format("  {:<40} {:>8} {:>8} {:>8} {:>8} {:>5} {:>5} {:>5} {:>6} {:>10}\n", "LINE", "READ/s", "WRITE/s",
                       "XFER/s", "KB/s", "smt%", "llc%", "pkg%", "remot%", "stall us/s");
  }
  for (const auto& l : c["lines"]) {
    const double x = l["xfers_per_s"].get<double>();
    auto pct = [&](const char* d) { return x > 0 ? fmt::format("{:.0f}", 100 * l["by_distance"][d].get<double>() / x) : "-"; };
    out += fmt::format("  {:<40} {:>8} {:>8} {:>8} {:>8.1f} {:>5} {:>5} {:>5} {:>6} {:>10.2f}\n", l["name"].get<std::string>(),
                       fmt_rate(l["reads_per_s"].get<double>()), fmt_rate(l["writes_per_s"].get<double>()), fmt_rate(x),
                       l["bytes_per_s"].get<double>() / 1024, pct("smt"), pct("llc"), pct("package"), pct("remote"),
                       l["stall_ns_per_s"].get<double>() / 1e3);
    std::string fields;
    for (const auto& f : l["fields"]) fields += (fields.empty() ? "" : " ") + f.get<std::string>();
    std::string tops;
    for (const auto& t : l["top_cpus"])
      tops += fmt::format("{}{} ({}/s)", tops.empty() ? "" : ", ", t["cpu"].get<int>(), fmt_rate(t["xfers_per_s"].get<double>()));
    std::string probes;
    for (const auto& [p, v] : l["by_probe"].items())
      if (x > 0) probes += fmt::format("{}{} {:.0f}%", probes.empty() ? "" : ", ", p, 100 * v.get<double>() / x);
    out += fmt::format("    fields: {}\n", fields);
    if (l.contains("estimate") && l["estimate"] != c["estimate"])
      out += fmt::format("    estimate: {}\n", l["estimate"].get<std::string>());
    if (!tops.empty()) out += fmt::format("    top CPUs: {}; caused by: {}\n", tops, probes);
    if (l.contains("exact")) {
      const auto& e = l["exact"];
      const double ex = e["xfers_per_s"].get<double>();
      if (e.contains("touched") && !e["touched"].get<bool>())
        out += "    exact: - (no --exact record touched this line: its probes sent none)\n";
      else
        out += fmt::format("    exact: {} xfer/s{} (model {}, model/exact {})\n", fmt_rate(ex),
                           e["lower_bound"].get<bool>() ? fmt::format(" (lower bound: {} records lost)", e["lost"].get<uint64_t>()) : "",
                           fmt_rate(x), e["ratio"].is_null() ? std::string("-") : fmt::format("x{:.2f}", e["ratio"].get<double>()));
      if (l.contains("gap") && (!e.contains("touched") || e["touched"].get<bool>())) {
        const auto& g = l["gap"];
        out += fmt::format("    gap model of the records' per-CPU gaps: {} xfer/s (gap/exact {})\n",
                           fmt_rate(g["xfers_per_s"].get<double>()),
                           g["ratio"].is_null() ? std::string("-") : fmt::format("x{:.2f}", g["ratio"].get<double>()));
      }
    }
    for (const auto& u : l["unmeasured"]) out += fmt::format("    not counted: {}\n", u.get<std::string>());
  }
  for (const auto& w : c["what_if"]) {
    if (!w["applies"].get<bool>()) {
      out += fmt::format("  what-if {}: {}\n", w["patch"].get<std::string>(), w["reason"].get<std::string>());
      continue;
    }
    const double b = w["before_xfers_per_s"].get<double>(), a = w["after_xfers_per_s"].get<double>();
    out += fmt::format("  what-if {}: {} lines {} -> {} xfer/s ({}), stall {:.2f} -> {:.2f} us/s\n",
                       w["patch"].get<std::string>(), w["lines"].get<std::string>(), fmt_rate(b), fmt_rate(a),
                       w["ratio"].is_null() ? std::string("no traffic before") : fmt::format("x{:.2f}", a / b),
                       w["before_stall_ns_per_s"].get<double>() / 1e3, w["after_stall_ns_per_s"].get<double>() / 1e3);
    if (w.contains("estimate") && w["estimate"] != LineSummary::kIndependentArrivals)
      out += fmt::format("    estimate: {}\n", w["estimate"].get<std::string>());
    if (w.contains("exact")) {
      const auto r = [](const nlohmann::json& o) {
        return o["ratio"].is_null() ? std::string("no traffic before") : fmt::format("x{:.2f}", o["ratio"].get<double>());
      };
      const auto& e = w["exact"];
      const auto& g = w["gap"];
      out += fmt::format("    the records replayed: exact {} -> {} xfer/s ({}); gap model {} -> {} xfer/s ({})\n",
                         fmt_rate(e["before_xfers_per_s"].get<double>()), fmt_rate(e["after_xfers_per_s"].get<double>()), r(e),
                         fmt_rate(g["before_xfers_per_s"].get<double>()), fmt_rate(g["after_xfers_per_s"].get<double>()), r(g));
    }
  }
  std::vector<std::string> seen;
  for (const auto& l : c["lines"])
    for (const auto& a : l["assumptions"]) {
      std::string s = a.get<std::string>();
      if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
    }
  if (c.contains("exact")) {
    const auto& e = c["exact"];
    const uint64_t skipped = e["skipped"].get<uint64_t>();
    out += fmt::format("  exact (--exact): {} records over {:.1f} s, {} lost{}{}\n", e["records"].get<uint64_t>(),
                       e["seconds"].get<double>(), e["lost"].get<uint64_t>(),
                       e["lost"].get<uint64_t>() ? ": exact figures are usually low (lower bounds)" : "",
                       skipped ? fmt::format("; {} records skipped (out of time order or CPU out of range): "
                                             "the exact figures miss them", skipped)
                               : "");
  }
  if (c.contains("gap_full") && c["gap_full"].get<uint64_t>())
    out += fmt::format("  gap state: {} line accesses found their CPU's table of {} lines full; those CPUs' accesses "
                       "to the lines left out are modeled from their rates\n",
                       c["gap_full"].get<uint64_t>(), SH_GAP_LINES);
  if (c.contains("gap_samples_per_s"))
    out += fmt::format("  gap state: sampled, up to about {} gaps/s per CPU (every event on a CPU below that rate), "
                       "scaled to the counted accesses\n",
                       c["gap_samples_per_s"].get<uint32_t>());
  for (const auto& n : c["layout"]["notes"]) out += fmt::format("  layout: {}\n", n.get<std::string>());
  for (const std::string& s : seen) out += fmt::format("  assumed: {}\n", s);
  return out;
}

}  // namespace schedhot
