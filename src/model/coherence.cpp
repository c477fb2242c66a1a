// Coherence model and exact ownership machine (see coherence.h for the rules and the
// derivation of the model's formulas).
#include "model/coherence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace schedhot {

namespace {

// CPU ids above this in a topology are ignored (sysfs never has them; keeps the tables small).
constexpr int kMaxTopologyCpu = 1 << 20;

constexpr int idx(XferDistance d) { return static_cast<int>(d); }

}  // namespace

const char* to_string(XferDistance d) {
  switch (d) {
    case XferDistance::smt: return "smt";
    case XferDistance::llc: return "llc";
    case XferDistance::package: return "package";
    case XferDistance::remote: return "remote";
  }
  return "?";
}

XferDistance xfer_distance(const CpuTopology& a, const CpuTopology& b) {
  if (a.package < 0 || b.package < 0 || a.package != b.package || a.node != b.node) return XferDistance::remote;
  if (a.core >= 0 && a.core == b.core && a.llc == b.llc) return XferDistance::smt;
  if (a.llc >= 0 && a.llc == b.llc) return XferDistance::llc;
  return XferDistance::package;
}

TopologyIndex::TopologyIndex(const std::vector<CpuTopology>& topo) {
  int top = -1;
  for (const auto& t : topo)
    if (t.cpu >= 0 && t.cpu < kMaxTopologyCpu) top = std::max(top, t.cpu);
  const size_t n = static_cast<size_t>(top + 1);
  core_.assign(n, -1);
  llc_.assign(n, -1);
  pkg_.assign(n, -1);
  std::vector<bool> seen(n, false);
  std::map<std::pair<int, int>, int> pkgs;             // (package, node)
  std::map<std::pair<int, int>, int> llcs;             // (package group, llc)
  std::map<std::tuple<int, int, int>, int> cores;      // (package group, llc, core)
  auto id_of = [](auto& m, const auto& key) {
    auto [it, added] = m.try_emplace(key, static_cast<int>(m.size()));
    (void)added;
    return it->second;
  };
  for (const auto& t : topo) {
    if (t.cpu < 0 || t.cpu >= kMaxTopologyCpu || seen[t.cpu]) continue;  // first entry of a CPU wins
    seen[t.cpu] = true;
    if (t.package < 0) continue;  // unknown package: shares nothing
    const int p = id_of(pkgs, std::pair{t.package, t.node});
    pkg_[t.cpu] = p;
    if (t.llc >= 0) llc_[t.cpu] = id_of(llcs, std::pair{p, t.llc});
    if (t.core >= 0) core_[t.cpu] = id_of(cores, std::tuple{p, t.llc, t.core});
  }
  npkg_ = static_cast<int>(pkgs.size());
  nllc_ = static_cast<int>(llcs.size());
  ncore_ = static_cast<int>(cores.size());
}

XferDistance TopologyIndex::distance(uint32_t a, uint32_t b) const {
  const int pa = package_group(a);
  if (pa < 0 || pa != package_group(b)) return XferDistance::remote;
  const int ca = core_group(a);
  if (ca >= 0 && ca == core_group(b)) return XferDistance::smt;
  const int la = llc_group(a);
  if (la >= 0 && la == llc_group(b)) return XferDistance::llc;
  return XferDistance::package;
}

// ---------------------------------------------------------------------------------------
// Model

namespace {

// Per-group sums of write rates (w) and access rates (a), kept all-zero between calls:
// each call zeroes only the groups of its own CPUs, so a call is O(active CPUs).
struct GroupSums {
  std::vector<double> w[3], a[3];  // [0] core, [1] llc, [2] package group
  void fit(const TopologyIndex& t) {
    const size_t n[3] = {size_t(t.core_groups()), size_t(t.llc_groups()), size_t(t.package_groups())};
    for (int k = 0; k < 3; ++k)
      if (w[k].size() < n[k]) {
        w[k].resize(n[k], 0.0);
        a[k].resize(n[k], 0.0);
      }
  }
};

// Splits `total` transfers of CPU c over the four distances, in proportion to the weight
// of the possible sources at each distance: u[0..2] are the weights within c's core, LLC
// and package group (c included; c's own weight when the level is unknown), all the total
// weight, self c's own weight.
void split(double total, double self, const double u[3], double all, std::array<double, kXferDistances>& out) {
  if (total <= 0) return;
  double d[kXferDistances] = {u[0] - self, u[1] - u[0], u[2] - u[1], all - u[2]};
  double sum = 0;
  for (double& x : d) {
    x = std::max(x, 0.0);  // rounding of the differences
    sum += x;
  }
  if (sum <= 0) {
    out[idx(XferDistance::remote)] += total;  // unreachable with total > 0; keep the total
    return;
  }
  const double f = total / sum;
  for (int k = 0; k < kXferDistances; ++k) out[k] += d[k] * f;
}

}  // namespace

