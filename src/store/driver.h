// The recording driver of `record` and `top --record`: samples and status changes from a
// live cursor, written through a RotatingWriter (one file, or size-limited files with
// rotation), the final sample of a stop included. Errors are values: once a write fails
// the driver stops recording, keeps what it wrote readable and says so in error().
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/records.h"
#include "probe/catch_reader.h"
#include "sample/sampler.h"
#include "store/rotate.h"

namespace schedhot {

/// Where and how a RecordingDriver writes. path "" = no recording: the driver only passes
/// the samples on (top without --record).
struct RecordingTarget {
  std::string path;
  WriterOptions writer;
  RotateOptions rotate;  ///< max_bytes 0: one file, no rotation
  /// --exact: each sample (but the first) gets the records of its interval from here
  /// (Sample::exact, also in the sample handed back) and the file an EXACT frame; the
  /// records before the first sample are dropped. nullptr: none. Must outlive the driver.
  ExactSource* exact = nullptr;
  /// --catch: each sample (but the first) gets the events caught in its interval from
  /// here (Sample::caught) and the file a CATCH frame. nullptr: none. Must outlive the driver.
  CatchSource* caught = nullptr;
};

/// Reads a LiveCursor and records every sample it returns. The file is created at the
/// first sample (its META carries that sample's start times and the statuses of then);
/// a status change later is written as a NOTE before the sample it came with.
class RecordingDriver {
 public:
  /// src must outlive the driver.
  RecordingDriver(LiveCursor& src, RecordingTarget target);
  ~RecordingDriver();
  RecordingDriver(const RecordingDriver&) = delete;
  RecordingDriver& operator=(const RecordingDriver&) = delete;

  /// Blocking (record's loop): the next sample from src.next(), recorded. False at the
  /// end of src, or when recording failed (error() says; the sample is not returned).
  bool next(Sample& out);
  /// Non-blocking (top's UI loop): true with a recorded sample when src.poll() had one
  /// due; false when none was, at the end, or when recording failed (error()).
  bool poll(Sample& out);
  /// Ends the recording: when final_sample, src.finish() (the sample of a stop: q,
  /// Ctrl-C; a no-op when src already took it or ended), written; then the file is
  /// closed (INDEX and END). Idempotent. False when that failed (error()).
  bool stop(bool final_sample);

  /// Status changes that came with the samples returned since the last call (already
  /// written as NOTEs and in src.meta()).
  std::vector<int> take_status_changes();

  bool recording() const { return !target_.path.empty(); }
  const std::string& path() const { return target_.path; }
  /// Distinct samples written (RotatingWriter::samples), 0 before the file is open.
  uint32_t samples() const;
  /// Bytes written to all files, 0 before the file is open.
  uint64_t bytes() const;
  unsigned rotations() const;
  /// "wrote N samples, B bytes to FILE", with " (R rotation[s])" when it rotated and, with
  /// --exact, "; --exact: R records, L lost" (records written, lost ones reported).
  std::string summary() const;
  /// The one-line error that ended the recording, nullopt while none: the writer's
  /// message when the file could not be created, else "MSG; N samples written before it
  /// are readable".
  const std::optional<std::string>& error() const { return error_; }

 private:
  /// Records s (and the status changes src has) unless recording failed; false then.
  bool record(Sample& s);
  void fail(const std::exception& e);

  LiveCursor& src_;
  RecordingTarget target_;
  std::unique_ptr<RotatingWriter> w_;
  std::vector<int> changed_;
  std::optional<std::string> error_;
  uint64_t exact_records_ = 0, exact_lost_ = 0;  ///< in the samples written
  bool closed_ = false;
  bool exact_started_ = false;
  bool caught_started_ = false;
  uint64_t caught_events_ = 0, caught_lost_ = 0;  ///< in the samples written
};

}  // namespace schedhot
