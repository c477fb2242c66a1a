#include "output/diff_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "analysis/diff.h"
#include "model/compare.h"
#include "probe/catalog.h"
#include "output/report_text.h"
#include "sys/units.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

std::string ratio_text(const nlohmann::json& f) {
  if (f.is_null() || f["ratio"].is_null()) return f.is_object() && f.value("significant", false) ? "-*" : "-";
  return fmt::format("{:.2f}{}", f["ratio"].get<double>(), f.value("significant", false) ? "*" : "");
}
/// A rate (events/s) with no k/M multiplier, so a column holds one unit at one scale
/// ("9472", "12840", not "9472" above "12.8k"): "0", "0.35", "26.7", "12840".
std::string per_s(double r) {
  if (r >= 100) return fmt::format("{:.0f}", r);
  if (r >= 1) return fmt::format("{:.1f}", r);
  if (r > 0) return fmt::format("{:.2f}", r);
  return "0";
}
std::string rate_text(const nlohmann::json& f, const char* side) {
  return f[side].is_null() ? "-" : per_s(f[side].get<double>());
}
/// What a side's line adds after its figures: "; damaged at byte N (...) after the window:
/// ..." for a side read before its damage, "; the window asked to end at +X s ends at ..." for a
/// window asked to end past the recording; else "".
std::string side_notes(const nlohmann::json& side) {
  std::string out;
  for (const char* k : {"damage", "note"})
    if (side.contains(k) && side[k].is_string()) out += "; " + scrub_controls(side[k].get<std::string>());
  return out;
}
/// A duration in ns as microseconds, the one unit of every latency column of the text and
/// Markdown tables (a column never mixes "9472" ns with "26.1us"): "0.070", "9.47", "26.1", "4661".
std::string us_text(double ns) {
  const double u = ns / 1e3;
  if (u < 1) return fmt::format("{:.3f}", u);
  if (u < 10) return fmt::format("{:.2f}", u);
  if (u < 1000) return fmt::format("{:.1f}", u);
  return fmt::format("{:.0f}", u);
}
std::string ns_text(const nlohmann::json& f, const char* side) {
  return f.is_null() || f[side].is_null() ? "-" : us_text(f[side].get<double>());
}

/// The tested figures of probe row p that changed significantly, in column order: "p90",
/// "p99", "rate".
std::vector<std::string> significant_figures(const nlohmann::json& p) {
  std::vector<std::string> v;
  const auto& lat = p["latency_ns"];
  if (!lat.is_null())
    for (const char* k : kPctNames)
      if (lat.contains(k) && lat[k].value("significant", false)) v.push_back(k);
  if (p.contains("rate") && p["rate"].is_object() && p["rate"].value("significant", false)) v.push_back("rate");
  return v;
}

/// A probe row's verdict as the tables show it: "significant (p90, rate)", "no change".
std::string verdict_text(const nlohmann::json& p) {
  const std::string v = p["verdict"].get<std::string>();
  const std::vector<std::string> figs = significant_figures(p);
  return v == "significant" && !figs.empty() ? fmt::format("{} ({})", v, fmt::join(figs, ", ")) : v;
}

/// A recording's text (host name, kernel release, probe, line and reason) as Markdown that
/// renders as itself: \\ | [ ] backtick * _ backslash-escaped, < and > as &lt; &gt;, so a
/// crafted name neither breaks the table nor carries HTML, links or emphasis. A `_` between
/// two ASCII letters or digits cannot open or close emphasis and stays ("cpupri_set").
std::string md_escape(const std::string& s) {
  auto word = [&](size_t k) { return k < s.size() && std::isalnum(static_cast<unsigned char>(s[k])); };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '_' && i > 0 && word(i - 1) && word(i + 1)) out += c;
    else if (std::string_view("\\|[]`*_").find(c) != std::string_view::npos) (out += '\\') += c;
    else out += c;
  }
  return out;
}
/// s in a code span whose fence is longer than any run of backticks in s (CommonMark), at
/// least two: "`` we`ird.shot ``".
std::string md_code(const std::string& s) {
  size_t run = 0, longest = 0;
  for (char c : s) longest = std::max(longest, run = c == '`' ? run + 1 : 0);
  const std::string fence(std::max<size_t>(2, longest + 1), '`');
  return fence + " " + s + " " + fence;
}

