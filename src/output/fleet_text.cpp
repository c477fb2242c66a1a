#include "output/fleet_text.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "analysis/fleet.h"
#include "probe/catalog.h"
#include "probe/layout.h"
#include "sys/csv_text.h"
#include "sys/json_text.h"
#include "sys/units.h"

namespace schedhot {

namespace {

std::string fix_char(const nlohmann::json& v) { return v.is_boolean() ? (v.get<bool>() ? "y" : "n") : "?"; }

std::string fixes_text(const nlohmann::json& f) {
  std::string out;
  for (const Fix& x : fix_kinds()) out += fix_char(f[x.key]);
  return out;
}

/// raw for a fixed-width column of the text table: one column per character, so every code
/// point outside printable ASCII (wide, combining, bidi) is one '?' (JSON and CSV keep the
/// text); longer than width: cut to width - 3 and "...".
std::string table_cell(const std::string& raw, size_t width) {
  std::string s;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += raw[i];
    } else {
      s += '?';
      while (c >= 0xc0 && i + 1 < raw.size() && (static_cast<unsigned char>(raw[i + 1]) & 0xc0) == 0x80) ++i;
    }
  }
  return s.size() > width ? s.substr(0, width - 3) + "..." : s;
}

std::string csv_num(const nlohmann::json& v) {
  if (!v.is_number()) return "";
  return fmt::format("{}", v.get<double>());
}

}  // namespace

std::string render_fleet_text(const nlohmann::json& d) {
  std::string out;
  const auto& c = d["counts"];
  out += fmt::format("fleet {}: {} host{}: {} reported, {} partial (damaged or not closed: figures up to where reading "
                     "stopped), {} without figures\n",
                     scrub_controls(d["dir"].get<std::string>()), d["hosts_total"].get<size_t>(),
                     d["hosts_total"].get<size_t>() == 1 ? "" : "s", c["reported"].get<int>(),
                     c["partial"].get<int>(), c["failed"].get<int>());
  if (c.contains("stale") && c["stale"].get<int>() > 0)
    out += fmt::format("plus {} stale host{} of earlier runs (not in the latest schedhot-fleet run: not ranked, listed "
                       "at the end)\n",
                       c["stale"].get<int>(), c["stale"].get<int>() == 1 ? "" : "s");
  out += fmt::format("severity: (modeled coherence stall of the hot lines{}) / online CPUs, us per CPU-second\n",
                     wait_probe() ? " + " + wait_probe()->wait_lock + " wait" : std::string());
  std::string legend;
  for (const Fix& f : fix_kinds()) legend += (legend.empty() ? "" : ", ") + f.legend;
  out += "FIX: " + legend + " (y yes, n no, ? unknown)\n\n";
  size_t hw = 4;
  for (auto& h : d["hosts"]) hw = std::max(hw, table_cell(h["host"].get<std::string>(), 32).size());
  // RANK and SEVERITY as wide as their widest value (10,000 hosts; a huge --xfer-cost)
  size_t rw = 4, sw = 9;
  for (auto& h : d["hosts"]) {
    if (h["rank"].is_number()) rw = std::max(rw, fmt::format("{}", h["rank"].get<int>()).size());
    if (h["severity"].is_number()) sw = std::max(sw, fmt::format("{:.1f}", h["severity"].get<double>()).size());
  }
  std::string head = fmt::format("{:>{}} {:<{}} {:<28} {:>5} {:<3} {:>{}} {:>8}", "RANK", rw, "HOST", hw, "KERNEL", "CPUS", "FIX",
                                 "SEVERITY", sw, "XFER/s");
  for (const ProbeSpec* p : table_probes()) {
    head += fmt::format(" {:>{}}", fmt::format("{}/s", p->name), std::max<size_t>(7, p->name.size() + 2));
    if (p->fleet == FleetShow::rate_p99) head += fmt::format(" {:>7}", "p99");
  }
  out += head + "\n";
  bool any_failed = false;
  for (auto& h : d["hosts"]) {
    const std::string name = table_cell(h["host"].get<std::string>(), 32);
    if (!h["severity"].is_number()) {
      any_failed = true;
      continue;
    }
    const std::string kern = table_cell(h["kernel_release"].get<std::string>(), 28);
    std::string line = fmt::format("{:>{}} {:<{}} {:<28} {:>5} {:<3} {:>{}.1f} {:>8}", h["rank"].get<int>(), rw, name, hw,
                                   kern, h["cpus_online"].get<int>(), fixes_text(h["fixes"]), h["severity"].get<double>(), sw,
                                   format_rate(h["xfers_per_s"].get<double>()));
    for (const ProbeSpec* ps : table_probes()) {
      const std::string& p = ps->name;
      const auto& o = h["probes"].contains(p) ? h["probes"][p] : nlohmann::json();
      const bool shown = o.is_object() && (o["status"] == "measured" || o["status"] == "proxy");
      const std::string rate = shown && o["rate_per_s"].is_number() ? format_rate(o["rate_per_s"].get<double>()) : "-";
      line += fmt::format(" {:>{}}", rate, std::max<size_t>(7, p.size() + 2));
      if (ps->fleet == FleetShow::rate_p99)
        line += fmt::format(" {:>7}", shown && o["p99_ns"].is_number() ? format_ns(o["p99_ns"].get<double>()) : "-");
    }
    out += line + "\n";
    for (auto& f : h["flags"]) out += fmt::format("       ! {}\n", scrub_controls(f.get<std::string>()));
  }
  if (d["not_shown"].get<int>() > 0) out += fmt::format("  ... {} more ranked hosts (--top)\n", d["not_shown"].get<int>());
  bool any_stale = false;
  for (auto& h : d["hosts"]) any_stale |= h["status"] == "stale";
  if (any_failed && std::any_of(d["hosts"].begin(), d["hosts"].end(),
                                [](const nlohmann::json& h) { return !h["severity"].is_number() && h["status"] != "stale"; })) {
    out += "\nWithout figures:\n";
    for (auto& h : d["hosts"])
      if (!h["severity"].is_number() && h["status"] != "stale")
        out += fmt::format("  {}: {}\n", scrub_controls(h["host"].get<std::string>()), scrub_controls(h["why"].get<std::string>()));
  }
  if (any_stale) {
    out += "\nStale (earlier runs' hosts, not in the latest schedhot-fleet run; not ranked):\n";
    for (auto& h : d["hosts"])
      if (h["status"] == "stale")
        out += fmt::format("  {}: {}\n", scrub_controls(h["host"].get<std::string>()), scrub_controls(h["why"].get<std::string>()));
  }
  if (!d["groups"].empty()) {
    out += "\nGroups (kernel series, online CPUs, virtualization):\n";
    for (auto& g : d["groups"])
      out += fmt::format("  {:<6} {:>5} CPUs  {:<14} {:>4} host{}  median severity {:>8.1f}  worst {} ({:.1f})  flagged {}\n",
                         g["kernel_series"].get<std::string>(), g["cpus_online"].get<int>(),
                         scrub_controls(g["virtualization"].get<std::string>()), g["hosts"].get<size_t>(),
                         g["hosts"].get<size_t>() == 1 ? " " : "s", g["median_severity"].get<double>(),
                         scrub_controls(g["worst"]["host"].get<std::string>()), g["worst"]["severity"].get<double>(),
                         g["flagged"].get<int>());
  }
  if (!d["fleet_latency"].empty()) {
    out += fmt::format("\nFleet-wide latency (the hosts' histograms merged exactly; percentiles within +-{:.1f} %):\n",
                       d["percentile_error"].get<double>() * 100);
    out += fmt::format("  {:<12} {:>5} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n", "PROBE", "HOSTS", "COUNT", "p10", "p50",
                       "p90", "p98", "p99", "max");
    for (auto& l : d["fleet_latency"])
      out += fmt::format("  {:<12} {:>5} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n", l["probe"].get<std::string>(),
                         l["hosts"].get<int>(), l["count"].get<uint64_t>(), format_ns(l["p10"].get<double>()),
                         format_ns(l["p50"].get<double>()), format_ns(l["p90"].get<double>()),
                         format_ns(l["p98"].get<double>()), format_ns(l["p99"].get<double>()),
                         format_ns(static_cast<double>(l["max_ns"].get<uint64_t>())));
  }
  return out;
}

