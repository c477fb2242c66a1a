#include "command/export.h"

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
#include "analysis/report.h"

namespace schedhot {

namespace {

std::string damage_text(const RecordingReader& r) {
  return fmt::format("at byte {}: {}", r.damage()->offset, r.damage()->reason);
}

}  // namespace

CommandOutput export_command(const ExportRequest& req, std::ostream& stdout_stream) {
  CommandOutput res;
  auto fail = [&res](int status, std::string msg) {
    res.status = status;
    if (!msg.empty()) res.errors.push_back(std::move(msg));
    return res;
  };
  std::unique_ptr<RecordingReader> r;
  try {
    r = RecordingReader::open(req.file);
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
  for (int c : req.cpus)
    if (c >= static_cast<int>(r->meta().ncpus))
      return fail(2, fmt::format("--cpus: CPU {} is not in the recording ({} CPUs)", c, r->meta().ncpus));
  ExportOptions opts = req.opts;
  const bool folded = opts.format == ExportFormat::folded;
  const char* kNoCaught = "no --catch rules in this recording: record with --catch to catch tail events";
  if (folded && r->meta().catch_rules.empty()) return fail(1, kNoCaught);
  // Time zero is the first sample; with --from, the cursor starts decoding at the window's
  // start with its slack (the index makes that a short seek): export_samples() applies the window.
  WindowedCursor cur(*r, r.get(), SampleWindow{opts.from_s, opts.to_s, r->meta().interval_ns}, WindowCheck::seek);
  if (cur.read_t0())
    return fail(1, fmt::format("{} has no readable samples{}", req.file,
                               r->damage() ? " (damaged " + damage_text(*r) + ")" : ""));
  opts.t0_mono_ns = *cur.t0();
  {
    // The CPUs online at some point of the window: the default rows, and what --cpus may name.
    const std::vector<int> online = cur.online_cpus();
    for (int c : req.cpus)
      if (!online.empty() && !std::binary_search(online.begin(), online.end(), c))
        return fail(2, fmt::format("--cpus: CPU {} was never online in the {} (online at some point: {})", c,
                                   opts.from_s < 0 && opts.to_s < 0 ? "recording" : "window", format_cpulist(online)));
    opts.cpus = req.cpus.empty() ? online : req.cpus;
  }
  // The CSV's per-CPU line columns: rows x lines cells an interval, and the lines grow with
  // the CPUs (a cpumask is CPUs / 512 lines): left out past the bound unless --lines says,
  // and said so on stderr (as perf stat aggregates unless -A asks for every CPU).
  opts.line_columns = req.lines != "none";
  if (opts.format == ExportFormat::csv && req.lines.empty()) {
    const uint64_t nlines = possible_lines(r->meta(), layout_of(r->meta())).size(), rows = opts.cpus.size();
    if (nlines * rows > kCsvLineCellsMax) {
      opts.line_columns = false;
      res.errors.push_back(fmt::format(
          "note: {}: no per-CPU line columns in the CSV: {} CPUs x {} modeled lines would be {} cells an interval "
          "(~{} MB; at most {} by default): --lines cpu writes them, fewer --cpus shrink them, --format json has "
          "each line's figures",
          req.file, rows, nlines, nlines * rows, (nlines * rows * 6 + 999'999) / 1'000'000, kCsvLineCellsMax));
    }
  }
  if (WindowProblem wp = cur.seek_start())
    return fail(1, fmt::format("{}: no samples at or after --from {}{}", req.file, req.from,
                               wp.span_s ? fmt::format("; the samples span +0..+{:.2f} s", *wp.span_s) : std::string()));
  // Where the bytes go: stdout; a device or FIFO named by -o, written in place (/dev/null
  // stays a device); else a temporary file renamed over the destination at the end, so a
  // failed export leaves nothing half-written (through a symlink: next to its target, so
  // the link stays; over an existing file only with --force, keeping its mode and owner).
  const std::string& output = req.output;
  const bool to_stdout = output == "-";
  if (!to_stdout) {
    if (std::string why = unsafe_output_path(output); !why.empty()) return fail(1, fmt::format("-o {}: {}", output, why));
    if (std::string why = untrusted_symlink(output); !why.empty()) return fail(1, fmt::format("-o {}: {}", output, why));
  }
  std::string dest = output;
  bool in_place = false;
  struct stat old_st {};
  const bool existed = !to_stdout && ::stat(output.c_str(), &old_st) == 0;
  if (existed) {
    if (S_ISDIR(old_st.st_mode)) return fail(2, fmt::format("-o {}: is a directory", output));
    struct stat in_st {};
    if (::stat(req.file.c_str(), &in_st) == 0 && in_st.st_dev == old_st.st_dev && in_st.st_ino == old_st.st_ino)
      return fail(2, fmt::format("-o {}: is the recording being exported", output));
    in_place = !S_ISREG(old_st.st_mode);
    // A block device holds a filesystem or a disk: written over only with --force (as record's -o).
    if ((!in_place || S_ISBLK(old_st.st_mode)) && !req.force)
      return fail(1, fmt::format("{} exists{}; choose another name or pass --force", output,
                                 S_ISBLK(old_st.st_mode) ? " (a block device)" : ""));
    if (!in_place) {
      // Replaced through a new file renamed over it: over the link's target only when the
      // link may be followed (checked now: a link planted since the checks above is not),
      // else over the name itself, which a rename replaces without following anything.
      dest = replacement_target(output);
      if (dest.empty()) return fail(1, fmt::format("-o {}: {}", output, untrusted_symlink(output)));
      if (std::string why = unsafe_output_path(dest); !why.empty()) return fail(1, fmt::format("-o {}: {}", output, why));
    }
  }
  // A dangling symlink (or a chain of them): a name that is there, so only with --force (as
  // record's -o); then the export creates the last target, and every link stays; a loop is
  // an error.
  struct stat link_st {};
  if (!to_stdout && !existed && !req.force && ::lstat(dest.c_str(), &link_st) == 0 && S_ISLNK(link_st.st_mode))
    return fail(1, fmt::format("{} exists (a symlink to nothing); choose another name or pass --force", output));
  // Each link is checked as it is followed (one planted since the checks above is seen
  // here, never followed), and so is the path of its target.
  for (int hops = 0; !to_stdout && !existed && ::lstat(dest.c_str(), &link_st) == 0 && S_ISLNK(link_st.st_mode); ++hops) {
    if (std::string why = untrusted_symlink(dest); !why.empty()) return fail(1, fmt::format("-o {}: {}", output, why));
    std::string target;
    if (hops >= 40 || !symlink_target(dest, target))
      return fail(1, fmt::format("-o {}: {}", output, hops < 40 ? strerror(errno) : strerror(ELOOP)));
    dest = target;
    if (std::string why = unsafe_output_path(dest); !why.empty()) return fail(1, fmt::format("-o {}: {}", output, why));
  }
  const bool via_tmp = !to_stdout && !in_place;
  // The temporary file has a random name (create_temp_beside: O_EXCL, never through a link
  // or FIFO another user planted) and is written through the descriptor that made it.
  OwnedFile tmp;
  std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> filebuf;
  std::ostream file(nullptr);
  if (!to_stdout) {
    int fd = -1;
    if (via_tmp) {
      try {
        fd = create_temp_beside(dest, tmp);
      } catch (const std::runtime_error& e) {
        return fail(1, fmt::format("cannot write {}: {}", output, e.what()));
      }
    } else {
      // A device or FIFO, in place. O_NONBLOCK: a FIFO without a reader is ENXIO at once, as
      // record says it, not a wait; cleared once open.
      fd = ::open(output.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
      if (fd < 0 && errno == ENXIO) {
        struct stat xs {};
        if (::stat(output.c_str(), &xs) == 0 && S_ISFIFO(xs.st_mode))
          return fail(1, fmt::format("{} is a FIFO with no reader; start the reader first", output));
      }
      if (fd < 0) return fail(1, fmt::format("cannot write {}: {}", output, strerror(errno)));
      if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    }
    filebuf = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, std::ios::out | std::ios::binary, size_t(1) << 16);
    file.rdbuf(filebuf.get());
  }
  std::ostream& out = to_stdout ? stdout_stream : file;
  ExportResult done;
  try {
    done = export_samples(cur, out, opts, [&] { return recording_source_info(*r, req.file); });
    if (via_tmp && existed) {  // best effort: the replaced file's permissions and owner, on the descriptor (never a path)
      (void)::fchmod(filebuf->fd(), old_st.st_mode & 07777);
      (void)!::fchown(filebuf->fd(), old_st.st_uid, old_st.st_gid);
    }
    if (!to_stdout) {
      file.flush();
      const bool written = bool(file);
      if (filebuf->close() == nullptr || !written) throw std::runtime_error(fmt::format("write failed: {}", strerror(errno)));
    } else if (!stdout_stream.flush()) {
      throw std::runtime_error(fmt::format("write failed: {}", strerror(errno)));
    }
  } catch (const std::exception& e) {
    if (to_stdout && errno == EPIPE) return fail(1, "");  // the reader left (| head): quiet, as with SIGPIPE
    if (via_tmp) tmp.remove();
    if (opts.stop && opts.stop->load()) return fail(130, "interrupted");
    return fail(1, fmt::format("export to {}: {}", to_stdout ? "stdout" : output, e.what()));
  }
  if (done.intervals == 0) {
    if (via_tmp) tmp.remove();
    return fail(1, fmt::format("{}: {} sample{} in the window{}{}, need two for an interval{}", req.file, done.samples,
                               done.samples == 1 ? "" : "s", req.from.empty() ? "" : " --from " + req.from,
                               req.to.empty() ? "" : " --to " + req.to,
                               r->damage() ? " (reading stopped: damaged " + damage_text(*r) + ")" : ""));
  }
  if (folded && done.caught == 0) {
    if (via_tmp) tmp.remove();
    return fail(1, req.from.empty() && req.to.empty() ? std::string("no caught events in this recording: its --catch "
                                                                  "rules never reached their threshold")
                                                      : fmt::format("no caught events in the window{}{}",
                                                                    req.from.empty() ? "" : " --from " + req.from,
                                                                    req.to.empty() ? "" : " --to " + req.to));
  }
  if (via_tmp)
    if (const int e = tmp.replace(dest))  // the temporary file removed
      return fail(1, fmt::format("cannot rename {} to {}: {}", tmp.path(), dest, strerror(e)));
  if (r->damage())
    res.errors.push_back(damage_line(req.file, *r->damage(), "exported", done.samples));
  // A window asked to end past the recording ends at its last sample: said, as report says it.
  const SampleWindow w{opts.from_s, opts.to_s, r->meta().interval_ns};
  if (!done.past_window && opts.to_s >= 0 && opts.to_s > done.last_t + w.slack_s() && !r->damage())
    res.errors.push_back(fmt::format("note: {}: --to {} is after the last sample (+{:.2f} s): the window ends there",
                                     req.file, req.to, done.last_t));
  return res;
}

}  // namespace schedhot
