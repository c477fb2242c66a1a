#include "output/export.h"

#include <ext/stdio_filebuf.h>
#include <fcntl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "analysis/tails.h"

#include "model/histogram.h"
#include "model/interval.h"
#include "model/interval_cursor.h"
#include "model/lines.h"
#include "probe/catalog.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/cpulist.h"
#include "sys/csv_text.h"
#include "sys/json_text.h"
#include "sys/output_file.h"
#include "sys/units.h"
#include "analysis/cachelines.h"

namespace schedhot {

ExportFormat parse_export_format(const std::string& s) {
  if (s == "csv") return ExportFormat::csv;
  if (s == "json") return ExportFormat::json;
  if (s == "perfetto") return ExportFormat::perfetto;
  if (s == "folded") return ExportFormat::folded;
  throw std::invalid_argument(fmt::format("--format '{}': use csv, json, perfetto or folded", s));
}

std::vector<ExportMetric> export_metrics(const Meta& meta) {
  std::vector<ExportMetric> out;
  for (size_t pi = 0; pi < meta.probes.size(); ++pi) {
    const ProbeMeta& pm = meta.probes[pi];
    const int p = static_cast<int>(pi);
    const bool blind = pm.status.attached && !blind_reason(meta, p).empty();  // nothing of it is measured
    auto add = [&](const std::string& field, ExportMetric::Kind k, const char* suffix) {
      ExportMetric m;
      m.probe = p;
      m.field = field;
      m.ref = field_ref(meta, p, field);
      m.kind = k;
      m.column = field + suffix;
      m.name = pm.name + "." + m.column;
      m.unseen = blind || (k == ExportMetric::Kind::rate && !counter_observed(pm.name, pm.status.proxy, field));
      out.push_back(std::move(m));
    };
    auto add_hist = [&](const std::string& field) {
      add(field, ExportMetric::Kind::p50, "_p50_ns");  // p99 always follows its p50
      add(field, ExportMetric::Kind::p99, "_p99_ns");
    };
    if (const ProbeSpec* spec = find_probe(pm.name)) {
      std::vector<std::string> counters = {spec->primary};
      counters.insert(counters.end(), spec->secondary.begin(), spec->secondary.end());
      for (auto& c : counters) {
        const Field* f = pm.slot.find(c);
        if (f && (f->kind == FieldKind::counter || f->kind == FieldKind::counter_array))
          add(c, ExportMetric::Kind::rate, "_per_s");
      }
      const Field* h = spec->hist.empty() ? nullptr : pm.slot.find(spec->hist);
      if (h && h->kind == FieldKind::hist) add_hist(spec->hist);
    } else {
      for (auto& f : pm.slot.fields)
        if (f.kind == FieldKind::counter || f.kind == FieldKind::counter_array) add(f.name, ExportMetric::Kind::rate, "_per_s");
      for (auto& f : pm.slot.fields)
        if (f.kind == FieldKind::hist) add_hist(f.name);
    }
  }
  return out;
}

namespace {

using Cell = std::optional<double>;

/// The numbers of one interval: cells[m * ncpus + i] for metric m and the i-th exported
/// CPU, total[m] over all CPUs. nullopt: the probe is absent, the CPU was offline
/// (Interval::online), or a percentile of an interval without events.
struct IntervalValues {
  double time_s = 0;       ///< end of the interval, s since time zero
  double seconds = 0;
  uint64_t start_mono_ns = 0, end_mono_ns = 0, end_wall_ns = 0;
  std::vector<Cell> cells;
  std::vector<Cell> total;
  std::vector<char> present;  ///< per metric
  std::vector<char> online;   ///< per exported CPU: Interval::online
  /// The coherence model of this interval alone (one CoherenceAccumulator, one add()):
  /// the lines with a counted access, in LineKey order.
  CoherenceSummary coh;
  /// Per line of possible_lines(): its index in coh.lines (-1: no counted access), and
  /// whether any probe whose accesses reach it was present and not blind (else unmeasured).
  std::vector<int> line_index;
  std::vector<char> line_measured;
  /// --exact (the interval's later sample has EXACT records): per line of possible_lines(),
  /// the exact transfers and the gap model's of this interval (ExactAccumulator::interval(),
  /// after the previous interval's records); 0 transfers when no record touched the line.
  /// Empty without.
  bool has_exact = false;
  std::vector<LineTraffic> exact, gap;
  std::vector<char> touched;  ///< per line: some record of the interval named it (else no figure)
  uint64_t exact_records = 0, exact_lost = 0, exact_skipped = 0;
  /// The caught events (--catch) of the interval's later sample; null without. Valid only
  /// during Sink::interval().
  const CatchBatch* caught = nullptr;
};

/// The --exact figures of the interval from prev to cur into v (has_exact false when cur
/// has no EXACT records).
void compute_exact(const Sample& prev, const Sample& cur, double seconds, ExactAccumulator& acc,
                   const std::vector<PossibleLine>& lines, IntervalValues& v) {
  v.has_exact = cur.exact.has_value();
  v.exact.clear();
  v.gap.clear();
  v.touched.clear();
  v.exact_records = v.exact_lost = v.exact_skipped = 0;
  if (!v.has_exact) return;
  acc.interval(prev.exact ? &*prev.exact : nullptr, seconds, *cur.exact);
  v.exact.reserve(lines.size());
  v.gap.reserve(lines.size());
  for (const PossibleLine& l : lines) {
    const std::optional<LineTraffic> t = acc.traffic(l.key);
    v.touched.push_back(t.has_value());
    v.exact.push_back(t.value_or(LineTraffic{}));
    v.gap.push_back(acc.gap_traffic(l.key).value_or(LineTraffic{}));
  }
  v.exact_records = acc.records();
  v.exact_lost = acc.lost();
  v.exact_skipped = acc.skipped();
}

/// A CPU's transfers/s in t (0 when it has none).
double cpu_total(const LineTraffic& t, int cpu) {
  // t.cpus is in ascending cpu order: a binary search (a line every CPU touches, 8192 of
  // them, made this O(ncpus^2) per interval)
  auto it = std::lower_bound(t.cpus.begin(), t.cpus.end(), cpu,
                             [](const CpuXfers& c, int v) { return static_cast<int>(c.cpu) < v; });
  return it != t.cpus.end() && static_cast<int>(it->cpu) == cpu ? it->total() : 0.0;
}

/// An exact or gap figure in JSON: transfers/s, read and write, by distance.
nlohmann::json traffic_json(const LineTraffic& t) {
  nlohmann::json by = nlohmann::json::object();
  for (int d = 0; d < kXferDistances; ++d) by[to_string(XferDistance(d))] = t.by_distance[size_t(d)];
  return {{"xfers_per_s", t.total()}, {"read_xfers_per_s", t.read_xfers_per_s}, {"write_xfers_per_s", t.write_xfers_per_s},
          {"by_distance", by}};
}

/// The coherence model of iv into v.coh, v.line_index and v.line_measured. lines:
/// possible_lines() of the recording; measuring[p]: probe p is not blind.
void compute_lines(const Interval& iv, CoherenceAccumulator& acc, const std::vector<PossibleLine>& lines,
                   const std::vector<char>& measuring, IntervalValues& v) {
  v.coh = acc.of(iv);
  v.line_index.assign(lines.size(), -1);
  v.line_measured.assign(lines.size(), 0);
  // coh.lines is in LineKey order, lines in natural order: a binary search per line.
  for (size_t i = 0; i < lines.size(); ++i) {
    for (int p : lines[i].probes) v.line_measured[i] |= iv.present(p) && measuring[size_t(p)];
    auto it = std::lower_bound(v.coh.lines.begin(), v.coh.lines.end(), lines[i].key,
                               [](const LineSummary& l, const LineKey& k) { return l.key < k; });
    if (it != v.coh.lines.end() && it->key == lines[i].key) v.line_index[i] = static_cast<int>(it - v.coh.lines.begin());
  }
}

/// Transfers/s of line i of v missed by `cpu` (0 when it had none), nullopt when the line is
/// unmeasured in v.
Cell line_cpu_xfers(const IntervalValues& v, size_t i, int cpu) {
  if (!v.line_measured[i]) return std::nullopt;
  if (v.line_index[i] < 0) return 0.0;
  return cpu_total(v.coh.lines[size_t(v.line_index[i])].traffic, cpu);  // by binary search: a row per CPU
}

/// Transfers/s of line i of v over all CPUs (as line_cpu_xfers).
Cell line_xfers(const IntervalValues& v, size_t i) {
  if (!v.line_measured[i]) return std::nullopt;
  return v.line_index[i] < 0 ? 0.0 : v.coh.lines[size_t(v.line_index[i])].traffic.total();
}

void compute(const Interval& iv, const std::vector<ExportMetric>& metrics, const std::vector<int>& cpus,
             IntervalValues& v) {
  const size_t nc = cpus.size();
  v.cells.assign(metrics.size() * nc, std::nullopt);
  v.total.assign(metrics.size(), std::nullopt);
  v.present.assign(metrics.size(), 0);
  v.online.assign(nc, 0);
  for (size_t i = 0; i < nc; ++i) v.online[i] = iv.online(cpus[i]);
  for (size_t m = 0; m < metrics.size(); ++m) {
    const ExportMetric& em = metrics[m];
    if (!iv.present(em.probe)) continue;
    v.present[m] = 1;
    if (em.unseen) continue;
    if (em.kind == ExportMetric::Kind::rate) {
      for (size_t i = 0; i < nc; ++i)
        if (iv.online(cpus[i])) v.cells[m * nc + i] = iv.rate(em.ref, cpus[i]);
      v.total[m] = iv.rate(em.ref);  // offline CPUs add 0: the sum over the measured ones
      continue;
    }
    // p99 is filled with its p50, which export_metrics() always puts right before it.
    if (em.kind != ExportMetric::Kind::p50 || m + 1 >= metrics.size()) continue;
    v.present[m + 1] = 1;
    auto put = [&](size_t slot_p50, size_t slot_p99, const HistSummary& h, std::vector<Cell>& into) {
      if (!h.count) return;
      into[slot_p50] = h.p50;
      into[slot_p99] = h.p99;
    };
    for (size_t i = 0; i < nc; ++i)
      if (iv.online(cpus[i])) put(m * nc + i, (m + 1) * nc + i, iv.hist(em.ref, cpus[i]), v.cells);
    put(m, m + 1, iv.hist(em.ref), v.total);
  }
}

std::string json_str(const std::string& s) { return json_text(nlohmann::json(s)); }

void append_value(fmt::memory_buffer& b, const ExportMetric& m, double v) {
  append_fixed(b, v, m.kind == ExportMetric::Kind::rate ? 3 : 1);
}

/// One output format.
class Sink {
 public:
  Sink(const Meta& meta, const std::vector<ExportMetric>& metrics, const std::vector<int>& cpus,
       const std::vector<PossibleLine>& lines, std::ostream& out)
      : meta_(meta), metrics_(metrics), cpus_(cpus), lines_(lines), out_(out) {}
  virtual ~Sink() = default;
  /// exact: the first interval has --exact figures (IntervalValues::has_exact): the CSV's
  /// exact and gap columns, the JSON's cachelines.exact.
  virtual void begin(bool exact) = 0;
  virtual void interval(const IntervalValues& v) = 0;
  virtual void end(const SourceInfo& src, const ExportResult& r, uint64_t t0) = 0;
  /// Caught events written (the Perfetto sink's tail slices).
  virtual uint64_t caught() const { return 0; }

