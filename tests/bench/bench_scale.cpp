// User-space cost of schedhot at scale, without a kernel: synthetic samples of N possible
// CPUs (tests/bench/synthetic.h, default 8192), measured against the goals of issue 15.
//   report   `schedhot report FILE` of a 100-sample recording, run as a child process:
//            wall time and peak RSS (wait4's rusage); then the same report in this
//            process split into phases (decode each sample, ReportBuilder::add, build
//            the JSON, render the text) to show where the time goes.
//   sampler  CPU time per interval of LiveSource taking a sample from a fake SlotReader
//            whose per-probe arrays stand for the BPF maps (copied with copy_slots, as
//            ProbeSet::read does), and of `record`'s RecordingWriter::write_sample; for a
//            busy machine (every CPU's slots change) and an idle one (1 CPU in 64 changes).
// Nothing about speed is asserted; exit 1 only when a step fails (the report command's
// exit status, a sample that does not come).
//
//   fleet    `schedhot report --fleet DIR` over N hosts of 480 CPUs x 60 samples (symlinks
//            to one synthetic recording), default and --every-interval: seconds a host.
//
// usage: schedhot_bench_scale [--short] [--cpus N] [--samples N] [--fleet-hosts N] [--schedhot PATH]
//   default 8192 CPUs, 100 samples, 10 sampler intervals (the sampler also at 480 and
//   1024 CPUs), 100 fleet hosts; --short (CI): 1024 CPUs, 10 samples, 3 intervals, 8 fleet
//   hosts. Without --schedhot the child-process report and the fleet are skipped.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/fake_slots.h"
#include "bench/synthetic.h"
#include "command/report.h"
#include "output/report_text.h"

using namespace schedhot;
using namespace schedhot::bench;

