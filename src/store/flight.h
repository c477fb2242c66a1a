// The flight recorder of `record --flight D --catch RULES -o DIR` (issue 31): the last D of
// samples held in memory, and a recording of [firing - D, firing + D] written into DIR each
// time a --catch rule fires, so a machine can run it for weeks and keep only the moments that
// matter.
//
// A firing is one caught event (Sample::caught: every event there is one of an armed rule).
// The first firing starts a file DIR/<UTC time of the event>-<probe>.shot (e.g.
// 20261206T081530Z-idle.shot; "-1", "-2" ... appended when the name is taken) holding the
// held samples from the latest one at or before firing - D (the oldest held when the run is
// younger), then every sample as it comes until the first at or after firing + D; then the
// file is closed (INDEX, END, fsync). Firings while a file is open extend nothing: they are
// in that file's CATCH frames (its META command says so). A firing after the file's end
// starts a new file; so at most one file starts per D. Caps: max_files files in total (then
// no more, said once; the run goes on).
//
// Each file is a normal recording (RecordingWriter with the run's META, its start times
// those of the file's first sample; that sample is written without the caught events, gap
// counts and --exact records of its interval, which lies before the file): a closed file
// is complete whatever happens to the process later, the one in progress readable up to
// its last complete frame, as any unclosed recording.
//
// DIR: created (mode 0755 & ~umask, as record's files are 0644) when missing; refused when
// it is a symlink, not a directory, another user's, writable by its group or others (a
// hostile local user must not plant names in it for root to write through), or reached
// through a path another user could redirect (unsafe_output_path). Files are created with
// openat(dirfd, O_CREAT | O_EXCL | O_NOFOLLOW) relative to the directory opened once.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/recording.h"

namespace schedhot {

/// How a FlightRecorder runs.
struct FlightOptions {
  uint64_t window_ns = 30'000'000'000ull;  ///< D: held before a firing, written after it
  uint64_t interval_ns = 1'000'000'000;    ///< the run's sample interval (bounds the held samples)
  unsigned max_files = 100;                ///< --flight-max: files in total
  /// --flight-mem: the held samples' bytes (sample_bytes) at most; past it the oldest are
  /// dropped, so a file starts less than D before its firing (said once, counted).
  uint64_t max_held_bytes = uint64_t(1) << 30;
  WriterOptions writer;                    ///< compress; overwrite and prepared are the recorder's
  std::function<void(const std::string&)> say;    ///< each file written, the cap reached (null: silent)
  std::function<void(const std::string&)> error;  ///< a write error (null: say)
};

/// What a FlightRecorder did.
struct FlightStats {
  uint64_t firings = 0;      ///< caught events seen
  uint64_t inside = 0;       ///< of them, inside a file in progress (written there, extended nothing)
  uint64_t skipped_cap = 0;  ///< after --flight-max files: not written
  uint64_t skipped_rate = 0; ///< less than D after the last file's firing, outside any file (never, by construction)
  uint64_t failed = 0;       ///< files that a write error cut short
  uint64_t trimmed = 0;      ///< held samples dropped before their time for --flight-mem
  unsigned files = 0;        ///< files started
  uint64_t bytes = 0;        ///< written to all files
};

/// Opens dir as the flight recorder's directory (creating it when missing, mode 0755 &
/// ~umask), O_DIRECTORY | O_NOFOLLOW. Returns the descriptor; throws std::runtime_error with
/// one line naming dir and why (a symlink, not a directory, another user's, writable by its
/// group or others, an unsafe path to it, mkdir or open failed).
/// created (optional): set when this call made the directory.
int open_flight_dir(const std::string& dir, bool* created = nullptr);

/// The samples held for a window of window_ns at interval_ns: ceil(window / interval) + 2
/// (one at or before firing - D, and the sample of the firing).
size_t flight_held_cap(uint64_t window_ns, uint64_t interval_ns);

/// The file name of a firing: "<YYYYmmddTHHMMSSZ of wall_ns>-<probe>.shot".
std::string flight_file_name(uint64_t wall_ns, const std::string& probe);

class FlightRecorder {
 public:
  /// Opens dir (open_flight_dir; throws its error).
  FlightRecorder(const std::string& dir, FlightOptions o);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  /// One sample of the run, in order: meta is the run's metadata now (status changes
  /// applied), changed the probes whose status changed with s (NOTEs in the file in
  /// progress). Writes, opens and closes files as above. A write error ends that file (what
  /// was written stays readable), is said, and the run goes on; nothing is thrown.
  void add(const Sample& s, const Meta& meta, const std::vector<int>& changed = {});
  /// Closes the file in progress (the stop). Idempotent.
  void close();

  const FlightStats& stats() const { return st_; }
  /// Paths of the files started, in order.
  const std::vector<std::string>& files() const { return files_; }
  /// Samples held now, and at most.
  size_t held() const { return held_.size(); }
  size_t held_cap() const { return cap_; }
  /// The held samples' bytes now (sample_bytes summed).
  uint64_t held_bytes() const { return held_bytes_; }
  /// A file is being written.
  bool writing() const { return w_ != nullptr; }
  /// "flight: F firings, N files in DIR, I inside a file in progress, S skipped (--flight-max)".
  std::string summary() const;

 private:
  void start(const CaughtEvent& e, const Sample& s, const Meta& meta);
  void finish();  ///< closes w_, says what it wrote
  void failed(const std::exception& e);
  void write(const Sample& s);

  std::string dir_;
  int dirfd_ = -1;
  bool created_ = false;  ///< open_flight_dir made DIR: removed again when no file went in
  FlightOptions o_;
  size_t cap_ = 0;
  std::deque<Sample> held_;
  std::deque<size_t> held_size_;  ///< sample_bytes of each held sample
  uint64_t held_bytes_ = 0;
  bool mem_said_ = false;
  void pop_held();
  std::unique_ptr<RecordingWriter> w_;
  std::string path_;            ///< of w_
  std::string probe_;           ///< the firing probe of w_
  uint64_t fire_ns_ = 0;        ///< the firing of w_ (CLOCK_MONOTONIC)
  uint64_t fire_wall_ns_ = 0;   ///< the same instant, CLOCK_REALTIME (for what it says)
  uint64_t until_ns_ = 0;       ///< fire_ns_ + D
  uint64_t inside_now_ = 0;     ///< firings inside w_
  bool have_fire_ = false;
  uint64_t last_fire_ns_ = 0;   ///< the last file's firing
  bool cap_said_ = false;
  FlightStats st_;
  std::vector<std::string> files_;
};

}  // namespace schedhot