 protected:
  void flush(fmt::memory_buffer& b) {
    out_.write(b.data(), static_cast<std::streamsize>(b.size()));
    b.clear();
  }
  const Meta& meta_;
  const std::vector<ExportMetric>& metrics_;
  const std::vector<int>& cpus_;
  const std::vector<PossibleLine>& lines_;  ///< possible_lines() of the recording
  std::ostream& out_;
};

class CsvSink : public Sink {
 public:
  using Sink::Sink;
  void begin(bool exact) override {
    exact_ = exact;
    fmt::memory_buffer b;
    fmt::format_to(std::back_inserter(b), "time_s,cpu");
    for (auto& m : metrics_) fmt::format_to(std::back_inserter(b), ",{}", csv_cell(m.name));
    if (line_columns_)
      for (auto& l : lines_) fmt::format_to(std::back_inserter(b), ",{}", csv_cell("xfers_per_s:" + l.name));
    if (exact_ && line_columns_) {
      for (auto& l : lines_) fmt::format_to(std::back_inserter(b), ",{}", csv_cell("exact_xfers_per_s:" + l.name));
      for (auto& l : lines_) fmt::format_to(std::back_inserter(b), ",{}", csv_cell("gap_xfers_per_s:" + l.name));
    }
    b.push_back('\n');
    flush(b);
  }
  void interval(const IntervalValues& v) override {
    fmt::memory_buffer b;
    const size_t nc = cpus_.size();
    for (size_t i = 0; i < nc; ++i) {
      append_fixed(b, v.time_s, 6);
      fmt::format_to(std::back_inserter(b), ",{}", cpus_[i]);
      for (size_t m = 0; m < metrics_.size(); ++m) {
        b.push_back(',');
        if (const Cell& c = v.cells[m * nc + i]) append_value(b, metrics_[m], *c);
      }
      const bool online = v.online[i];
      for (size_t l = 0; line_columns_ && l < lines_.size(); ++l) {
        b.push_back(',');
        if (!online) continue;
        if (const Cell c = line_cpu_xfers(v, l, cpus_[i])) append_fixed(b, *c, 3);
      }
      if (exact_ && line_columns_)
        for (const std::vector<LineTraffic>* f : {&v.exact, &v.gap})
          for (size_t l = 0; l < lines_.size(); ++l) {
            b.push_back(',');
            // empty: no record of the interval named the line (not a measured 0)
            if (online && v.has_exact && v.touched[l]) append_fixed(b, cpu_total((*f)[l], cpus_[i]), 3);
          }
      b.push_back('\n');
      if (b.size() >= (size_t(1) << 20)) flush(b);  // a row at a time past 1 MiB: bounded memory
    }
    flush(b);
  }
  void end(const SourceInfo&, const ExportResult&, uint64_t) override {}
  /// false: no per-CPU line columns (ExportOptions::line_columns).
  void set_line_columns(bool on) { line_columns_ = on; }

