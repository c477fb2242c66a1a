#include "output/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "model/interval.h"
#include "probe/catalog.h"
#include "probe/layout.h"
#include "probe/module.h"
#include "schedhot/abi.h"

namespace schedhot {

std::vector<uint64_t> metric_bounds_ns() {
  std::vector<uint64_t> b;
  for (int k = 6; k <= 30; ++k) b.push_back((uint64_t{1} << k) - 1);
  return b;
}

namespace {
constexpr const char* kGapLabel = "gap_model";
constexpr const char* kIndependentLabel = "independent_arrivals";
}  // namespace

LineTransferTotals::LineTransferTotals(const Meta& meta) {
  for (const PossibleLine& l : possible_lines(meta, layout_of(meta))) {
    const bool measured = std::any_of(l.probes.begin(), l.probes.end(), [&](int p) {
      return meta.probes[size_t(p)].status.attached && blind_reason(meta, p).empty();
    });
    const bool gaps = std::any_of(meta.gap_lines.begin(), meta.gap_lines.end(), [&](const Meta::GapLine& g) {
      return g.object == l.key.object && g.line == l.key.line;
    });
    if (measured) totals_.push_back(LineTotal{l.family, l.name, 0, gaps ? kGapLabel : kIndependentLabel});
  }
}

const std::vector<LineTotal>& LineTransferTotals::add(const CoherenceSummary& s) {
  for (const LineSummary& l : s.lines) {
    const char* est = l.estimate.rfind(LineSummary::kGapModel, 0) == 0 ? kGapLabel : kIndependentLabel;
    auto it = std::find_if(totals_.begin(), totals_.end(), [&](const LineTotal& t) {
      return t.family == l.family && t.name == l.name && t.estimate == est;
    });
    if (it == totals_.end()) it = totals_.insert(totals_.end(), LineTotal{l.family, l.name, 0, est});
    const double x = l.traffic.total() * s.seconds;
    if (x > 0) it->xfers += x;  // a counter never decreases
  }
  return totals_;
}

uint32_t array_elements(const Meta& meta, const ProbeMeta& pm, const Field& field) {
  const ProbeModule* mod = find_module(pm.name);
  if (!mod || field.kind != FieldKind::counter_array) return field.nwords;
  // The last element any declared access of the array resolves to a kernel field, on the
  // recording's layout, else (it has no such part) on the layout assumed for its kernel.
  auto last_of = [&](const CoherenceLayout& layout) {
    int n = -1;  // -1: no access maps the array's elements to a kernel array
    for (const FieldAccess& a : mod->spec().accesses) {
      const size_t h = a.field.find('#');
      if (a.counter != field.name || a.element != FieldAccess::kEachElement || h == std::string::npos) continue;
      n = std::max(n, 0);
      for (int e = static_cast<int>(field.nwords) - 1; e >= n; --e) {
        std::string f = a.field;
        f.replace(h, 1, std::to_string(e));
        if (field_target(f, static_cast<int>(meta.ncpus), layout)) {
          n = e + 1;
          break;
        }
      }
    }
    return n;
  };
  int n = last_of(layout_of(meta));
  if (n == 0 && meta.layout) n = last_of(assumed_layout(meta.host.kernel_release, meta.host.cacheline_bytes));
  return n > 0 ? std::min(static_cast<uint32_t>(n), field.nwords) : field.nwords;
}

const char* metrics_content_type(bool openmetrics) {
  return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                     : "text/plain; version=0.0.4; charset=utf-8";
}

bool wants_openmetrics(const std::string& accept) {
  // Each media range: type, then ;params (q, version). The best q of the OpenMetrics ranges
  // whose version is one this text is (none, 1.0.0; 0.0.1 reads the same) against the best
  // of text/plain's (none, 0.0.4); q=0 is "not acceptable"; a tie is OpenMetrics
  // (Prometheus lists it first).
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  auto lower = [](std::string_view v) {
    std::string o(v);
    for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
  };
  double om = -1, text = -1;
  std::string_view rest(accept);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view range = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t semi = range.find(';');
    const std::string type = lower(trim(range.substr(0, semi)));
    double q = 1;
    std::string version;
    for (std::string_view params = semi == std::string_view::npos ? std::string_view() : range.substr(semi + 1);
         !params.empty();) {
      const size_t next = params.find(';');
      const std::string_view p = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      const size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string key = lower(trim(p.substr(0, eq)));
      const std::string val(trim(p.substr(eq + 1)));
      if (key == "q") {
        char* end = nullptr;
        const double v = std::strtod(val.c_str(), &end);
        q = end && *end == '\0' && v >= 0 && v <= 1 ? v : 0;  // a q that is no number: not acceptable
      } else if (key == "version") {
        version = val;
      }
    }
    if (type == "application/openmetrics-text" && (version.empty() || version == "1.0.0" || version == "0.0.1"))
      om = std::max(om, q);
    else if (type == "text/plain" && (version.empty() || version == "0.0.4"))
      text = std::max(text, q);
  }
  return om > 0 && om >= text;
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
  /// Room for about `series` series (a scrape's text grown by doubling copied itself about
  /// twice over: 0.2-0.35 s of a 229 MB 8192-CPU scrape).
  void reserve(size_t series) { s_.reserve(series * 72 + 4096); }
  /// # HELP / # TYPE of a family. base: the name without _total (counters) or _info (info).
  void family(const std::string& base, const char* type, const std::string& help) {
    std::string n = base;
    if (!om_ && std::string_view(type) == "counter") n += "_total";
    if (!om_ && std::string_view(type) == "info") n += "_info";
    const char* t = (!om_ && std::string_view(type) == "info") ? "gauge" : type;
    // HELP text escapes backslash and newline (Prometheus' text format), and the double
    // quote too in OpenMetrics (its escaped-string).
    std::string h;
    for (char c : help)
      h += c == '\\' ? std::string("\\\\") : c == '\n' ? std::string("\\n")
           : (om_ && c == '"') ? std::string("\\\"") : std::string(1, c);
    s_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", n, h, n, t);
    if (om_ && std::string_view(type) == "seconds") s_ += "";  // (units are in the names)
  }
  /// One series: name{l1,l2} value (the braces only with a label; l1 or l2 may be empty).
  void sample(std::string_view name, std::string_view l1, std::string_view l2, std::string_view value) {
    s_ += name;
    if (!l1.empty() || !l2.empty()) {
      s_ += '{';
      s_ += l1;
      if (!l1.empty() && !l2.empty()) s_ += ',';
      s_ += l2;
      s_ += '}';
    }
    s_ += ' ';
    s_ += value;
    s_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, std::string_view value) { sample(name, labels, {}, value); }
  /// A whole number's series (a counter, a bucket), without a string made for it.
  void sample(std::string_view name, std::string_view l1, std::string_view l2, uint64_t value) {
    const fmt::format_int v(value);
    sample(name, l1, l2, std::string_view(v.data(), v.size()));
  }
  std::string done() {
    if (om_) s_ += "# EOF\n";
    return std::move(s_);
  }

