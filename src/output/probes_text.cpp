#include "output/probes_text.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "probe/layout.h"
#include "probe/status.h"
#include "sys/json_text.h"
#include "analysis/cachelines.h"

namespace schedhot {

std::string render_probes_text(const nlohmann::json& d) {
  const std::vector<ProbeStatus> st = d.at("probes").get<std::vector<ProbeStatus>>();
  const CoherenceLayout layout = d.at("layout").get<CoherenceLayout>();
  const FixesPresent fixes = fixes_present(layout);
  const std::string btf_file = d.at("btf_file").get<std::string>();
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "kernel {}  BTF {}  kprobes {}  kallsyms {}\n", d.at("kernel").get<std::string>(),
             !d.at("btf").get<bool>() ? "no" : btf_file.empty() ? "yes" : "yes (--btf " + scrub_controls(btf_file) + ")",
             d.at("kprobes").get<bool>() ? "yes" : "no", d.at("kallsyms").get<std::string>());
  // Without BTF every probe fails for the one long reason (what --btf FILE must be): said
  // once here, and "no vmlinux BTF (above)" in each probe's line. Older documents lack it.
  const std::string btf_error = d.contains("btf_error") ? d.at("btf_error").get<std::string>() : std::string();
  if (!btf_error.empty()) fmt::format_to(o, "{}\n", btf_error);
  auto shorter = [&](std::string why) {
    if (btf_error.empty()) return why;
    for (size_t at; (at = why.find(btf_error)) != std::string::npos;) why.replace(at, btf_error.size(), "no vmlinux BTF (above)");
    return why;
  };
  // The hot lines' layout (what the coherence model uses) and the seed-patch fixes it shows.
  // Paths the user named (--btf, --system-map) are shown with terminal controls replaced.
  fmt::format_to(o, "layout {}; symbols {}\n", scrub_controls(layout_source_text(layout)),
                 scrub_controls(d.at("symbols").get<std::string>()));
  for (const std::string& n : layout.notes) fmt::format_to(o, "  {}\n", scrub_controls(n));
  fmt::format_to(o, "{}\n", to_string(fixes));
  for (const ProbeStatus& s : st) {
    if (s.attached) {
      fmt::format_to(o, "{:<12} attached     {}\n", s.probe, s.proxy ? s.proxy_label : std::string(to_string(s.backend)));
      fmt::format_to(o, "{:<12}   target {}, {} {}\n", "", s.target, s.proxy ? "tracepoint" : "symbol", symbol_with_via(s.symbol, s.via));
      if (s.proxy) fmt::format_to(o, "{:<12}   known error: {}\n", "", s.proxy_error);
    } else {
      fmt::format_to(o, "{:<12} UNAVAILABLE  {}\n", s.probe, shorter(s.reason));
      fmt::format_to(o, "{:<12}   target {}{}\n", "", s.target, s.via.empty() ? "" : ", resolved " + s.via);
    }
    for (auto& amb : s.ambiguous) fmt::format_to(o, "{:<12}   {}\n", "", describe_ambiguity(amb));
    for (auto& c : s.copies)
      fmt::format_to(o, "{:<12}   copy {:<34} {}\n", "", c.addr ? fmt::format("{} at {:#x}", c.symbol, c.addr) : c.symbol,
                 c.attached ? fmt::format("attached ({})", to_string(c.backend)) : "unavailable: " + c.error);
    bool same = !s.sites.empty();
    for (auto& site : s.sites) same = same && !site.attached && site.error == s.sites.front().error;
    if (same)
      fmt::format_to(o, "{:<12}   all {} sites unavailable: {}\n", "", s.sites.size(), shorter(s.sites.front().error));
    else
      for (auto& site : s.sites)
        fmt::format_to(o, "{:<12}   site {:<34} {}\n", "", site.site,
                   site.attached ? fmt::format("attached ({} {})", to_string(site.backend), site.symbol) : "unavailable: " + site.error);
    if (s.attached)
      for (auto& t : s.tried)
        fmt::format_to(o, "{:<12}   not used: {}{}{}\n", "", t.backend == Backend::none ? "" : to_string(t.backend),
                   t.symbol.empty() ? "" : " " + t.symbol, (t.backend == Backend::none && t.symbol.empty() ? "" : ": ") + t.error);
    for (auto& n : s.notes) fmt::format_to(o, "{:<12}   note: {}\n", "", n);
  }
  const auto n = std::count_if(st.begin(), st.end(), [](const ProbeStatus& s) { return s.attached; });
  fmt::format_to(o, "{} of {} probes attached\n", n, st.size());
  return out;
}


}  // namespace schedhot
