// `schedhot record`: a live session driven into a recording, from the output opened ahead
// to the closing summary.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "live/session.h"
#include "store/rotate.h"

namespace schedhot {

/// A record run, its options parsed (src/cli/cmd_record.cpp).
struct RecordRequest {
  LiveProbeOptions probes;
  uint64_t duration_ns = 0;      ///< 0: until stopped
  uint64_t interval_ns = 1'000'000'000;
  uint64_t start_at_ns = 0;      ///< --start-at: the baseline's CLOCK_REALTIME instant, ns (0: at once)
  std::string start_at;          ///< --start-at as given, for messages
  std::string output;            ///< -o FILE, "-" for stdout
  bool force = false;            ///< replace an existing FILE
  bool compress = true;
  bool quiet = false;            ///< only errors on stderr
  RotateOptions rotate;          ///< max_bytes 0: one file
  uint64_t flight_ns = 0;        ///< --flight D: output is a DIR of [firing - D, firing + D] files (store/flight.h); 0: off
  unsigned flight_max = 100;     ///< --flight-max: files in total
  uint64_t flight_mem = uint64_t(1) << 30;  ///< --flight-mem: held samples' bytes at most
  std::string command_line;      ///< META's
  const std::atomic<bool>* stop = nullptr;  ///< SIGINT/SIGTERM: a final sample, then the end
};

/// Records: refuses an existing FILE without --force, opens the output before attaching
/// (a symlink planted at the path meanwhile is never followed), opens the LiveSession,
/// waits for --start-at, takes the baseline and says what is recorded (stderr, say()), then
/// records to the end or the stop and says what was written. Returns the exit status: 0,
/// 1 (a failed write, a file that exists: one line said), 130 stopped before --start-at.
/// Throws LiveError (attach, no probe) and UsageError.
/// With flight_ns: the flight recorder (store/flight.h) into the directory `output`,
/// opened (and checked) before attaching; each file written said on stderr (unless quiet),
/// and a summary at the end (firings, files, firings inside a file, skipped ones).
int record(const RecordRequest& r);

/// Sleeps until CLOCK_REALTIME reaches at_ns (ns since the epoch), in slices of at most
/// 100 ms so a stop is seen; the last slice is an absolute clock_nanosleep. False when
/// stopped before the instant.
bool sleep_until_wall(uint64_t at_ns, const std::atomic<bool>* stop);

}  // namespace schedhot