 private:
  bool om_;
  std::string s_;
};

/// The family name of field f of probe `probe` without a counter's _total:
/// schedhot_<probe>_<field>, or schedhot_<probe>_<hist_metric or field>_seconds.
std::string family_base(std::string_view probe, const Field& f) {
  if (f.kind != FieldKind::hist) return fmt::format("schedhot_{}_{}", name_part(probe), name_part(f.name));
  const ProbeSpec* spec = find_probe(probe);
  const std::string part = spec && spec->hist == f.name && !spec->hist_metric.empty() ? spec->hist_metric : f.name;
  return fmt::format("schedhot_{}_{}_seconds", name_part(probe), name_part(part));
}

/// A field's doc as HELP text: without the ", ns" that says the slot's unit (the metric's is seconds).
std::string help_text(const Field& f) {
  std::string d = f.doc.empty() ? f.name : f.doc;
  if (d.size() > 4 && d.compare(d.size() - 4, 4, ", ns") == 0) d.resize(d.size() - 4);
  return d;
}

/// Element i of counter array f of probe pm: the name report gives it (the module's label,
/// else the recording's label), else its index.
std::string element_label(const ProbeMeta& pm, const Field& f, uint32_t i) {
  const ProbeModule* mod = find_module(pm.name);
  if (auto l = mod ? mod->label(f.name, i) : std::nullopt) return *l;
  if (i < pm.labels.size() && !pm.labels[i].empty()) return pm.labels[i];
  return fmt::format("{}", i);
}

/// A per-probe metric family a scrape renders: field `field` of probe `probe`.
struct Exported {
  int probe = -1;
  const Field* field = nullptr;
  std::string base;  ///< family_base()
};