namespace {

constexpr double kReportGoalS = 2, kReportGoalMB = 300, kSampleGoalPct = 2;

/// The sampler at nc possible CPUs: prints its figures; false when no sample came.
bool bench_sampler(uint32_t nc, int intervals) {
  fmt::print("sampling {} possible CPUs, CPU ms per interval (median of {}); goal < {}% of a core at 1 s = {:.0f} ms\n",
             nc, intervals, kSampleGoalPct, kSampleGoalPct * 10);
  const Meta m = big_meta(nc);
  for (int busy_every : {1, 64}) {
    const SamplerCost cost = sampler_cost(m, intervals, busy_every);
    if (!cost.ok) {
      fmt::print(stderr, "schedhot: bench_scale: the live source gave no sample\n");
      return false;
    }
    FakeSlots slots(m);
    slots.advance(0, busy_every);
    // Where take's time goes: a new zeroed Sample (LiveSource::take makes one per
    // interval), the copy into its fresh pages, and the same copy into reused buffers.
    std::vector<double> fresh, copy, reuse, release;
    for (int k = 0; k < 3; ++k) {
      const double c0 = cpu_ms();
      Sample f = make_sample(m);
      const double c1 = cpu_ms();
      slots.read(f);
      const double c2 = cpu_ms();
      slots.read(f);
      const double c3 = cpu_ms();
      f = Sample{};
      release.push_back(cpu_ms() - c3);
      fresh.push_back(c1 - c0);
      copy.push_back(c2 - c1);
      reuse.push_back(c3 - c2);
    }
    const double t = cost.take, wr = cost.write;
    fmt::print("  {:<24} take a sample {:7.1f}   + record's write_sample {:7.1f}   = {:7.1f} ms = {:.1f}% of a core ({})\n",
               busy_every == 1 ? "busy (every CPU)" : "idle (1 CPU in 64 busy)", t, wr, t + wr, (t + wr) / 10,
               verdict((t + wr) / 10, kSampleGoalPct));
    fmt::print("  {:<24} of which: make_sample {:.1f}, copy_slots into its new pages {:.1f} (into reused buffers {:.1f}),\n"
               "  {:<24} freeing the previous sample {:.1f}\n", "", median(fresh), median(copy), median(reuse), "",
               median(release));
  }
  return true;
}

/// `schedhot report --fleet DIR` over hosts copies (symlinks) of one 480-CPU x 60-sample
/// recording, the shape of issue 13's goal (1,000 hosts in under a minute on 2 cores):
/// the default (mean rates; --jobs: the CPUs, at most 4) and --every-interval.
bool bench_fleet(const std::string& schedhot, int hosts) {
  namespace fs = std::filesystem;
  const std::string path = write_recording(480, 60, "fleet");
  const fs::path dir = fmt::format("/tmp/schedhot-bench-fleet-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int h = 0; h < hosts; ++h) fs::create_symlink(path, dir / fmt::format("host{:04}.shot", h));
  fmt::print("report --fleet of {} hosts, each 480 CPUs x 60 samples ({:.1f} MB); goal 1,000 hosts in 60 s\n", hosts,
             double(fs::file_size(path)) / 1e6);
  bool ok = true;
  for (const char* mode : {"", "--every-interval"}) {
    std::vector<std::string> args{schedhot, "report", "--fleet", dir.string(), "--json"};
    if (*mode) args.push_back(mode);
    const ChildRun r = run_child(args);
    ok &= r.status == 0;
    const double per = r.wall_s / hosts;
    fmt::print("  {:<18} {:.2f} s = {:.0f} ms a host -> 1,000 hosts in {:.0f} s ({}), peak RSS {:.0f} MB\n",
               std::string(*mode ? mode : "default"), r.wall_s, per * 1e3, per * 1000, verdict(per * 1000, 60), r.peak_mb);
    if (r.status != 0) fmt::print(stderr, "schedhot: bench_scale: `schedhot report --fleet` exited with {}\n", r.status);
  }
  fs::remove_all(dir);
  std::remove(path.c_str());
  return ok;
}

int usage() {
  fmt::print(stderr, "usage: schedhot_bench_scale [--short] [--cpus N] [--samples N] [--fleet-hosts N] [--schedhot PATH] [--keep]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  start_spawner();  // children spawned from a small process: their own peak RSS
  uint32_t ncpus = 8192;
  int nsamples = 100, intervals = 10, fleet_hosts = 100;
  std::string schedhot;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--short") {
      ncpus = 1024;
      nsamples = 10;
      intervals = 3;
      fleet_hosts = 8;
    } else if (a == "--fleet-hosts" && i + 1 < argc) {
      fleet_hosts = std::atoi(argv[++i]);
    } else if (a == "--cpus" && i + 1 < argc) {
      ncpus = uint32_t(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--samples" && i + 1 < argc) {
      nsamples = std::atoi(argv[++i]);
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--schedhot" && i + 1 < argc) {
      schedhot = argv[++i];
    } else {
      return usage();
    }
  }
  if (ncpus < 16 || nsamples < 2) return usage();
  int status = 0;

  // ---- report ----
  auto t0 = Clock::now();
  const std::string path = write_recording(ncpus, nsamples, "scale");
  const double write_s = ms_since(t0) / 1e3;
  fmt::print("schedhot user-space cost at {} CPUs (synthetic, every probe busy on every CPU)\n", ncpus);
  fmt::print("report of {} samples ({:.1f} MB file, written in {:.1f} s); goal {} s and {} MB at 100 samples\n",
             nsamples, double(std::filesystem::file_size(path)) / 1e6, write_s, kReportGoalS, kReportGoalMB);
  if (!schedhot.empty()) {
    ChildRun r = run_child({schedhot, "report", path});
    if (r.status != 0) {
      fmt::print(stderr, "schedhot: bench_scale: `schedhot report` exited with {}\n", r.status);
      status = 1;
    }
    fmt::print("  schedhot report: {:.2f} s ({}), peak RSS {:.0f} MB ({})\n", r.wall_s,
               nsamples == 100 ? verdict(r.wall_s, kReportGoalS) : "not 100 samples", r.peak_mb,
               verdict(r.peak_mb, kReportGoalMB));
  }
  {
    auto reader = RecordingReader::open(path);
    const Meta& m = reader->meta();
    ReportBuilder b(m, ReportOptions{});
    double decode = 0, add = 0;
    Sample s;
    int n = 0;
    for (;;) {
      auto d0 = Clock::now();
      if (!reader->next(s)) break;
      decode += ms_since(d0);
      auto a0 = Clock::now();
      b.take(s);
      add += ms_since(a0);
      ++n;
    }
    auto j0 = Clock::now();
    nlohmann::json doc = b.build(m, recording_source_info(*reader, path));
    const double build = ms_since(j0);
    auto r0 = Clock::now();
    const std::string text = render_report_text(doc);
    const double render = ms_since(r0);
    size_t words = 0;  // of the last sample (s is the builder's spare, its words let go)
    if (const Sample* last = b.window_last())
      for (const auto& p : last->probes) words += p.words.size();
    fmt::print("  in process, ms: decode {:.0f} ({:.1f}/sample), ReportBuilder::add {:.0f} ({:.1f}/sample), "
               "build JSON {:.0f}, render text {:.0f}; {} samples read\n",
               decode, decode / n, add, add / n, build, render, n);
    fmt::print("  one decoded Sample holds {} words = {:.0f} MB ({:.0f} KB per CPU); the builder keeps 3 (first, latest, the one before), `schedhot report` no other\n",
               words, double(words) * 8 / 1e6, double(words) * 8 / 1024 / ncpus);
    if (n != nsamples || text.empty()) {
      fmt::print(stderr, "schedhot: bench_scale: the report read {} of {} samples\n", n, nsamples);
      status = 1;
    }
  }
  if (keep)
    fmt::print("  kept the recording: {}\n", path);
  else
    std::remove(path.c_str());

  // ---- fleet ----
  if (!schedhot.empty() && fleet_hosts > 0 && !bench_fleet(schedhot, fleet_hosts)) status = 1;

  // ---- sampler ----
  // The sizes (480, 1024) below the one asked for, then that one.
  std::vector<uint32_t> sizes;
  for (uint32_t z : {480u, 1024u})
    if (z < ncpus) sizes.push_back(z);
  sizes.push_back(ncpus);
  for (uint32_t nc : sizes)
    if (!bench_sampler(nc, intervals)) return 1;
  return status;
}