LineTraffic coherence_model(const TopologyIndex& topo, std::span<const CpuAccessRate> rates) {
  LineTraffic out;
  coherence_model(topo, rates, out);
  return out;
}

void coherence_model(const TopologyIndex& topo, std::span<const CpuAccessRate> rates, LineTraffic& out) {
  coherence_split(topo, rates, {}, out);
}

void coherence_split(const TopologyIndex& topo, std::span<const CpuAccessRate> rates,
                     std::span<const std::pair<double, double>> given, LineTraffic& out) {
  if (!given.empty() && given.size() != rates.size())
    throw std::invalid_argument("coherence_split: one (read, write) transfer pair per rate entry");
  for (const auto& r : rates)
    if (!std::isfinite(r.reads_per_s) || !std::isfinite(r.writes_per_s) || r.reads_per_s < 0 || r.writes_per_s < 0)
      throw std::invalid_argument(fmt::format("coherence model: cpu {}: rates must be finite and non-negative "
                                              "(reads {}/s, writes {}/s)",
                                              r.cpu, r.reads_per_s, r.writes_per_s));
  thread_local std::vector<CpuAccessRate> in;  // scratch: no allocation once grown
  in.assign(rates.begin(), rates.end());
  const auto by_cpu = [](const auto& x, const auto& y) { return x.cpu < y.cpu; };
  if (!std::is_sorted(in.begin(), in.end(), by_cpu)) {
    if (!given.empty()) throw std::invalid_argument("coherence_split: rates must be in ascending cpu order");
    std::sort(in.begin(), in.end(), by_cpu);
  }
  if (!given.empty())
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i].cpu == in[i - 1].cpu) throw std::invalid_argument("coherence_split: a CPU listed twice");
  size_t n = 0;  // merge duplicate CPUs
  for (size_t i = 0; i < in.size(); ++i) {
    if (n > 0 && in[n - 1].cpu == in[i].cpu) {
      in[n - 1].reads_per_s += in[i].reads_per_s;
      in[n - 1].writes_per_s += in[i].writes_per_s;
    } else {
      in[n++] = in[i];
    }
  }
  in.resize(n);

  thread_local GroupSums g;
  g.fit(topo);
  double L = 0, Wt = 0;
  for (const auto& r : in) {
    const double a = r.reads_per_s + r.writes_per_s;
    L += a;
    Wt += r.writes_per_s;
    const int grp[3] = {topo.core_group(r.cpu), topo.llc_group(r.cpu), topo.package_group(r.cpu)};
    for (int k = 0; k < 3; ++k)
      if (grp[k] >= 0) {
        g.w[k][grp[k]] += r.writes_per_s;
        g.a[k][grp[k]] += a;
      }
  }

  out.cpus.clear();
  out.read_xfers_per_s = out.write_xfers_per_s = 0;
  out.by_distance = {};
  out.cpus.reserve(n);
  for (size_t i = 0; i < in.size(); ++i) {
    const CpuAccessRate& r = in[i];
    CpuXfers x;
    x.cpu = r.cpu;
    const double rc = r.reads_per_s, wc = r.writes_per_s, ac = rc + wc;
    const int grp[3] = {topo.core_group(r.cpu), topo.llc_group(r.cpu), topo.package_group(r.cpu)};
    // Reads: miss iff a write by another CPU comes (scanning back) before any access by c.
    const double w_others = std::max(Wt - wc, 0.0);
    if (rc > 0 && w_others > 0) {
      x.read_xfers_per_s = given.empty() ? rc * w_others / (ac + w_others) : given[i].first;
      double u[3], prev = wc;
      for (int k = 0; k < 3; ++k) u[k] = prev = grp[k] >= 0 ? g.w[k][grp[k]] : prev;
      split(x.read_xfers_per_s, wc, u, Wt, x.by_distance);
    }
    // Writes: miss iff another CPU's access comes before c's last write (c's reads skipped).
    const double a_others = std::max(L - ac, 0.0);
    if (wc > 0 && a_others > 0) {
      x.write_xfers_per_s = given.empty() ? wc * a_others / (a_others + wc)  // L - r_c = a_others + w_c
                                          : given[i].second;
      double u[3], prev = ac;
      for (int k = 0; k < 3; ++k) u[k] = prev = grp[k] >= 0 ? g.a[k][grp[k]] : prev;
      split(x.write_xfers_per_s, ac, u, L, x.by_distance);
    }
    out.read_xfers_per_s += x.read_xfers_per_s;
    out.write_xfers_per_s += x.write_xfers_per_s;
    for (int k = 0; k < kXferDistances; ++k) out.by_distance[k] += x.by_distance[k];
    out.cpus.push_back(x);
  }
  for (const auto& r : in)  // back to all-zero for the next call
    for (int k = 0; k < 3; ++k) {
      const int grp = k == 0 ? topo.core_group(r.cpu) : k == 1 ? topo.llc_group(r.cpu) : topo.package_group(r.cpu);
      if (grp >= 0) g.w[k][grp] = g.a[k][grp] = 0.0;
    }
}