/// Every per-probe family render_metrics() renders for iv, in its order: the fields (not
/// private, seen by the backend in use) of the probes attached, present and not blind.
/// The per-CPU notice asks the same list which --per-cpu items label something.
std::vector<Exported> exported_families(const Meta& m, const Interval& iv) {
  std::vector<Exported> v;
  for (size_t p = 0; p < m.probes.size(); ++p) {
    const ProbeMeta& pm = m.probes[p];
    const int pi = static_cast<int>(p);
    if (!pm.status.attached || !iv.present(pi) || !blind_reason(m, pi).empty()) continue;
    for (const Field& f : pm.slot.fields)
      if (f.kind != FieldKind::priv && counter_observed(pm.name, pm.status.proxy, f.name))
        v.push_back({pi, &f, family_base(pm.name, f)});
  }
  return v;
}

/// Series lines (not comments) of an exposition text.
size_t count_series(const std::string& text) {
  size_t n = 0, at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    if (text[at] != '#') ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

}  // namespace

bool PerCpu::covers(std::string_view probe, std::string_view base, FieldKind kind) const {
  if (!on || (counters_only && kind != FieldKind::counter)) return false;
  if (families.empty()) return true;
  for (const std::string& f : families)
    if (f == probe || f == base || (f.size() == base.size() + 6 && f.compare(0, base.size(), base) == 0 &&
                                    std::string_view(f).substr(base.size()) == "_total"))
      return true;
  return false;
}

std::string per_cpu_spec(const std::vector<std::string>& args, const std::string& parsed) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--per-cpu=") return "";
  }
  return parsed;
}

PerCpu parse_per_cpu(std::string_view spec) {
  PerCpu pc;
  pc.on = true;
  if (spec == "all") return pc;
  if (spec == "counters") {
    pc.counters_only = true;
    return pc;
  }
  if (spec.empty())
    throw std::invalid_argument(
        "--per-cpu=: an empty list (the bare --per-cpu labels the counters, --per-cpu=all every family, --per-cpu=LIST "
        "the probes and families listed)");
  for (std::string_view rest = spec; ;) {
    const size_t c = rest.find(',');
    const std::string item(rest.substr(0, c));
    bool ok = find_probe(item) != nullptr;
    for (const ProbeSpec& p : probe_catalog())  // a counter's samples are also named with _total
      for (const Field& f : p.slot.fields)
        if (f.kind != FieldKind::priv) {
          const std::string k = family_base(p.name, f);
          ok |= item == k || (f.kind != FieldKind::hist && item == k + "_total");
        }
    if (!ok)
      throw std::invalid_argument(
          item.empty() ? fmt::format("--per-cpu: '{}' has an empty item (give counters, all, or probe and metric family names, comma-separated)", spec)
                       : fmt::format("--per-cpu: '{}' is neither a probe nor a per-probe metric family (e.g. idle, "
                                     "schedhot_idle_exits_total, schedhot_cpupri_set_lat_seconds)", item));
    pc.families.push_back(item);
    if (c == std::string_view::npos) break;
    rest = rest.substr(c + 1);
  }
  return pc;
}

