// The top/replay views the frame benchmarks walk (bench_tui.cpp, bench_goals.cpp): every
// view, with the keys that reach it from the one before.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "probe/catalog.h"
#include "sample/sample.h"

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

}  // namespace schedhot::bench