/// The Tails section (--catch rules on both sides, or a line saying only one has them);
/// "" when neither has any.
std::string tails_text(const nlohmann::json& d) {
  if (!d.contains("tails") || d["tails"].is_null()) return "";
  const auto& t = d["tails"];
  if (t["note"].is_string()) return "\nTails: " + scrub_controls(t["note"].get<std::string>()) + "\n";
  std::string out = "\nTails (--catch: the caught events of the rules both sides have; stacks innermost first)\n";
  for (const auto& u : t["unmatched"])
    out += fmt::format("{}: a rule on {} only ({}): not compared\n", u["probe"].get<std::string>(), u["side"].get<std::string>(),
                       scrub_controls(u["rule"].get<std::string>()));
  auto p99 = [](const nlohmann::json& f, const char* s) { return f[s].is_null() ? std::string("-") : us_text(f[s].get<double>()) + " us"; };
  // A side's steal share of the caught time: "3.1 % (14 of 77 with steal inside, 39.7us)", or "not kept".
  auto steal = [](const nlohmann::json& s) {
    if (s.is_null()) return std::string("not kept");
    return fmt::format("{:.1f} % ({} of {} with steal inside, {})", s["time_share"].get<double>() * 100,
                       s["with"].get<uint64_t>(), s["events"].get<uint64_t>(), format_ns_unit(double(s["ns"].get<uint64_t>())));
  };
  for (const auto& r : t["rules"]) {
    out += fmt::format("{}: A {}, B {}\n", r["probe"].get<std::string>(), scrub_controls(r["rule"]["a"].get<std::string>()),
                       scrub_controls(r["rule"]["b"].get<std::string>()));
    out += fmt::format("  caught/s: A {}, B {}; p99 of the caught: A {}, B {}\n", per_s(r["caught_per_s"]["a"].get<double>()),
                       per_s(r["caught_per_s"]["b"].get<double>()), p99(r["p99_ns"], "a"), p99(r["p99_ns"], "b"));
    // Only when a side kept steal times (a 1.6 recording on a host with a paravirt steal clock).
    if (r.contains("steal") && (!r["steal"]["a"].is_null() || !r["steal"]["b"].is_null()))
      out += fmt::format("  steal share of the caught time: A {}, B {}\n", steal(r["steal"]["a"]), steal(r["steal"]["b"]));
    if (r["stacks"].empty()) {
      out += "  no stacks on either side\n";
      continue;
    }
    out += fmt::format("  {:>8} {:>6} {:>8} {:>6}  {:<10} {}\n", "A", "A %", "B", "B %", "", "stack");
    for (const auto& st : r["stacks"]) {
      std::string frames;
      for (const auto& f : st["frames"]) frames += (frames.empty() ? "" : " <- ") + scrub_controls(f.get<std::string>());
      out += fmt::format("  {:>8} {:>6.1f} {:>8} {:>6.1f}  {:<10} {}\n", st["a"]["count"].get<uint64_t>(),
                         st["a"]["share"].get<double>() * 100, st["b"]["count"].get<uint64_t>(),
                         st["b"]["share"].get<double>() * 100,
                         st["marker"].is_null() ? "" : st["marker"].get<std::string>(), frames);
    }
  }
  return out;
}

}  // namespace

