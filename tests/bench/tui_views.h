// The top/replay views the frame benchmarks walk (bench_tui.cpp, bench_goals.cpp): every
// view, with the keys that reach it from the one before.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/synthetic.h"
#include "probe/catalog.h"
#include "sample/sample.h"
#include "store/recording.h"
#include "tui/app.h"
#include "tui/replay_feed.h"

namespace schedhot::bench {

struct BenchView {
  std::string name;
  std::string keys;  ///< keys that switch to it from the previous one
};

/// Every view, in the order the keys reach them.
inline std::vector<BenchView> all_views(const Meta& m) {
  std::vector<BenchView> v = {{"per-CPU, by idle/s", ""},  {"topology LLC, by idle/s", "o"},
                         {"topology node", "o"},       {"topology package", "o"},
                         {"topology core", "o"}};
  // The first h shows the sort column's probe (idle), each next h the next probe with a
  // histogram, in catalog order.
  const int n = int(m.probes.size()), start = std::max(m.probe_index("idle"), 0);
  for (int i = 0; i < n; ++i) {
    const ProbeMeta& pm = m.probes[size_t((start + i) % n)];
    const ProbeSpec* spec = find_probe(pm.name);
    if (!spec || spec->hist.empty()) continue;
    v.push_back({fmt::format("histogram {}", pm.name), "h"});
  }
  v.push_back({"summary (all histograms)", "s"});
  v.push_back({"help overlay", "?"});
  v.push_back({"probes overlay", "xp"});   // x closes the help, p opens the probes
  v.push_back({"per-CPU, by set_p99", "xc>>>>>>>>"});
  v.push_back({"topology LLC, by set_p99", "o"});
  v.push_back({"per-CPU, by xfer/s", "c>>>>"});  // the model's column, last
  v.push_back({"cachelines (l)", "l"});
  return v;
}

/// The `w` key timed on a replay of the recording at path, sorted by set_p99 (the worst
/// interval by the sort column): ms the key took, and whether it landed on sample worst_k
/// (0-based) of samples, the one the recording planted.
struct WRun {
  double ms = 0;
  bool found = false;
};
inline WRun time_w_key(const std::string& path, int worst_k, int samples) {
  tui::TuiOptions o;
  o.utf8 = true;
  tui::ReplayFeed feed(RecordingReader::open(path));
  tui::TuiApp app(feed, o);
  for (char k : std::string(">>>>>>>>")) app.on_key(k);  // sort by set_p99
  app.render(160, 50);
  const auto w0 = Clock::now();
  app.on_key('w');
  WRun r;
  r.ms = ms_since(w0);
  std::string text;
  for (const auto& l : app.render(160, 50)) text += l.text + "\n";
  r.found = text.find(fmt::format("worst is sample {}/{}", worst_k + 1, samples)) != std::string::npos;
  return r;
}

}  // namespace schedhot::bench
