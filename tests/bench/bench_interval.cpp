// The cost of one interval at a small machine (issue 28, item 6): a recording of 2 CPUs at
// -i 10ms with every probe busy (synthetic samples, no kernel), as `serve`/`record`
// leave it with a 64 MiB rotation size, and what `report`, `export` and `diff` cost on it.
//   report   `schedhot report FILE` of a file grown to the rotation size (64 MiB full,
//            2 MiB --short, its time scaled to 64 MiB and said so), run as a child: wall time
//   interval the same file's intervals in this process: decode a sample (RecordingReader::
//            next) and ReportBuilder::take (rates, peaks, the coherence model with its
//            what-ifs), CPU time per interval; and the child's wall time per interval
//   60 s     a 60 s recording at -i 10ms (6,000 samples): report, export --format csv and
//            json, diff of its two halves (--a 0:30s --b 30s:60s), each as a child: wall time
// Nothing about speed is asserted; exit 1 only when a step fails.
//
// usage: schedhot_bench_interval [--short] [--size MIB] [--schedhot PATH] [--keep]
//   default 64 MiB; --short: 2 MiB. Without --schedhot the child-process figures are skipped.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/synthetic.h"
#include "schedhot/abi.h"
#include "command/report.h"
#include "output/report_text.h"

using namespace schedhot;
using namespace schedhot::bench;