// ---------------------------------------------------------------------------------------
// Cost

XferCost parse_xfer_cost(std::string_view s, const XferCost& base) {
  const std::string all(s);
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("--xfer-cost '{}': {}", all, why));
  };
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  if (trim(s).empty()) fail("empty (use e.g. smt=15,llc=40,package=80,remote=150)");
  static constexpr const char* kKeys[kXferDistances] = {"smt", "llc", "package", "remote"};
  XferCost out = base;
  bool given[kXferDistances] = {};
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string_view item = trim(s.substr(pos, comma - pos));
    pos = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("'{}' is not key=ns", item));
    const std::string key(trim(item.substr(0, eq)));
    const std::string val(trim(item.substr(eq + 1)));
    int k = 0;
    while (k < kXferDistances && key != kKeys[k]) ++k;
    if (k == kXferDistances) fail(fmt::format("unknown key '{}' (use smt, llc, package, remote)", key));
    if (given[k]) fail(fmt::format("'{}' given twice", key));
    given[k] = true;
    char* end = nullptr;
    errno = 0;
    const double v = val.empty() ? NAN : std::strtod(val.c_str(), &end);
    if (val.empty() || end != val.c_str() + val.size() || errno == ERANGE || !std::isfinite(v) || v < 0)
      fail(fmt::format("{} '{}' is not a non-negative number of ns", key, val));
    if (v > 1e9) fail(fmt::format("{} '{}' is more than 1 s per transfer", key, val));
    out.ns[k] = v;
  }
  return out;
}

double stall_ns_per_s(const LineTraffic& t, const XferCost& cost) {
  double ns = 0;
  for (int k = 0; k < kXferDistances; ++k) ns += t.by_distance[k] * cost.ns[k];
  return ns;
}

double stall_ns_per_s(const CpuXfers& t, const XferCost& cost) {
  double ns = 0;
  for (int k = 0; k < kXferDistances; ++k) ns += t.by_distance[k] * cost.ns[k];
  return ns;
}

// ---------------------------------------------------------------------------------------
// Exact

ExactCoherence::ExactCoherence(const TopologyIndex& topo, uint32_t lines, uint32_t ncpus)
    : topo_(topo), ncpus_(ncpus ? ncpus : topo.size()), lines_(lines) {
  for (auto& l : lines_) l.bits.assign((ncpus_ + 63) / 64, 0);
}

