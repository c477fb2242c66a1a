// Subcommands that work on recording files: info and export, and record's rotation
// options. Exit status as in commands.h: 0 success, 1 runtime failure, 2 bad usage; every
// failure is one line on stderr.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/interval.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/cpulist.h"
#include "view/export.h"
#include "view/report.h"
#include "sys/json_text.h"

namespace schedhot::cli {

namespace {

/// Opens a recording for reading; nullptr after a one-line message.
std::unique_ptr<RecordingReader> open_recording(const std::string& file, const char* cmd) {
  if (file.empty()) {
    err(fmt::format("{} needs a recording FILE", cmd));
    return nullptr;
  }
  try {
    return RecordingReader::open(file);
  } catch (const std::exception& e) {
    err(e.what());
    return nullptr;
  }
}

std::string damage_text(const RecordingReader& r) {
  return fmt::format("at byte {}: {}", r.damage()->offset, r.damage()->reason);
}

}  // namespace

int parse_window(const std::string& from, const std::string& to, double& from_s, double& to_s) {
  from_s = to_s = -1;
  try {
    if (!from.empty()) from_s = static_cast<double>(parse_duration_ns(from, "--from")) / 1e9;
    if (!to.empty()) to_s = static_cast<double>(parse_duration_ns(to, "--to")) / 1e9;
  } catch (const std::exception& e) {
    err(e.what());
    return 2;
  }
  if (from_s >= 0 && to_s >= 0 && to_s <= from_s) {
    err("--to must be later than --from");
    return 2;
  }
  return 0;
}

int parse_rotation(const std::string& max_size, int rotate, const std::string& output, RotateOptions& out) {
  out = RotateOptions{};
  if (max_size.empty()) {
    if (rotate >= 0) {
      err("--rotate needs --max-size SIZE");
      return 2;
    }
    return 0;
  }
  if (rotate < 0) {
    err("--max-size needs --rotate N (closed files to keep as FILE.1 .. FILE.N; 0 keeps none)");
    return 2;
  }
  if (rotate > 1000) {
    err("--rotate: at most 1000 closed files");
    return 2;
  }
  if (output == "-") {
    err("--max-size: rotation needs -o FILE, not stdout");
    return 2;
  }
  try {
    out.max_bytes = parse_size_bytes(max_size, "--max-size");
  } catch (const std::exception& e) {
    err(e.what());
    return 2;
  }
  if (out.max_bytes < (64u << 10)) {
    err(fmt::format("--max-size {}: at least 64K (a file holds the metadata and at least one sample)", max_size));
    return 2;
  }
  out.keep = static_cast<unsigned>(rotate);
  return 0;
}

int run_info(const InfoCmd& o) {
  if (o.file.empty()) {
    err("info needs a recording FILE");
    return 2;
  }
  auto r = open_recording(o.file, "info");
  if (!r) return 1;
  nlohmann::json j;
  try {
    j = recording_info(*r, o.file, &g_stop);
  } catch (const std::exception& e) {
    err(e.what());
    return g_stop.load() ? 130 : 1;
  }
  if (o.json)
    fmt::print("{}\n", json_text(j, 2));
  else
    fmt::print("{}", render_info_text(j));
  return 0;
}

int run_export(const ExportCmd& o) {
  if (o.file.empty()) {
    err("export needs a recording FILE");
    return 2;
  }
  if (o.output.empty()) {
    err("-o: an empty path (- is stdout)");
    return 2;
  }
  ExportOptions opts;
  std::vector<int> cpus;
  try {
    opts.format = parse_export_format(o.format);
    if (!o.cpus.empty()) cpus = parse_cpulist(o.cpus);
  } catch (const std::exception& e) {
    err(e.what());
    return 2;
  }
  if (int rc = parse_window(o.from, o.to, opts.from_s, opts.to_s)) return rc;
  auto r = open_recording(o.file, "export");
  if (!r) return 1;
  for (int c : cpus)
    if (c >= static_cast<int>(r->meta().ncpus)) {
      err(fmt::format("--cpus: CPU {} is not in the recording ({} CPUs)", c, r->meta().ncpus));
      return 2;
    }
  opts.stop = &g_stop;
  // Time zero is the first sample; with --from, the cursor starts decoding at the window's
  // start with its slack (the index makes that a short seek): export_samples() applies the window.
  const SampleWindow win{opts.from_s, opts.to_s, r->meta().interval_ns};
  WindowedCursor cur(*r, r.get(), win, WindowCheck::seek);
  if (cur.read_t0()) {
    err(fmt::format("{} has no readable samples{}", o.file, r->damage() ? " (damaged " + damage_text(*r) + ")" : ""));
    return 1;
  }
  opts.t0_mono_ns = *cur.t0();
  {
    // The CPUs online at some point of the window: the default rows, and what --cpus may name.
    const uint64_t to_mono = opts.to_s < 0 ? UINT64_MAX
                                           : *cur.t0() + static_cast<uint64_t>((opts.to_s + win.slack_s()) * 1e9);
    const std::vector<int> online = r->online_cpus(*cur.t0() + win.start_ns(), to_mono);
    cur.reader_moved();
    for (int c : cpus)
      if (!online.empty() && !std::binary_search(online.begin(), online.end(), c)) {
        err(fmt::format("--cpus: CPU {} was never online in the {} (online at some point: {})", c,
                        opts.from_s < 0 && opts.to_s < 0 ? "recording" : "window", format_cpulist(online)));
        return 2;
      }
    opts.cpus = cpus.empty() ? online : cpus;
  }
  if (cur.seek_start()) {
    err(fmt::format("{}: no samples at or after --from {}", o.file, o.from));
    return 1;
  }
  // Where the bytes go: stdout; a device or FIFO named by -o, written in place (/dev/null
  // stays a device); else a temporary file renamed over the destination at the end, so a
  // failed export leaves nothing half-written (through a symlink: next to its target, so
  // the link stays; over an existing file only with --force, keeping its mode and owner).
  const bool to_stdout = o.output == "-";
  std::string dest = o.output;
  bool in_place = false;
  struct stat old_st {};
  const bool existed = !to_stdout && ::stat(o.output.c_str(), &old_st) == 0;
  if (existed) {
    if (S_ISDIR(old_st.st_mode)) {
      err(fmt::format("-o {}: is a directory", o.output));
      return 2;
    }
    struct stat in_st {};
    if (::stat(o.file.c_str(), &in_st) == 0 && in_st.st_dev == old_st.st_dev && in_st.st_ino == old_st.st_ino) {
      err(fmt::format("-o {}: is the recording being exported", o.output));
      return 2;
    }
    in_place = !S_ISREG(old_st.st_mode);
    if (!in_place && !o.force) {
      err(fmt::format("{} exists; choose another name or pass --force", o.output));
      return 1;
    }
    if (!in_place)
      if (char* rp = ::realpath(o.output.c_str(), nullptr)) {
        dest = rp;
        ::free(rp);
      }
  }
  // A dangling symlink (or a chain of them): the export creates the last target, and every
  // link stays; a loop is an error.
  struct stat link_st {};
  for (int hops = 0; !to_stdout && !existed && ::lstat(dest.c_str(), &link_st) == 0 && S_ISLNK(link_st.st_mode); ++hops) {
    std::string target(size_t(PATH_MAX), '\0');
    ssize_t n = hops < 40 ? ::readlink(dest.c_str(), target.data(), target.size()) : -1;
    if (n <= 0) {
      err(fmt::format("-o {}: {}", o.output, hops < 40 ? strerror(errno) : strerror(ELOOP)));
      return 1;
    }
    target.resize(size_t(n));
    const auto slash = dest.rfind('/');
    dest = target[0] == '/' || slash == std::string::npos ? target : dest.substr(0, slash + 1) + target;
  }
  const bool via_tmp = !to_stdout && !in_place;
  const std::string tmp = via_tmp ? fmt::format("{}.tmp{}", dest, getpid()) : "";
  std::ofstream file;
  if (!to_stdout) {
    file.open(via_tmp ? tmp : o.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      err(fmt::format("cannot write {}: {}", o.output, strerror(errno)));
      return 1;
    }
  }
  std::ostream& out = to_stdout ? std::cout : file;
  ExportResult res;
  try {
    res = export_samples(cur, out, opts, [&] { return recording_source_info(*r, o.file); });
    if (!to_stdout) {
      file.close();
      if (!file) throw std::runtime_error(fmt::format("write failed: {}", strerror(errno)));
    } else if (!std::cout.flush()) {
      throw std::runtime_error(fmt::format("write failed: {}", strerror(errno)));
    }
  } catch (const std::exception& e) {
    if (to_stdout && errno == EPIPE) return 1;  // the reader left (| head): quiet, as with SIGPIPE
    if (via_tmp) ::unlink(tmp.c_str());
    if (g_stop.load()) {
      err("interrupted");
      return 130;
    }
    err(fmt::format("export to {}: {}", to_stdout ? "stdout" : o.output, e.what()));
    return 1;
  }
  if (res.intervals == 0) {
    if (via_tmp) ::unlink(tmp.c_str());
    err(fmt::format("{}: {} sample{} in the window, need two for an interval{}", o.file, res.samples,
                    res.samples == 1 ? "" : "s",
                    r->damage() ? " (reading stopped: damaged " + damage_text(*r) + ")" : ""));
    return 1;
  }
  if (via_tmp) {
    if (existed) {  // best effort: the replaced file's permissions and owner
      (void)::chmod(tmp.c_str(), old_st.st_mode & 07777);
      (void)!::chown(tmp.c_str(), old_st.st_uid, old_st.st_gid);
    }
    if (::rename(tmp.c_str(), dest.c_str()) != 0) {
      err(fmt::format("cannot rename {} to {}: {}", tmp, dest, strerror(errno)));
      ::unlink(tmp.c_str());
      return 1;
    }
  }
  if (r->damage())
    err(fmt::format("{} is damaged {}; exported the {} samples before it", o.file, damage_text(*r), res.samples));
  return 0;
}

}  // namespace schedhot::cli