namespace {

constexpr double kReportGoalS = 10;      // report of the 64 MiB file
constexpr double kIntervalGoalUs = 20;   // per interval at 2 CPUs
constexpr uint64_t kInterval = 10'000'000;  // -i 10ms

double cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

/// d to probe p's field (element idx) on cpu; nothing when the layout lacks the field.
void bump(const Meta& m, Sample& s, int p, int cpu, const char* field, uint64_t d, uint32_t idx = 0) {
  if (p < 0 || s.probes[size_t(p)].words.empty()) return;  // unavailable in the fixture's Meta
  const Field* f = m.probes[size_t(p)].slot.find(field);
  if (!f || idx >= f->nwords) return;
  s.probes[size_t(p)].words.mut(size_t(cpu) * m.probes[size_t(p)].slot.slot_words + f->offset + idx) += d;
}

void values(const Meta& m, Sample& s, int p, int cpu, const char* field, uint64_t v, uint64_t n) {
  if (p < 0 || s.probes[size_t(p)].words.empty() || !m.probes[size_t(p)].slot.find(field) || n == 0) return;
  fx::add_values(m, s, p, cpu, field, v, n);
}

/// One 10 ms interval of a busy 2-CPU machine: every probe counts, cpupri_set moves CPUs
/// between NORMAL and a few RT priorities (vec_set/vec_clear elements), k varies the counts.
void advance(const Meta& m, Sample& s, int k) {
  const int idle = m.probe_index("idle"), nx = m.probe_index("nohz_exit"), ne = m.probe_index("nohz_enter"),
            nk = m.probe_index("nohz_kick"), ilb = m.probe_index("ilb_kick"), cs = m.probe_index("cpupri_set"),
            cf = m.probe_index("cpupri_find"), bw = m.probe_index("bcast_wait"), bl = m.probe_index("bcast_lock");
  for (int c = 0; c < int(m.ncpus); ++c) {
    const uint64_t v = uint64_t((k * 7 + c * 13) % 17);  // 0..16
    const uint64_t ex = 20 + v;
    bump(m, s, idle, c, "exits", ex);
    bump(m, s, idle, c, "entries", ex);
    bump(m, s, idle, c, "by_state", ex, uint32_t(1 + (k + c) % 3));
    values(m, s, idle, c, "lat", 50'000 + v * 3'000, ex);
    bump(m, s, nx, c, "calls", ex / 2);
    bump(m, s, nx, c, "worked", ex / 4);
    values(m, s, nx, c, "lat", 300 + v * 10, ex / 2);
    bump(m, s, ne, c, "calls", ex / 2);
    bump(m, s, ne, c, "first", ex / 4);
    bump(m, s, nk, c, "calls", 10);
    bump(m, s, nk, c, "idle_ticks", 4 + v % 3);
    values(m, s, nk, c, "lat", 150, 10);
    if (v % 4 == 0) {
      bump(m, s, ilb, c, "sent", 1);
      bump(m, s, ilb, c, "flags", 1, 1);
    }
    if (v % 4 == 1) bump(m, s, ilb, c, "received", 1);
    const uint64_t n = 8 + v;
    bump(m, s, cs, c, "calls", n);
    bump(m, s, cs, c, "noop", v % 2);
    bump(m, s, cs, c, "trans", n / 2, SH_CP_NORMAL * SH_CP_NCLASS + SH_CP_RT);
    bump(m, s, cs, c, "trans", n / 2, SH_CP_RT * SH_CP_NCLASS + SH_CP_NORMAL);
    for (uint32_t vec : {0u, 1u, 50u, 99u}) {
      bump(m, s, cs, c, "vec_set", n / 4, vec);
      bump(m, s, cs, c, "vec_clear", n / 4, vec);
    }
    values(m, s, cs, c, "lat", 1000 + v * 50, n);
    bump(m, s, cf, c, "calls", 4 + v % 5);
    bump(m, s, cf, c, "found", 3);
    values(m, s, cf, c, "lat", 500, 4 + v % 5);
    bump(m, s, bw, c, "all_locks", 2);
    bump(m, s, bl, c, "calls", 2);
    if (v % 8 == 0) {
      bump(m, s, bw, c, "contentions", 1);
      bump(m, s, bw, c, "ends", 1);
      values(m, s, bw, c, "lat", 2000, 1);
    }
  }
  s.seq = uint32_t(k);
  s.mono_ns = fx::kStartMono + uint64_t(k) * kInterval;
  s.wall_ns = fx::kStartWall + uint64_t(k) * kInterval;
}

Meta small_meta() {
  Meta m = big_meta(2);
  m.interval_ns = kInterval;
  return m;
}

/// A 2-CPU -i 10ms recording: `samples` samples, or (samples < 0) as many as fill `bytes`.
/// Its path (the caller removes it) and how many samples it holds.
std::pair<std::string, int> write_small(const char* tag, int samples, uint64_t bytes) {
  std::string path = fmt::format("/tmp/schedhot-bench-interval-{}-{}.shot", tag, getpid());
  std::remove(path.c_str());
  Meta m = small_meta();
  RecordingWriter w(path, m);
  Sample s = make_sample(m);
  int k = 0;
  for (;; ++k) {
    if (samples >= 0 && k >= samples) break;
    // The writer's END and INDEX frames add about 24 B per 64 samples at close.
    if (samples < 0 && k % 256 == 0 && std::filesystem::file_size(path) + uint64_t(k) / 2 + 4096 >= bytes) break;
    advance(m, s, k);
    w.write_sample(s);
  }
  w.close();
  return {path, k};
}

int usage() {
  fmt::print(stderr, "usage: schedhot_bench_interval [--short] [--size MIB] [--schedhot PATH] [--keep]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  start_spawner();  // children spawned from a small process: their own peak RSS
  double mib = 64;
  bool keep = false;
  std::string schedhot;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") mib = 2;
    else if (a == "--size" && i + 1 < argc) mib = std::atof(argv[++i]);
    else if (a == "--schedhot" && i + 1 < argc) schedhot = argv[++i];
    else if (a == "--keep") keep = true;
    else return usage();
  }
  if (!(mib > 0)) return usage();
  int status = 0;
  const double scale = 64 / mib;

  // ---- the rotation-sized file ----
  auto t0 = Clock::now();
  const auto [path, nsamples] = write_small("rotated", -1, uint64_t(mib * 1024 * 1024));
  const double file_mib = double(std::filesystem::file_size(path)) / 1024 / 1024;
  fmt::print("schedhot per-interval cost at 2 CPUs, -i 10ms (synthetic, every probe busy on both CPUs)\n");
  fmt::print("recording: {:.1f} MiB, {} samples ({:.0f} B a sample; written in {:.1f} s){}\n", file_mib, nsamples,
             file_mib * 1024 * 1024 / nsamples, ms_since(t0) / 1e3,
             mib == 64 ? "" : fmt::format(": --short, figures scaled to a 64 MiB file (x{:.0f}) are marked so", scale));
  double child_s = -1;
  if (!schedhot.empty()) {
    const ChildRun cr = run_child({schedhot, "report", path});
    const int rc = cr.status;
    const double s = cr.wall_s;
    if (rc != 0) {
      fmt::print(stderr, "schedhot: bench_interval: `schedhot report` exited with {}\n", rc);
      status = 1;
    }
    child_s = s;
    if (mib == 64)
      fmt::print("  report of the 64 MiB file: {:.2f} s   goal < {} s ({})\n", s, kReportGoalS, verdict(s, kReportGoalS));
    else
      fmt::print("  report of the {:.0f} MiB file: {:.2f} s; scaled to 64 MiB: {:.1f} s   goal < {} s ({}, scaled)\n", file_mib,
                 s, s * scale, kReportGoalS, verdict(s * scale, kReportGoalS));
  }
  {
    auto reader = RecordingReader::open(path);
    const Meta& m = reader->meta();
    ReportBuilder b(m, ReportOptions{});
    std::vector<double> decode, take;
    Sample s;
    for (;;) {
      const double d0 = cpu_us();
      if (!reader->next(s)) break;
      const double d1 = cpu_us();
      b.take(s);
      decode.push_back(d1 - d0);
      take.push_back(cpu_us() - d1);
    }
    double sd = 0, st = 0;
    for (double x : decode) sd += x;
    for (double x : take) st += x;
    const size_t n = take.size();
    const std::string text = render_report_text(b.build(m, recording_source_info(*reader, path)));
    if (n != size_t(nsamples) || text.empty()) {
      fmt::print(stderr, "schedhot: bench_interval: read {} of {} samples\n", n, nsamples);
      status = 1;
    }
    const double per = (sd + st) / double(n);
    fmt::print("  per interval at 2 CPUs, in process: {:.1f} us   goal < {} us ({}): decode {:.1f} us (median {:.1f}), "
               "ReportBuilder::take {:.1f} us (median {:.1f})\n",
               per, kIntervalGoalUs, verdict(per, kIntervalGoalUs), sd / double(n), median(decode), st / double(n),
               median(take));
    if (child_s >= 0)
      fmt::print("  per interval at 2 CPUs, the whole `schedhot report` (wall): {:.1f} us   goal < {} us ({})\n",
                 child_s / double(n) * 1e6, kIntervalGoalUs, verdict(child_s / double(n) * 1e6, kIntervalGoalUs));
  }
  if (keep) fmt::print("  kept: {}\n", path);
  else std::remove(path.c_str());

  // ---- 60 s at -i 10ms ----
  if (!schedhot.empty()) {
    const auto [p60, n60] = write_small("60s", 6001, 0);
    fmt::print("60 s at -i 10ms ({} samples, {:.2f} MiB), wall s:\n", n60, double(std::filesystem::file_size(p60)) / 1024 / 1024);
    const std::vector<std::pair<const char*, std::vector<std::string>>> runs = {
        {"report", {schedhot, "report", p60}},
        {"export --format csv", {schedhot, "export", p60, "--format", "csv"}},
        {"export --format json", {schedhot, "export", p60, "--format", "json"}},
        {"diff --a 0:30s --b 30s:60s", {schedhot, "diff", p60, "--a", "0:30s", "--b", "30s:60s"}},
    };
    for (const auto& [name, args] : runs) {
      const ChildRun cr = run_child(args);
      const int rc = cr.status;
      const double s = cr.wall_s;
      if (rc != 0 && !(rc == 3 && args[1] == "diff")) {  // diff: 3 is "a significant change"
        fmt::print(stderr, "schedhot: bench_interval: `schedhot {}` exited with {}\n", name, rc);
        status = 1;
      }
      fmt::print("  {:<28} {:6.2f} s = {:.1f} us an interval\n", name, s, s / (n60 - 1) * 1e6);
    }
    if (keep) fmt::print("  kept: {}\n", p60);
    else std::remove(p60.c_str());
  }
  return status;
}
