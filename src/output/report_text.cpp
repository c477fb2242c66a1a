#include "output/report_text.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "analysis/report.h"
#include "analysis/cachelines.h"
#include "analysis/tails_exact.h"
#include "probe/catch_rules.h"
#include "probe/module.h"
#include "probe/status.h"
#include "sys/json_text.h"

namespace schedhot {


namespace {

std::string fmt_ns(const nlohmann::json& v) { return v.is_null() ? "-" : format_ns(v.get<double>()); }

/// The text report's first lines: host, recording, window (or why there is none).
std::string text_head(const nlohmann::json& r) {
  std::string out;
  const auto& h = r["host"];
  out += fmt::format("host {}  kernel {}  CPUs {} online ({}) of {} possible  cacheline {} B\n",
                     h["hostname"].get<std::string>(), h["kernel_release"].get<std::string>(),
                     h["online_count"].get<size_t>(), h["online"].get<std::string>(), h["possible_cpus"].get<uint32_t>(),
                     h["cacheline_bytes"].get<int>());
  const auto& src = r["source"];
  std::string state = src["complete"].get<bool>() ? "complete" : "not closed by its writer";
  if (!src["damage"].is_null()) state = "damaged " + src["damage"].get<std::string>() + "; report covers what precedes it";
  if (!src["file"].get<std::string>().empty())
    out += fmt::format("recording {} (format {}): {}\n", scrub_controls(src["file"].get<std::string>()), src["format"].get<std::string>(), state);
  const auto& w = r["window"];
  if (r.contains("error")) {
    out += fmt::format("\n{}\n", r["error"].get<std::string>());
  } else {
    out += fmt::format("window {:.2f} s from +{:.2f} s, {} samples, interval {:.3f} s, started {}\n", w["seconds"].get<double>(),
                       w["from_s"].get<double>(), w["samples"].get<uint32_t>(),
                       static_cast<double>(w["interval_ns"].get<uint64_t>()) / 1e9, w["start"].get<std::string>());
    if (w.contains("note")) out += fmt::format("window {}\n", w["note"].get<std::string>());
  }
  return out;
}

/// Probe p's line of the text report's probe table (appended to out), and its lines of
/// the details (other counters, labelled arrays, its module's section) and of the notes.
void probe_text(const nlohmann::json& p, std::string& out, std::string& details, std::string& notes) {
  std::string name = p["name"].get<std::string>();
  if (p["status"] == "unavailable") {
    out += fmt::format("{:<12} unavailable: {}\n", name, brief_reason(p["reason"].get<std::string>()));
    return;
  }
  std::string backend = p["backend"].get<std::string>();
  std::string via = p["via"].get<std::string>();
  if (p.contains("blind")) {
    out += fmt::format("{:<12} {:<34} blind: {}\n", name, backend.substr(0, 34), p["blind"].get<std::string>());
    return;
  }
  if (p["counters"].is_null()) {
    out += fmt::format("{:<12} {:<34} (no data in the window)\n", name, backend.substr(0, 34));
    return;
  }
  std::string prim = p["primary"].get<std::string>();
  const auto& c = p["counters"][prim];
  const auto& lat = p["latency_ns"];
  std::string peak = c.contains("peak_rate_per_s") ? format_rate(c["peak_rate_per_s"].get<double>()) : "-";
  std::string bl = backend.size() > 34 ? backend.substr(0, 31) + "..." : backend;
  out += fmt::format("{:<12} {:<34} {:>10} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n", name, bl,
                     c["total"].get<uint64_t>(), format_rate(c["rate_per_s"].get<double>()), peak,
                     fmt_ns(lat.is_null() ? lat : lat["p10"]), fmt_ns(lat.is_null() ? lat : lat["p50"]),
                     fmt_ns(lat.is_null() ? lat : lat["p90"]), fmt_ns(lat.is_null() ? lat : lat["p98"]),
                     fmt_ns(lat.is_null() ? lat : lat["p99"]), fmt_ns(lat.is_null() ? lat : lat["max"]));
  // Details: other counters and labelled arrays.
  std::vector<std::string> parts;
  if (!p["symbol"].get<std::string>().empty() && !p["proxy"].get<bool>() && backend != "tracepoint")
    parts.push_back(symbol_with_via(p["symbol"].get<std::string>(), via));
  for (auto& [k, v] : p["counters"].items())
    if (k != prim && v.is_null())
      parts.push_back(fmt::format("{} - (not seen by the proxy)", k));
    else if (k != prim)
      parts.push_back(fmt::format("{} {} ({}/s)", k, v["total"].get<uint64_t>(), format_rate(v["rate_per_s"].get<double>())));
  const ProbeModule* mod = find_module(name);
  const bool zeros = mod && mod->spec().details_list_zeros;
  for (auto& [k, arr] : p["arrays"].items()) {
    std::string items;
    for (auto& [lab, v] : arr.items())
      if (v.get<uint64_t>() || zeros) items += fmt::format(" {}={}", lab, v.get<uint64_t>());
    if (!items.empty()) parts.push_back(k + ":" + items);
  }
  if (std::string sec = mod ? mod->report_section_text(p) : ""; !sec.empty()) parts.push_back(sec);
  if (!parts.empty()) {
    std::string d;
    for (auto& x : parts) d += (d.empty() ? "" : "; ") + x;
    details += fmt::format("  {}: {}\n", name, d);
  }
  if (p["proxy"].get<bool>()) notes += fmt::format("  {}: proxy error: {}\n", name, p["proxy_error"].get<std::string>());
  for (auto& n : p["notes"]) notes += fmt::format("  {}: {}\n", name, n.get<std::string>());
}

/// The text report's per-CPU table ("" when it has no rows).
std::string cpu_table_text(const nlohmann::json& r) {
  std::string out;
  const auto& cpus = r["cpus"];
  if (!cpus.empty()) {
    std::string by = r["cpus_sorted_by"].get<std::string>();  // a JSON key: say it as the column's header
    for (auto& col : cpu_columns())
      if (col.json_key() == by) by = col.header;
    if (by == "cpu") by = "CPU";
    out += fmt::format("\nPer CPU ({} of {}, sorted by {}; '-' = not measured: probe unavailable, blind, or a proxy's "
                       "duration):\n{:>4}",
                       cpus.size(), r["cpus_total"].get<size_t>(), by, "CPU");
    for (auto& col : cpu_columns()) out += fmt::format(" {:>{}}", col.header, std::max<size_t>(8, strlen(col.header)));
    out += "\n";
    for (auto& row : cpus) {
      out += fmt::format("{:>4}", row["cpu"].get<int>());
      for (auto& col : cpu_columns()) {
        const auto& v = row[col.json_key()];
        std::string cell = col.kind == CpuColumnKind::p99 ? fmt_ns(v) : v.is_null() ? "-" : format_rate(v.get<double>());
        out += fmt::format(" {:>{}}", cell, std::max<size_t>(8, strlen(col.header)));
      }
      out += "\n";
    }
    std::string part;
    for (auto& row : cpus)
      if (row.contains("online_s"))
        part += fmt::format("{}CPU {} {:.1f} s", part.empty() ? "" : ", ", row["cpu"].get<int>(), row["online_s"].get<double>());
    if (!part.empty())
      out += fmt::format("rates of CPUs online part of the {:.1f} s window are over their online time: {}\n",
                         r["window"]["seconds"].get<double>(), part);
  }
  return out;
}

/// "61 %": a share (0..1) as a whole percentage.
/// format_ns with "ns" on the values it prints bare (under 10 us): a time in a sentence.

/// One rule's block of the Tails section.
std::string tail_text(const nlohmann::json& t) {
  std::string out;
  const std::string th = format_ns_unit(t["threshold_ns"].get<double>());
  const double pcent = t["percentile"].get<double>();
  std::string head = pcent > 0 ? fmt::format("{} > p{:g} (re-armed at each sample from the running histogram; "
                                             "disarmed until the probe has counted 10 events above it)",
                                             t["probe"].get<std::string>(), pcent)
                               : fmt::format("{} >= {} (asked {})", t["probe"].get<std::string>(), th,
                                             format_ns_unit(t["asked_ns"].get<double>()));
  if (t["caught"].is_null() && t.contains("blind")) {
    out += fmt::format("{}: not counted: the probe is blind here ({})\n", head, scrub_controls(t["blind"].get<std::string>()));
  } else if (t["caught"].is_null()) {
    out += head + ": not counted (probe absent in the window)\n";
  } else {
    const uint64_t caught = t["caught"].get<uint64_t>(), rate = t["rate_drops"].get<uint64_t>(),
                   full = t["full_drops"].get<uint64_t>();
    out += fmt::format("{}: {} caught, {} dropped (rate), {} (buffer)", head, caught, rate, full);
    if (t.contains("blind"))
      out += fmt::format("; blind here ({}): its histogram counts nothing, so it is not checked against it\n",
                         scrub_controls(t["blind"].get<std::string>()));
    else if (t.contains("edited_live"))
      out += fmt::format("; edited live ({}): before that the threshold was this one, so the histogram check is "
                         "not made and events below it are among the caught\n",
                         scrub_controls(t["edited_live"].get<std::string>()));
    else if (t.contains("histogram_above_bounds")) {
      // A percentile rule: per interval, between its two thresholds' counts.
      const uint64_t lo = t["histogram_above_bounds"][0].get<uint64_t>(), hi = t["histogram_above_bounds"][1].get<uint64_t>();
      const uint64_t n = t["intervals_checked"].get<uint64_t>(), all = t["intervals"].get<uint64_t>();
      const uint64_t got = t["checked_counted"].get<uint64_t>();
      const std::string over = n == all ? fmt::format("over its {} intervals", n)
                                        : fmt::format("over {} of its {} intervals (the first's earlier threshold is "
                                                      "not in the window)", n, all);
      if (t["accounted"].is_null())
        out += "; no interval with a known threshold to check against the histogram\n";
      else if (t["armed_thresholds_ns"].is_null())
        out += fmt::format("; never armed {} (the running histogram never held {} events above p{:g})\n", over,
                           kPercentileMinAbove, pcent);
      else if (t["accounted"].get<bool>())
        out += fmt::format("; {} {}: within the histogram's {}..{} above each interval's thresholds (before and "
                           "after its re-arm)\n", got, over, lo, hi);
      else
        out += fmt::format("; {} {}: outside the histogram's {}..{} above each interval's thresholds: the "
                           "difference is not accounted for\n", got, over, lo, hi);
    } else if (t["accounted"].is_null())
      out += "; the histogram check needs a fixed threshold\n";
    else if (t["accounted"].get<bool>() && t["in_flight"].get<int64_t>() == 0)
      out += fmt::format("; {} = the histogram's count at or above {}\n", caught + rate + full, th);
    else if (t["accounted"].get<bool>())
      out += fmt::format("; {} vs {}, the histogram's count at or above {}: {} in flight at the window's edges "
                         "(at most one per CPU: in the histogram, not yet counted)\n",
                         caught + rate + full, t["histogram_above"].get<uint64_t>(), th,
                         std::abs(t["in_flight"].get<int64_t>()));
    else
      out += fmt::format("; {} != {}, the histogram's count at or above {}: the difference is not accounted for\n",
                         caught + rate + full, t["histogram_above"].get<uint64_t>(), th);
  }
  const uint64_t got = t["events_received"].get<uint64_t>();
  if (!t["caught"].is_null() && got != t["caught"].get<uint64_t>()) {
    // A sample stamps its time before it reads the counters: an event caught in between is
    // counted in this interval and received in the next, so the window's edges can differ
    // by the events in flight there, either way; more missing is the buffers' loss.
    const uint64_t c = t["caught"].get<uint64_t>(), lost = t["perf_lost"].get<uint64_t>();
    if (got > c)
      out += fmt::format("  {} received, {} caught in the window: {} caught just before its first sample arrived in "
                         "its first interval\n", got, c, got - c);
    else
      out += fmt::format("  {} received, {} caught in the window: {} lost by the perf buffers ({} lost records in the "
                         "window) or caught just before its last sample (received after it)\n", got, c, c - got, lost);
  }
  if (got == 0) return out + "  no event received in the window\n";
  const auto& d = t["duration_ns"];
  out += fmt::format("  duration of the {} received: p50 {}, p99 {}, max {}{}\n", got, format_ns_unit(d["p50"].get<double>()),
                     format_ns_unit(d["p99"].get<double>()), format_ns_unit(d["max"].get<double>()),
                     d["reservoir"].is_null() ? ""
                                              : fmt::format(" (percentiles over a uniform sample of {})",
                                                            d["reservoir"].get<uint64_t>()));
  const auto& st = t["stacks"];
  if (!st.empty()) {
    const size_t n = std::min<size_t>(5, st.size());
    out += fmt::format("  top stacks ({} of {}, outermost first):\n", n, t["stacks_unique"].get<uint64_t>());
    for (size_t i = 0; i < n; ++i) {
      const auto& fr = st[i]["frames"];
      std::string folded;
      for (auto it = fr.rbegin(); it != fr.rend(); ++it) folded += (folded.empty() ? "" : ";") + it->get<std::string>();
      out += fmt::format("  {:>8} {}\n", st[i]["count"].get<uint64_t>(), scrub_controls(folded));
    }
  }
  if (const uint64_t ns = t["no_stack"].get<uint64_t>()) out += fmt::format("  {} without a stack\n", ns);
  const auto& tk = t["tasks"];
  if (!tk.empty()) {
    std::string items;
    for (size_t i = 0; i < std::min<size_t>(5, tk.size()); ++i) {
      const auto& x = tk[i];
      const uint32_t pid = x["pid"].get<uint32_t>(), tgid = x["tgid"].get<uint32_t>();
      items += fmt::format("{}{} ({}{}) {}", items.empty() ? "" : ", ", scrub_controls(x["comm"].get<std::string>()),
                           pid == tgid ? fmt::format("pid {}", pid) : fmt::format("tid {}", pid),
                           pid == tgid ? "" : fmt::format(" of {}", tgid), x["count"].get<uint64_t>());
    }
    out += "  top tasks: " + items + "\n";
  }
  const auto& in = t["interrupts"];
  if (in.is_null()) {
    out += "  interrupt time not measured\n";
  } else {
    const uint64_t n = in["events"].get<uint64_t>();
    std::string parts;
    const std::pair<const char*, const char*> kinds[3] = {{"softirq", "a softirq"}, {"irq", "a hard IRQ"}, {"nmi", "an NMI"}};
    for (auto& [key, words] : kinds) {
      const auto& k = in[key];
      if (!k["events"].get<uint64_t>()) continue;
      parts += fmt::format("{}{} had {} inside ({} of their time)", parts.empty() ? "" : ", ", format_share_pct(k["share"].get<double>()),
                           words, format_share_pct(k["time_share_of_those"].get<double>()));
    }
    if (parts.empty() && t.value("duration_is", "runtime") == "runtime")
      out += fmt::format("  of {} caught, none had an interrupt inside: the time was the function's own (cache misses, "
                         "coherence transfers, virtualization)\n",
                         n);
    else if (parts.empty())
      out += fmt::format("  of {} caught, none had an interrupt inside its {}\n", n, t.value("duration_is", "window"));
    else
      out += fmt::format("  of {} caught, {}\n", n, parts);
    if (const uint64_t more = in["events_lower_bound"].get<uint64_t>())
      out += fmt::format("  {} had more interrupts inside than the ring kept: their times are lower bounds\n", more);
  }
  out += "  steal: " + steal_sentence(t.contains("steal") ? t["steal"] : nlohmann::json()) + "\n";
  out += tail_exact_text(t);
  if (t.contains("detail")) {
    std::vector<std::pair<std::string, uint64_t>> v;
    for (auto& [k, x] : t["detail"].items()) v.emplace_back(k, x.get<uint64_t>());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string items;
    for (auto& [k, x] : v) items += fmt::format(" {}={}", k, x);
    const std::string probe = t["probe"].get<std::string>();
    out += fmt::format("  {}:{}\n", probe == "cpupri_set" ? "transitions" : probe == "idle" ? "by idle state" : "detail",
                       items);
  }
  return out;
}

/// The Tails section (--catch): one block per rule; "" without rules.
std::string tails_text(const nlohmann::json& r) {
  if (!r.contains("tails") || r["tails"].empty()) return "";
  std::string out = "\nTails (--catch: the events at or above each rule's threshold):\n";
  for (const auto& t : r["tails"]) out += tail_text(t);
  return out;
}

}  // namespace

std::string render_report_text(const nlohmann::json& r) {
  std::string out = text_head(r);
  out += fmt::format("\n{:<12} {:<34} {:>10} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n", "PROBE", "BACKEND", "TOTAL",
                     "RATE/s", "PEAK/s", "p10", "p50", "p90", "p98", "p99", "max");
  std::string details, notes;
  for (const auto& p : r["probes"]) probe_text(p, out, details, notes);
  out += fmt::format("latency columns in ns (us/ms/s where marked); percentiles within +-{:.1f}% (log-linear buckets)\n",
                     r["percentile_error"].get<double>() * 100);
  if (!details.empty()) out += "\nDetails:\n" + details;
  if (!notes.empty()) out += "\nNotes:\n" + notes;
  out += tails_text(r);

  out += cpu_table_text(r);
  if (r.contains("cachelines")) out += cachelines_text(r["cachelines"]);
  return out;
}

}  // namespace schedhot
