#include "analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ctime>

#include <fmt/format.h>

#include "model/histogram.h"
#include "model/interval.h"
#include "probe/module.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/cpulist.h"
#include "analysis/cachelines.h"
#include "sys/json_text.h"
#include "analysis/schema.h"

namespace schedhot {

const std::vector<CpuColumn>& cpu_columns() {
  static const std::vector<CpuColumn> cols = [] {
    std::vector<const ProbeModule*> mods = probe_modules();  // by sh_probe_id
    std::stable_sort(mods.begin(), mods.end(), [](const ProbeModule* a, const ProbeModule* b) {
      return a->spec().table_rank < b->spec().table_rank;
    });
    std::vector<CpuColumn> v;
    for (const ProbeModule* m : mods)
      for (const TableColumn& c : m->spec().columns)  // the modules are static: the strings stay
        v.push_back({c.header.c_str(), m->spec().name.c_str(), c.field.c_str(),
                     c.kind == ColumnKind::p99 ? CpuColumnKind::p99 : CpuColumnKind::rate,
                     c.key.empty() ? nullptr : c.key.c_str()});
    // Estimated cacheline transfers/s missed by the CPU, every modeled line (model/lines.h).
    v.push_back({"xfer/s", "", "", CpuColumnKind::model});
    return v;
  }();
  return cols;
}

ReportBuilder::ReportBuilder(const Meta& meta, ReportOptions opts)
    : meta_(meta),
      opts_(std::move(opts)),
      ic_(meta, {SampleWindow{opts_.from_s, opts_.to_s, meta.interval_ns}, std::nullopt, PastWindow::read_on,
                 /*keep_first=*/true, /*one_state=*/true}),
      coh_(std::make_unique<CoherenceAccumulator>(meta, opts_.xfer_cost)),
      exact_(std::make_unique<ExactAccumulator>(meta, /*what_ifs=*/true)),
      tails_(std::make_unique<TailAccumulator>(meta)),
      tail_exact_(std::make_unique<TailExactJoin>(*tails_, meta.catch_rules.size())) {
  if (!meta.catch_rules.empty()) exact_->set_observer(tail_exact_.get());
  peak_.resize(meta.probes.size());
  primary_.resize(meta.probes.size());
  known_.assign(meta.probes.size(), 0);
  for (size_t p = 0; p < meta.probes.size(); ++p)
    if (const ProbeSpec* spec = find_probe(meta.probes[p].name)) {
      primary_[p] = field_ref(meta, static_cast<int>(p), spec->primary);
      known_[p] = 1;
    }
}

void ReportBuilder::account() {
  const Sample& s = ic_.cur();
  if (const Interval* ivp = ic_.interval()) {
    const Interval& iv = *ivp;
    const Sample& prev = *ic_.prev();
    for (size_t p = 0; p < meta_.probes.size(); ++p) {
      if (!known_[p] || !iv.present(static_cast<int>(p))) continue;
      double r = iv.rate(primary_[p]);
      if (r > peak_[p].rate) peak_[p] = {r, ic_.t()};
    }
    coh_->add(iv);
    if (s.exact) exact_->add(iv.seconds(), *s.exact);
    if (s.caught) tails_->add(*s.caught);
    if (!meta_.catch_rules.empty()) tails_->add_interval(meta_, prev, iv);
    if (!meta_.catch_rules.empty()) tail_exact_->add(s.exact ? &*s.exact : nullptr, s.caught ? &*s.caught : nullptr);
    // Each CPU's measured time, for its per-CPU rates (a CPU online part of the window
    // is rated over that part).
    const uint64_t dt = s.mono_ns - prev.mono_ns;
    const auto all = [&](const std::vector<int>& o) { return o.empty() || o.size() >= meta_.ncpus; };
    if (all(prev.online) || all(s.online)) {
      all_online_ns_ += dt;
    } else {
      if (online_ns_.size() != meta_.ncpus) online_ns_.assign(meta_.ncpus, 0);
      for (uint32_t c = 0; c < meta_.ncpus; ++c)
        if (iv.online(static_cast<int>(c))) online_ns_[c] += dt;
    }
  }
  if (s.online.empty()) online_unknown_ = true;
  if (online_.size() != meta_.ncpus) online_.assign(meta_.ncpus, 0);
  for (int c : s.online)
    if (c >= 0 && c < static_cast<int>(meta_.ncpus)) online_[size_t(c)] = 1;
}

void ReportBuilder::add(const Sample& s) {
  Sample copy = s;
  take(copy);
}

void ReportBuilder::take(Sample& s) {
  if (ic_.take(s)) account();
}

bool ReportBuilder::read(SampleSource& src, const std::atomic<bool>* stop) {
  while (ic_.next(src, stop)) account();
  return !ic_.stopped();
}

std::string report_sort_key(const std::string& name) {
  if (name == "cpu" || name == "CPU") return "cpu";
  for (auto& col : cpu_columns())
    if ((col.kind != CpuColumnKind::model && name == col.probe) || name == col.header) return col.json_key();
  return "";
}

namespace {

nlohmann::json num_or_null(bool present, double v) { return present ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json hist_json(const HistSummary& h) {
  if (!h.count) return nullptr;
  return {{"count", h.count}, {"mean", h.mean_ns}, {"p10", h.p10}, {"p50", h.p50}, {"p90", h.p90},
          {"p98", h.p98},     {"p99", h.p99},     {"max", h.max_ns}};
}

/// Labelled non-zero elements of a counter array.
nlohmann::json array_json(const Interval& iv, int p, const ProbeMeta& pm, const Field& f) {
  nlohmann::json o = nlohmann::json::object();
  const ProbeModule* mod = find_module(pm.name);
  for (uint32_t i = 0; i < f.nwords; ++i) {
    uint64_t v = iv.count(p, f.name, -1, static_cast<int>(i));
    std::string label;
    if (auto l = mod ? mod->label(f.name, i) : std::nullopt)
      label = *l;
    else if (i < pm.labels.size())
      label = pm.labels[i];
    else
      label = std::to_string(i);
    if (v || (i < pm.labels.size())) o[label] = v;
  }
  return o;
}


/// A probe's "counters": its primary, its secondaries, then its other counters, each with
/// the window's total and rate (the primary with its peak interval when peak_rate >= 0);
/// null for those its proxy cannot see.
nlohmann::json counters_json(const Interval& iv, int p, const ProbeMeta& pm, const ProbeSpec& spec, double peak_rate,
                             double peak_at_s) {
  const ProbeStatus& st = pm.status;
  nlohmann::json counters = nlohmann::json::object();
  std::vector<std::string> names = {spec.primary};
  names.insert(names.end(), spec.secondary.begin(), spec.secondary.end());
  for (auto& f : pm.slot.fields)
    if (f.kind == FieldKind::counter && std::find(names.begin(), names.end(), f.name) == names.end())
      names.push_back(f.name);
  for (auto& n : names) {
    const Field* f = pm.slot.find(n);
    if (!f) continue;
    if (!counter_observed(pm.name, st.proxy, n)) {  // a proxy cannot see it: null, not 0
      counters[n] = nullptr;
      continue;
    }
    nlohmann::json c = {{"total", iv.count(p, n)}, {"rate_per_s", iv.rate(p, n)}};
    if (n == spec.primary && peak_rate >= 0) {
      c["peak_rate_per_s"] = peak_rate;
      c["peak_at_s"] = peak_at_s;
    }
    counters[n] = c;
  }
  return counters;
}

/// A probe's "per_cpu": its primary counter's total and rate, and its histogram's p99,
/// for each CPU of the table's rows.
/// n events over secs seconds, per second (0 over no time), as Interval::rate computes it.
double rate_over(uint64_t n, double secs) { return secs > 0 ? static_cast<double>(n) / secs : 0.0; }

nlohmann::json per_cpu_json(const Interval& iv, int p, const ProbeSpec& spec, const std::vector<int>& cpus,
                            const std::vector<double>& secs) {
  nlohmann::json per_cpu = nlohmann::json::array();
  const FieldRef primary = field_ref(iv.meta(), p, spec.primary), hist = field_ref(iv.meta(), p, spec.hist);
  for (int c : cpus) {
    if (c < 0 || c >= static_cast<int>(iv.meta().ncpus)) continue;
    const uint64_t n = iv.count(primary, c);
    nlohmann::json row = {{"cpu", c}, {"total", n}, {"rate_per_s", rate_over(n, secs[size_t(c)])}};
    if (!spec.hist.empty()) {
      HistSummary hs = iv.hist(hist, c);
      row["p99_ns"] = hs.count ? nlohmann::json(hs.p99) : nlohmann::json(nullptr);
    }
    per_cpu.push_back(std::move(row));
  }
  return per_cpu;
}

/// The report's host facts that ReportSummary carries.
ReportSummary::Host host_brief(const Meta& meta) {
  const HostInfo& h = meta.host;
  return {h.hostname, h.kernel_release, h.hypervisor ? h.hypervisor_vendor.empty() ? "yes" : h.hypervisor_vendor : "",
          h.online.size(), meta.ncpus};
}

/// The report's "host": the recording's HostInfo and possible CPUs.
nlohmann::json host_json(const Meta& meta) {
  const HostInfo& h = meta.host;
  const ReportSummary::Host b = host_brief(meta);
  return {{"hostname", b.hostname},
          {"kernel_release", b.kernel_release},
          {"online", format_cpulist(h.online)},
          {"online_count", b.online_count},
          {"possible_cpus", b.possible_cpus},
          {"cacheline_bytes", h.cacheline_bytes},
          {"arat", h.arat},
          {"hypervisor", b.hypervisor},
          {"spinlock", to_string(h.spinlock)},
          {"cpuidle_driver", h.cpuidle_driver},
          {"broadcast_device", h.broadcast_device}};
}

/// One probe's window totals over an Interval, for its module's report section.
class IntervalTotals : public WindowTotals {
 public:
  IntervalTotals(const Interval& iv, int probe) : iv_(iv), probe_(probe) {}
  std::vector<uint64_t> array(std::string_view field) const override {
    std::vector<uint64_t> v;
    const FieldRef f = field_ref(iv_.meta(), probe_, field);
    for (uint32_t i = 0; f && i < f.field->nwords; ++i) v.push_back(iv_.count(f, -1, static_cast<int>(i)));
    return v;
  }

 private:
  const Interval& iv_;
  int probe_;
};


}  // namespace

nlohmann::json ReportBuilder::window_json(const Meta& meta, const Sample& a, const Sample& b, const Interval& iv) const {
  nlohmann::json w = {{"start_wall_ns", a.wall_ns},
                      {"start", format_utc_time(a.wall_ns)},
                      {"from_s", static_cast<double>(a.mono_ns - ic_.t0().value_or(0)) / 1e9},
                      {"start_mono_ns", a.mono_ns},
                      {"end_mono_ns", b.mono_ns},
                      {"seconds", iv.seconds()},
                      {"samples", ic_.samples()},
                      {"interval_ns", meta.interval_ns}};
  // A window asked to end after the recording's last sample ends there: say so.
  if (opts_.to_s >= 0) {
    const double end_s = static_cast<double>(b.mono_ns - ic_.t0().value_or(0)) / 1e9;
    const double slack_s = static_cast<double>(meta.interval_ns) / 1e9 / 10;
    if (opts_.to_s > end_s + slack_s)
      w["note"] = fmt::format("--to {:.2f} s is after the last sample (+{:.2f} s): the window ends there",
                              opts_.to_s, end_s);
  }
  return w;
}

std::vector<int> ReportBuilder::row_cpus(const Meta& meta, const Interval& iv, bool have) const {
  std::vector<int> cpus;
  if (online_unknown_ || online_.size() != meta.ncpus) cpus = meta.host.online;
  for (size_t c = 0; c < online_.size() && c < meta.ncpus; ++c)
    if (online_[c]) cpus.push_back(static_cast<int>(c));
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  if (cpus.empty()) {
    for (uint32_t c = 0; c < meta.ncpus; ++c) cpus.push_back(static_cast<int>(c));
  } else if (have) {
    std::vector<bool> listed(meta.ncpus, false);
    for (int c : cpus)
      if (c >= 0 && c < static_cast<int>(meta.ncpus)) listed[size_t(c)] = true;
    for (size_t pi = 0; pi < meta.probes.size(); ++pi) {
      const ProbeSpec* spec = find_probe(meta.probes[pi].name);
      const int p = static_cast<int>(pi);
      if (!spec || !meta.probes[pi].status.attached || !iv.present(p) || !meta.probes[pi].slot.find(spec->primary)) continue;
      for (uint32_t c = 0; c < meta.ncpus; ++c)
        if (!listed[c] && iv.count(p, spec->primary, static_cast<int>(c))) listed[c] = true;
    }
    cpus.clear();
    for (uint32_t c = 0; c < meta.ncpus; ++c)
      if (listed[c]) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

std::vector<double> ReportBuilder::cpu_seconds(const Meta& meta, const Interval& iv) const {
  const uint64_t window_ns = iv.last().mono_ns > iv.first().mono_ns ? iv.last().mono_ns - iv.first().mono_ns : 0;
  std::vector<double> secs(meta.ncpus, iv.seconds());
  if (online_ns_.size() != meta.ncpus) return secs;  // every CPU measured in every interval
  for (uint32_t c = 0; c < meta.ncpus; ++c) {
    const uint64_t ns = all_online_ns_ + online_ns_[c];
    if (ns != window_ns) secs[c] = static_cast<double>(ns) / 1e9;
  }
  return secs;
}

ReportBuilder::ProbeBrief ReportBuilder::probe_brief(const Meta& meta, const Interval& iv, int p, bool have) const {
  const ProbeMeta& pm = meta.probes[size_t(p)];
  const ProbeStatus& st = pm.status;
  const ProbeSpec* spec = find_probe(pm.name);
  ProbeBrief out;
  ReportSummary::Probe& b = out.brief;
  b.name = pm.name;
  b.attached = st.attached;
  b.backend = st.attached ? st.backend_label() : "";
  b.reason = st.reason;
  if (st.attached) b.blind = blind_reason(meta, p);
  b.proxy = st.proxy;
  b.primary = spec ? spec->primary : "";
  // A layout without the primary field (a crafted or foreign file) has nothing to show.
  out.figures = have && st.attached && iv.present(p) && spec && b.blind.empty() && pm.slot.find(spec->primary);
  if (!out.figures) return out;
  if (counter_observed(pm.name, st.proxy, spec->primary)) b.rate_per_s = iv.rate(p, spec->primary);  // counters_json's
  if (!spec->hist.empty())
    if (HistSummary h = iv.hist(p, spec->hist); h.count) b.latency = h;
  return out;
}

nlohmann::json ReportBuilder::probe_json(const Meta& meta, const Interval& iv, int p, bool have,
                                         const std::vector<int>& cpus, const std::vector<double>& secs) const {
  const ProbeMeta& pm = meta.probes[size_t(p)];
  const ProbeStatus& st = pm.status;
  const ProbeSpec* spec = find_probe(pm.name);
  const ProbeBrief pb = probe_brief(meta, iv, p, have);
  const ReportSummary::Probe& b = pb.brief;
  nlohmann::json j;
  j["name"] = b.name;
  j["target"] = st.target;
  j["status"] = b.attached ? "attached" : "unavailable";
  j["backend"] = b.backend;
  j["symbol"] = st.symbol;
  j["via"] = st.via;
  j["proxy"] = b.proxy;
  j["proxy_error"] = st.proxy_error;
  j["reason"] = b.reason;
  j["notes"] = st.notes;
  if (!b.blind.empty()) j["blind"] = b.blind;
  j["primary"] = b.primary;
  if (!pb.figures) {
    j["counters"] = nullptr;
    j["latency_ns"] = nullptr;
    j["per_cpu"] = nullptr;
    return j;
  }
  const Peak& peak = peak_[size_t(p)];
  j["counters"] = counters_json(iv, p, pm, *spec, peak.rate, peak.at_s);
  nlohmann::json arrays = nlohmann::json::object();
  for (auto& f : pm.slot.fields)
    if (f.kind == FieldKind::counter_array) arrays[f.name] = array_json(iv, p, pm, f);
  j["arrays"] = arrays;
  j["latency_ns"] = b.latency ? hist_json(*b.latency) : nlohmann::json(nullptr);
  if (const ProbeModule* mod = find_module(pm.name)) mod->add_report_section(IntervalTotals(iv, p), j);
  j["per_cpu"] = per_cpu_json(iv, p, *spec, cpus, secs);
  return j;
}

void ReportBuilder::add_cpu_table(const Meta& meta, const Interval& iv, bool have, const std::vector<int>& cpus,
                                  const CoherenceSummary& coh, const std::vector<double>& secs, nlohmann::json& r) const {
  std::vector<char> measured(meta.probes.size());
  for (size_t pi = 0; pi < meta.probes.size(); ++pi)
    measured[pi] = meta.probes[pi].status.attached && blind_reason(meta, static_cast<int>(pi)).empty();
  // Each column's probe and field, resolved once for all rows.
  std::vector<FieldRef> col_ref;
  for (auto& col : cpu_columns()) col_ref.push_back(field_ref(meta, meta.probe_index(col.probe), col.field));
  // Every CPU's figures as numbers (null: not measured), sorted, and only the rows kept
  // made JSON: 8192 JSON rows were 9 MB of the report's peak at 8192 CPUs (issue 32).
  const size_t ncol = cpu_columns().size();
  std::vector<int> row_cpu;
  std::vector<double> row_online, val;  // val: ncol per row
  std::vector<char> part_of, null_of;
  row_cpu.reserve(cpus.size());
  for (int c : cpus) {
    if (c < 0 || c >= static_cast<int>(meta.ncpus)) continue;
    row_cpu.push_back(c);
    // A CPU measured in part of the window only: its rates are over that part, said as online_s.
    const double cs = secs[size_t(c)];
    const bool part = have && cs != iv.seconds();
    row_online.push_back(cs);
    part_of.push_back(part);
    for (size_t ci = 0; ci < ncol; ++ci) {
      const CpuColumn& col = cpu_columns()[ci];
      double x = 0;
      bool null = false;
      if (col.kind == CpuColumnKind::model) {
        // The model's per-CPU figure is a time average over the window (coh.seconds): over cs instead.
        x = have ? coh.cpu_xfers_per_s(c) : 0;
        if (part) x = cs > 0 ? x * coh.seconds / cs : 0;
        null = !have;
      } else {
        int p = meta.probe_index(col.probe);
        bool ok = have && p >= 0 && measured[size_t(p)] && iv.present(p);
        if (col.kind == CpuColumnKind::rate) {
          x = ok ? rate_over(iv.count(col_ref[ci], c), cs) : 0;
          null = !ok;
        } else {
          HistSummary hs = ok ? iv.hist(col_ref[ci], c) : HistSummary{};
          x = hs.p99;
          null = !hs.count;
        }
      }
      val.push_back(x);
      null_of.push_back(null);
    }
  }
  // Sort by the chosen probe's first column, highest first.
  std::string key = report_sort_key(opts_.sort);
  if (key.empty()) key = cpu_columns().front().json_key();  // the table's first column (idle/s)
  size_t kcol = ncol;
  for (size_t ci = 0; ci < ncol; ++ci)
    if (cpu_columns()[ci].json_key() == key) kcol = ci;
  std::vector<size_t> order(row_cpu.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (key == "cpu" || kcol == ncol) return row_cpu[x] < row_cpu[y];  // lowest first, as top
    const double a = null_of[x * ncol + kcol] ? -1 : val[x * ncol + kcol];
    const double b = null_of[y * ncol + kcol] ? -1 : val[y * ncol + kcol];
    return a > b;
  });
  size_t keep = opts_.all_cpus ? order.size() : std::min(order.size(), static_cast<size_t>(std::max(opts_.top, 0)));
  r["cpus_sorted_by"] = key;
  r["cpus_total"] = order.size();
  nlohmann::json rows = nlohmann::json::array();
  for (size_t k = 0; k < keep; ++k) {
    const size_t i = order[k];
    nlohmann::json row = {{"cpu", row_cpu[i]}};
    if (part_of[i]) row["online_s"] = row_online[i];
    for (size_t ci = 0; ci < ncol; ++ci)
      row[cpu_columns()[ci].json_key()] = num_or_null(!null_of[i * ncol + ci], val[i * ncol + ci]);
    rows.push_back(std::move(row));
  }
  r["cpus"] = std::move(rows);
}

nlohmann::json ReportBuilder::build(const Meta& meta, const SourceInfo& src) const {
  nlohmann::json r;
  r["schema"] = schema::report;
  r["source"] = {{"file", src.file}, {"format", src.format}, {"complete", src.complete},
                 {"damage", src.damage ? nlohmann::json(*src.damage) : nlohmann::json(nullptr)}};
  r["host"] = host_json(meta);
  r["percentile_error"] = kPercentileRelError;
  const Sample* first = ic_.first();
  const Sample* last = ic_.last();
  const uint64_t n = ic_.samples();
  if (!first || !last || n < 2) {
    r["window"] = {{"samples", n}, {"seconds", 0}, {"interval_ns", meta.interval_ns}};
    r["error"] = n == 0 ? "no samples in the window" : "only one sample in the window: need two for rates";
  }
  Sample empty;  // stands in for a missing side only: 225 MB at 8192 CPUs
  if (!first || !last) empty = make_sample(meta);
  const Sample& a = first ? *first : empty;
  const Sample& b = last ? *last : empty;
  // The window's first sample's words are kept sparse (IntervalCursorOptions::one_state).
  const std::unique_ptr<WindowInterval> whole = first && last ? ic_.window_interval() : nullptr;
  std::optional<Interval> plain;
  if (!whole) plain.emplace(meta, a, b);
  const Interval& iv = whole ? whole->iv : *plain;
  const bool have = n >= 2;
  if (have) r["window"] = window_json(meta, a, b, iv);
  const std::vector<int> cpus = row_cpus(meta, iv, have);
  if (have) r["window"]["online"] = format_cpulist(cpus);  // the CPUs of the per-CPU rows
  const std::vector<double> secs = cpu_seconds(meta, iv);
  nlohmann::json probes = nlohmann::json::array();
  for (size_t pi = 0; pi < meta.probes.size(); ++pi)
    probes.push_back(probe_json(meta, iv, static_cast<int>(pi), have, cpus, secs));
  r["probes"] = std::move(probes);  // moved: at 8192 CPUs its per-CPU rows are 27 MB
  const CoherenceSummary coh = coh_->summary();
  r["cachelines"] = have ? cachelines_json(meta, coh, opts_.xfer_cost, 3, exact_->any() ? exact_.get() : nullptr) : nlohmann::json(nullptr);
  add_cpu_table(meta, iv, have, cpus, coh, secs, r);
  // --catch: one entry per rule (none in a run that armed no rule: the document is as before).
  if (have && !meta.catch_rules.empty()) {
    r["tails"] = tails_->json(meta, iv);
    for (size_t i = 0; i < r["tails"].size(); ++i) r["tails"][i]["exact"] = tail_exact_->json(i, *exact_);
  }
  return r;
}

std::optional<ReportSummary> ReportBuilder::summary(const Meta& meta) const {
  const Sample* first = ic_.first();
  const Sample* last = ic_.last();
  if (!first || !last || ic_.samples() < 2) return std::nullopt;
  const std::unique_ptr<WindowInterval> whole = ic_.window_interval();
  const Interval& iv = whole->iv;
  ReportSummary s;
  s.host = host_brief(meta);
  s.window = {ic_.samples(), iv.seconds(), format_utc_time(first->wall_ns)};  // window_json's
  for (size_t pi = 0; pi < meta.probes.size(); ++pi)
    s.probes.push_back(probe_brief(meta, iv, static_cast<int>(pi), /*have=*/true).brief);
  s.fixes = recording_fixes(meta);  // cachelines_json's "fixes"
  for (const LineSummary& l : coh_->summary().lines)  // cachelines_json's "lines"
    s.lines.push_back({l.name, l.traffic.total(), stall_ns_per_s(l.traffic, opts_.xfer_cost)});
  return s;
}

SourceInfo recording_source_info(const RecordingReader& r, const std::string& file) {
  SourceInfo info;
  info.file = file;
  info.format = fmt::format("{}.{}", r.major(), r.minor());
  info.complete = r.saw_end();
  if (r.damage()) info.damage = fmt::format("at byte {}: {}", r.damage()->offset, r.damage()->reason);
  return info;
}

}  // namespace schedhot
