#include "sample/exact.h"

#include <algorithm>
#include <queue>

namespace schedhot {

std::vector<ExactRecord> merge_by_time(std::vector<std::vector<ExactRecord>>& streams) {
  const auto by_ts = [](const ExactRecord& a, const ExactRecord& b) { return a.ts_ns < b.ts_ns; };
  size_t total = 0;
  for (auto& s : streams) {
    if (!std::is_sorted(s.begin(), s.end(), by_ts)) std::stable_sort(s.begin(), s.end(), by_ts);
    total += s.size();
  }
  std::vector<ExactRecord> out;
  out.reserve(total);
  // heap of (ts, stream, position): the smallest ts, then the lowest stream, first
  using Head = std::tuple<uint64_t, size_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (size_t i = 0; i < streams.size(); ++i)
    if (!streams[i].empty()) heap.push({streams[i][0].ts_ns, i, 0});
  while (!heap.empty()) {
    auto [ts, i, k] = heap.top();
    heap.pop();
    out.push_back(streams[i][k]);
    if (k + 1 < streams[i].size()) heap.push({streams[i][k + 1].ts_ns, i, k + 1});
  }
  for (auto& s : streams) s.clear();
  return out;
}

}  // namespace schedhot
