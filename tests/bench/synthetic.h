// Synthetic big machines for the user-space benchmarks (bench_tui.cpp, bench_scale.cpp,
// bench_goals.cpp): a Meta of N CPUs (SMT2, 8 cores per LLC, 64 cores per package = NUMA
// node) and samples in which every probe is busy on every CPU (or only on some CPUs: an
// idle machine); and a child process's wall time and peak RSS (run_child).
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "data/tui_fixture.h"
#include "store/recording.h"

extern char** environ;

namespace schedhot::bench {

namespace fx = schedhot::tui_fixture;
using Clock = std::chrono::steady_clock;

/// The fixture's Meta (tests/data/tui_fixture.h) grown to ncpus CPUs, all online.
inline Meta big_meta(uint32_t ncpus) {
  Meta m = fx::fixture_meta();
  const uint32_t cores = ncpus / 2;
  m.ncpus = ncpus;
  m.host.possible_cpus = int(ncpus);
  m.host.hostname = fmt::format("synthetic{}", ncpus);
  m.host.online.clear();
  m.host.topology.clear();
  for (uint32_t c = 0; c < ncpus; ++c) {
    const int core = int(c % cores);
    m.host.online.push_back(int(c));
    m.host.topology.push_back({int(c), core / 64, 0, core % 64, core / 8, core / 64});
  }
  return m;
}

/// Adds interval k's activity to s: on every CPU when busy_every == 1, else only on
/// every busy_every-th CPU (the rest idle: their words do not change). CPU 5's cpupri_set
/// tail (on an idle machine: CPU busy_every's, the first busy one past 0) is worst at
/// k == worst_k (what `w` finds).
inline void advance(const Meta& m, Sample& s, int k, int busy_every = 1, int worst_k = -1) {
  const int idle = m.probe_index("idle"), nx = m.probe_index("nohz_exit"), cs = m.probe_index("cpupri_set"),
            cf = m.probe_index("cpupri_find"), nk = m.probe_index("nohz_kick");
  const int worst_cpu = busy_every == 1 ? 5 : busy_every;
  for (int c = 0; c < int(m.ncpus); c += busy_every) {
    const uint64_t n = 50 + uint64_t((c * 7 + k) % 200);
    fx::add_count(m, s, idle, c, "exits", n);
    fx::add_count(m, s, idle, c, "entries", n);
    fx::add_values(m, s, idle, c, "lat", 20'000 + uint64_t(c % 97) * 300, n);
    fx::add_count(m, s, nx, c, "calls", n / 2);
    fx::add_values(m, s, nx, c, "lat", 250 + uint64_t(c % 13), n / 2);
    fx::add_count(m, s, nk, c, "calls", 1000);
    fx::add_values(m, s, nk, c, "lat", 120, 1000);
    fx::add_count(m, s, cs, c, "calls", n);
    fx::add_values(m, s, cs, c, "lat", 900, n - 2);
    fx::add_values(m, s, cs, c, "lat", (c == worst_cpu && k == worst_k ? 3'000'000 : 30'000) + uint64_t(c % 31) * 1000, 2);
    fx::add_count(m, s, cf, c, "calls", n / 4);
    fx::add_values(m, s, cf, c, "lat", 400, n / 4);
  }
  s.seq = uint32_t(k);
  s.mono_ns = fx::kStartMono + uint64_t(k) * fx::kSecond;
  s.wall_ns = fx::kStartWall + uint64_t(k) * fx::kSecond;
}

/// Writes a recording of nsamples busy samples of ncpus CPUs to dir (default /tmp) and
/// returns its path (the caller removes it). The worst cpupri_set tail is at sample worst_k.
/// busy_every > 1: only every busy_every-th CPU is busy (an idle machine).
inline std::string write_recording(uint32_t ncpus, int nsamples, const char* tag, int worst_k = -1,
                                   int busy_every = 1, const std::string& dir = "/tmp") {
  std::string path = fmt::format("{}/schedhot-bench-{}-{}-{}.shot", dir, tag, ncpus, getpid());
  std::remove(path.c_str());
  Meta m = big_meta(ncpus);
  RecordingWriter w(path, m);
  Sample s = make_sample(m);
  for (int k = 0; k < nsamples; ++k) {
    advance(m, s, k, busy_every, worst_k);
    w.write_sample(s);
  }
  w.close();
  return path;
}

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// "ok" or "MISSED" for a figure against an upper goal.
inline const char* verdict(double v, double goal) { return v <= goal ? "ok" : "MISSED"; }

/// This thread's CPU time, ms.
inline double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

struct ChildRun {
  int status = -1;
  double wall_s = 0;
  double peak_mb = 0;  ///< the child's peak RSS (wait4's ru_maxrss), MB of 2^20 bytes
  double cpu_s = 0;    ///< the child's user + system CPU time
};

/// Runs argv (argv[0] a path) with stdout to /dev/null and waits for it, from this process.
inline ChildRun spawn_and_wait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ChildRun r;
  pid_t pid;
  auto t0 = Clock::now();
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  r.wall_s = ms_since(t0) / 1e3;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.peak_mb = double(ru.ru_maxrss) / 1024.0;
  r.cpu_s = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return r;
}

/// The spawner: a small process forked when the benchmark starts, which runs the children
/// for run_child. A child's ru_maxrss counts the peak RSS of the memory it was exec'd from
/// (Linux's exec records the old mm's high-water mark: with posix_spawn's vfork that is the
/// caller's whole address space), so children spawned by a benchmark holding samples of
/// thousands of CPUs would report the benchmark's peak, not their own. Spawned from a
/// process of a few MB, they report their own.
struct Spawner {
  pid_t pid = -1;
  int req = -1, resp = -1;
};
inline Spawner& spawner() {
  static Spawner s;
  return s;
}
inline bool io_full(bool writing, int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t k = writing ? ::write(fd, c, n) : ::read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= size_t(k);
  }
  return true;
}
inline void stop_spawner() {
  Spawner& s = spawner();
  if (s.pid <= 0) return;
  close(s.req);
  close(s.resp);
  int st = 0;
  waitpid(s.pid, &st, 0);
  s = Spawner{};
}
/// Forks the spawner; call first thing in main(), before anything big is allocated.
/// Without it run_child spawns from the benchmark itself (peak RSS then an upper bound).
inline void start_spawner() {
  int rq[2], rs[2];
  if (pipe2(rq, O_CLOEXEC) != 0) return;
  if (pipe2(rs, O_CLOEXEC) != 0) {
    close(rq[0]);
    close(rq[1]);
    return;
  }
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    close(rq[1]);
    close(rs[0]);
    for (;;) {
      uint32_t len = 0;
      if (!io_full(false, rq[0], &len, sizeof len)) _exit(0);
      std::string buf(len, '\0');
      if (!io_full(false, rq[0], buf.data(), len)) _exit(0);
      std::vector<std::string> args;
      for (size_t i = 0; i < buf.size();) {
        const size_t e = buf.find('\0', i);
        args.push_back(buf.substr(i, e - i));
        i = e + 1;
      }
      ChildRun r = spawn_and_wait(args);
      if (!io_full(true, rs[1], &r, sizeof r)) _exit(0);
    }
  }
  close(rq[0]);
  close(rs[1]);
  spawner() = Spawner{pid, rq[1], rs[0]};
  std::atexit(stop_spawner);
}

/// Runs argv (argv[0] a path) with stdout to /dev/null; its exit status, wall time, peak RSS
/// and CPU time. Through the spawner when it was started (start_spawner()).
inline ChildRun run_child(const std::vector<std::string>& args) {
  const Spawner& s = spawner();
  if (s.pid <= 0) return spawn_and_wait(args);
  std::string buf;
  for (const auto& a : args) buf += a + '\0';
  uint32_t len = uint32_t(buf.size());
  ChildRun r;
  if (!io_full(true, s.req, &len, sizeof len) || !io_full(true, s.req, buf.data(), len) ||
      !io_full(false, s.resp, &r, sizeof r))
    return ChildRun{};
  return r;
}

}  // namespace schedhot::bench
