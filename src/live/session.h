// The live seam: one run against the running kernel, from the privileges check to the
// final sample. `record`, `report --live`, `top` and `serve` each parse their options, open
// a LiveSession and drive it into their sink (a recording, a report, the TUI, the metrics
// registry); none of them attaches or samples on its own.
//
// Lifecycle (as perf's lock contention splits it into prepare/start/read/stop):
//   open   privileges, probe selection, kernel facts, address learning, attach, the META
//          with the gap state's routes (LiveSession's constructor; attach_probes() alone
//          for `probes`, which only attaches);
//   read   a cursor over the intervals: next() blocks to the next deadline, poll() serves an
//          event loop; each sample is recorded when a recording target is set, and comes
//          with the samples missed before it and the BPF programs' run time after it;
//   close  the final sample of a stop (SIGINT, SIGTERM, top's q), the recording's INDEX and
//          END (close()).
// Errors: one type, LiveError (one line and the exit status); a probe that cannot attach is
// a status in meta(), never an error.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/attach.h"
#include "probe/kernel_facts.h"
#include "probe/run_stats.h"
#include "sample/sample.h"
#include "store/driver.h"
#include "sys/host.h"

namespace schedhot {

class LiveSource;
class ProbeSetReader;

/// A live run that cannot start or go on: one line (what()), and the exit status the
/// command returns: 1 at run time (no privileges, unreadable kernel facts, no probe
/// attached, a failed write), 2 for an option that does not fit (--backend, --probes; the
/// caller adds its --help pointer).
class LiveError : public std::runtime_error {
 public:
  LiveError(int status, const std::string& msg) : std::runtime_error(msg), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

/// The probe options every live command takes, as given on its command line.
struct LiveProbeOptions {
  std::string backend = "auto";  ///< --backend: auto, fentry, kprobe, tracepoint (parse_backend_pref)
  std::string probes;            ///< --probes: comma-separated names; "" or "all": every probe
  std::string system_map;        ///< --system-map FILE ("": /proc/kallsyms)
  std::string btf;               ///< --btf FILE: vmlinux BTF when not at /sys/kernel/btf/vmlinux ("" = libbpf's search)
  bool verbose = false;          ///< -v: libbpf's and the verifier's messages, warn()'s notes
  bool exact = false;            ///< --exact (record): every modeled access also sent as a record (AttachOptions::exact)
  bool gap_state = true;         ///< the per-CPU gap state (AttachOptions::gaps); --no-gap-state: off
  uint32_t gap_samples = kGapSamplesPerS;  ///< --gap-samples: AttachOptions::gap_samples_per_s
  std::string catch_rules;       ///< --catch RULES (probe/catch_rules.h); "" none
  uint32_t catch_per_sec = 100;  ///< --catch-rate: caught events per CPU per second, per rule (kCatchPerSec)
};

/// Kernel facts, host facts and the attached probes of one run.
struct Attached {
  KernelFacts facts;
  HostInfo host;
  std::unique_ptr<ProbeSet> probes;
  std::vector<CatchRule> catch_rules;  ///< --catch, as parsed (armed by live_meta)
};

/// Checks privileges, parses the probe selection, reads the kernel's and the host's facts,
/// learns the addresses of cpupri's separate allocations (not with --btf, whose layout is
/// not the running kernel's: a layout note says so) and attaches every selected probe
/// (ProbeSet: a probe that cannot attach is a status). warn receives notes meant for -v (a
/// memlock limit that could not be raised). Throws LiveError: 2 for a bad --backend or
/// --probes, 1 for missing privileges or facts and BPF that cannot load at all.
std::unique_ptr<Attached> attach_probes(const LiveProbeOptions& o,
                                        const std::function<void(const std::string&)>& warn = {});

/// The Meta of a live run on a: sample/sampler.h's catalog_meta() (catalog, statuses, host,
/// version, command line, interval in ns) with the kernel's layout and, with the gap state
/// on, the modeled lines' routes, written into the probes before the baseline sample.
Meta live_meta(const Attached& a, uint64_t interval_ns, const std::string& command_line);

/// How a LiveSession runs.
struct LiveOptions {
  LiveProbeOptions probes;
  uint64_t interval_ns = 1'000'000'000;  ///< between samples, ns
  uint64_t duration_ns = 0;              ///< the run's length, ns (0: until stopped)
  std::string command_line;              ///< META's command line ("": none)
  /// Where the samples are recorded (path "": not recorded). Its `exact` is the session's
  /// to set: the attached probes' --exact records when --exact is on.
  RecordingTarget recording;
  bool run_stats = false;                ///< keep the kernel's BPF run-time statistics on (BpfRunStats)
  const std::atomic<bool>* stop = nullptr;  ///< once set: one final sample, then the end (may be null)
  std::function<void(const std::string&)> warn;  ///< attach_probes()'s -v notes
};

/// One live run: the attached probes, the sampler over them and the recording of what it
/// returns (store/driver.h RecordingDriver, which only passes the samples on when there is
/// no recording target). A SampleSource, so whatever reads a recording (report) reads it.
class LiveSession : public SampleSource {
 public:
  /// attach_probes(), then refuses a run where no probe attached ("no probe could attach:
  /// CAUSE (`schedhot probes` says more)", or "...; `schedhot probes` says why" when the
  /// probes failed differently), then the Meta (live_meta) and the sampler. The recording
  /// file is created with the first sample. Throws LiveError.
  explicit LiveSession(LiveOptions o);
  ~LiveSession() override;
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;

