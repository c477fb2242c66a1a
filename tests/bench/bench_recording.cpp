// Recording size and speed on a synthetic 480-CPU machine (Google Benchmark; figures, not
// a pass/fail test). Run: build/tests/schedhot_bench_recording
//
//   BM_Size/{busy,idle}/{zstd,raw}  writes 256 samples (4 keyframes) and reports the
//       stored sample frames' bytes per CPU per sample (B_per_cpu_sample, headers
//       included) and the whole file's (file_B_per_cpu_sample, META/INDEX/END included).
//       busy: every CPU's counters and histograms change every interval;
//       idle: 2 % of the CPUs (about 10) change, the rest sit in deep idle.
//   BM_Write/{busy,idle}            encode + compress + write() per sample
//   BM_Read/{busy,idle}             read + CRC + decompress + decode per sample
//   BM_SeekTime/{index,scan}        seek to a random time in a 1024-sample idle
//       recording, with the END/INDEX trailer and without it (fresh reader each time)
//   BM_OpenAndCount/{index,scan}    open that recording and ask for its sample count
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "store/recording.h"
#include "test_util.h"

using namespace schedhot;
using namespace schedhot::testing;

namespace {

constexpr uint32_t kCpus = 480;
constexpr double kBusy = 1.0, kIdle = 0.02;

const Meta& meta480() {
  static const Meta m = synthetic_meta(kCpus);
  return m;
}

std::string bench_path(const char* name) { return fmt::format("/tmp/schedhot_bench_{}_{}.shot", getpid(), name); }

/// Writes n samples advancing at activity `busy`; returns the writer's sample count.
void write_file(const std::string& path, int n, double busy, bool compress) {
  const Meta& m = meta480();
  std::mt19937_64 rng(42);
  WriterOptions wo;
  wo.compress = compress;
  wo.overwrite = true;
  RecordingWriter w(path, m, wo);
  Sample s = make_sample(m);
  s.mono_ns = 1'000'000'000;
  for (int i = 0; i < n; ++i) {
    if (i) advance(m, s, rng, busy);
    w.write_sample(s);
  }
  w.close();
}

void BM_Size(benchmark::State& state) {
  const double busy = state.range(0) ? kBusy : kIdle;
  const bool compress = state.range(1);
  const std::string path = bench_path("size");
  const int n = 256;
  for (auto _ : state) write_file(path, n, busy, compress);
  auto r = RecordingReader::open(path);
  Sample s;
  while (r->next(s)) {
  }
  const double denom = static_cast<double>(n) * kCpus;
  state.counters["B_per_cpu_sample"] = static_cast<double>(r->stats().sample_bytes) / denom;
  state.counters["file_B_per_cpu_sample"] = static_cast<double>(r->file_bytes()) / denom;
  state.counters["compressed_frames"] = static_cast<double>(r->stats().compressed);
  state.SetLabel(fmt::format("{} {}", busy == kBusy ? "busy" : "idle", compress ? "zstd" : "raw"));
  unlink(path.c_str());
}
BENCHMARK(BM_Size)->ArgsProduct({{1, 0}, {1, 0}})->ArgNames({"busy", "zstd"})->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Write(benchmark::State& state) {
  const Meta& m = meta480();
  const double busy = state.range(0) ? kBusy : kIdle;
  const std::string path = bench_path("write");
  std::mt19937_64 rng(42);
  WriterOptions wo;
  wo.overwrite = true;
  RecordingWriter w(path, m, wo);
  Sample s = make_sample(m);
  for (auto _ : state) {
    state.PauseTiming();
    advance(m, s, rng, busy);
    state.ResumeTiming();
    w.write_sample(s);
  }
  w.close();
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(w.bytes()));
  state.SetLabel(busy == kBusy ? "busy" : "idle");
  unlink(path.c_str());
}
BENCHMARK(BM_Write)->Arg(1)->Arg(0)->ArgName("busy")->Unit(benchmark::kMillisecond);

void BM_Read(benchmark::State& state) {
  const double busy = state.range(0) ? kBusy : kIdle;
  const std::string path = bench_path("read");
  write_file(path, 128, busy, true);
  uint64_t samples = 0, bytes = 0;
  for (auto _ : state) {
    auto r = RecordingReader::open(path);
    Sample s;
    while (r->next(s)) ++samples;
    bytes += r->file_bytes();
  }
  state.SetItemsProcessed(static_cast<int64_t>(samples));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetLabel(busy == kBusy ? "busy, samples/s" : "idle, samples/s");
  unlink(path.c_str());
}
BENCHMARK(BM_Read)->Arg(1)->Arg(0)->ArgName("busy")->Unit(benchmark::kMillisecond);

void BM_SeekTime(benchmark::State& state) {
  const bool with_index = state.range(0);
  const std::string path = bench_path(with_index ? "seek_index" : "seek_scan");
  const int n = 1024;
  write_file(path, n, kIdle, true);
  if (!with_index) {
    auto r = RecordingReader::open(path);
    if (truncate(path.c_str(), static_cast<off_t>(r->index()->index_offset)) != 0) state.SkipWithError("truncate");
  }
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    auto r = RecordingReader::open(path);
    const uint64_t t = 1'000'000'000 + (rng() % n) * meta480().interval_ns;
    Sample s;
    if (!r->seek_time(t) || !r->next(s)) state.SkipWithError("seek failed");
    benchmark::DoNotOptimize(s.mono_ns);
  }
  state.SetLabel(with_index ? "with INDEX" : "scanning");
  unlink(path.c_str());
}
BENCHMARK(BM_SeekTime)->Arg(1)->Arg(0)->ArgName("index")->Unit(benchmark::kMillisecond);

/// Opening a recording and learning its length (what a replay's time bar needs first):
/// the trailer answers at once, a scan reads and CRC-checks every frame.
void BM_OpenAndCount(benchmark::State& state) {
  const bool with_index = state.range(0);
  const std::string path = bench_path(with_index ? "count_index" : "count_scan");
  write_file(path, 1024, kIdle, true);
  if (!with_index) {
    auto r = RecordingReader::open(path);
    if (truncate(path.c_str(), static_cast<off_t>(r->index()->index_offset)) != 0) state.SkipWithError("truncate");
  }
  for (auto _ : state) {
    auto r = RecordingReader::open(path);
    if (r->sample_count() != 1024u) state.SkipWithError("wrong count");
  }
  state.SetLabel(with_index ? "with INDEX" : "scanning");
  unlink(path.c_str());
}
BENCHMARK(BM_OpenAndCount)->Arg(1)->Arg(0)->ArgName("index")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
