#include "output/info_text.h"

#include <ext/stdio_filebuf.h>
#include <fcntl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "model/histogram.h"
#include "model/interval.h"
#include "model/lines.h"
#include "probe/catalog.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/cpulist.h"
#include "sys/json_text.h"
#include "sys/output_file.h"
#include "analysis/cachelines.h"
#include "output/report_text.h"

namespace schedhot {

std::string render_info_text(const nlohmann::json& j) {
  std::string out;
  auto add = [&](const char* key, const std::string& v) { out += fmt::format("{:<10} {}\n", key, v); };
  const auto& h = j["host"];
  add("recording", fmt::format("{} (format {}, {} bytes)", scrub_controls(j["file"].get<std::string>()), j["format"].get<std::string>(),
                               j["bytes"].get<uint64_t>()));
  add("made by", fmt::format("schedhot {}{}", j["tool_version"].get<std::string>(),
                             j["command"].get<std::string>().empty() ? "" : ": " + scrub_controls(j["command"].get<std::string>())));
  add("host", fmt::format("{}  kernel {} {}", h["hostname"].get<std::string>(), h["kernel_release"].get<std::string>(),
                          h["machine"].get<std::string>()));
  std::string cpus = fmt::format("{} online ({}) of {} possible", h["online_count"].get<size_t>(),
                                 h["online"].get<std::string>(), h["possible_cpus"].get<uint32_t>());
  if (!j["topology"].is_null()) {
    const auto& t = j["topology"];
    cpus += fmt::format("; packages {}, dies {}, cores {}, LLCs {}, NUMA nodes {}", t["packages"].get<size_t>(),
                        t["dies"].get<size_t>(), t["cores"].get<size_t>(), t["llcs"].get<size_t>(),
                        t["numa_nodes"].get<size_t>());
  } else {
    cpus += "; no topology recorded";
  }
  add("CPUs", cpus + fmt::format("; cacheline {} B", h["cacheline_bytes"].get<int>()));
  std::string hv = h["hypervisor"].get<std::string>();
  add("timers", fmt::format("ARAT {}; broadcast device {}; cpuidle {}; spinlock {}{}", h["arat"].get<bool>() ? "yes" : "no",
                            h["broadcast_device"].get<std::string>().empty() ? "?" : h["broadcast_device"].get<std::string>(),
                            h["cpuidle_driver"].get<std::string>().empty() ? "none" : h["cpuidle_driver"].get<std::string>(),
                            h["spinlock"].get<std::string>(), hv.empty() ? "" : "; hypervisor " + hv));
  if (j.contains("layout")) {  // documents of older builds have neither key
    if (j["layout"].is_null())
      add("layout", "layout not recorded (an older recording): report and export model the lines on Debian's layout");
    else
      add("layout", layout_source_text(j["layout"].get<CoherenceLayout>()));
    const std::string fx = j["fixes"]["text"].get<std::string>();
    add("fixes", fx.rfind("fixes: ", 0) == 0 ? fx.substr(7) : fx);
  }
  add("started", fmt::format("{} (CLOCK_MONOTONIC {:.3f} s), interval {:.3f} s", j["start"].get<std::string>(),
                             j["start_mono_ns"].get<uint64_t>() / 1e9, j["interval_ns"].get<uint64_t>() / 1e9));
  add("probes", fmt::format("{} of {} attached", j["probes_attached"].get<int>(), j["probes"].size()));
  for (const auto& p : j["probes"]) {
    if (p["status"] == "attached") {
      const std::string backend = p["backend"].get<std::string>();
      const std::string where = symbol_with_via(p["symbol"].get<std::string>(), p["via"].get<std::string>());
      // (the column padding of "fentry" and a symbol, or a proxy's text as attach_text says it)
      std::string row = backend.rfind("proxy:", 0) == 0
                            ? fmt::format("  {:<12} attached     {}", p["name"].get<std::string>(), attach_text(backend, where))
                            : fmt::format("  {:<12} attached     {:<12} {}", p["name"].get<std::string>(), backend, where);
      row.erase(row.find_last_not_of(' ') + 1);
      if (p.contains("blind") && p["blind"].is_string()) row += "; blind: " + p["blind"].get<std::string>();
      out += row + "\n";
    } else
      out += fmt::format("  {:<12} unavailable  {}\n", p["name"].get<std::string>(), p["reason"].get<std::string>());
  }
  for (const auto& n : j["status_changes"])
    out += fmt::format("  {:<12} changed mid-run: {}\n", n["probe"].get<std::string>(), n["summary"].get<std::string>());
  const auto& in = j["integrity"];
  const uint64_t ns = in["samples"].get<uint64_t>();
  if (ns)
    add("samples", fmt::format("{} in {} frames over {:.3f} s; {:.0f} B per sample as stored, frame header included "
                               "({:.1f} B per CPU); payload {:.0f} B per sample before compression; keyframes {}, "
                               "zstd-compressed {}",
                               ns, in["frames"].get<uint64_t>(), in["span_s"].get<double>(),
                               in["bytes_per_sample"].get<double>(), in["bytes_per_cpu_sample"].get<double>(),
                               in["raw_bytes_per_sample"].get<double>(), in["keyframes"].get<uint64_t>(),
                               in["compressed_samples"].get<uint64_t>()));
  else
    add("samples", fmt::format("none ({} frames)", in["frames"].get<uint64_t>()));
  if (in.contains("exact"))
    add("exact", fmt::format("{} --exact records in {} frames, {} lost (the exact figures are lower bounds when any are)",
                             in["exact"]["records"].get<uint64_t>(), in["exact"]["frames"].get<uint64_t>(),
                             in["exact"]["lost"].get<uint64_t>()));
  if (in.contains("caught"))
    add("caught", fmt::format("{} --catch events in {} frames ({} rule{}), {} lost", in["caught"]["events"].get<uint64_t>(),
                              in["caught"]["frames"].get<uint64_t>(), in["caught"]["rules"].get<size_t>(),
                              in["caught"]["rules"].get<size_t>() == 1 ? "" : "s", in["caught"]["lost"].get<uint64_t>()));
  if (in.contains("gap_state"))
    add("gap state", fmt::format("{} lines; counts in {} frames, {} (CPU, line) entries{}",
                                 in["gap_state"]["lines"].get<size_t>(), in["gap_state"]["frames"].get<uint64_t>(),
                                 in["gap_state"]["entries"].get<uint64_t>(),
                                 in["gap_state"].contains("samples_per_s")
                                     ? fmt::format("; sampled, up to about {} gaps/s per CPU",
                                                   in["gap_state"]["samples_per_s"].get<uint32_t>())
                                     : ""));
  const auto& ix = in["index"];
  std::string ixs = ix["status"].get<std::string>();
  if (ixs == "present")
    ixs += fmt::format(" ({} keyframe{})", ix["keyframes"].get<size_t>(), ix["keyframes"].get<size_t>() == 1 ? "" : "s");
  else
    ixs += ": " + ix["reason"].get<std::string>() + (ixs == "unusable" ? "; seeks scan the frames" : "");
  add("index", ixs);
  if (!in["damage"].is_null())
    add("end", fmt::format("DAMAGED at byte {}: {}; the {} samples before it are intact",
                           in["damage"]["offset"].get<uint64_t>(), in["damage"]["reason"].get<std::string>(), ns));
  else if (in["complete"].get<bool>())
    add("end", "clean (END frame)");
  else
    add("end", "not closed by its writer (no END frame): killed, out of disk, or still recording; every frame is intact");
  if (in["unknown_frames"].get<uint64_t>())
    add("note", fmt::format("{} frames of a later format minor version were skipped", in["unknown_frames"].get<uint64_t>()));
  return out;
}

}  // namespace schedhot