std::string render_diff_text(const nlohmann::json& d) {
  std::string out;
  auto side = [&](const char* s) {
    const auto& j = d[s];
    return fmt::format("{}{} ({} interval{}, {:.1f} s{})", scrub_controls(j["file"].get<std::string>()),
                       j["window"].is_null() ? "" : " " + scrub_controls(j["window"].get<std::string>()), j["intervals"].get<int>(),
                       j["intervals"].get<int>() == 1 ? "" : "s",
                       j["seconds"].get<double>(), side_notes(j));
  };
  out += fmt::format("A: {}\nB: {}\n", side("a"), side("b"));
  if (!d["host_differences"].empty()) {
    out += "\nHost differences (the comparison may be suspect):\n";
    for (auto& h : d["host_differences"]) out += "  ! " + h.get<std::string>() + "\n";
  }
  out += fmt::format("\nProbes (p10..max in us; B/A; * significant: the {:.0f} % bootstrap interval excludes 1 and "
                     "the change exceeds the bucket error)\n",
                     d["method"]["confidence"].get<double>() * 100);
  out += fmt::format("{:<12} {:<4} {:>10} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n", "probe", "", "calls",
                     "rate/s", "p10 us", "p50 us", "p90 us", "p98 us", "p99 us", "max us", "verdict");
  for (auto& p : d["probes"]) {
    const std::string name = p["probe"];
    if (p["verdict"] == "not compared") {
      out += fmt::format("{:<12} not compared ({})\n", name, p["reason"].get<std::string>());
      continue;
    }
    const auto& lat = p["latency_ns"];
    auto pct = [&](const char* k, const char* s) { return lat.is_null() ? std::string("-") : ns_text(lat[k], s); };
    for (const char* s : {"a", "b"}) {
      out += fmt::format("{:<12} {:<4} {:>10} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n", s[0] == 'a' ? name : "",
                         s[0] == 'a' ? "A" : "B",
                         p["calls"].is_null() ? "-" : fmt::format("{:.0f}", p["calls"][s].get<double>()),
                         p["rate"].is_null() ? "-" : per_s(p["rate"][s].get<double>()), pct("p10", s),
                         pct("p50", s), pct("p90", s), pct("p98", s), pct("p99", s), pct("max", s));
    }
    auto rat = [&](const char* k) { return lat.is_null() ? std::string("-") : ratio_text(lat[k]); };
    out += fmt::format("{:<12} {:<4} {:>10} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n", "", "B/A", "",
                       ratio_text(p["rate"]), rat("p10"), rat("p50"), rat("p90"), rat("p98"), rat("p99"), rat("max"),
                       verdict_text(p));
  }
  if (d["lines"].empty() && d.contains("by") && d["by"].is_string()) {
    // --by asked for a per-group split of the lines, and neither side modeled a transfer:
    // said, rather than a section that silently is not there.
    out += fmt::format("\nCachelines: no modeled transfers on either side: nothing to split --by {}\n",
                       d["by"].get<std::string>());
  } else if (!d["lines"].empty()) {
    out += "\nCachelines (modeled transfers/s)\n";
    out += fmt::format("{:<40} {:>9} {:>9} {:>7}\n", "line", "A", "B", "B/A");
    for (auto& l : d["lines"]) {
      out += fmt::format("{:<40} {:>9} {:>9} {:>7}{}\n", l["name"].get<std::string>(), per_s(l["a"].get<double>()),
                         per_s(l["b"].get<double>()), ratio_text(l),
                         l.contains("reason") ? "  not compared: " + l["reason"].get<std::string>() : "");
      if (l.contains("by"))
        for (auto& g : l["by"])
          out += fmt::format("  {:<38} {:>9} {:>9} {:>7}\n", g["group"].get<std::string>(), rate_text(g, "a"),
                             rate_text(g, "b"), ratio_text(g));
    }
  }
  out += tails_text(d);
  out += d["significant"].get<bool>() ? "\nVerdict: significant change (exit status 3)\n"
                                      : "\nVerdict: no significant change\n";
  return out;
}

std::string render_diff_markdown(const nlohmann::json& d) {
  // a name with a backtick stays inside a code span; every other text from a recording (or
  // the command line) is escaped
  auto side = [&](const char* k) {
    const auto& j = d[k];
    return fmt::format("{}{}{}", md_code(scrub_controls(j["file"].get<std::string>())),
                       j["window"].is_null() ? "" : " " + md_escape(scrub_controls(j["window"].get<std::string>())),
                       md_escape(side_notes(j)));
  };
  std::string out = fmt::format("**A**: {}  \n**B**: {}\n\n", side("a"), side("b"));
  for (auto& h : d["host_differences"]) out += "- :warning: " + md_escape(h.get<std::string>()) + "\n";
  if (!d["host_differences"].empty()) out += "\n";
  out += "| probe | side | calls | rate/s | p10 (us) | p50 (us) | p90 (us) | p98 (us) | p99 (us) | max (us) | verdict |\n";
  out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
  for (auto& p : d["probes"]) {
    if (p["verdict"] == "not compared") {
      out += fmt::format("| {} | | | | | | | | | | not compared ({}) |\n", md_escape(p["probe"].get<std::string>()),
                         md_escape(p["reason"].get<std::string>()));
      continue;
    }
    const auto& lat = p["latency_ns"];
    auto pct = [&](const char* k, const char* s) { return lat.is_null() ? std::string("-") : ns_text(lat[k], s); };
    for (const char* s : {"a", "b"})
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | |\n",
                         s[0] == 'a' ? md_escape(p["probe"].get<std::string>()) : "", s[0] == 'a' ? "A" : "B",
                         p["calls"].is_null() ? "-" : fmt::format("{:.0f}", p["calls"][s].get<double>()),
                         p["rate"].is_null() ? "-" : per_s(p["rate"][s].get<double>()), pct("p10", s),
                         pct("p50", s), pct("p90", s), pct("p98", s), pct("p99", s), pct("max", s));
    auto rat = [&](const char* k) {
      std::string r = lat.is_null() ? "-" : ratio_text(lat[k]);
      return r.back() == '*' ? "**" + r.substr(0, r.size() - 1) + "**" : r;
    };
    std::string rr = ratio_text(p["rate"]);
    if (rr.back() == '*') rr = "**" + rr.substr(0, rr.size() - 1) + "**";
    out += fmt::format("| | B/A | | {} | {} | {} | {} | {} | {} | {} | {} |\n", rr, rat("p10"), rat("p50"), rat("p90"),
                       rat("p98"), rat("p99"), rat("max"), verdict_text(p));
  }
  if (!d["lines"].empty()) {
    out += "\n| line | A xfers/s | B xfers/s | B/A |\n|---|--:|--:|--:|\n";
    for (auto& l : d["lines"])
      out += fmt::format("| {} | {} | {} | {} |\n", md_escape(l["name"].get<std::string>()), per_s(l["a"].get<double>()),
                         per_s(l["b"].get<double>()), ratio_text(l));
  }
  out += fmt::format("\nBold: significant ({:.0f} % bootstrap interval over intervals excludes 1, change above the "
                     "bucket error).\n",
                     d["method"]["confidence"].get<double>() * 100);
  return out;
}

