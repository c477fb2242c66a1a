#include "tui/app.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sys/cpulist.h"
#include "sys/units.h"
#include "tui/tails_view.h"
#include "analysis/report.h"
#include "output/report_text.h"

namespace schedhot::tui {

std::string TuiFeed::step(int) { return "only in replay"; }
std::string TuiFeed::jump(uint64_t) { return "only in replay"; }
std::string TuiFeed::jump_worst(const std::function<double(const Interval&)>&) { return "only in replay"; }
std::string TuiFeed::set_catch_threshold(const std::string&, uint64_t) { return "only in top (live)"; }

namespace {

/// A feed's message for the status line, after the key that asked ("t: at the first sample").
std::string keyed(int key, const std::string& msg) { return msg.empty() ? "" : fmt::format("{}: {}", char(key), msg); }

}  // namespace

TuiApp::TuiApp(TuiFeed& feed, TuiOptions opts)
    : feed_(feed), opts_(std::move(opts)), sort_col_(opts_.sort_col), reverse_(opts_.reverse), filter_(opts_.filter) {
  if (sort_col_ < 0 || sort_col_ >= table_columns()) sort_col_ = 1;
  if (!filter_.empty()) filter_text_ = format_cpulist(filter_);
  const Meta& m = feed_.meta();
  hist_probe_ = m.probe_index(default_hist_probe());
  if (hist_probe_ < 0) cycle_hist(1);
}

std::vector<int> TuiFeed::online_cpus() const {
  std::vector<int> v = meta().host.online;
  for (const Sample* s : {first(), last()})
    if (s) v.insert(v.end(), s->online.begin(), s->online.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<int> TuiApp::ever_online() const {
  const Meta& m = feed_.meta();
  const int n = static_cast<int>(m.ncpus);
  if (seen_online_.size() != m.ncpus) seen_online_.assign(m.ncpus, 0);
  bool known = false;
  auto mark = [&](const std::vector<int>& cpus) {
    for (int c : cpus)
      if (c >= 0 && c < n) seen_online_[size_t(c)] = 1, known = true;
  };
  mark(feed_.online_cpus());
  for (const Sample* s : {feed_.first(), feed_.last()})
    if (s) mark(s->online);
  std::vector<int> v;
  for (int c = 0; c < n; ++c)
    if (seen_online_[size_t(c)]) v.push_back(c);
  if (v.empty() && !known)
    for (int c = 0; c < n; ++c) v.push_back(c);
  return v;
}

std::vector<int> TuiApp::shown_cpus() const {
  if (!filter_.empty()) return filter_;
  return ever_online();
}

const CoherenceSummary& TuiApp::model_of(const Interval& iv) const {
  // The feed's meta is the only one shown; the two samples name the interval.
  ModelCache& c = model_cache_;
  const Sample &a = iv.first(), &b = iv.last();
  if (!c.valid || c.a_seq != a.seq || c.a_mono != a.mono_ns || c.b_seq != b.seq || c.b_mono != b.mono_ns) {
    if (!c.model || &c.model->meta() != &iv.meta())
      c.model = std::make_unique<CoherenceAccumulator>(iv.meta(), opts_.xfer_cost);  // plans resolved once per Meta
    c.summary = c.model->of(iv);
    c.a_seq = a.seq, c.a_mono = a.mono_ns, c.b_seq = b.seq, c.b_mono = b.mono_ns;
    c.valid = true;
    c.exact_valid = false;
  }
  return c.summary;
}

const ExactAccumulator* TuiApp::exact_of(const Interval& iv) const {
  model_of(iv);  // validates the cache for iv
  ModelCache& c = model_cache_;
  if (!c.exact_valid) {
    const Sample &a = iv.first(), &b = iv.last();
    c.has_exact = b.exact.has_value() && iv.seconds() > 0;
    if (c.has_exact) {
      if (!c.exact || &c.exact->meta() != &iv.meta()) c.exact = std::make_unique<ExactAccumulator>(iv.meta());
      c.exact->interval(a.exact ? &*a.exact : nullptr, iv.seconds(), *b.exact);
    }
    c.exact_valid = true;
  }
  return c.has_exact ? c.exact.get() : nullptr;
}

double TuiApp::worst_score(const Interval& iv) const {
  if (sort_col_ < 1 || sort_col_ >= table_columns()) return -1;
  std::vector<int> cpus = shown_cpus();
  // The model only when the sort column is its own (w scores every interval).
  ModelColumn mc;
  const bool model = cpu_columns()[size_t(sort_col_ - 1)].kind == CpuColumnKind::model;
  if (model) mc = model_column(iv, model_of(iv));
  const ModelColumn* mp = model ? &mc : nullptr;
  const double peak = view_ == View::topo
                         ? column_peak(group_rows(iv, fold_topology(iv.meta().host, cpus, level_), sort_col_, mp), sort_col_)
                         : cpu_column_peak(iv, cpus, sort_col_, mp);
  return peak >= 0 ? peak : -1;
}

void TuiApp::cycle_hist(int dir) {
  const Meta& m = feed_.meta();
  const int n = static_cast<int>(m.probes.size());
  const int start = hist_probe_ >= 0 ? hist_probe_ : (dir > 0 ? n - 1 : 0);
  for (int i = 1; i <= n; ++i) {
    int p = ((start + dir * i) % n + n) % n;
    const ProbeSpec* spec = find_probe(m.probes[size_t(p)].name);
    if (spec && !spec->hist.empty()) {
      hist_probe_ = p;
      return;
    }
  }
}

bool TuiApp::on_prompt_key(int key) {
  if (key == kKeyEsc) {
    prompt_ = Prompt::none;
  } else if (key == kKeyEnter || key == '\r') {
    commit_prompt();
    prompt_ = Prompt::none;
  } else if (key == kKeyBackspace || key == 8) {
    if (!input_.empty()) input_.pop_back();
  } else if (key == 21) {  // Ctrl-U: clear the line (the filter prompt starts with the current filter)
    input_.clear();
  } else if (key >= 32 && key < 127) {
    if (input_.size() < 200) input_.push_back(static_cast<char>(key));
  }
  return true;
}

void TuiApp::commit_prompt() {
  const Meta& m = feed_.meta();
  if (prompt_ == Prompt::filter) {
    if (input_.empty()) {
      filter_.clear();
      filter_text_.clear();
      first_row_ = 0;
      return;
    }
    std::vector<int> want;
    try {
      want = parse_cpulist(input_, static_cast<int>(m.ncpus));
    } catch (const std::invalid_argument& e) {
      message_ = fmt::format("filter: {}", e.what());
      return;
    }
    std::vector<int> online = ever_online(), keep;
    for (int c : want)
      if (std::binary_search(online.begin(), online.end(), c)) keep.push_back(c);
    if (keep.empty()) {
      message_ = fmt::format("filter: bad CPU list '{}': no CPU in it was online (online at some point: {})", input_,
                             format_cpulist(online));
      return;
    }
    filter_ = keep;
    filter_text_ = format_cpulist(keep);
    first_row_ = 0;
  } else if (prompt_ == Prompt::rule) {
    // "probe>DURATION": a fixed threshold (a percentile rule is set at the start).
    const size_t gt = input_.find('>');
    if (input_.empty()) return;
    if (gt == std::string::npos || gt == 0 || gt + 1 == input_.size()) {
      message_ = fmt::format("A: '{}' is not PROBE>DURATION (e.g. idle>500us)", input_);
      return;
    }
    const std::string probe = input_.substr(0, gt), v = input_.substr(gt + 1);
    if (v[0] == 'p' || v[0] == 'P') {
      message_ = "A: only a duration (e.g. idle>500us): a percentile rule is given at the start (--catch)";
      return;
    }
    uint64_t ns = 0;
    try {
      ns = parse_duration_ns(v, "A: the threshold");
    } catch (const std::invalid_argument& e) {
      message_ = e.what();
      return;
    }
    message_ = keyed('A', feed_.set_catch_threshold(probe, ns));
  } else if (prompt_ == Prompt::jump) {
    if (!opts_.parse_time) return;
    try {
      message_ = keyed('j', feed_.jump(opts_.parse_time(input_)));
    } catch (const std::invalid_argument& e) {
      message_ = fmt::format("j: {}", e.what());
    }
  }
}

bool TuiApp::on_key(int key) {
  if (key == kNoKey || key == kKeyResize) return true;
  if (overlay_ != Overlay::none) {
    // Scrolling keys scroll it; any other key closes it.
    const int last = std::max(overlay_lines_ - overlay_page_, 0);
    switch (key) {
      case kKeyUp: overlay_top_ = std::max(overlay_top_ - 1, 0); break;
      case kKeyDown: overlay_top_ = std::min(overlay_top_ + 1, last); break;
      case kKeyPgUp: overlay_top_ = std::max(overlay_top_ - overlay_page_, 0); break;
      case kKeyPgDn: overlay_top_ = std::min(overlay_top_ + overlay_page_, last); break;
      case kKeyHome: overlay_top_ = 0; break;
      case kKeyEnd: overlay_top_ = last; break;
      default: overlay_ = Overlay::none;
    }
    return true;
  }
  if (prompt_ != Prompt::none) return on_prompt_key(key);
  message_.clear();
  const int ncols = table_columns();
  switch (key) {
    case 'q':
      return false;
    case '?':
    case 'p':
      overlay_ = key == '?' ? Overlay::help : Overlay::probes;
      overlay_top_ = 0;
      break;
    case ' ':
      feed_.toggle_pause();
      break;
    case '+':
    case '=':
      message_ = feed_.adjust(1);
      break;
    case '-':
      message_ = feed_.adjust(-1);
      break;
    case '<':
      sort_col_ = (sort_col_ - 1 + ncols) % ncols;
      break;
    case '>':
    case kKeyF6:
      sort_col_ = (sort_col_ + 1) % ncols;
      break;
    case 'r':
      reverse_ = !reverse_;
      break;
    case '/':
      prompt_ = Prompt::filter;
      input_ = filter_text_;
      break;
    case kKeyUp:
      first_row_ = std::max(first_row_ - 1, 0);
      break;
    case kKeyDown:
      first_row_ = std::min(first_row_ + 1, std::max(row_count_ - page_, 0));
      break;
    case kKeyPgUp:
      first_row_ = std::max(first_row_ - page_, 0);
      break;
    case kKeyPgDn:
      first_row_ = std::min(first_row_ + page_, std::max(row_count_ - page_, 0));
      break;
    case kKeyHome:
      first_row_ = 0;
      break;
    case kKeyEnd:
      first_row_ = std::max(row_count_ - page_, 0);
      break;
    case kKeyLeft:
      if (view_ == View::hist) cycle_hist(-1);
      else first_col_ = std::max(first_col_ - 1, 0);
      break;
    case kKeyRight:
      if (view_ == View::hist) cycle_hist(1);
      else first_col_ = std::min(first_col_ + 1, ncols - 2);
      break;
    case 'c':
    case kKeyEsc:
      view_ = View::cpus;
      break;
    case 'h':
    case 'H':
      if (view_ != View::hist) {
        view_ = View::hist;
        // Start at the sort column's probe when it has a histogram.
        if (sort_col_ >= 1) {
          int p = feed_.meta().probe_index(cpu_columns()[size_t(sort_col_ - 1)].probe);
          const ProbeSpec* spec = p >= 0 ? find_probe(feed_.meta().probes[size_t(p)].name) : nullptr;
          if (spec && !spec->hist.empty()) hist_probe_ = p;
        }
      } else {
        cycle_hist(key == 'h' ? 1 : -1);
      }
      break;
    case 'o':
      if (view_ != View::topo) view_ = View::topo;
      else level_ = level_ == TopoLevel::package ? TopoLevel::core : static_cast<TopoLevel>(static_cast<int>(level_) + 1);
      first_row_ = 0;
      break;
    case 's':
      if (view_ != View::summary) first_row_ = 0;
      view_ = View::summary;
      break;
    case 'l':
      if (view_ != View::lines) first_row_ = 0;
      view_ = View::lines;
      break;
    case 'a':
      if (view_ != View::tails) first_row_ = 0;
      view_ = View::tails;
      break;
    case 'A':
      if (!feed_.live()) {
        message_ = "A: the rule editor is only in top (live)";
      } else if (feed_.catch_rules().empty()) {
        message_ = std::string("A: ") + kNoCatchRules;
      } else {
        view_ = View::tails;
        prompt_ = Prompt::rule;
        input_.clear();
      }
      break;
    case 't':
    case 'T':
      message_ = keyed(key, feed_.step(key == 't' ? -1 : 1));
      break;
    case 'j':
      if (feed_.live()) {
        message_ = keyed(key, feed_.jump(0));
      } else {
        prompt_ = Prompt::jump;
        input_.clear();
      }
      break;
    case 'w':
      if (!feed_.live() && sort_col_ == 0) {
        message_ = "w: sort by a value column first (< >)";
        break;
      }
      message_ = keyed(key, feed_.jump_worst([this](const Interval& iv) { return worst_score(iv); }));
      break;
    default:
      message_ = key >= 32 && key < 127 ? fmt::format("unknown key '{}' (? for help)", static_cast<char>(key))
                                        : "unknown key (? for help)";
  }
  return true;
}

namespace {

std::string sort_words(int col, bool reverse) {
  bool lowest_first = (col == 0) != reverse;
  return lowest_first ? "lowest first" : "highest first";
}

std::string rows_text(int first, int shown, int total) {
  if (total == 0) return "no rows";
  return fmt::format("rows {}-{} of {}", first + 1, first + shown, total);
}

}  // namespace

std::vector<Line> TuiApp::table_body(const Interval& iv, int width, int height, const ModelColumn* model) {
  const Meta& m = iv.meta();
  std::vector<int> cpus = shown_cpus();
  std::vector<TableRow> rows;
  std::string what;
  if (view_ == View::topo) {
    std::vector<CpuGroup> groups = fold_topology(m.host, cpus, level_);
    rows = group_rows(iv, groups, sort_col_, model);
    what = fmt::format("Topology by {}: {} group{} over {} CPUs", to_string(level_), groups.size(),
                       groups.size() == 1 ? "" : "s", cpus.size());
  } else {
    rows = cpu_rows(iv, cpus, sort_col_, model);
    what = fmt::format("Per CPU: {} of {} CPUs", cpus.size(), ever_online().size());
  }
  sort_rows(rows, sort_col_, reverse_);
  page_ = std::max(height - 2, 1);
  row_count_ = static_cast<int>(rows.size());
  first_row_ = std::clamp(first_row_, 0, std::max(row_count_ - page_, 0));
  const int shown = std::min(page_, row_count_ - first_row_);
  fill_rows(iv, rows, size_t(first_row_), size_t(shown), model);
  std::string sort_name = sort_col_ == 0 && view_ == View::topo ? std::string(to_string(level_)) : column_header(sort_col_);
  Line title;
  title.add(what, Role::title);
  if (!filter_.empty()) title.add("  filter ", Role::label).add(filter_text_);
  title.add("  sorted by ", Role::label).add(fmt::format("{} ({})", sort_name, sort_words(sort_col_, reverse_)));
  title.add("  " + rows_text(first_row_, shown, row_count_), Role::dim);
  if (view_ == View::topo) title.add("  o: next level", Role::dim);
  clip(title, width);
  TableStyle st;
  st.label_header = view_ == View::topo ? to_string(level_) : "CPU";
  st.cpu_list = view_ == View::topo;
  st.sort_col = sort_col_;
  st.reverse = reverse_;
  st.first_row = first_row_;
  st.first_col = first_col_;
  st.width = width;
  st.height = height - 1;
  std::vector<Line> out = {title};
  for (Line& l : render_table(rows, st, &first_col_)) out.push_back(std::move(l));
  return out;
}

std::vector<Line> TuiApp::lines_body(const Interval& iv, int width, int height) {
  // The title, the fixes and the column header; the lines from first_row_ (scrolled as the
  // tables are); then the what-ifs and notes, as far as they fit.
  const CoherenceSummary& sum = model_of(iv);
  const ExactAccumulator* exact = exact_of(iv);
  LinesView v = render_lines(iv.meta(), sum, opts_.xfer_cost, width, exact);
  row_count_ = sum.lines.empty() ? 0 : static_cast<int>(v.rows.size());
  page_ = std::max(height - 3 - static_cast<int>(v.tail.size()), std::min(kMinTableRows, std::max(height - 3, 1)));
  first_row_ = std::clamp(first_row_, 0, std::max(row_count_ - page_, 0));
  const int shown = std::min(page_, static_cast<int>(v.rows.size()) - first_row_);
  Line title;
  title.add(fmt::format("Cachelines: {} modeled line{} over {:.3g} s, every CPU", sum.lines.size(),
                        sum.lines.size() == 1 ? "" : "s", iv.seconds()),
            Role::title);
  title.add("  xfer/s: ", Role::label).add(sum.estimate + " (model)");
  // The lines whose own estimate differs (no gap counts for them: independent arrivals).
  const auto other = std::count_if(sum.lines.begin(), sum.lines.end(),
                                   [&](const LineSummary& l) { return l.estimate != sum.estimate; });
  if (other > 0) title.add(fmt::format(", {} line{} {}", other, other == 1 ? "" : "s", "by another estimate"), Role::dim);
  if (exact) title.add("  exact/s: ", Role::label).add("--exact records").add("  gap/s: ", Role::label).add("their gap model");
  title.add("  sorted by ", Role::label).add("xfer/s (highest first)");
  if (shown < row_count_) title.add("  " + rows_text(first_row_, shown, row_count_), Role::dim);
  clip(title, width);
  std::vector<Line> out = {title, v.fixes, v.head};
  for (int i = 0; i < shown; ++i) out.push_back(std::move(v.rows[size_t(first_row_ + i)]));
  for (Line& l : v.tail) out.push_back(std::move(l));
  return out;
}

std::vector<Line> TuiApp::tails_body(const Interval& iv, int width, int height) {
  // Its title, then the rules' blocks from first_row_ (scrolled as the tables are).
  const Meta& m = iv.meta();
  TailsFrame f;
  f.rules = &feed_.catch_rules();
  f.iv_seconds = iv.seconds();
  f.iv_start_mono_ns = iv.first().mono_ns;
  f.t0_mono_ns = iv.first().mono_ns;
  f.recording = feed_.recording();
  std::vector<Line> rows;
  if (!f.rules->empty()) {
    TailAccumulator one(m);
    if (iv.last().caught) one.add(*iv.last().caught);
    f.iv = one.json(m, iv, f.top, f.rules);
    f.batch = iv.last().caught ? &*iv.last().caught : nullptr;
    f.detail = [&one](const CaughtEvent& e) { return one.detail_of(e); };
    const TailsSoFar so = feed_.tails_so_far();
    if (so.start && so.acc && so.start->mono_ns <= iv.first().mono_ns) {
      Interval since(m, *so.start, iv.last());
      f.since = so.acc->json(m, since, f.top, f.rules);
      f.since_seconds = since.seconds();
      f.t0_mono_ns = so.start->mono_ns;
    }
    for (size_t i = 0; i < f.rules->size(); ++i) f.edited_ns.push_back(feed_.rule_edited_ns(i));
    rows = render_tails(f, width);
  } else {
    rows = render_tails(f, width);  // says how to get rules
  }
  page_ = std::max(height - 1, 1);
  row_count_ = static_cast<int>(rows.size());
  first_row_ = std::clamp(first_row_, 0, std::max(row_count_ - page_, 0));
  const int shown = std::min(page_, row_count_ - first_row_);
  Line title;
  title.add(fmt::format("Tails (--catch): {} rule{}, interval {:.3g} s", f.rules->size(), f.rules->size() == 1 ? "" : "s",
                        iv.seconds()),
            Role::title);
  if (!f.rules->empty())
    title.add(f.since.is_null() ? "  since start: not known" : fmt::format("  since start {:.3g} s", f.since_seconds), Role::dim);
  if (feed_.live() && !f.rules->empty()) title.add("  A: edit a threshold", Role::dim);
  if (shown < row_count_) title.add("  " + rows_text(first_row_, shown, row_count_), Role::dim);
  clip(title, width);
  std::vector<Line> out = {title};
  for (int i = 0; i < shown; ++i) out.push_back(std::move(rows[size_t(first_row_ + i)]));
  return out;
}

std::vector<Line> TuiApp::body(int width, int height) {
  const Meta& m = feed_.meta();
  if (!feed_.first() || !feed_.last()) {
    return {Line().add(fmt::format("waiting for the second sample (rates need two; interval {:.3g} s)",
                                   double(feed_.interval_ns()) / 1e9),
                       Role::dim)};
  }
  Interval iv(m, *feed_.first(), *feed_.last());
  std::vector<int> cpus = shown_cpus();
  std::string over = filter_.empty() ? "all CPUs" : "CPUs " + filter_text_;
  switch (view_) {
    case View::cpus:
    case View::topo: {
      const ModelColumn mc = model_column(iv, model_of(iv));
      return table_body(iv, width, height, &mc);
    }
    case View::lines:
      return lines_body(iv, width, height);
    case View::tails:
      return tails_body(iv, width, height);
    case View::summary: {
      // Its header line, then the probes' lines from first_row_ (scrolled as the tables are).
      std::vector<Line> sum = render_summary(iv, cpus, width);
      page_ = std::max(height - 2, 1);
      row_count_ = static_cast<int>(sum.size()) - 1;
      first_row_ = std::clamp(first_row_, 0, std::max(row_count_ - page_, 0));
      const int shown = std::min(page_, row_count_ - first_row_);
      Line title;
      title.add(fmt::format("Summary per probe over {}, {:.3g} s", over, iv.seconds()), Role::title);
      if (shown < row_count_) title.add("  " + rows_text(first_row_, shown, row_count_), Role::dim);
      clip(title, width);
      std::vector<Line> out = {title, sum[0]};
      for (int i = 0; i < shown; ++i) out.push_back(std::move(sum[size_t(first_row_ + 1 + i)]));
      return out;
    }
    case View::hist: {
      if (hist_probe_ < 0) return {Line().add("no probe has a histogram", Role::dim)};
      const ProbeMeta& pm = m.probes[size_t(hist_probe_)];
      const ProbeSpec* spec = find_probe(pm.name);
      const Field* f = spec ? pm.slot.find(spec->hist) : nullptr;
      std::vector<Line> out = {
          Line().add(fmt::format("Histogram of {}", pm.name), Role::title).add("  h/H or left/right: other probes", Role::dim)};
      std::string title = fmt::format("{} {} over {}", pm.name, f ? f->doc : "", over);
      if (!pm.status.attached || !iv.present(hist_probe_) || !f) {
        out.push_back(Line().add(title, Role::title));
        out.push_back(Line().add(pm.status.attached ? "no data" : "unavailable: " + brief_reason(pm.status.reason), Role::bad));
      } else if (pm.status.proxy) {  // a tracepoint stand-in counts calls; it cannot time them
        out.push_back(Line().add(title, Role::title));
        out.push_back(Line().add(fmt::format("{}: counts only, no duration", pm.status.proxy_label), Role::dim));
      } else {
        std::vector<uint64_t> b;
        HistSummary s = iv.hist(hist_probe_, spec->hist, cpus, b);
        for (Line& l : render_histogram(title, b, s, width, height - 1, opts_.utf8)) out.push_back(std::move(l));
      }
      for (Line& l : out) clip(l, width);
      return out;
    }
  }
  return {};
}

std::vector<Line> TuiApp::header(int width, bool interactive, int max_lines) const {
  HeaderInfo hi;
  hi.mode = feed_.live() ? "top" : "replay";
  hi.when = feed_.when();
  hi.interval_ns = feed_.interval_ns();
  hi.lost = feed_.lost();
  hi.cost = feed_.cost();
  std::string state = interactive ? feed_.state() : feed_.plain_state(), note = feed_.source_note();
  hi.state = state.empty() || note.empty() ? state + note : state + "  " + note;
  return render_header(feed_.meta(), hi, width, max_lines);
}

Screen TuiApp::render_overlay(int width, int height) {
  std::vector<Line> lines = overlay_ == Overlay::help ? render_help(feed_.live(), width) : render_probes(feed_.meta(), width);
  overlay_lines_ = static_cast<int>(lines.size());
  overlay_page_ = std::max(height - 1, 1);
  overlay_top_ = std::clamp(overlay_top_, 0, std::max(overlay_lines_ - overlay_page_, 0));
  Screen s;
  for (int i = overlay_top_; i < overlay_lines_ && static_cast<int>(s.size()) < overlay_page_; ++i)
    s.push_back(std::move(lines[size_t(i)]));
  while (static_cast<int>(s.size()) < overlay_page_) s.push_back(Line());
  Line foot;
  if (overlay_lines_ > overlay_page_)
    foot.add(fmt::format("lines {}-{} of {}  arrows PgUp PgDn scroll, other keys close", overlay_top_ + 1,
                         overlay_top_ + overlay_page_, overlay_lines_),
             Role::status);
  else
    foot.add("any key closes", Role::status);
  clip(foot, width);
  s.push_back(std::move(foot));
  return s;
}

std::string TuiApp::render_text() {
  if (!feed_.first() || !feed_.last()) return "";
  Interval iv(feed_.meta(), *feed_.first(), *feed_.last());
  std::vector<Line> lines = header(160, feed_.live());
  const ModelColumn mc = model_column(iv, model_of(iv));
  for (Line& l : table_body(iv, 4096, 1 << 30, &mc)) lines.push_back(std::move(l));
  std::string out;
  for (const Line& l : lines) {
    size_t end = l.text.find_last_not_of(' ');
    out += (end == std::string::npos ? "" : l.text.substr(0, end + 1)) + "\n";
  }
  return out;
}

Screen TuiApp::render(int width, int height) {
  Screen s;
  if (width < kMinWidth || height < kMinHeight) {
    s = render_too_small(width, height);
  } else if (overlay_ != Overlay::none) {
    s = render_overlay(width, height);
  } else {
    // The header gets what the view leaves after the key line, its fixed lines (title,
    // table header; the histogram's title and percentiles too) and kMinTableRows rows.
    const int fixed = view_ == View::hist ? 4 : view_ == View::lines ? 3 : 2;
    s = header(width, true, height - 1 - fixed - kMinTableRows);
    const int body_h = height - static_cast<int>(s.size()) - 1;
    std::vector<Line> b = body(width, body_h);
    for (int i = 0; i < body_h && i < static_cast<int>(b.size()); ++i) s.push_back(std::move(b[size_t(i)]));
    while (static_cast<int>(s.size()) < height - 1) s.push_back(Line());
    Line foot;
    if (prompt_ == Prompt::filter) {
      foot.add("filter CPUs (list or ranges, e.g. 0-7,16; empty = all; Ctrl-U clears, Esc cancels): ", Role::label)
          .add(input_ + "_");
    } else if (prompt_ == Prompt::rule) {
      std::string now;
      for (const CatchRule& r : feed_.catch_rules()) now += (now.empty() ? "" : ", ") + r.text;
      foot.add(fmt::format("catch threshold PROBE>DURATION (now {}; Esc cancels): ", now), Role::label).add(input_ + "_");
    } else if (prompt_ == Prompt::jump) {
      foot.add("jump to time since the start (e.g. 30, 2.5s, 1m): ", Role::label).add(input_ + "_");
    } else if (!message_.empty()) {
      foot.add(message_, Role::bad);
    } else {
      foot.add(feed_.live() ? "q quit  ? help  space pause  +/- interval  </> sort  r reverse  / filter  c cpus  h histogram  "
                              "o topology  s summary  l lines  a tails"
                            : "q quit  ? help  space play  +/- speed  t/T sample  j jump  w worst  </> sort  r reverse  / filter  "
                              "h histogram  o topology  s summary  l lines  a tails",
               Role::status);
    }
    clip(foot, width);
    s.push_back(std::move(foot));
  }
  s.resize(size_t(std::max(height, 0)));
  return s;
}

std::string cost_text(const BpfRunTotals& a, const BpfRunTotals& b, double seconds) {
  if (seconds <= 0) return "-";
  const uint64_t ns = b.run_ns >= a.run_ns ? b.run_ns - a.run_ns : 0;
  const uint64_t runs = b.runs >= a.runs ? b.runs - a.runs : 0;
  const double ms_per_s = double(ns) / 1e6 / seconds;
  return fmt::format("BPF {:.3f} ms/s ({:.3f}% of one CPU), {} runs/s, {} ns/run", ms_per_s, ms_per_s / 10.0,
                     format_rate(double(runs) / seconds), runs ? fmt::format("{:.0f}", double(ns) / double(runs)) : "-");
}

}  // namespace schedhot::tui
