#include "live/session.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "model/lines.h"
#include "probe/catalog.h"
#include "probe/catch_rules.h"
#include "probe/learn_addr.h"
#include "probe/resolve.h"
#include "sample/probe_reader.h"
#include "sample/sampler.h"
#include "sys/privileges.h"

namespace schedhot {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    size_t c = s.find(',', pos);
    std::string item = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    if (!item.empty()) v.push_back(item);
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return v;
}

/// The AttachOptions of o; throws LiveError (2) for a bad --backend or --probes.
AttachOptions attach_options(const LiveProbeOptions& o) {
  AttachOptions ao;
  try {
    ao.pref = parse_backend_pref(o.backend);
  } catch (const std::exception& e) {
    throw LiveError(2, e.what());
  }
  ao.only = split_commas(o.probes);
  ao.exact = o.exact;
  ao.gaps = o.gap_state;
  ao.gap_samples_per_s = o.gap_samples;
  ao.verbose = o.verbose;
  ao.catch_armed = !o.catch_rules.empty();
  if (!o.probes.empty() && ao.only.empty())
    throw LiveError(2, fmt::format("--probes '{}' names no probe (leave it out for all)", o.probes));
  if (ao.only == std::vector<std::string>{"all"}) ao.only.clear();  // a unit's default (/etc/default/schedhot)
  for (auto& n : ao.only)
    if (!find_probe(n)) {
      std::string all;
      for (auto& p : probe_catalog()) all += (all.empty() ? "" : ", ") + p.name;
      throw LiveError(2, fmt::format("--probes: no probe named '{}' (probes: {})", n, all));
    }
  return ao;
}

}  // namespace

std::unique_ptr<Attached> attach_probes(const LiveProbeOptions& o, const std::function<void(const std::string&)>& warn) {
  if (std::string m = missing_privileges(); !m.empty()) throw LiveError(1, m);
  AttachOptions ao = attach_options(o);
  std::vector<CatchRule> rules;
  if (!o.catch_rules.empty()) try {
      rules = parse_catch_rules(o.catch_rules, o.catch_per_sec);
    } catch (const std::invalid_argument& e) {
      throw LiveError(2, e.what());
    }
  for (const CatchRule& r : rules)
    if (const ProbeSpec* p = find_probe(r.probe); p && p->id < 32) ao.catch_probes |= 1u << p->id;
  ao.bcast_holder = std::any_of(rules.begin(), rules.end(), [](const CatchRule& r) {
    const ProbeSpec* p = find_probe(r.probe);
    return p && p->id == SH_P_BCAST_WAIT;
  });
  if (std::string w = raise_memlock(); !w.empty() && o.verbose && warn) warn(w);
  auto a = std::make_unique<Attached>();
  try {
    a->facts = read_kernel_facts(o.system_map, o.btf);
    a->host = read_host_info();
    // The addresses of cpupri's separate allocations (probe/learn_addr.h): a note either way.
    if (o.btf.empty())
      learn_addresses(a->facts.layout, a->host.online, a->host.possible_cpus);
    else
      a->facts.layout.notes.push_back("addresses not learned: the layout is from --btf " + o.btf +
                                      ", not the running kernel's; separate allocations stay on an assumption");
    a->probes = std::make_unique<ProbeSet>(a->facts, a->host, ao);
  } catch (const std::exception& e) {
    throw LiveError(1, e.what());
  }
  // A rule that cannot catch here is refused, not left to count nothing.
  for (const CatchRule& r : rules)
    if (std::string why = catch_unusable(r, a->probes->statuses()[size_t(find_probe(r.probe)->id)]); !why.empty())
      throw LiveError(1, why);
  a->catch_rules = std::move(rules);
  // A bcast_wait rule names the lock's holder only where bcast_lock's sites keep it.
  if (ao.bcast_holder) {
    const ProbeStatus& bl = a->probes->statuses()[SH_P_BCAST_LOCK];
    if (!bl.attached)
      a->probes->add_note(SH_P_BCAST_WAIT, fmt::format("{}: bcast_lock is unavailable ({}): no CPU records the "
                                                       "lock-taking site it is inside, so caught waits name no holder",
                                                       kHolderNotTrackedNote, bl.reason));
  }
  return a;
}

Meta live_meta(const Attached& a, uint64_t interval_ns, const std::string& command_line) {
  Meta m = catalog_meta(a.host, a.probes->ncpus(), a.probes->statuses(), interval_ns, command_line);
  m.layout = a.facts.layout;
  // The gap state's routes, before the baseline sample: from the lines this Meta models.
  if (a.probes->gaps()) {
    const GapRoutes r = gap_routes(LinePlan(m, *m.layout));
    a.probes->set_gap_routes(r.routes);
    m.gap_lines = r.lines;
    m.gap_samples_per_s = a.probes->gap_samples_per_s();
  }
  // --catch: a fixed threshold armed now; a percentile one once the probe has counted
  // (LiveSession::took re-arms it each interval).
  for (const CatchRule& r : a.catch_rules)
    a.probes->set_catch_rule(uint32_t(find_probe(r.probe)->id), r.threshold_ns, r.per_sec);
  apply_catch_rules(m, a.catch_rules);
  return m;
}