std::string render_diff_patch(const nlohmann::json& d) {
  // Which recording (and window) is A and which B, the host differences that make the
  // comparison suspect (as the text format), then per probe the seeds' layout; a figure
  // whose change is beyond the noise says so (the text format's '*'), as do the modeled
  // cachelines that changed. Probes with no event on either side are left out: nothing to
  // argue with; probes not compared say why.
  auto side = [&](const char* k) {
    const auto& s = d[k];
    return fmt::format("{}{} ({}, {}, {:.3g} s{})", scrub_controls(s.value("file", std::string("?"))),
                       s["window"].is_null() ? "" : " " + scrub_controls(s["window"].get<std::string>()),
                       scrub_controls(s.value("hostname", std::string("?"))),
                       scrub_controls(s.value("kernel_release", std::string("?"))), s.value("seconds", 0.0), side_notes(s));
  };
  std::string out = fmt::format("A: {}\nB: {}\n\n", side("a"), side("b"));
  for (auto& h : d["host_differences"]) out += "! " + h.get<std::string>() + "\n";
  if (!d["host_differences"].empty()) out += "\n";
  const size_t head = out.size();
  for (auto& p : d["probes"]) {
    const std::string name = p["probe"];
    if (p["verdict"] == "not compared") {
      out += fmt::format("- {}: not compared ({})\n\n", name, p.value("reason", std::string("?")));
      continue;
    }
    const auto& lat = p["latency_ns"];
    const bool silent = lat.is_null() && (p["rate"].is_null() || (p["rate"]["a"].get<double>() == 0 &&
                                                                   p["rate"]["b"].get<double>() == 0));
    if (silent) continue;
    if (!lat.is_null()) {
      const ProbeSpec* hs = find_probe(name);  // runtime, wait time (bcast_wait), residency (idle)
      out += fmt::format("- {} for {}, nanoseconds:\n\n", hs ? hs->hist_what : "runtime", name);
      for (const char* s : {"a", "b"}) {
        out += fmt::format("  {}:", s[0] == 'a' ? "A" : "B");
        for (const char* k : kPctNames)
          out += lat[k][s].is_null() ? fmt::format("  {}: {:>5}", k, "-") : fmt::format("  {}: {:>5.0f}", k, lat[k][s].get<double>());
        out += "\n";
      }
      // Which percentiles moved beyond the noise, each with its change; the others did not.
      std::vector<std::string> moved;
      for (const char* k : kPctNames)
        if (lat[k].value("significant", false))
          moved.push_back(lat[k]["ratio"].is_null() ? fmt::format("{} (from 0)", k)
                                                    : fmt::format("{} {:+.1f} %", k, (lat[k]["ratio"].get<double>() - 1) * 100));
      out += moved.empty() ? "\n"
                           : fmt::format("  (beyond the noise, significant: {}{})\n\n", fmt::join(moved, ", "),
                                         moved.size() < 5 ? "; the other percentiles are not" : "");
    }
    if (!p["rate"].is_null()) {
      const auto& r = p["rate"];
      const ProbeSpec* spec = find_probe(name);  // its counter: calls, sent (ilb_kick), exits (idle)...
      out += fmt::format("- {} {}/s: {:.2f} -> {:.2f}", name, spec ? spec->primary : "calls", r["a"].get<double>(),
                         r["b"].get<double>());
      if (!r["ratio"].is_null()) out += fmt::format(" ({:+.1f} %)", (r["ratio"].get<double>() - 1) * 100);
      if (r.value("significant", false)) out += " significant";
      out += "\n\n";
    }
  }
  for (auto& l : d["lines"]) {
    if (l.contains("reason") || !l.value("significant", false)) continue;
    out += fmt::format("- modeled coherence transfers/s of {}: {:.1f} -> {:.1f} significant\n\n", l["name"].get<std::string>(),
                       l["a"].get<double>(), l["b"].get<double>());
  }
  if (out.size() == head) out += "no probe counted an event on either side\n";
  if (d["significant"].get<bool>()) out += "(schedhot diff: significant change, exit status 3)\n";
  return out;
}

}  // namespace schedhot
