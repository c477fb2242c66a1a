// report --fleet's document (method in analysis/fleet.h).
#include "analysis/fleet.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "model/histogram.h"
#include "model/interval.h"
#include "probe/catalog.h"
#include "probe/layout.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/host.h"
#include "sys/json_text.h"
#include "analysis/schema.h"

namespace schedhot {

namespace fs = std::filesystem;

/// The probes the text table shows (ProbeSpec::fleet: rate, and p99 where timed); JSON
/// and CSV have all.
const std::vector<const ProbeSpec*>& table_probes() {
  static const std::vector<const ProbeSpec*> v = [] {
    std::vector<const ProbeSpec*> r;
    for (const ProbeSpec& p : probe_catalog())
      if (p.fleet != FleetShow::none) r.push_back(&p);
    return r;
  }();
  return v;
}

/// The probe whose histogram is a lock's wait (ProbeSpec::wait_lock: bcast_wait), whose
/// wait goes into the severity; nullptr when none.
const ProbeSpec* wait_probe() {
  for (const ProbeSpec& p : probe_catalog())
    if (!p.wait_lock.empty()) return &p;
  return nullptr;
}

/// The row key of the wait probe's wait ("bcast_wait_ns_per_s").
std::string wait_key() {
  const ProbeSpec* w = wait_probe();
  return (w ? w->name : std::string("wait")) + "_ns_per_s";
}

/// The seed-patch fixes, one per hot object (their keys, subjects, flagged probes): what
/// the rows' "fixes" and the FIX column list.
const std::vector<Fix>& fix_kinds() {
  static const std::vector<Fix> v = fixes_unknown("").fixes;
  return v;
}

/// The kernel series of a release: "6.12.117+deb12-cloud-amd64" -> "6.12".
std::string kernel_series(const std::string& rel) {
  size_t dot = rel.find('.');
  if (dot == std::string::npos) return rel;
  size_t end = dot + 1;
  while (end < rel.size() && std::isdigit(static_cast<unsigned char>(rel[end]))) ++end;
  return rel.substr(0, end);
}

namespace {

/// schedhot-fleet's state.json (small: more than 1 MiB is not one), strings scrubbed.
nlohmann::json read_state(const fs::path& p) {
  std::error_code ec;
  // schedhot-fleet writes it as a file: a link (to /etc/shadow, say) is not followed by root.
  if (fs::is_symlink(fs::symlink_status(p, ec))) throw std::runtime_error("a symbolic link, not schedhot-fleet's file");
  if (!fs::is_regular_file(p, ec)) throw std::runtime_error("not a regular file");  // a FIFO would block
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read it");
  std::string text(1 << 20, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.gcount() == static_cast<std::streamsize>(text.size())) throw std::runtime_error("larger than 1 MiB");
  text.resize(static_cast<size_t>(in.gcount()));
  try {
    nlohmann::json j = parse_file_json(text);
    if (!j.is_object()) throw std::runtime_error("not a JSON object");
    return j;
  } catch (const nlohmann::json::parse_error& x) {  // its what() quotes the bytes it read: not echoed
    throw std::runtime_error(fmt::format("not JSON (a syntax error at byte {})", x.byte));
  } catch (const nlohmann::json::exception& x) {
    throw std::runtime_error(fmt::format("not JSON ({})", json_shape_error(x).what()));
  } catch (const JsonTooDeep&) {
    throw std::runtime_error("nested too deeply");
  }
}


struct Entry {
  std::string host;
  std::string recording;  ///< "" when none
  nlohmann::json state;   ///< schedhot-fleet's state.json, or null
  std::string state_error;
  bool loose = false;     ///< DIR/<host>.shot, not DIR/<host>/
  std::string unreadable; ///< why DIR/<host>/ gives no figures before any reading (unreadable, empty)
  std::string note;       ///< a flag about the entry itself (a renamed duplicate)
  std::string stale;      ///< why it is not one of the latest schedhot-fleet run's hosts ("" when it is)
  std::string bad_name;   ///< why its name is refused ("" when it is a host name)
};

/// A name with an ASCII control character (newline, tab, escape...) is no host name (schedhot-fleet
/// never makes one): refused rather than shown rewritten. Other code points are kept (JSON
/// and CSV) and only the text table shows them as '?'.
bool has_ascii_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

/// v as epoch seconds when it is a number of seconds a wall clock can show (0 to year
/// 2262, what format_utc_time's ns fit), else null: a crafted state.json's -5 or 1e300 is
/// an unknown time, not an invented date.
nlohmann::json epoch_seconds(const nlohmann::json& v) {
  if (!v.is_number()) return nullptr;
  const double s = v.get<double>();
  return std::isfinite(s) && s >= 0 && s < 9.2e9 ? v : nlohmann::json(nullptr);
}

/// When a recording of this entry's host was made (epoch seconds), from state.json: the record
/// step's start_at, else the check step's start_wall_ns; null when neither says (or says a
/// time no clock shows: epoch_seconds).
nlohmann::json recorded_at(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("steps") || !state["steps"].is_object()) return nullptr;
  const auto& st = state["steps"];
  if (st.contains("record") && st["record"].is_object() && st["record"].contains("start_at") &&
      st["record"]["start_at"].is_number())
    return epoch_seconds(st["record"]["start_at"]);
  if (st.contains("check") && st["check"].is_object() && st["check"].contains("start_wall_ns") &&
      st["check"]["start_wall_ns"].is_number())
    return epoch_seconds(st["check"]["start_wall_ns"].get<double>() / 1e9);
  return nullptr;
}

/// Hosts of dir: DIR/<host>/ holding recording.shot or state.json, and loose DIR/<host>.shot.
std::vector<Entry> discover(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(fmt::format("--fleet {}: not a directory", dir));
  std::vector<Entry> out;
  const bool run_dir = fs::exists(fs::path(dir) / "fleet.json", ec);
  // The latest schedhot-fleet run's hosts (DIR/fleet.json "hosts"): any other host of DIR is an
  // earlier run's, listed apart as stale and never ranked. No readable list: every host counts.
  std::optional<std::set<std::string>> this_run;
  std::string run_at;
  if (run_dir) {
    try {
      const nlohmann::json fj = read_state(fs::path(dir) / "fleet.json");
      if (fj.contains("hosts") && fj["hosts"].is_array()) {
        this_run.emplace();
        for (auto& h : fj["hosts"])
          if (h.is_string()) this_run->insert(h.get<std::string>());
        if (fj.contains("run_at") && epoch_seconds(fj["run_at"]).is_number())
          run_at = " of " + format_utc_time(static_cast<uint64_t>(fj["run_at"].get<double>() * 1e9));
      }
    } catch (const std::exception&) {
    }
  }
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw std::runtime_error(fmt::format("--fleet {}: {}", dir, ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw std::runtime_error(fmt::format("--fleet {}: {}", dir, ec.message()));
    const fs::path p = it->path();
    Entry e;
    if (it->is_directory(ec)) {
      e.host = p.filename().string();
      if (::access(p.c_str(), R_OK | X_OK) != 0) {
        e.unreadable = fmt::format("cannot read {}/: {}", p.string(), std::strerror(errno));
        out.push_back(std::move(e));
        continue;
      }
      // symlink_status: a dangling link is a host whose recording cannot be opened, not nothing
      if (fs::exists(fs::symlink_status(p / "recording.shot", ec))) e.recording = (p / "recording.shot").string();
      const fs::path st = p / "state.json";
      if (fs::exists(fs::symlink_status(st, ec))) {
        try {
          e.state = read_state(st);
        } catch (const std::exception& x) {
          e.state_error = x.what();
        }
      }
      if (e.recording.empty() && e.state.is_null() && e.state_error.empty()) {
        // In a schedhot-fleet run (DIR/fleet.json) every directory is a host: listed, never
        // dropped. Elsewhere (a directory of loose .shot files) it is just a directory.
        if (!run_dir || e.host.empty() || e.host[0] == '.') continue;
        e.unreadable = "neither recording.shot nor state.json in its directory";
      }
    } else if (p.extension() == ".shot" || p.filename() == ".shot") {  // any kind: the reader says what is wrong
      e.host = p.stem().string();
      e.recording = p.string();
      e.loose = true;
    } else {
      continue;
    }
    out.push_back(std::move(e));
  }
  // DIR/ok/ and DIR/ok.shot would both be host "ok": the loose file is named by its file name.
  std::set<std::string> dirs;
  for (const Entry& e : out)
    if (!e.loose) dirs.insert(e.host);
  for (Entry& e : out)
    if (e.loose && dirs.count(e.host)) {
      e.note = fmt::format("named {} by its file: {}/ is also a host", fs::path(e.recording).filename().string(), e.host);
      e.host = fs::path(e.recording).filename().string();
    }
  for (Entry& e : out) {
    if (has_ascii_control(e.host))
      e.bad_name = "its name holds a control character (newline, tab, escape...): not a host name, not read; rename it";
    if (this_run && !this_run->count(e.host))
      e.stale = fmt::format("not a host of the latest schedhot-fleet run{} (DIR/fleet.json): an earlier run's, not ranked",
                            run_at);
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.host < b.host; });
  if (out.empty())
    throw std::runtime_error(fmt::format("--fleet {}: no host in it (want DIR/<host>/recording.shot, DIR/<host>/state.json "
                                         "or DIR/<host>.shot)", dir));
  return out;
}


/// A fleet-wide histogram of one probe: the hosts' window buckets summed.
struct Merged {
  std::vector<uint64_t> buckets;
  uint64_t max_ns = 0;
  int hosts = 0;
  /// Sums in hosts' worth of buckets (same geometry; the shorter is zero-extended).
  void add(const std::vector<uint64_t>& bk, uint64_t max, int n) {
    if (buckets.size() < bk.size()) buckets.resize(bk.size(), 0);
    for (size_t i = 0; i < bk.size(); ++i) buckets[i] += bk[i];
    max_ns = std::max(max_ns, max);
    hosts += n;
  }
};

/// One host's row from its report in brief (ReportBuilder::summary(), analysis/report.h):
/// the report's own figures, typed, not its document re-read by key.
nlohmann::json row_from_report(const ReportSummary& r, const FleetRequest& req) {
  nlohmann::json row;
  const ReportSummary::Host& host = r.host;
  row["hostname"] = host.hostname;
  row["kernel_release"] = host.kernel_release;
  row["kernel_series"] = kernel_series(host.kernel_release);
  row["cpus_online"] = host.online_count;
  row["possible_cpus"] = host.possible_cpus;
  row["virtualization"] = hypervisor_name(host.hypervisor);
  row["samples"] = r.window.samples;
  row["seconds"] = r.window.seconds;
  row["start"] = r.window.start;
  row["fixes"] = nlohmann::json::object();
  for (const Fix& f : fix_kinds()) {
    const std::optional<bool> present = r.fixes.present(f.key);  // nullopt: unknown (or not in this recording's list)
    row["fixes"][f.key] = present ? nlohmann::json(*present) : nlohmann::json(nullptr);
  }
  nlohmann::json flags = nlohmann::json::array();
  nlohmann::json probes = nlohmann::json::object();
  std::map<std::string, const ReportSummary::Probe*> by_name;  // as probes: the last of a name
  std::optional<double> wait_ns_per_s;  // null unless the wait probe measured (blind/unavailable: not 0)
  const ProbeSpec* waiter = wait_probe();
  const double seconds = r.window.seconds;
  for (const ReportSummary::Probe& p : r.probes) {
    const std::string& name = p.name;
    nlohmann::json o;
    const bool attached = p.attached;
    const std::string& blind = p.blind;
    o["status"] = !attached ? "unavailable" : !blind.empty() ? "blind" : p.proxy ? "proxy" : "measured";
    o["backend"] = p.backend;
    o["reason"] = !attached ? p.reason : blind;
    o["rate_per_s"] = p.rate_per_s ? nlohmann::json(*p.rate_per_s) : nlohmann::json(nullptr);
    const bool has_lat = p.latency && p.latency->count > 0;
    o["p99_ns"] = has_lat ? nlohmann::json(p.latency->p99) : nlohmann::json(nullptr);
    if (!attached) flags.push_back(fmt::format("probe unavailable: {}: {}", name, p.reason));
    else if (!blind.empty()) flags.push_back(fmt::format("blind: {}: {}", name, blind));
    if (waiter && name == waiter->name && attached && blind.empty() && has_lat && seconds > 0) {
      wait_ns_per_s = p.latency->mean_ns * static_cast<double>(p.latency->count) / seconds;
      flags.push_back(fmt::format("{} contended: {} {}/s, wait p99 {}", waiter->wait_lock,
                                  format_rate(p.rate_per_s.value_or(0)), waiter->primary, format_ns(p.latency->p99)));
    }
    probes[name] = o;
    by_name[name] = &p;
  }
  auto fix_flag = [&](const std::string& fix, const std::string& field, const std::string& probe) {
    const auto pr = by_name.find(probe);
    if (pr == by_name.end() || !pr->second->latency || !pr->second->latency->count) return;
    const double p99 = pr->second->latency->p99;
    if (r.fixes.present(fix) == false && p99 > req.p99_flag_ns)
      flags.push_back(fmt::format("{} present and {} p99 {} > {}", field, probe, format_ns(p99), format_ns(req.p99_flag_ns)));
  };
  // A fix absent while its probe's p99 is high; the hot objects from last to first (fleet's
  // flags have always named cpupri's before nohz's).
  for (auto f = fix_kinds().rbegin(); f != fix_kinds().rend(); ++f)
    if (!f->flag_probe.empty()) fix_flag(f->key, f->subject, f->flag_probe);
  for (auto& [name, o] : probes.items())
    if (o["status"] == "proxy") flags.push_back(fmt::format("proxy: {} (its figures are not the function's)", name));
  double stall = 0, xfers = 0;
  nlohmann::json lines = nlohmann::json::array();
  for (const ReportSummary::Line& l : r.lines) {
    stall += l.stall_ns_per_s;
    xfers += l.xfers_per_s;
    lines.push_back({{"name", l.name}, {"xfers_per_s", l.xfers_per_s}, {"stall_ns_per_s", l.stall_ns_per_s}});
  }
  row["probes"] = probes;
  row["lines"] = lines;
  row["xfers_per_s"] = xfers;
  row["stall_ns_per_s"] = stall;
  row[wait_key()] = wait_ns_per_s ? nlohmann::json(*wait_ns_per_s) : nlohmann::json(nullptr);
  const double cpus = std::max(1.0, static_cast<double>(host.online_count));
  row["severity"] = (stall + wait_ns_per_s.value_or(0)) / cpus / 1000.0;
  if (!wait_ns_per_s && waiter)
    row["severity_note"] = fmt::format("without {} wait ({} not measured)", waiter->wait_lock, waiter->name);
  row["flags"] = flags;
  return row;
}

/// One host: its recording read through the report, or why it has no figures.
/// The samples of a recording at the boundaries of spans spans of equal sample counts
/// (sample round(j * (n - 1) / spans) for j = 0..spans, each once), for a cursor: those
/// between are decoded (deltas build on them, NOTE frames apply) but not returned. Ends
/// at the first sample that does not decode, or when stop is set (stopped()).
class SpanBoundaries : public SampleSource {
 public:
  /// n: the recording's good samples (at least 2 for any to be returned); spans >= 1.
  SpanBoundaries(RecordingReader& rd, size_t n, size_t spans, const std::atomic<bool>* stop)
      : rd_(rd), n_(n), spans_(spans), stop_(stop) {}
  const Meta& meta() const override { return rd_.meta(); }
  bool next(Sample& out) override {
    auto boundary = [&](size_t k) { return size_t(std::llround(double(k) * double(n_ - 1) / double(spans_))); };
    while (n_ >= 2 && i_ < n_) {
      if (stop_ && stop_->load()) {
        stopped_ = true;
        return false;
      }
      const size_t i = i_++;
      while (j_ <= spans_ && boundary(j_) < i) ++j_;
      if (j_ <= spans_ && boundary(j_) == i) {
        if (rd_.next(out)) return true;
      } else if (rd_.skip()) {
        continue;
      }
      i_ = n_;  // a sample that does not decode ends it
    }
    return false;
  }
  bool stopped() const { return stopped_; }

