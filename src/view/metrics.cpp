#include "view/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/interval.h"
#include "probe/catalog.h"
#include "probe/layout.h"
#include "schedhot/abi.h"

namespace schedhot {

std::vector<uint64_t> metric_bounds_ns() {
  std::vector<uint64_t> b;
  for (int k = 6; k <= 30; ++k) b.push_back(uint64_t{1} << k);
  return b;
}

const char* metrics_content_type(bool openmetrics) {
  return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                     : "text/plain; version=0.0.4; charset=utf-8";
}

bool wants_openmetrics(const std::string& accept) {
  return accept.find("application/openmetrics-text") != std::string::npos;
}

namespace {

/// A label value escaped as both formats want: backslash, double quote, newline.
std::string esc(std::string_view v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

/// A metric-name part: [a-zA-Z0-9_] kept, anything else '_'.
std::string name_part(std::string_view v) {
  std::string o(v);
  for (char& c : o)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  return o;
}

/// Shortest round-trip text of a double (Go's strconv 'g' style that both parsers take).
std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

class Out {
 public:
  explicit Out(bool om) : om_(om) {}
  /// # HELP / # TYPE of a family. base: the name without _total (counters) or _info (info).
  void family(const std::string& base, const char* type, const std::string& help) {
    std::string n = base;
    if (!om_ && std::string_view(type) == "counter") n += "_total";
    if (!om_ && std::string_view(type) == "info") n += "_info";
    const char* t = (!om_ && std::string_view(type) == "info") ? "gauge" : type;
    s_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", n, help, n, t);
    if (om_ && std::string_view(type) == "seconds") s_ += "";  // (units are in the names)
  }
  void sample(const std::string& name, const std::string& labels, const std::string& value) {
    s_ += labels.empty() ? fmt::format("{} {}\n", name, value) : fmt::format("{}{{{}}} {}\n", name, labels, value);
  }
  std::string done() {
    if (om_) s_ += "# EOF\n";
    return std::move(s_);
  }

 private:
  bool om_;
  std::string s_;
};

std::string join_labels(std::string a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "," + b;
}

}  // namespace

std::string render_metrics(const MetricsState& st, const MetricsOptions& o) {
  const Meta& m = st.meta;
  Out out(o.openmetrics);
  const Sample zero = make_sample(m);
  const Interval iv(m, zero, st.last);  // cumulative since attach

  std::vector<int> cpus;  // the CPUs labelled with --per-cpu
  if (o.per_cpu) {
    if (!st.last.online.empty()) cpus = st.last.online;
    else
      for (uint32_t c = 0; c < m.ncpus; ++c) cpus.push_back(static_cast<int>(c));
  }

  out.family("schedhot_probe", "info", "a probe's attach status: attached, backend, why not (reason), why blind");
  for (size_t p = 0; p < m.probes.size(); ++p) {
    const ProbeMeta& pm = m.probes[p];
    const std::string blind = blind_reason(m, static_cast<int>(p));
    out.sample("schedhot_probe_info",
               fmt::format("probe=\"{}\",attached=\"{}\",backend=\"{}\",proxy=\"{}\",reason=\"{}\",blind=\"{}\"", esc(pm.name),
                           pm.status.attached ? "true" : "false", esc(to_string(pm.status.backend)),
                           pm.status.proxy ? "true" : "false", esc(pm.status.reason), esc(blind)),
               "1");
  }

  const std::vector<uint64_t> bounds = metric_bounds_ns();
  for (size_t p = 0; p < m.probes.size(); ++p) {
    const ProbeMeta& pm = m.probes[p];
    const int pi = static_cast<int>(p);
    if (!pm.status.attached || !iv.present(pi) || !blind_reason(m, pi).empty()) continue;
    const std::string probe = name_part(pm.name);
    for (const Field& f : pm.layout.fields) {
      if (f.kind == FieldKind::priv || !counter_observed(pm.name, pm.status.proxy, f.name)) continue;
      const std::string base = fmt::format("schedhot_{}_{}", probe, name_part(f.name));
      auto each_cpu = [&](auto&& fn) {
        if (o.per_cpu)
          for (int c : cpus) fn(c, fmt::format("cpu=\"{}\"", c));
        else
          fn(-1, std::string());
      };
      if (f.kind == FieldKind::counter) {
        out.family(base, "counter", f.doc.empty() ? f.name : f.doc);
        each_cpu([&](int c, const std::string& l) { out.sample(base + "_total", l, fmt::format("{}", iv.count(pi, f.name, c))); });
      } else if (f.kind == FieldKind::counter_array) {
        out.family(base, "counter", f.doc.empty() ? f.name : f.doc);
        each_cpu([&](int c, const std::string& l) {
          for (uint32_t i = 0; i < f.nwords; ++i) {
            const std::string el = i < pm.labels.size() && !pm.labels[i].empty() ? pm.labels[i] : fmt::format("{}", i);
            out.sample(base + "_total", join_labels(l, fmt::format("element=\"{}\"", esc(el))),
                       fmt::format("{}", iv.count(pi, f.name, c, static_cast<int>(i))));
          }
        });
      } else if (f.kind == FieldKind::hist) {
        const std::string hb = fmt::format("schedhot_{}_{}_seconds", probe, name_part(f.name));
        out.family(hb, "histogram", (f.doc.empty() ? f.name : f.doc) + " (seconds; le: powers of two 64 ns .. 1.07 s)");
        each_cpu([&](int c, const std::string& l) {
          const std::vector<uint64_t> b = iv.buckets(pi, f.name, c);
          const HistSummary h = iv.hist(pi, f.name, c);
          uint64_t cum = 0;
          size_t i = 0;
          for (uint64_t bound : bounds) {
            for (; i < b.size() && sh_hist_lower(static_cast<uint32_t>(i)) < bound; ++i) cum += b[i];
            out.sample(hb + "_bucket", join_labels(l, fmt::format("le=\"{}\"", num(double(bound) * 1e-9))),
                       fmt::format("{}", cum));
          }
          out.sample(hb + "_bucket", join_labels(l, "le=\"+Inf\""), fmt::format("{}", h.count));
          out.sample(hb + "_sum", l, num(h.mean_ns * double(h.count) * 1e-9));
          out.sample(hb + "_count", l, fmt::format("{}", h.count));
        });
      }
    }
  }

  out.family("schedhot_line_transfers_per_second", "gauge",
             "modeled cacheline transfers/s of a hot line over the sampler's last interval");
  for (const LineRate& r : st.lines)
    out.sample("schedhot_line_transfers_per_second", fmt::format("family=\"{}\",line=\"{}\"", esc(r.family), esc(r.name)),
               num(r.xfers_per_s));

  if (m.layout) {
    const FixesPresent f = fixes_present(*m.layout);
    out.family("schedhot_fix_present", "gauge", "1 when the kernel has the seed-patch fix, 0 when not; absent when unknown");
    auto fix = [&](const char* name, const std::optional<bool>& v) {
      if (v) out.sample("schedhot_fix_present", fmt::format("fix=\"{}\"", name), *v ? "1" : "0");
    };
    fix("nohz_nr_cpus_removed", f.nohz_nr_cpus_removed);
    fix("cpupri_count_removed", f.cpupri_count_removed);
    fix("bcast_lock_own_line", f.bcast_lock_own_line);
  }

  out.family("schedhot_lost_samples", "counter", "sample deadlines the sampler missed (it was stalled)");
  out.sample("schedhot_lost_samples_total", "", fmt::format("{}", st.lost_samples));
  out.family("schedhot_samples", "counter", "samples the sampler took");
  out.sample("schedhot_samples_total", "", fmt::format("{}", st.samples));
  out.family("schedhot_bpf_stats_enabled", "gauge", "1 when kernel.bpf_stats_enabled is on (then schedhot_bpf_run_seconds_total exists)");
  out.sample("schedhot_bpf_stats_enabled", "", st.bpf_run_ns ? "1" : "0");
  if (st.bpf_run_ns) {
    out.family("schedhot_bpf_run_seconds", "counter", "time schedhot's BPF programs ran (bpf_prog_info run_time_ns)");
    out.sample("schedhot_bpf_run_seconds_total", "", num(double(*st.bpf_run_ns) * 1e-9));
    out.family("schedhot_bpf_runs", "counter", "runs of schedhot's BPF programs (bpf_prog_info run_cnt)");
    out.sample("schedhot_bpf_runs_total", "", fmt::format("{}", st.bpf_runs.value_or(0)));
  }
  return out.done();
}

}  // namespace schedhot
