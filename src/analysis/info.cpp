#include "analysis/info.h"

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
#include "probe/catch_rules.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/cpulist.h"
#include "sys/json_text.h"
#include "sys/output_file.h"
#include "analysis/cachelines.h"
#include "analysis/report.h"
#include "analysis/schema.h"

namespace schedhot {

nlohmann::json recording_info(RecordingReader& r, const std::string& file, const std::atomic<bool>* stop) {
  // Every sample decoded (its frames checked and counted), none copied out: info reads
  // nothing of a sample's words (a copy per sample was most of its time on a big host).
  while (r.skip())
    if (stop && stop->load()) throw std::runtime_error("interrupted");
  const Meta& m = r.meta();
  const HostInfo& h = m.host;
  nlohmann::json j;
  j["schema"] = schema::info;
  j["file"] = file;
  j["bytes"] = r.file_bytes();
  j["format"] = fmt::format("{}.{}", r.major(), r.minor());
  j["tool_version"] = m.tool_version;
  j["command"] = m.command;
  j["host"] = {{"hostname", h.hostname},
               {"kernel_release", h.kernel_release},
               {"kernel_version", h.kernel_version},
               {"machine", h.machine},
               {"possible_cpus", m.ncpus},
               {"online", format_cpulist(h.online)},
               {"online_count", h.online.size()},
               {"cacheline_bytes", h.cacheline_bytes},
               {"arat", h.arat},
               {"hypervisor", h.hypervisor ? (h.hypervisor_vendor.empty() ? "yes" : h.hypervisor_vendor) : ""},
               {"spinlock", to_string(h.spinlock)},
               {"cpuidle_driver", h.cpuidle_driver},
               {"broadcast_device", h.broadcast_device}};
  if (h.topology.empty()) {
    j["topology"] = nullptr;
  } else {
    std::set<int> packages, llcs, nodes;
    std::set<std::pair<int, int>> dies, cores;
    for (auto& t : h.topology) {
      if (t.package >= 0) packages.insert(t.package);
      if (t.die >= 0) dies.insert({t.package, t.die});
      if (t.core >= 0) cores.insert({t.package, t.core});
      if (t.llc >= 0) llcs.insert(t.llc);
      if (t.node >= 0) nodes.insert(t.node);
    }
    j["topology"] = {{"cpus", h.topology.size()}, {"packages", packages.size()}, {"dies", dies.size()},
                     {"cores", cores.size()},     {"llcs", llcs.size()},         {"numa_nodes", nodes.size()}};
  }
  // The hot lines' layout as read at attach (null: not recorded, an older file) and the fixes it shows.
  j["layout"] = m.layout ? nlohmann::json(*m.layout) : nlohmann::json(nullptr);
  j["fixes"] = fixes_json(recording_fixes(m));
  j["interval_ns"] = m.interval_ns;
  j["start_wall_ns"] = m.start_wall_ns;
  j["start"] = format_utc_time(m.start_wall_ns);
  j["start_mono_ns"] = m.start_mono_ns;
  nlohmann::json probes = nlohmann::json::array();
  int attached = 0;
  for (size_t i = 0; i < m.probes.size(); ++i) {
    const ProbeMeta& p = m.probes[i];
    const ProbeStatus& st = p.status;
    attached += st.attached;
    const std::string blind = st.attached ? blind_reason(m, int(i)) : "";
    probes.push_back({{"name", p.name},
                      {"target", st.target},
                      {"status", st.attached ? "attached" : "unavailable"},
                      {"backend", st.attached ? st.backend_label() : ""},
                      {"symbol", st.symbol},
                      {"via", st.via},
                      {"proxy", st.proxy},
                      {"reason", st.reason},
                      {"blind", blind.empty() ? nlohmann::json(nullptr) : nlohmann::json(blind)}});
  }
  j["probes"] = probes;
  j["probes_attached"] = attached;
  nlohmann::json notes = nlohmann::json::array();
  for (auto& n : r.status_notes()) {
    // top's live rule edit is a NOTE whose status is the same attach with the edit's note
    // last (live/session.cpp): said as the edit, not as a re-attach.
    const bool edit = !n.notes.empty() && n.notes.back().rfind(kCatchEditedNote, 0) == 0;
    notes.push_back({{"probe", n.probe}, {"summary", edit ? n.notes.back() : n.summary()}});
  }
  j["status_changes"] = notes;

  const ReadStats& st = r.stats();
  nlohmann::json in;
  in["frames"] = r.frames();
  in["samples"] = st.sample_frames;
  in["keyframes"] = st.keyframes;
  in["compressed_samples"] = st.compressed;
  in["first_mono_ns"] = st.sample_frames ? nlohmann::json(st.first_mono_ns) : nlohmann::json(nullptr);
  in["last_mono_ns"] = st.sample_frames ? nlohmann::json(st.last_mono_ns) : nlohmann::json(nullptr);
  in["span_s"] = st.sample_frames ? static_cast<double>(st.last_mono_ns - st.first_mono_ns) / 1e9 : 0.0;
  in["bytes_per_sample"] = st.sample_frames ? static_cast<double>(st.sample_bytes) / st.sample_frames : 0.0;
  in["bytes_per_cpu_sample"] =
      st.sample_frames && m.ncpus ? static_cast<double>(st.sample_bytes) / st.sample_frames / m.ncpus : 0.0;
  in["raw_bytes_per_sample"] = st.sample_frames ? static_cast<double>(st.raw_bytes) / st.sample_frames : 0.0;
  in["unknown_frames"] = st.unknown_frames;
  // Only in recordings that have them (documents of recordings without stay as they were).
  if (st.exact_frames)
    in["exact"] = {{"frames", st.exact_frames}, {"records", st.exact_records}, {"lost", st.exact_lost}};
  if (st.caught_frames || !m.catch_rules.empty())
    in["caught"] = {{"rules", m.catch_rules.size()}, {"frames", st.caught_frames}, {"events", st.caught_events},
                    {"lost", st.caught_lost}};
  if (st.gap_frames || !m.gap_lines.empty()) {
    in["gap_state"] = {{"lines", m.gap_lines.size()}, {"frames", st.gap_frames}, {"entries", st.gap_entries}};
    if (m.gap_samples_per_s) in["gap_state"]["samples_per_s"] = m.gap_samples_per_s;  // sampled (abi.h "Sampling")
  }
  if (r.index())
    in["index"] = {{"status", "present"}, {"keyframes", r.index()->entries}, {"samples", r.index()->samples}};
  else if (!r.index_problem().empty())
    in["index"] = {{"status", "unusable"}, {"reason", r.index_problem()}};
  else
    in["index"] = {{"status", "absent"}, {"reason", r.minor() == 0 ? "format 1.0 files are scanned" : "file not closed"}};
  in["complete"] = r.saw_end();
  in["damage"] = r.damage() ? nlohmann::json({{"offset", r.damage()->offset}, {"reason", r.damage()->reason}})
                            : nlohmann::json(nullptr);
  j["integrity"] = in;
  return j;
}

}  // namespace schedhot