 private:
  RecordingReader& rd_;
  size_t n_, spans_;
  const std::atomic<bool>* stop_;
  size_t i_ = 0, j_ = 0;  ///< the next sample, the next boundary
  bool stopped_ = false;
};

nlohmann::json host_row(const Entry& e, const FleetRequest& req, std::map<std::string, Merged>& merged) {
  nlohmann::json row;
  const nlohmann::json fail = e.state.is_object() && e.state.contains("failure") ? e.state["failure"] : nlohmann::json();
  auto failed = [&](const std::string& why) {
    row["status"] = "failed";
    row["severity"] = nullptr;
    row["why"] = why;
    return row;
  };
  row["host"] = e.host;
  row["file"] = e.recording.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.recording);
  row["fleet_failure"] = fail.is_object() ? fail : nlohmann::json(nullptr);
  auto text = [&](const char* k) {  // a field of state.json's failure, whatever its type
    if (!fail.is_object() || !fail.contains(k)) return std::string("?");
    return fail[k].is_string() ? fail[k].get<std::string>() : json_text(fail[k]);
  };
  const std::string fail_text =
      fail.is_object() ? fmt::format("{} ({}): {}", text("name"), text("step"), text("detail"))
      : !fail.is_null() && !fail.is_discarded() && e.state.is_object() ? "failure: " + json_text(fail)
                                                                       : "";
  if (!e.state_error.empty()) row["state_error"] = e.state_error;
  if (!e.bad_name.empty()) return failed(e.bad_name);
  if (!e.stale.empty()) {  // an earlier run's host: listed apart with when it was recorded, never read
    row["status"] = "stale";
    row["severity"] = nullptr;
    row["recorded_at"] = recorded_at(e.state);
    row["why"] = fmt::format("recorded {}; {}",
                             row["recorded_at"].is_number()
                                 ? format_utc_time(static_cast<uint64_t>(row["recorded_at"].get<double>() * 1e9))
                                 : std::string("at an unknown time"),
                             e.stale);
    return row;
  }
  if (!e.unreadable.empty()) return failed(e.unreadable);
  if (e.recording.empty())
    return failed(fail_text.empty() ? (e.state_error.empty() ? "no recording collected" : "state.json: " + e.state_error)
                                    : fail_text);
  std::unique_ptr<RecordingReader> rd;
  try {
    rd = RecordingReader::open(e.recording);
  } catch (const std::exception& x) {
    return failed(x.what());
  }
  ReportOptions ro;
  ro.xfer_cost = req.xfer_cost;
  ReportBuilder b(rd->meta(), ro);
  size_t nsamples = 0, spans_used = 0;
  if (req.every_interval) {  // as `report FILE`: every sample, the lines modeled on each interval
    WindowedCursor cur(*rd, rd.get(), SampleWindow{-1, -1, rd->meta().interval_ns}, WindowCheck::any_edge, req.stop);
    if (!b.read(cur, req.stop)) throw Interrupted{};
    nsamples = b.samples();
  } else {
    // req.spans spans of equal sample counts, each one interval (its mean rates) from
    // boundary to boundary: totals and histograms are the same as from every sample (they
    // are cumulative), only the nonlinear line model sees coarser intervals. The frames are
    // CRC-checked first, so the number of good samples, damage and the END frame are known.
    rd->check_all_frames();
    nsamples = rd->sample_positions().size();  // the good ones (an intact index counts a damaged middle too)
    SpanBoundaries bounds(*rd, nsamples, std::max<size_t>(1, req.spans), req.stop);
    b.read(bounds);
    if (bounds.stopped()) throw Interrupted{};
    if (b.samples() < 2 && nsamples >= 2) nsamples = b.samples();  // a frame counted good did not decode
    spans_used = b.samples() > 0 ? b.samples() - 1 : 0;  // fewer than asked when boundaries coincide
  }
  const auto& damage = rd->damage();
  const std::string dmg = damage ? fmt::format("damaged at byte {} ({})", damage->offset, damage->reason) : "";
  if (b.samples() < 2)
    return failed(fmt::format("{} sample{}, need two for an interval{}", nsamples, nsamples == 1 ? "" : "s",
                              dmg.empty() ? "" : "; " + dmg));
  const SourceInfo info = recording_source_info(*rd, e.recording);
  nlohmann::json fig = row_from_report(*b.summary(rd->meta()), req);  // two samples or more: a summary
  for (auto& [k, v] : fig.items()) row[k] = v;
  row["samples"] = nsamples;
  row["model"] = req.every_interval ? nlohmann::json("every interval")
                                    : nlohmann::json(fmt::format("{} span{} of mean rates", spans_used,
                                                                 spans_used > 1 ? "s" : ""));
  const bool partial = damage || !info.complete;
  row["status"] = partial ? "partial" : "reported";
  if (damage) row["flags"].push_back(fmt::format("{}: reported the {} samples before it", dmg, nsamples));
  else if (!info.complete) row["flags"].push_back(fmt::format("not closed (no END frame): {} samples", nsamples));
  if (!fail_text.empty()) row["flags"].push_back("schedhot-fleet: " + fail_text);
  if (!e.state_error.empty()) row["flags"].push_back("state.json: " + e.state_error);
  // The window's histograms, summed into the fleet's (same log-linear geometry everywhere).
  const Meta& meta = rd->meta();
  const std::unique_ptr<WindowInterval> whole = b.window_interval();
  const Interval& iv = whole->iv;
  for (size_t p = 0; p < meta.probes.size(); ++p) {
    const ProbeSpec* spec = find_probe(meta.probes[p].name);
    const int pi = static_cast<int>(p);
    if (!spec || spec->hist.empty() || !iv.present(pi) || !meta.probes[p].status.attached ||
        !blind_reason(meta, pi).empty() || !counter_observed(spec->name, meta.probes[p].status.proxy, spec->hist))
      continue;
    const std::vector<uint64_t> bk = iv.buckets(pi, spec->hist);
    uint64_t n = 0;
    for (uint64_t c : bk) n += c;
    if (!n) continue;
    merged[spec->name].add(bk, iv.hist(pi, spec->hist).max_ns, 1);
  }
  return row;
}

}  // namespace