std::string render_metrics(const MetricsState& st, const MetricsOptions& o) {
  const Meta& m = st.meta;
  Out out(o.openmetrics);
  // Cumulative since attach: from the all-zero sample (its blocks are the shared zero
  // blocks, SlotWords: no words made).
  const Sample zero = make_sample(m);
  const Interval iv(m, zero, st.last);

  std::vector<int> cpus;  // the CPUs labelled with --per-cpu
  if (o.per_cpu.on) {
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
  // Label text made once a scrape, not once a series: each CPU's, each bound's le.
  std::vector<std::string> cpu_label(cpus.size());
  for (size_t i = 0; i < cpus.size(); ++i) cpu_label[i] = fmt::format("cpu=\"{}\"", cpus[i]);
  std::vector<std::string> le_label;
  for (uint64_t bound : bounds) le_label.push_back(fmt::format("le=\"{}\"", num(double(bound) / 1e9)));
  const std::vector<Exported> families = exported_families(m, iv);
  size_t series = 0;  // about: what reserve() needs
  for (const Exported& e : families) {
    const size_t k = e.field->kind == FieldKind::hist ? bounds.size() + 3
                     : e.field->kind == FieldKind::counter_array ? e.field->nwords : 1;
    series += k * (o.per_cpu.covers(m.probes[size_t(e.probe)].name, e.base, e.field->kind) ? std::max<size_t>(cpus.size(), 1) : 1);
  }
  out.reserve(series + st.lines.size() + 64);
  std::vector<int> all_cpus(m.ncpus);  // the summed histograms' CPUs: hist() and buckets() in one pass
  for (uint32_t c = 0; c < m.ncpus; ++c) all_cpus[c] = static_cast<int>(c);
  for (const Exported& e : families) {
    const ProbeMeta& pm = m.probes[size_t(e.probe)];
    const int pi = e.probe;
    const Field& f = *e.field;
    const std::string& base = e.base;
    const bool per_cpu = o.per_cpu.covers(pm.name, base, f.kind);
    // A proxy's counts are not the function's: its HELP says what counts them on this host
    // (HELP may differ between targets; schedhot_probe_info{proxy="true"} says it as well).
    const std::string help = help_text(f) + (pm.status.proxy ? "; here a proxy counts it, " + pm.status.backend_label() : "");
    auto each_cpu = [&](auto&& fn) {
      if (per_cpu)
        for (size_t i = 0; i < cpus.size(); ++i) fn(cpus[i], std::string_view(cpu_label[i]));
      else
        fn(-1, std::string_view());
    };
    if (f.kind == FieldKind::counter) {
      out.family(base, "counter", help);
      const std::string total = base + "_total";
      each_cpu([&](int c, std::string_view l) { out.sample(total, l, {}, iv.count(pi, f.name, c)); });
    } else if (f.kind == FieldKind::counter_array) {
      out.family(base, "counter", help);
      const uint32_t n = array_elements(m, pm, f);  // not the slot's padding
      const std::string total = base + "_total";
      std::vector<std::string> element(n);
      for (uint32_t i = 0; i < n; ++i) element[i] = fmt::format("element=\"{}\"", esc(element_label(pm, f, i)));
      each_cpu([&](int c, std::string_view l) {
        for (uint32_t i = 0; i < n; ++i) out.sample(total, l, element[i], iv.count(pi, f.name, c, static_cast<int>(i)));
      });
    } else if (f.kind == FieldKind::hist) {
      const std::string& hb = base;
      out.family(hb, "histogram", help + " (seconds; le: 2^k - 1 ns, k = 6..30: 63 ns .. 1.07 s, exact: durations are whole ns)");
      const std::string bucket = hb + "_bucket", sum = hb + "_sum", count = hb + "_count";
      std::vector<uint64_t> b;
      each_cpu([&](int c, std::string_view l) {
        const int one[] = {c};
        const HistSummary h = iv.hist(pi, f.name, c < 0 ? std::span<const int>(all_cpus) : std::span<const int>(one), b);
        uint64_t cum = 0;
        size_t i = 0;
        for (size_t k = 0; k < bounds.size(); ++k) {
          // Every bucket whose last value (lower + width - 1) is at or below the bound.
          for (; i < b.size() && sh_hist_lower(static_cast<uint32_t>(i)) + sh_hist_width(static_cast<uint32_t>(i)) - 1 <= bounds[k];
               ++i)
            cum += b[i];
          out.sample(bucket, l, le_label[k], cum);
        }
        out.sample(bucket, l, "le=\"+Inf\"", h.count);
        out.sample(sum, l, {}, num(h.mean_ns * double(h.count) * 1e-9));
        out.sample(count, l, {}, h.count);
      });
    }
  }

  out.family("schedhot_line_transfers", "counter",
             "estimated coherence transfers of a hot line since serve started (the cacheline model's, summed over its "
             "intervals; estimate: which model, gap_model or independent_arrivals)");
  // estimate: the figure's model (README 'Cachelines'): gap_model for the intervals whose
  // gap counts modeled the line, independent_arrivals for the others (a counter each).
  for (const LineTotal& r : st.lines)
    out.sample("schedhot_line_transfers_total",
               fmt::format("family=\"{}\",line=\"{}\",estimate=\"{}\"", esc(r.family), esc(r.name), esc(r.estimate)),
               num(r.xfers));

  if (m.layout) {
    const FixesPresent f = fixes_present(*m.layout);
    out.family("schedhot_fix_present", "gauge", "1 when the kernel has the seed-patch fix, 0 when not; absent when unknown");
    for (const Fix& x : f.fixes)
      if (x.present) out.sample("schedhot_fix_present", fmt::format("fix=\"{}\"", x.key), *x.present ? "1" : "0");
  }

  out.family("schedhot_lost_samples", "counter", "sample deadlines the sampler missed (it was stalled)");
  out.sample("schedhot_lost_samples_total", "", fmt::format("{}", st.lost_samples));
  out.family("schedhot_samples", "counter", "samples the sampler took");
  out.sample("schedhot_samples_total", "", fmt::format("{}", st.samples));
  // The instant the values above were read: a scrape shows the latest sample, up to one
  // interval (more when the sampler stalled) older than the scrape.
  out.family("schedhot_last_sample_timestamp_seconds", "gauge",
             "wall-clock time (CLOCK_REALTIME, s since the epoch) of the sample this scrape shows: the counters are as of then");
  out.sample("schedhot_last_sample_timestamp_seconds", "", fmt::format("{}.{:06}", st.last.wall_ns / 1000000000, st.last.wall_ns % 1000000000 / 1000));
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

namespace {

/// One line: a probe's reason may hold a newline (a verifier's message).
std::string one_line(std::string v) {
  for (char& c : v)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return v;
}

/// Why --per-cpu item `item` (a probe or family name, parse_per_cpu()) labels no series of
/// a scrape of m at iv.
std::string labels_nothing_because(const Meta& m, const Interval& iv, const std::string& item) {
  std::string probe = find_probe(item) ? item : "", field;
  for (const ProbeSpec& p : probe_catalog())
    for (const Field& f : p.slot.fields) {
      if (!probe.empty() || f.kind == FieldKind::priv) continue;
      const std::string b = family_base(p.name, f);
      if (item == b || item == b + "_total") probe = p.name, field = f.name;
    }
  const int pi = m.probe_index(probe);
  if (pi < 0) return fmt::format("{} is not in this run", probe);
  const ProbeMeta& pm = m.probes[size_t(pi)];
  const std::string who = field.empty() ? "" : probe + " ";
  if (!pm.status.attached)
    return fmt::format("{}not attached{}", who, pm.status.reason.empty() ? "" : ": " + one_line(pm.status.reason));
  if (std::string why = blind_reason(m, pi); !why.empty()) return fmt::format("{}blind: {}", who, one_line(why));
  if (!iv.present(pi)) return fmt::format("{}has no data", who);
  if (!pm.slot.find(field)) return fmt::format("{} has no {} in this run", probe, field);
  if (!counter_observed(pm.name, pm.status.proxy, field))
    return fmt::format("{} runs as a proxy ({}), which does not see {}", probe, to_string(pm.status.backend), field);
  return "not exported in this run";
}

}  // namespace

std::string per_cpu_notice(const MetricsState& st, const PerCpu& per_cpu) {
  MetricsOptions with, without;
  with.per_cpu = per_cpu;
  with.per_cpu.on = true;
  const std::string text = render_metrics(st, with);
  const size_t w = count_series(text), o = count_series(render_metrics(st, without));
  // Series with a cpu label, as rendered (the labelled families have no other series).
  size_t labelled = 0;
  for (size_t at = text.find("{cpu=\""); at != std::string::npos; at = text.find("{cpu=\"", at + 1)) ++labelled;
  size_t ncpus = st.last.online.size();
  if (ncpus == 0) ncpus = st.meta.ncpus;
  const size_t each = ncpus ? labelled / ncpus : 0;
  std::string nothing;
  if (!per_cpu.families.empty()) {
    const Sample zero = make_sample(st.meta);
    const Interval iv(st.meta, zero, st.last);
    const std::vector<Exported> fams = exported_families(st.meta, iv);
    PerCpu one;
    one.on = true;
    for (const std::string& item : per_cpu.families) {
      one.families = {item};
      if (std::none_of(fams.begin(), fams.end(),
                       [&](const Exported& e) { return one.covers(st.meta.probes[size_t(e.probe)].name, e.base, e.field->kind); }))
        nothing += fmt::format("{}{} ({})", nothing.empty() ? "" : ", ", item, labels_nothing_because(st.meta, iv, item));
    }
  }
  return fmt::format("--per-cpu: {} series a scrape ({} per CPU x {} CPU{}), {} without it{}{}", w, each, ncpus,
                     ncpus == 1 ? "" : "s", o,
                     !per_cpu.families.empty() ? ""
                     : per_cpu.counters_only
                         ? "; the counters: --per-cpu=all labels the histograms and counter arrays too, --per-cpu=LIST "
                           "only the probes or families listed (README \"schedhot serve\")"
                         : "; --per-cpu=LIST labels only the probes or families listed (README \"schedhot serve\")",
                     nothing.empty() ? "" : "; nothing per CPU from " + nothing + " (serving on)");
}

}  // namespace schedhot