 private:
  bool exact_ = false;
  bool line_columns_ = true;
};

nlohmann::json source_json(const SourceInfo& src) {
  return {{"file", src.file}, {"format", src.format}, {"complete", src.complete},
          {"damage", src.damage ? nlohmann::json(*src.damage) : nlohmann::json(nullptr)}};
}

nlohmann::json cell_json(const Cell& c) { return c ? nlohmann::json(*c) : nlohmann::json(nullptr); }

class JsonSink : public Sink {
 public:
  using Sink::Sink;
  void begin(bool exact) override {
    nlohmann::json probes = nlohmann::json::array();
    for (auto& p : meta_.probes)
      probes.push_back({{"name", p.name}, {"target", p.status.target},
                        {"status", p.status.attached ? "attached" : "unavailable"},
                        {"backend", p.status.attached ? p.status.backend_label() : ""}, {"reason", p.status.reason}});
    nlohmann::json metrics = nlohmann::json::array();
    for (auto& m : metrics_)
      metrics.push_back({{"name", m.name}, {"probe", meta_.probes[m.probe].name}, {"field", m.field},
                         {"kind", m.kind == ExportMetric::Kind::rate ? "rate" : m.kind == ExportMetric::Kind::p50 ? "p50" : "p99"},
                         {"unit", m.unit()}});
    const HostInfo& h = meta_.host;
    nlohmann::json head = {
        {"schema", "schedhot.export/1"},
        {"host", {{"hostname", h.hostname}, {"kernel_release", h.kernel_release}, {"online", format_cpulist(h.online)},
                  {"possible_cpus", meta_.ncpus}, {"cacheline_bytes", h.cacheline_bytes}}},
        {"tool_version", meta_.tool_version},
        {"interval_ns", meta_.interval_ns},
        {"start_wall_ns", meta_.start_wall_ns},
        {"cpus", cpus_},
        {"probes", probes},
        {"metrics", metrics},
        {"cachelines", cachelines_head(exact)}};
    std::string s = json_text(head);
    s.pop_back();  // reopen the object: intervals follow
    out_ << s << ",\"intervals\":[";
  }
  void interval(const IntervalValues& v) override {
    const size_t nc = cpus_.size();
    nlohmann::json values = nlohmann::json::object(), total = nlohmann::json::object();
    for (size_t m = 0; m < metrics_.size(); ++m) {
      if (!v.present[m]) {
        values[metrics_[m].name] = nullptr;
        total[metrics_[m].name] = nullptr;
        continue;
      }
      nlohmann::json a = nlohmann::json::array();
      for (size_t i = 0; i < nc; ++i) a.push_back(cell_json(v.cells[m * nc + i]));
      values[metrics_[m].name] = std::move(a);
      total[metrics_[m].name] = cell_json(v.total[m]);
    }
    // With --exact: each line's exact and gap figures (its index among lines_).
    std::vector<size_t> possible(v.coh.lines.size(), 0);
    for (size_t i = 0; i < v.line_index.size(); ++i)
      if (v.line_index[i] >= 0) possible[size_t(v.line_index[i])] = i;
    nlohmann::json lines = nlohmann::json::array();
    for (size_t k = 0; k < v.coh.lines.size(); ++k) {
      const LineSummary& l = v.coh.lines[k];
      nlohmann::json by = nlohmann::json::object();
      for (int d = 0; d < kXferDistances; ++d) by[to_string(XferDistance(d))] = l.traffic.by_distance[size_t(d)];
      nlohmann::json j = {{"name", l.name}, {"reads_per_s", l.reads_per_s}, {"writes_per_s", l.writes_per_s},
                          {"xfers_per_s", l.traffic.total()}, {"by_distance", by}};
      if (!meta_.gap_lines.empty() || l.estimate != LineSummary::kIndependentArrivals) j["estimate"] = l.estimate;
      if (v.has_exact) {
        nlohmann::json e = traffic_json(v.exact[possible[k]]), g = traffic_json(v.gap[possible[k]]);
        const double ex = v.exact[possible[k]].total();
        e["ratio"] = ex > 0 ? nlohmann::json(l.traffic.total() / ex) : nlohmann::json(nullptr);  // model/exact
        g["ratio"] = ex > 0 ? nlohmann::json(v.gap[possible[k]].total() / ex) : nlohmann::json(nullptr);  // gap/exact
        e["touched"] = bool(v.touched[possible[k]]);  // false: no record named the line (not a measured 0)
        j["exact"] = std::move(e);
        j["gap"] = std::move(g);
      }
      lines.push_back(std::move(j));
    }
    nlohmann::json j = {{"time_s", v.time_s},           {"seconds", v.seconds}, {"mono_ns", v.end_mono_ns},
                        {"wall_ns", v.end_wall_ns},     {"values", values},     {"total", total},
                        {"lines", lines}};
    if (v.has_exact)
      j["exact"] = {{"records", v.exact_records}, {"lost", v.exact_lost}, {"skipped", v.exact_skipped}};
    out_ << (first_ ? "\n" : ",\n") << json_text(j);
    first_ = false;
  }
  void end(const SourceInfo& src, const ExportResult& r, uint64_t t0) override {
    out_ << "\n],\"time_zero_mono_ns\":" << t0 << ",\"samples\":" << r.samples << ",\"source\":" << json_text(source_json(src))
         << "}\n";
  }