std::string render_fleet_csv(const nlohmann::json& d) {
  std::vector<std::string> probes;
  for (const ProbeSpec& s : probe_catalog()) probes.push_back(s.name);
  std::vector<std::string> lines;
  for (auto& h : d["hosts"])
    if (h.contains("lines"))
      for (auto& l : h["lines"])
        if (std::find(lines.begin(), lines.end(), l["name"].get<std::string>()) == lines.end()) lines.push_back(l["name"]);
  std::string out = "rank,host,status,file,kernel_release,cpus_online,possible_cpus,virtualization";
  for (const Fix& f : fix_kinds()) out += ",fix_" + f.key;
  out += ",severity_us_per_cpu_s,xfers_per_s,stall_ns_per_s," + wait_key();
  for (auto& p : probes) out += fmt::format(",{}_status,{}_rate_per_s,{}_p99_ns", p, p, p);
  for (auto& l : lines) out += "," + csv_cell("xfers_per_s:" + l);
  out += ",flags,why\n";
  auto str = [](const nlohmann::json& v) { return v.is_string() ? csv_cell(v.get<std::string>()) : std::string(); };
  auto fix = [](const nlohmann::json& v) { return v.is_boolean() ? std::string(v.get<bool>() ? "1" : "0") : std::string(); };
  for (auto& h : d["hosts"]) {
    const bool fig = h["severity"].is_number();
    std::string row = fmt::format("{},{},{},{}", h["rank"].is_number() ? fmt::format("{}", h["rank"].get<int>()) : "",
                                  str(h["host"]), str(h["status"]), str(h["file"]));
    if (fig) {
      row += fmt::format(",{},{},{},{}", str(h["kernel_release"]), csv_num(h["cpus_online"]), csv_num(h["possible_cpus"]),
                         str(h["virtualization"]));
      for (const Fix& f : fix_kinds()) row += "," + fix(h["fixes"][f.key]);
      row += fmt::format(",{},{},{},{}", csv_num(h["severity"]), csv_num(h["xfers_per_s"]), csv_num(h["stall_ns_per_s"]),
                         csv_num(h[wait_key()]));
    } else {
      row += std::string(8 + fix_kinds().size(), ',');
    }
    for (auto& p : probes) {
      const auto& o = fig && h["probes"].contains(p) ? h["probes"][p] : nlohmann::json();
      row += o.is_object() ? fmt::format(",{},{},{}", str(o["status"]), csv_num(o["rate_per_s"]), csv_num(o["p99_ns"])) : ",,,";
    }
    for (auto& ln : lines) {
      std::string v;
      if (fig)
        for (auto& l : h["lines"])
          if (l["name"] == ln) v = csv_num(l["xfers_per_s"]);
      row += "," + v;
    }
    std::string flags;
    if (h.contains("flags"))
      for (auto& f : h["flags"]) flags += (flags.empty() ? "" : "; ") + f.get<std::string>();
    row += "," + csv_cell(flags) + "," + (h.contains("why") ? str(h["why"]) : std::string());
    out += row + "\n";
  }
  return out;
}

}  // namespace schedhot