nlohmann::json fleet_document(const FleetRequest& req) {
  const std::vector<Entry> entries = discover(req.dir);
  // Hosts are independent: req.jobs workers each take the next one and keep their own
  // merged histograms, summed afterwards (sums: the order does not change them).
  std::vector<nlohmann::json> rows(entries.size());
  const size_t jobs = std::clamp<size_t>(req.jobs, 1, std::max<size_t>(1, entries.size()));
  std::vector<std::map<std::string, Merged>> part(jobs);
  std::vector<std::exception_ptr> errors(jobs);
  std::atomic<size_t> next{0};
  auto work = [&](size_t w) {
    try {
      for (size_t i; (i = next.fetch_add(1)) < entries.size();) {
        if (req.stop && req.stop->load()) throw Interrupted{};
        rows[i] = host_row(entries[i], req, part[w]);
        if (!entries[i].note.empty()) rows[i]["flags"].push_back(entries[i].note);
      }
    } catch (...) {
      errors[w] = std::current_exception();
      next.store(entries.size());  // the others stop at their next host
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < jobs; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::map<std::string, Merged> merged;
  for (const auto& pm : part)
    for (const auto& [name, m] : pm) merged[name].add(m.buckets, m.max_ns, m.hosts);
  // Ranked: every host with figures by severity (highest first, then by name); then those without.
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    const bool fa = a["severity"].is_number(), fb = b["severity"].is_number();
    if (fa != fb) return fa;
    return fa && a["severity"].get<double>() > b["severity"].get<double>();
  });
  int rank = 0, reported = 0, partial = 0, failed = 0, stale = 0, not_shown = 0;
  nlohmann::json hosts = nlohmann::json::array();
  for (auto& r : rows) {
    const std::string st = r["status"];
    (st == "reported" ? reported : st == "partial" ? partial : st == "stale" ? stale : failed)++;
    r["rank"] = r["severity"].is_number() ? nlohmann::json(++rank) : nlohmann::json(nullptr);
    if (req.top >= 0 && st == "reported" && rank > req.top) {
      ++not_shown;
      continue;
    }
    hosts.push_back(r);
  }
  // Groups: kernel series, online CPUs, virtualization.
  std::map<std::tuple<std::string, int, std::string>, std::vector<const nlohmann::json*>> groups;
  for (auto& r : rows)
    if (r["severity"].is_number())
      groups[{r["kernel_series"].get<std::string>(), r["cpus_online"].get<int>(), r["virtualization"].get<std::string>()}]
          .push_back(&r);
  nlohmann::json gj = nlohmann::json::array();
  for (auto& [k, v] : groups) {
    std::vector<double> sev;
    int flagged = 0;
    for (auto* r : v) {
      sev.push_back((*r)["severity"].get<double>());
      for (auto& f : (*r)["flags"])
        if (const std::string t = f.get<std::string>();
            t.rfind("probe unavailable", 0) != 0 && t.rfind("blind:", 0) != 0 && t.rfind("proxy:", 0) != 0) {
          ++flagged;
          break;
        }
    }
    std::sort(sev.begin(), sev.end());
    const size_t n = sev.size();
    const double median = n % 2 ? sev[n / 2] : (sev[n / 2 - 1] + sev[n / 2]) / 2;
    gj.push_back({{"kernel_series", std::get<0>(k)},
                  {"cpus_online", std::get<1>(k)},
                  {"virtualization", std::get<2>(k)},
                  {"hosts", n},
                  {"median_severity", median},
                  {"worst", {{"host", (*v.front())["host"]}, {"severity", (*v.front())["severity"]}}},
                  {"flagged", flagged}});
  }
  // Fleet-wide percentiles from the merged histograms, in catalog order.
  nlohmann::json lat = nlohmann::json::array();
  for (const ProbeSpec& spec : probe_catalog()) {
    auto it = merged.find(spec.name);
    if (it == merged.end()) continue;
    const Merged& m = it->second;
    uint64_t count = 0;
    for (uint64_t c : m.buckets) count += c;
    nlohmann::json o{{"probe", spec.name}, {"hosts", m.hosts}, {"count", count}, {"max_ns", m.max_ns}};
    for (double p : {10.0, 50.0, 90.0, 98.0, 99.0}) o[fmt::format("p{:g}", p)] = hist_percentile(m.buckets, p, m.max_ns);
    lat.push_back(o);
  }
  nlohmann::json d;
  d["schema"] = schema::fleet;
  d["dir"] = req.dir;
  d["severity"] = {{"formula", "(sum of the hot lines' modeled stall_ns_per_s + tick_broadcast_lock wait ns/s) / online CPUs / 1000"},
                   {"unit", "us per CPU-second"}};
  d["p99_flag_ns"] = req.p99_flag_ns;
  d["hosts_total"] = rows.size();
  d["counts"] = {{"reported", reported}, {"partial", partial}, {"failed", failed}, {"stale", stale}};
  d["not_shown"] = not_shown;
  d["hosts"] = hosts;
  d["groups"] = gj;
  d["fleet_latency"] = lat;
  d["percentile_error"] = kPercentileRelError;
  return d;
}

}  // namespace schedhot