 private:
  /// The modeled lines: which layout, and every line an interval's "lines" can name.
  nlohmann::json cachelines_head(bool exact) const {
    const CoherenceLayout L = layout_of(meta_);
    nlohmann::json lines = nlohmann::json::array();
    for (const PossibleLine& l : lines_) {
      nlohmann::json probes = nlohmann::json::array();
      for (int p : l.probes) probes.push_back(meta_.probes[size_t(p)].name);
      lines.push_back({{"name", l.name}, {"object", l.key.object}, {"line", l.key.line}, {"family", l.family},
                       {"probes", probes}});
    }
    // What each line's xfers_per_s is (its "exact" and "gap" say theirs). With the probes'
    // gap state, each interval's line says which estimate it is (its "estimate").
    const bool gaps = !meta_.gap_lines.empty();
    return {{"model", gaps ? "gap model of the probes' per-CPU gap histograms per interval (independent arrivals where a "
                             "line had none); an estimate, see README 'Cachelines'"
                           : "independent arrivals (Poisson) per interval; an estimate, see README 'Cachelines'"},
            {"estimate", gaps ? "gap model where the interval's gap counts cover the line, else independent arrivals "
                                "(each line's estimate says)"
                              : LineSummary::kIndependentArrivals},
            {"exact", exact},  // the intervals' lines carry "exact" and "gap" (a recording made with --exact)
            {"line_bytes", L.line_bytes},
            {"layout_recorded", meta_.layout.has_value()},
            {"notes", L.notes},
            {"lines", lines}};
  }
  bool first_ = true;
};

/// Chrome trace-event JSON: one process per CPU ("CPU n", pid 1000+n) plus "all CPUs"
/// (pid 1); per probe one "C" event per interval whose args are that probe's metrics, so
/// every (CPU, metric) is its own counter track. An event at an interval's start holds its
/// value until the next one; a last event at the end of the last interval closes them.
/// Caught tail events (--catch) are complete ("X") slices on their CPU's thread track
/// "tails (--catch)" (tid = the CPU's pid), from ts - dur to ts, with their rule, task,
/// detail, interrupt time and stack as args.
class PerfettoSink : public Sink {
 public:
  using Sink::Sink;
  static constexpr int kAllPid = 1;
  static int cpu_pid(int cpu) { return 1000 + cpu; }
  void begin(bool) override {
    names_.clear();
    for (auto& p : meta_.probes) names_.push_back(json_str(p.name));
    for (auto& m : metrics_) columns_.push_back(json_str(m.column));
    for (auto& l : lines_) line_names_.push_back(json_str("xfer/s " + l.name));
    line_started_.assign(lines_.size(), 0);
    exported_cpu_.assign(meta_.ncpus, 0);
    for (int c : cpus_)
      if (c >= 0 && static_cast<uint32_t>(c) < meta_.ncpus) exported_cpu_[size_t(c)] = 1;
    tail_track_.assign(meta_.ncpus, 0);
    rule_of_.clear();
    for (const CatchRule& r : meta_.catch_rules) rule_of_.emplace(r.probe, r.text);
    details_.emplace(meta_);
    fmt::memory_buffer b;
    fmt::format_to(std::back_inserter(b), "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fmt::format_to(std::back_inserter(b), "{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
                   kAllPid, json_str("schedhot " + meta_.host.hostname + " all CPUs"));
    for (int c : cpus_)
      fmt::format_to(std::back_inserter(b), ",\n{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"CPU {}\"}}}}",
                     cpu_pid(c), c);
    flush(b);
  }
  void interval(const IntervalValues& v) override {
    emit(v, v.start_mono_ns);
    if (v.caught) tails(*v.caught);
    last_ = v;
    last_.caught = nullptr;
    have_last_ = true;
  }
  void end(const SourceInfo& src, const ExportResult& r, uint64_t t0) override {
    if (have_last_) emit(last_, last_.end_mono_ns);
    nlohmann::json other = {{"schema", "schedhot.perfetto/1"}, {"source", source_json(src)}, {"samples", r.samples},
                            {"time_zero_mono_ns", t0}, {"ts", "CLOCK_MONOTONIC us"}, {"caught_slices", slices_}};
    out_ << "\n],\"otherData\":" << json_text(other) << "}\n";
  }

 private:
  void emit(const IntervalValues& v, uint64_t at_ns) {
    fmt::memory_buffer b;
    const size_t nc = cpus_.size();
    std::string ts;  // the interval's end, us: every event's
    append_fixed(ts, static_cast<double>(at_ns) / 1e3, 3);
    // Metrics of one probe are consecutive: one event per (process, probe).
    for (size_t m0 = 0; m0 < metrics_.size();) {
      size_t m1 = m0;
      while (m1 < metrics_.size() && metrics_[m1].probe == metrics_[m0].probe) ++m1;
      if (v.present[m0]) {
        for (size_t i = 0; i <= nc; ++i) {  // i == nc: all CPUs
          bool any = false;
          for (size_t m = m0; m < m1; ++m) {
            const Cell& c = i < nc ? v.cells[m * nc + i] : v.total[m];
            if (!c) continue;
            if (!any)
              fmt::format_to(std::back_inserter(b), ",\n{{\"ph\":\"C\",\"pid\":{},\"ts\":{},\"name\":{},\"args\":{{",
                             i < nc ? cpu_pid(cpus_[i]) : kAllPid, ts, names_[metrics_[m0].probe]);
            else
              b.push_back(',');
            fmt::format_to(std::back_inserter(b), "{}:", columns_[m]);
            append_value(b, metrics_[m], *c);
            any = true;
          }
          if (any) fmt::format_to(std::back_inserter(b), "}}}}");
        }
      }
      m0 = m1;
    }
    // A track per line under "all CPUs", from the first interval with a counted access on;
    // an unmeasured interval has no event (the track holds), an idle one is 0.
    for (size_t l = 0; l < lines_.size(); ++l) {
      const Cell x = line_xfers(v, l);
      if (!x || (!line_started_[l] && v.line_index[l] < 0)) continue;
      line_started_[l] = 1;
      fmt::format_to(std::back_inserter(b), ",\n{{\"ph\":\"C\",\"pid\":{},\"ts\":{},\"name\":{},\"args\":{{\"xfers_per_s\":",
                     kAllPid, ts, line_names_[l]);
      append_fixed(b, *x, 3);
      if (v.has_exact) {
        fmt::format_to(std::back_inserter(b), ",\"exact_xfers_per_s\":");
        append_fixed(b, v.exact[l].total(), 3);
        fmt::format_to(std::back_inserter(b), ",\"gap_xfers_per_s\":");
        append_fixed(b, v.gap[l].total(), 3);
      }
      fmt::format_to(std::back_inserter(b), "}}}}");
    }
    flush(b);
  }
  /// The caught events of one interval as slices on their CPUs' tail tracks (CPUs not
  /// exported, --cpus, are left out).
  void tails(const CatchBatch& cb) {
    fmt::memory_buffer b;
    for (const CaughtEvent& e : cb.events) {
      if (e.cpu >= exported_cpu_.size() || !exported_cpu_[e.cpu]) continue;
      const int pid = cpu_pid(static_cast<int>(e.cpu));
      if (!tail_track_[e.cpu]) {
        tail_track_[e.cpu] = 1;
        fmt::format_to(std::back_inserter(b),
                       ",\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"tails (--catch)\"}}}}",
                       pid, pid);
      }
      const std::string probe = caught_probe_name(e.probe);
      const auto rule = rule_of_.find(probe);
      nlohmann::json args = {{"rule", rule == rule_of_.end() ? nlohmann::json(nullptr) : nlohmann::json(rule->second)},
                             {"dur_ns", e.dur_ns},
                             {"comm", e.comm},
                             {"pid", e.tgid},
                             {"tid", e.pid}};
      const bool detail = details_->shown(e);
      args["detail"] = detail ? nlohmann::json(details_->text(e)) : nlohmann::json(nullptr);
      if (detail) args.update(details_->fields(e));
      const bool irq = e.flags & SH_CATCH_F_IRQ;  // else not measured: null, not 0
      args["irq_ns"] = irq ? nlohmann::json(e.irq_ns) : nlohmann::json(nullptr);
      args["softirq_ns"] = irq ? nlohmann::json(e.softirq_ns) : nlohmann::json(nullptr);
      args["nmi_ns"] = irq ? nlohmann::json(e.nmi_ns) : nlohmann::json(nullptr);
      if (irq && (e.flags & SH_CATCH_F_IRQ_MORE)) args["irq_lower_bound"] = true;
      // steal: the vCPU's paravirt steal time inside (null: no steal clock, not 0)
      args["steal_ns"] = (e.flags & SH_CATCH_F_STEAL) ? nlohmann::json(e.steal_ns) : nlohmann::json(nullptr);
      args["stack"] = e.stack && e.stack <= cb.stacks.size() ? nlohmann::json(stack_text(cb.stacks[e.stack - 1]))
                                                              : nlohmann::json(nullptr);
      const uint64_t start = e.ts_ns >= e.dur_ns ? e.ts_ns - e.dur_ns : 0;
      fmt::format_to(std::back_inserter(b),
                     ",\n{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},\"name\":{},\"args\":{}}}", pid, pid,
                     static_cast<double>(start) / 1e3, static_cast<double>(e.ts_ns - start) / 1e3,
                     json_str(probe + " tail"), json_text(args));
      ++slices_;
    }
    flush(b);
  }
  uint64_t caught() const override { return slices_; }
  std::vector<std::string> names_, columns_, line_names_;
  std::vector<char> line_started_;
  std::vector<char> exported_cpu_, tail_track_;  ///< by CPU: in cpus_; its tail track named
  std::map<std::string, std::string> rule_of_;   ///< probe -> its rule's text
  std::optional<CaughtDetails> details_;  ///< the run's caught events' detail words
  uint64_t slices_ = 0;
  IntervalValues last_;
  bool have_last_ = false;
};

[[noreturn]] void throw_write_failed() {
  throw std::runtime_error(errno ? fmt::format("write failed: {}", strerror(errno)) : "write failed");
}

std::unique_ptr<Sink> make_sink(ExportFormat f, const Meta& meta, const std::vector<ExportMetric>& metrics,
                                const std::vector<int>& cpus, const std::vector<PossibleLine>& lines, std::ostream& out) {
  switch (f) {
    case ExportFormat::json: return std::make_unique<JsonSink>(meta, metrics, cpus, lines, out);
    case ExportFormat::perfetto: return std::make_unique<PerfettoSink>(meta, metrics, cpus, lines, out);
    case ExportFormat::csv:
    case ExportFormat::folded: break;
  }
  return std::make_unique<CsvSink>(meta, metrics, cpus, lines, out);
}

}  // namespace

namespace {

/// export --format folded: the window's caught events by (probe, stack), written at the end
/// (nothing when there is none: the caller says so).
ExportResult export_folded(SampleSource& src, std::ostream& out, const ExportOptions& o) {
  const Meta& meta = src.meta();
  ExportResult res;
  FoldedStacks folded;
  std::vector<char> cpus(meta.ncpus, o.cpus.empty() ? 1 : 0);  // --cpus (default: the online ones)
  for (int c : o.cpus)
    if (c >= 0 && size_t(c) < cpus.size()) cpus[size_t(c)] = 1;
  IntervalCursor ic(meta, {SampleWindow{o.from_s, o.to_s, meta.interval_ns}, o.t0_mono_ns});
  while (ic.next(src, o.stop)) {
    ++res.samples;
    if (!ic.interval()) continue;
    ++res.intervals;
    if (ic.cur().caught) folded.add(*ic.cur().caught, &cpus);
  }
  if (ic.stopped()) throw std::runtime_error("interrupted");
  res.last_t = ic.t();
  res.past_window = ic.past_window();
  res.caught = folded.events();
  if (res.caught) {
    const std::string text = folded.text();
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  out.flush();
  if (!out) throw_write_failed();
  return res;
}

}  // namespace

ExportResult export_samples(SampleSource& src, std::ostream& out, const ExportOptions& o,
                            const std::function<SourceInfo()>& source) {
  if (o.format == ExportFormat::folded) return export_folded(src, out, o);
  const Meta& meta = src.meta();
  const std::vector<ExportMetric> metrics = export_metrics(meta);
  std::vector<int> cpus;
  for (int c : o.cpus.empty() ? meta.host.online : o.cpus)
    if (c >= 0 && c < static_cast<int>(meta.ncpus)) cpus.push_back(c);
  if (o.cpus.empty() && cpus.empty())
    for (uint32_t c = 0; c < meta.ncpus; ++c) cpus.push_back(static_cast<int>(c));
  const std::vector<PossibleLine> lines = possible_lines(meta, layout_of(meta));
  CoherenceAccumulator model(meta);  // one per export: its plans are resolved once
  ExactAccumulator exact(meta);      // the same for the --exact records
  std::vector<char> measuring(meta.probes.size(), 0);  // not blind: its counters count
  for (size_t p = 0; p < meta.probes.size(); ++p) measuring[p] = blind_reason(meta, static_cast<int>(p)).empty();
  auto sink = make_sink(o.format, meta, metrics, cpus, lines, out);
  if (auto* csv = dynamic_cast<CsvSink*>(sink.get())) csv->set_line_columns(o.line_columns);
  const bool need_lines = o.format != ExportFormat::csv || o.line_columns;
  bool begun = false;  // the header only once there is an interval: a failed export writes nothing
  ExportResult res;
  IntervalCursor ic(meta, {SampleWindow{o.from_s, o.to_s, meta.interval_ns}, o.t0_mono_ns});
  IntervalValues v;
  while (ic.next(src, o.stop)) {
    ++res.samples;
    const Interval* iv = ic.interval();
    if (!iv) continue;
    const Sample &prev = *ic.prev(), &cur = ic.cur();
    compute(*iv, metrics, cpus, v);
    if (need_lines) {  // a CSV without line columns runs no model
      compute_lines(*iv, model, lines, measuring, v);
      compute_exact(prev, cur, iv->seconds(), exact, lines, v);
    }
    v.time_s = ic.t();
    v.seconds = iv->seconds();
    v.start_mono_ns = prev.mono_ns;
    v.end_mono_ns = cur.mono_ns;
    v.end_wall_ns = cur.wall_ns;
    v.caught = cur.caught ? &*cur.caught : nullptr;
    if (!begun) sink->begin(v.has_exact);
    begun = true;
    sink->interval(v);
    ++res.intervals;
    if (!out) throw_write_failed();
  }
  if (ic.stopped()) throw std::runtime_error("interrupted");
  res.last_t = ic.t();
  res.past_window = ic.past_window();
  const uint64_t t0 = ic.t0().value_or(0);
  res.caught = sink->caught();
  if (begun) sink->end(source(), res, t0);
  out.flush();
  if (!out) throw_write_failed();
  return res;
}

}  // namespace schedhot