LiveSession::LiveSession(LiveOptions o) : a_(attach_probes(o.probes, o.warn)) {
  if (attached_count() == 0) {
    const std::string cause = common_failure(statuses());
    throw LiveError(1, cause.empty() ? "no probe could attach; `schedhot probes` says why"
                                     : fmt::format("no probe could attach: {} (`schedhot probes` says more)", cause));
  }
  reader_ = std::make_unique<ProbeSetReader>(*a_->probes);
  src_ = std::make_unique<LiveSource>(*reader_, live_meta(*a_, o.interval_ns, o.command_line), o.interval_ns,
                                      o.duration_ns, o.stop);
  o.recording.exact = a_->probes->exact();
  o.recording.caught = a_->probes->caught();
  rec_ = std::make_unique<RecordingDriver>(*src_, std::move(o.recording));
  if (o.run_stats) {
    stats_ = std::make_unique<BpfRunStats>();
    fds_ = a_->probes->program_fds();
  }
}

LiveSession::~LiveSession() = default;

const std::vector<ProbeStatus>& LiveSession::statuses() const { return a_->probes->statuses(); }

size_t LiveSession::attached_count() const {
  return size_t(std::count_if(statuses().begin(), statuses().end(), [](const ProbeStatus& s) { return s.attached; }));
}

size_t LiveSession::proxy_count() const {
  return size_t(
      std::count_if(statuses().begin(), statuses().end(), [](const ProbeStatus& s) { return s.attached && s.proxy; }));
}

const Meta& LiveSession::meta() const { return src_->meta(); }

bool LiveSession::next(Sample& out) {
  if (!rec_->next(out)) return false;
  took(out);
  return true;
}

bool LiveSession::poll(Sample& out) {
  if (!rec_->poll(out)) return false;
  took(out);
  return true;
}

std::vector<int> LiveSession::take_status_changes() { return rec_->take_status_changes(); }

uint64_t LiveSession::interval() const { return src_->interval(); }

void LiveSession::set_interval(uint64_t ns) {
  src_->set_interval(ns);
  gap_interval_ = std::max(gap_interval_, ns);
}

uint64_t LiveSession::due() const { return src_->due(); }

bool LiveSession::run_stats_on() const { return stats_ && stats_->on(); }

std::string LiveSession::run_stats_error() const { return stats_ ? stats_->error() : "not asked"; }

uint64_t LiveSession::set_catch_threshold(const std::string& probe, uint64_t ns) {
  auto it = std::find_if(a_->catch_rules.begin(), a_->catch_rules.end(), [&](const CatchRule& r) { return r.probe == probe; });
  if (it == a_->catch_rules.end())
    throw std::invalid_argument(fmt::format("{} had no --catch rule at the start: only those can be edited", probe));
  if (ns == 0) throw std::invalid_argument("a threshold must be above 0");
  const uint64_t th = round_threshold(ns);
  a_->probes->set_catch_rule(uint32_t(find_probe(probe)->id), th, it->per_sec);
  // As --catch reads it back (a number without a unit is seconds; no "ns" unit).
  std::string asked = ns % 1'000'000 == 0 ? fmt::format("{}ms", ns / 1'000'000) : fmt::format("{:.3f}", double(ns) / 1e3);
  if (ns % 1'000'000) {
    while (asked.back() == '0') asked.pop_back();
    if (asked.back() == '.') asked.pop_back();
    asked += "us";
  }
  it->text = fmt::format("{}>{}", probe, asked);
  it->asked_ns = ns;
  it->percentile = 0;
  it->threshold_ns = th;
  // In the probe's status, so a recording's NOTE says it: its META keeps the start's rule,
  // which (and its histogram check) report must not apply past this instant.
  const int p = meta().probe_index(probe);
  const uint64_t now = mono_now_ns(), t0 = meta().start_mono_ns;
  if (p >= 0)
    a_->probes->add_note(size_t(p), fmt::format("{} {} at +{:.1f} s: {} (armed at {} ns)", kCatchEditedNote,
                                                probe, now > t0 ? double(now - t0) / 1e9 : 0.0, it->text, th));
  return th;
}

void LiveSession::rearm_percentile_rules(const Sample& s) {
  for (const CatchRule& r : a_->catch_rules) {
    if (r.percentile <= 0) continue;
    const std::vector<uint64_t> b = summed_histogram(meta(), s, meta().probe_index(r.probe), find_probe(r.probe)->hist);
    if (b.empty()) continue;
    a_->probes->set_catch_rule(uint32_t(find_probe(r.probe)->id), percentile_threshold(b, r.percentile), r.per_sec);
  }
}

void LiveSession::took(const Sample& s) {
  rearm_percentile_rules(s);
  if (run_stats_on()) run_totals_ = BpfRunStats::read(fds_);
  if (have_last_) lost_ += missed_samples(s.mono_ns - last_mono_ns_, gap_interval_);
  have_last_ = true;
  last_mono_ns_ = s.mono_ns;
  gap_interval_ = src_->interval();
}

std::string LiveSession::close(bool final_sample) {
  if (!rec_->stop(final_sample)) throw LiveError(1, *rec_->error());
  return rec_->recording() ? rec_->summary() : "";
}

}  // namespace schedhot
