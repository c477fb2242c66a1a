#include "tui/tails_view.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "analysis/tails.h"
#include "probe/catch_rules.h"
#include "sys/json_text.h"
#include "sys/units.h"

namespace schedhot::tui {

namespace {


uint64_t u64(const nlohmann::json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<uint64_t>() : 0; }

/// "12 caught 12.0/s, dropped 3 (rate) 1 (buffer); 16 = the histogram at or above 20.0us",
/// after "  LABEL: "; check_off: why the histogram check is skipped ("" to make it).
Line count_line(const std::string& label, const nlohmann::json& t, double seconds, const std::string& check_off) {
  Line l;
  l.add(fmt::format("  {:<24}", label + ":"), Role::label);
  if (!t.is_null() && t["caught"].is_null() && t.contains("blind"))
    return l.add("not counted: the probe is blind here (" + scrub_controls(t["blind"].get<std::string>()) + ")", Role::dim);
  if (t.is_null() || t["caught"].is_null()) return l.add("not counted (the probe is absent there)", Role::dim);
  const uint64_t caught = u64(t, "caught"), rate = u64(t, "rate_drops"), full = u64(t, "full_drops");
  l.add(fmt::format("{:>7} caught {:>7}/s", caught, seconds > 0 ? format_rate(double(caught) / seconds) : "-"));
  l.add(fmt::format("  dropped {} (rate) {} (buffer)", rate, full), rate + full ? Role::bad : Role::normal);
  const uint64_t got = u64(t, "events_received");
  if (got != caught) l.add(fmt::format("  {} received", got), Role::dim);
  const std::string th = format_ns_unit(t["threshold_ns"].get<double>());
  if (!check_off.empty())
    l.add("  " + check_off, Role::dim);
  else if (t.contains("blind"))
    l.add("  (no histogram check: the probe is blind here)", Role::dim);
  else if (t.contains("edited_live"))
    l.add("  (no histogram check: the rule was edited live, " + scrub_controls(t["edited_live"].get<std::string>()) + ")",
          Role::dim);
  else if (t["accounted"].is_null())
    l.add("  (no histogram check: a percentile rule)", Role::dim);
  else if (t["accounted"].get<bool>() && (!t.contains("in_flight") || !t["in_flight"].is_number() ||
                                          t["in_flight"].get<int64_t>() == 0))
    l.add(fmt::format("  = histogram >= {}", th), Role::good);
  else if (t["accounted"].get<bool>())  // as report's text: at most one event per CPU between the two counts
    l.add(fmt::format("  ~ histogram >= {} ({}): {} in flight at the edges", th, u64(t, "histogram_above"),
                      std::abs(t["in_flight"].get<int64_t>())),
          Role::good);
  else
    l.add(fmt::format("  != {}, histogram >= {}: not accounted for", u64(t, "histogram_above"), th), Role::bad);
  return l;
}

/// The report's interrupt sentence, after "  interrupts: ".
std::string interrupt_text(const nlohmann::json& in, const std::string& duration_is) {
  if (in.is_null()) return "not measured";
  const uint64_t n = u64(in, "events");
  std::string parts;
  const std::pair<const char*, const char*> kinds[3] = {{"softirq", "a softirq"}, {"irq", "a hard IRQ"}, {"nmi", "an NMI"}};
  for (auto& [key, words] : kinds) {
    const auto& k = in[key];
    if (!u64(k, "events")) continue;
    parts += fmt::format("{}{} had {} inside ({} of their time)", parts.empty() ? "" : ", ", format_share_pct(k["share"].get<double>()),
                         words, format_share_pct(k["time_share_of_those"].get<double>()));
  }
  std::string out = !parts.empty()              ? fmt::format("of {} caught, {}", n, parts)
                    : duration_is == "runtime" ? fmt::format("of {} caught, none had an interrupt inside: the time was the function's own", n)
                                               : fmt::format("of {} caught, none had an interrupt inside its {}", n, duration_is);
  if (const uint64_t more = u64(in, "events_lower_bound")) out += fmt::format("; {} lower bounds (ring full)", more);
  return out;
}

/// Frames innermost first, joined by " < ", at most n (all when n <= 0).
std::string frames_text(const std::vector<std::string>& f, int n) {
  std::string out;
  for (size_t i = 0; i < f.size() && (n <= 0 || int(i) < n); ++i) out += (i ? " < " : "") + scrub_controls(f[i]);
  if (n > 0 && f.size() > size_t(n)) out += " < ...";
  return out;
}

std::string task_text(const std::string& comm, uint32_t pid, uint32_t tgid) {
  return pid == tgid ? fmt::format("{}/{}", scrub_controls(comm), pid)
                     : fmt::format("{}/{} (of {})", scrub_controls(comm), pid, tgid);
}

std::string rule_head(const CatchRule& r) {
  std::string s;
  if (r.percentile > 0)
    s = r.threshold_ns ? fmt::format("armed >= {} (p{:g} of the running histogram, re-armed each interval)",
                                     format_ns_unit(double(r.threshold_ns)), r.percentile)
                       : fmt::format("not armed yet (p{:g}: fewer than {} events above it so far)", r.percentile,
                                                   kPercentileMinAbove);
  else
    s = fmt::format("armed >= {}", format_ns_unit(double(r.threshold_ns)));
  s += r.per_sec ? fmt::format(", at most {}/s per CPU", r.per_sec) : ", no rate limit";
  return s;
}

}  // namespace

std::vector<Line> render_tails(const TailsFrame& f, int width) {
  std::vector<Line> out;
  if (!f.rules || f.rules->empty()) {
    out.push_back(Line().add(kNoCatchRules, Role::dim));
    for (Line& l : out) clip(l, width);
    return out;
  }
  const std::vector<CatchRule>& rules = *f.rules;
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const CatchRule& r = rules[ri];
    const nlohmann::json& ti = f.iv.is_array() && ri < f.iv.size() ? f.iv[ri] : nlohmann::json();
    const nlohmann::json& ts = f.since.is_array() && ri < f.since.size() ? f.since[ri] : nlohmann::json();
    if (ri) out.push_back(Line());
    out.push_back(Line().add(r.text, Role::title).add("  " + rule_head(r), Role::label));
    const uint64_t edited = ri < f.edited_ns.size() ? f.edited_ns[ri] : 0;
    if (edited)
      out.push_back(Line().add(
          fmt::format("  threshold edited at +{:.1f} s: the checks over it are skipped{}", double(edited - f.t0_mono_ns) / 1e9,
                      f.recording ? "; the recording keeps the start's threshold and a NOTE of the edit (report skips its check)"
                                  : ""),
          Role::dim));
    out.push_back(count_line(fmt::format("interval {:.2f} s", f.iv_seconds), ti, f.iv_seconds,
                             edited > f.iv_start_mono_ns ? "(not checked: edited since its start)" : ""));
    if (!f.since.is_null())
      out.push_back(count_line(fmt::format("since start {:.1f} s", f.since_seconds), ts, f.since_seconds,
                               edited ? "(not checked: threshold edited)" : ""));
    const nlohmann::json& agg = f.since.is_null() ? ti : ts;  // the widest window known
    const char* over = f.since.is_null() ? "in the interval" : "since start";
    if (!agg.is_null() && u64(agg, "events_received")) {
      const auto& d = agg["duration_ns"];
      out.push_back(Line()
                        .add(fmt::format("  {:<24}", fmt::format("durations {}:", over)), Role::label)
                        .add(fmt::format("p50 {}  p99 {}  max {}", format_ns(d["p50"].get<double>()),
                                         format_ns(d["p99"].get<double>()), format_ns(d["max"].get<double>()))));
      out.push_back(Line().add(fmt::format("  {:<24}", "interrupts:"), Role::label).add(interrupt_text(agg["interrupts"], agg.value("duration_is", "runtime"))));
      out.push_back(Line().add(fmt::format("  {:<24}", "steal:"), Role::label)
                        .add(steal_sentence(agg.contains("steal") ? agg["steal"] : nlohmann::json())));
    }
    // The interval's newest events of this rule, in time order.
    std::vector<const CaughtEvent*> ev;
    if (f.batch)
      for (const CaughtEvent& e : f.batch->events)
        if (caught_probe_name(e.probe) == r.probe) ev.push_back(&e);
    if (ev.empty()) {
      out.push_back(Line().add("  no event received in this interval", Role::dim));
    } else {
      const size_t n = std::min(f.last_events, ev.size());
      out.push_back(Line().add(fmt::format("  last {} of {} event{} of the interval:", n, ev.size(), ev.size() == 1 ? "" : "s"),
                               Role::label));
      out.push_back(Line().add(fmt::format("  {:>11} {:>4} {:>8}  {:<24} {:<12} {}", "TIME", "CPU", "DURATION", "TASK",
                                           "DETAIL", "STACK (innermost first)"),
                               Role::head));
      for (size_t i = ev.size() - n; i < ev.size(); ++i) {
        const CaughtEvent& e = *ev[i];
        std::string stack = "[no stack]";
        if (e.stack && e.stack <= f.batch->stacks.size()) {
          std::vector<std::string> fr;
          for (const StackFrame& s : f.batch->stacks[e.stack - 1]) fr.push_back(frame_text(s));
          stack = frames_text(fr, f.frames);
        }
        const double t = e.ts_ns >= f.t0_mono_ns ? double(e.ts_ns - f.t0_mono_ns) / 1e9 : 0.0;
        out.push_back(Line().add(fmt::format("  {:>11} {:>4} {:>8}  {:<24} {:<12} {}", fmt::format("+{:.6f}", t), e.cpu,
                                             format_ns(double(e.dur_ns)), task_text(e.comm, e.pid, e.tgid),
                                             f.detail ? f.detail(e) : "", stack)));
      }
    }
    if (!agg.is_null()) {
      const auto& st = agg["stacks"];
      if (!st.empty()) {
        const size_t n = std::min(f.top, st.size());
        out.push_back(Line().add(fmt::format("  top stacks {} ({} of {} unique, innermost first):", over, n,
                                             u64(agg, "stacks_unique")),
                                 Role::label));
        for (size_t i = 0; i < n; ++i)
          out.push_back(Line().add(fmt::format("  {:>9} {:>5}  {}", u64(st[i], "count"), format_share_pct(st[i]["share"].get<double>()),
                                               frames_text(st[i]["frames"].get<std::vector<std::string>>(), 0))));
      }
      if (const uint64_t ns = u64(agg, "no_stack")) out.push_back(Line().add(fmt::format("  {:>9} without a stack", ns), Role::dim));
      const auto& tk = agg["tasks"];
      if (!tk.empty()) {
        std::string items;
        for (size_t i = 0; i < std::min(f.top, tk.size()); ++i)
          items += fmt::format("{}{} {}", items.empty() ? "" : ", ",
                               task_text(tk[i]["comm"].get<std::string>(), tk[i]["pid"].get<uint32_t>(),
                                         tk[i]["tgid"].get<uint32_t>()),
                               u64(tk[i], "count"));
        out.push_back(Line().add(fmt::format("  top tasks {}: ", over), Role::label).add(items));
      }
    }
  }
  for (Line& l : out) clip(l, width);
  return out;
}

}  // namespace schedhot::tui