CpuXferCounts& ExactCoherence::counts_of(Line& l, uint32_t cpu) {
  if (l.slot.empty()) l.slot.assign(ncpus_, -1);
  int32_t& s = l.slot[cpu];
  if (s < 0) {
    s = static_cast<int32_t>(l.counts.size());
    l.counts.push_back(CpuXferCounts{cpu});
  }
  return l.counts[s];
}

bool ExactCoherence::feed(const LineAccess& a) {
  if (a.ts_ns < last_ts_)
    throw std::invalid_argument(fmt::format("exact coherence: access at {} ns comes after one at {} ns (not in time order)",
                                            a.ts_ns, last_ts_));
  if (a.cpu >= ncpus_)
    throw std::invalid_argument(fmt::format("exact coherence: cpu {} out of range ({} CPUs)", a.cpu, ncpus_));
  if (a.line >= lines_.size())
    throw std::invalid_argument(fmt::format("exact coherence: line {} out of range ({} lines)", a.line, lines_.size()));
  last_ts_ = a.ts_ns;
  Line& l = lines_[a.line];
  const uint32_t c = a.cpu;
  const uint64_t bit = uint64_t(1) << (c % 64);
  uint64_t& word = l.bits[c / 64];
  const bool held = word & bit;
  ++l.accesses;
  bool xfer = false;
  if (a.write) {
    if (l.members.empty()) {
      ++l.cold;  // the line's first access
    } else if (!(held && l.members.size() == 1)) {
      // Another CPU holds it; the most recent other accessor is one of the holders.
      const int64_t src = l.last_cpu != int64_t(c) ? l.last_cpu : l.prev_cpu;
      auto& k = counts_of(l, c);
      ++k.write_xfers;
      xfer = true;
      ++k.by_distance[idx(topo_.distance(c, static_cast<uint32_t>(src)))];
    }
    for (uint32_t m : l.members) l.bits[m / 64] = 0;  // clear whole words: O(holders)
    l.members.clear();
    l.members.push_back(c);
    word |= bit;
    l.last_writer = c;
  } else if (!held) {
    if (l.last_writer < 0) {
      ++l.cold;  // no CPU has written the line: a clean copy, not a transfer
    } else {
      auto& k = counts_of(l, c);
      ++k.read_xfers;
      xfer = true;
      ++k.by_distance[idx(topo_.distance(c, static_cast<uint32_t>(l.last_writer)))];
    }
    l.members.push_back(c);
    word |= bit;
  }
  if (l.last_cpu != int64_t(c)) {
    l.prev_cpu = l.last_cpu;
    l.last_cpu = c;
  }
  return xfer;
}

void ExactCoherence::clear_counts() {
  for (Line& l : lines_) {
    l.accesses = l.cold = 0;
    l.counts.clear();
    l.slot.clear();
  }
  lost_ = 0;
}

uint64_t ExactCoherence::accesses(uint32_t line) const { return line < lines_.size() ? lines_[line].accesses : 0; }
uint64_t ExactCoherence::cold(uint32_t line) const { return line < lines_.size() ? lines_[line].cold : 0; }
uint32_t ExactCoherence::holders(uint32_t line) const {
  return line < lines_.size() ? static_cast<uint32_t>(lines_[line].members.size()) : 0;
}

std::vector<CpuXferCounts> ExactCoherence::counts(uint32_t line) const {
  if (line >= lines_.size()) return {};
  auto v = lines_[line].counts;
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.cpu < y.cpu; });
  return v;
}

LineTraffic ExactCoherence::traffic(uint32_t line, double seconds) const {
  const double f = seconds > 0 ? 1.0 / seconds : 1.0;
  LineTraffic t;
  for (const auto& k : counts(line)) {
    CpuXfers x;
    x.cpu = k.cpu;
    x.read_xfers_per_s = double(k.read_xfers) * f;
    x.write_xfers_per_s = double(k.write_xfers) * f;
    for (int d = 0; d < kXferDistances; ++d) x.by_distance[d] = double(k.by_distance[d]) * f;
    t.read_xfers_per_s += x.read_xfers_per_s;
    t.write_xfers_per_s += x.write_xfers_per_s;
    for (int d = 0; d < kXferDistances; ++d) t.by_distance[d] += x.by_distance[d];
    t.cpus.push_back(x);
  }
  return t;
}

}  // namespace schedhot
