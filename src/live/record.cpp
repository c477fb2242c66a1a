#include "live/record.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "sample/sampler.h"
#include "store/flight.h"
#include "store/recording.h"
#include "sys/console.h"
#include "sys/units.h"

namespace schedhot {

bool sleep_until_wall(uint64_t at_ns, const std::atomic<bool>* stop) {
  for (;;) {
    if (stop && stop->load()) return false;
    const uint64_t now = wall_now_ns();
    if (now >= at_ns) return true;
    const uint64_t until = std::min<uint64_t>(at_ns, now + 100'000'000ull);
    timespec ts{static_cast<time_t>(until / 1'000'000'000ull), static_cast<long>(until % 1'000'000'000ull)};
    clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr);  // EINTR: the loop looks again
  }
}

namespace {

/// The live session's options of a record run (what is recorded, where: the caller's).
LiveOptions session_options(const RecordRequest& r) {
  LiveOptions lo;
  lo.probes = r.probes;
  lo.interval_ns = r.interval_ns;
  lo.duration_ns = r.duration_ns;
  lo.command_line = r.command_line;
  lo.stop = r.stop;
  lo.warn = say;
  return lo;
}

/// record --flight: the session's samples into a FlightRecorder.
int record_flight(const RecordRequest& r) {
  FlightOptions fo;
  fo.window_ns = r.flight_ns;
  fo.interval_ns = r.interval_ns;
  fo.max_files = r.flight_max;
  fo.max_held_bytes = r.flight_mem;
  fo.writer.compress = r.compress;
  if (!r.quiet) fo.say = say;
  fo.error = say;
  std::unique_ptr<FlightRecorder> fr;
  try {  // DIR opened and checked before attaching
    fr = std::make_unique<FlightRecorder>(r.output, fo);
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
  LiveSession sess(session_options(r));  // not recorded by the session: the flight recorder writes
  if (r.start_at_ns && !sleep_until_wall(r.start_at_ns, r.stop)) {
    say("stopped before --start-at; nothing recorded");
    return 130;
  }
  Sample s;
  if (!sess.next(s)) {
    say(sess.error().value_or("no sample"));
    return 1;
  }
  fr->add(s, sess.meta(), sess.take_status_changes());
  if (!r.quiet) {
    const std::string d = format_ns(double(r.flight_ns));
    say(fmt::format("flight recorder: {} of {} probes every {:.3f} s {}, holding the last {} ({} samples, {} at most); "
                    "a file of [firing - {}, firing + {}] in {} per --catch firing outside a file, at most {} files ({})",
                    sess.attached_count(), sess.statuses().size(), r.interval_ns / 1e9,
                    r.duration_ns ? fmt::format("for {:.1f} s", r.duration_ns / 1e9) : std::string("until stopped"), d,
                    fr->held_cap(), format_bytes(r.flight_mem), d, d, r.output, r.flight_max,
                    r.duration_ns ? "Ctrl-C stops early" : "Ctrl-C or SIGTERM stops it"));
    for (auto& p : sess.statuses())
      if (!p.attached) say(fmt::format("  {} unavailable: {}", p.probe, p.reason));
    // Attached but unable to see its events here (bcast_wait without the lock's address):
    // its figures and rules will say nothing, so said now, not only by report.
    for (size_t i = 0; i < sess.meta().probes.size(); ++i)
      if (sess.meta().probes[i].status.attached)
        if (std::string why = blind_reason(sess.meta(), int(i)); !why.empty())
          say(fmt::format("  {} blind: {}", sess.meta().probes[i].name, why));
  }
  while (sess.next(s)) fr->add(s, sess.meta(), sess.take_status_changes());
  fr->close();  // the stop's final sample came from next(): the file in progress ends with it
  sess.close(false);
  if (!r.quiet) say(fr->summary() + (r.stop && r.stop->load() ? " (stopped by signal)" : ""));
  return fr->stats().failed ? 1 : 0;
}

}  // namespace

int record(const RecordRequest& r) {
  if (r.flight_ns) return record_flight(r);
  struct stat st {};
  if (r.output != "-" && !r.force && !r.rotate.max_bytes && stat(r.output.c_str(), &st) == 0) {
    say(fmt::format("{} exists; choose another name or pass --force", r.output));
    return 1;
  }
  // The file is opened now, before attaching and before --start-at: a symlink planted at
  // the path while the probes attach or while waiting for the instant is never followed
  // (the samples are written from the start on; a file created here is removed again if
  // nothing is recorded). A rotating recording opens its FILE after rotating the old one.
  std::unique_ptr<PreparedOutput> prepared;
  if (r.output != "-" && !r.rotate.max_bytes) {
    try {
      prepared = std::make_unique<PreparedOutput>(r.output, r.force);
    } catch (const std::exception& e) {
      say(e.what());
      return 1;
    }
  }
  LiveOptions lo = session_options(r);
  lo.recording.path = r.output;
  lo.recording.writer.compress = r.compress;
  lo.recording.writer.overwrite = r.force;
  lo.recording.writer.prepared = prepared.get();
  lo.recording.rotate = r.rotate;
  LiveSession sess(std::move(lo));
  if (r.start_at_ns) {  // probes attached first: attaching takes no time of the window
    const uint64_t now = wall_now_ns();
    if (now > r.start_at_ns) {
      say(fmt::format("--start-at {}: attaching the probes took until {:.3f} s past it; starting now", r.start_at,
                      (now - r.start_at_ns) / 1e9));
    } else {
      if (!r.quiet)
        say(fmt::format("waiting {:.3f} s for --start-at {} ({})", (r.start_at_ns - now) / 1e9, r.start_at,
                        format_utc_time(r.start_at_ns)));
      if (!sleep_until_wall(r.start_at_ns, r.stop)) {
        say("stopped before --start-at; nothing recorded");
        return 130;
      }
    }
  }
  if (r.stop && r.stop->load()) {  // stopped while the probes attached: no sample, the old file kept
    say("stopped before the first sample; nothing recorded");
    return 130;
  }
  Sample s;
  if (!sess.next(s)) {  // the baseline; the file is created with it
    say(sess.error().value_or("no sample"));
    return 1;
  }
  if (!r.quiet) {
    const size_t proxies = sess.proxy_count();
    say(fmt::format("recording {} of {} probes{} to {} {} every {:.3f} s ({})", sess.attached_count(),
                    sess.statuses().size(),
                    proxies ? fmt::format(" ({} through tracepoint proxies: schedhot probes says what each counts)", proxies)
                            : std::string(),
                    r.output, r.duration_ns ? fmt::format("for {:.1f} s", r.duration_ns / 1e9) : std::string("until stopped"),
                    r.interval_ns / 1e9, r.duration_ns ? "Ctrl-C stops early" : "Ctrl-C or SIGTERM stops it"));
    for (auto& p : sess.statuses())
      if (!p.attached) say(fmt::format("  {} unavailable: {}", p.probe, p.reason));
    if (r.rotate.max_bytes)
      say(fmt::format("  files of at most {} bytes; closed ones kept as {}.1 .. {}.{}", r.rotate.max_bytes, r.output,
                      r.output, r.rotate.keep));
  }
  while (sess.next(s)) {
  }
  // Blind at the end though not at the start (a lock address never learned): said too.
  std::vector<std::string> blind_at_end;
  for (size_t i = 0; i < sess.meta().probes.size(); ++i)
    if (sess.meta().probes[i].status.attached)
      if (std::string why = blind_reason(sess.meta(), int(i)); !why.empty())
        blind_at_end.push_back(fmt::format("  {} blind: {}", sess.meta().probes[i].name, why));
  const std::string wrote = sess.close(true);  // the stop's final sample is taken by next(); this closes the file
  if (!r.quiet) {
    // Samples the sampler could not take on time (replay and report count them the same
    // way, from the gaps): said here too, not only found later.
    const uint64_t lost = sess.lost_samples();
    say(wrote + (lost ? fmt::format("; {} sample{} missed (a late interval: replay's lost)", lost, lost == 1 ? "" : "s") : "") +
        (r.stop && r.stop->load() ? " (stopped by signal)" : ""));
    for (const std::string& b : blind_at_end) say(b);
  }
  return 0;
}

}  // namespace schedhot