  const Attached& attached() const { return *a_; }
  const std::vector<ProbeStatus>& statuses() const;
  /// Probes attached, and of them those through tracepoint proxies.
  size_t attached_count() const;
  size_t proxy_count() const;

  /// The run's metadata; status changes (a learned lock address) are applied to it.
  const Meta& meta() const override;
  /// Blocking: the next sample (the baseline first, at once; the final sample of a stop),
  /// recorded when recording. False at the end of the run, or once recording failed
  /// (error() says why; that sample is not returned).
  bool next(Sample& out) override;
  /// Non-blocking (an event loop): true with a recorded sample when one was due; false
  /// when none was, at the end, or when recording failed (error()).
  bool poll(Sample& out);
  /// Probes whose status changed with the samples returned since the last call.
  std::vector<int> take_status_changes() override;

  /// The interval, ns; set_interval() re-plans the pending deadline (top's + and -).
  uint64_t interval() const;
  void set_interval(uint64_t ns);
  /// The next sample's deadline, CLOCK_MONOTONIC ns.
  uint64_t due() const;

  /// --catch rules as armed now: attached().catch_rules, with top's edits.
  const std::vector<CatchRule>& catch_rules() const { return a_->catch_rules; }
  /// top's rule editor: re-arms the rule of `probe` at ns rounded up to a histogram bucket's
  /// lower bound (round_threshold), a fixed threshold from now on (a percentile rule stops
  /// re-arming), and updates its entry of catch_rules() (text "probe>ASKED", asked_ns,
  /// threshold_ns). Only a probe that had a rule at the start (its slot counters exist);
  /// META (and a recording's) keeps the rules of the start. Returns the armed threshold.
  /// Throws std::invalid_argument (no rule on that probe, ns 0) or std::runtime_error (the
  /// map update failed).
  uint64_t set_catch_threshold(const std::string& probe, uint64_t ns);

  /// Samples missed between the samples returned so far: missed_samples() of each gap,
  /// judged against the interval in force when the earlier sample was taken, or a longer
  /// one set since (a re-planned wait is no loss).
  uint64_t lost_samples() const { return lost_; }
  /// The BPF programs' run-time totals read right after the last sample returned (zero
  /// when the statistics are off).
  const BpfRunTotals& run_totals() const { return run_totals_; }
  /// The statistics are on (LiveOptions::run_stats, and the kernel let us).
  bool run_stats_on() const;
  /// Why they are off: "not asked", or BpfRunStats::error().
  std::string run_stats_error() const;

  /// The recording: whether there is one, its path, samples, bytes, rotations, summary().
  const RecordingDriver& recording() const { return *rec_; }
  /// The one-line error that ended the recording, nullopt while none.
  const std::optional<std::string>& error() const { return rec_->error(); }
  /// Ends the run: with final_sample one more sample, taken now (a stop), recorded; then
  /// the recording is closed (INDEX and END). Returns RecordingDriver::summary() ("" when
  /// not recording). Throws LiveError (1) with the recording's error. Idempotent.
  std::string close(bool final_sample);

 private:
  /// Accounts for a sample returned: the samples missed before it, the run time after it.
  void took(const Sample& s);
  /// --catch's percentile rules re-armed from s's running histograms (probe/catch_rules.h
  /// percentile_threshold).
  void rearm_percentile_rules(const Sample& s);

  std::unique_ptr<Attached> a_;
  std::unique_ptr<ProbeSetReader> reader_;
  std::unique_ptr<LiveSource> src_;
  std::unique_ptr<RecordingDriver> rec_;
  std::unique_ptr<BpfRunStats> stats_;
  std::vector<int> fds_;  ///< the programs' fds, for the run-time statistics
  BpfRunTotals run_totals_;
  bool have_last_ = false;
  uint64_t last_mono_ns_ = 0;
  uint64_t gap_interval_ = 0;  ///< what the next gap is judged against (lost_samples())
  uint64_t lost_ = 0;
};

}  // namespace schedhot
