#include "tui/screen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sys/cpulist.h"

namespace schedhot::tui {

// ---- text -------------------------------------------------------------------------

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

std::string right(std::string_view s, int width) {
  int n = cells(s);
  if (n >= width) return std::string(s.substr(0, byte_of_cell(s, width)));
  return std::string(size_t(width - n), ' ') + std::string(s);
}

}  // namespace

size_t byte_of_cell(std::string_view s, int cell) {
  size_t i = 0;
  for (int n = 0; i < s.size(); ++i) {
    if (is_continuation(static_cast<unsigned char>(s[i]))) continue;
    if (n++ == cell) return i;
  }
  return s.size();
}

int cells(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += !is_continuation(c);
  return n;
}

std::string fit(std::string_view s, int width) {
  if (width <= 0) return {};
  std::string out(s.substr(0, byte_of_cell(s, width)));
  int n = cells(out);
  if (n < width) out.append(size_t(width - n), ' ');
  return out;
}

Line& Line::add(std::string_view s, Role role) {
  if (role != Role::normal && !s.empty()) spans.push_back({width(), cells(s), role});
  text += s;
  return *this;
}

int Line::width() const { return cells(text); }

void clip(Line& l, int width) {
  if (l.width() <= width) return;
  l.text.resize(byte_of_cell(l.text, std::max(width, 0)));
  std::vector<Span> kept;
  for (Span s : l.spans) {
    if (s.col >= width) continue;
    s.len = std::min(s.len, width - s.col);
    kept.push_back(s);
  }
  l.spans = std::move(kept);
}

// ---- table values -------------------------------------------------------------------

std::vector<int> column_probes(const Interval& iv) {
  std::vector<int> out;
  const Meta& m = iv.meta();
  for (const CpuColumn& col : cpu_columns()) {
    int p = col.kind == CpuColumnKind::model ? -1 : m.probe_index(col.probe);
    bool ok = p >= 0 && m.probes[p].status.attached && iv.present(p) && blind_reason(m, p).empty();
    out.push_back(ok ? p : -1);  // -1: "-", not measured (unavailable, blind, no data)
  }
  return out;
}

namespace {

/// column_value() with the column's field already resolved (ref: field_ref of probe).
double value_of(const Interval& iv, const CpuColumn& col, int probe, const FieldRef& ref, std::span<const int> cpus,
                const ModelColumn* model = nullptr) {
  if (col.kind == CpuColumnKind::model && !model) return kBlank;
  if (col.kind != CpuColumnKind::model && probe < 0) return kUnavailable;
  // CPUs that were offline over the whole interval measured nothing: "-", not 0.
  if (std::none_of(cpus.begin(), cpus.end(), [&](int c) { return iv.online(c); })) return kUnavailable;
  if (col.kind == CpuColumnKind::model) {
    if (!model->measured) return kUnavailable;
    double x = 0;
    for (int c : cpus)
      if (c >= 0 && size_t(c) < model->xfers_per_cpu.size()) x += model->xfers_per_cpu[size_t(c)];
    return x;
  }
  if (col.kind == CpuColumnKind::rate) return iv.rate(ref, cpus);
  if (iv.meta().probes[size_t(probe)].status.proxy) return kUnavailable;  // a proxy times nothing: "-", as report
  HistSummary h = iv.hist(ref, cpus);
  return h.count ? h.p99 : kBlank;
}

/// The table's columns resolved once per interval: each one's probe (column_probes) and field.
struct ColumnRefs {
  std::vector<int> probes;
  std::vector<FieldRef> fields;
  explicit ColumnRefs(const Interval& iv) : probes(column_probes(iv)) {
    const auto& cols = cpu_columns();
    for (size_t i = 0; i < cols.size(); ++i) fields.push_back(field_ref(iv.meta(), probes[i], cols[i].field));
  }
};

/// Values of row: every column (only == kEveryColumn) or table column `only` alone.
void fill_values(const Interval& iv, const ColumnRefs& refs, TableRow& row, int only, const ModelColumn* model) {
  const auto& cols = cpu_columns();
  row.v.assign(cols.size(), kBlank);
  for (size_t i = 0; i < cols.size(); ++i)
    if (only == kEveryColumn || only == static_cast<int>(i) + 1)
      row.v[i] = value_of(iv, cols[i], refs.probes[i], refs.fields[i], row.cpus, model);
}

}  // namespace

double column_value(const Interval& iv, const CpuColumn& col, int probe, std::span<const int> cpus) {
  return value_of(iv, col, probe, field_ref(iv.meta(), probe, col.field), cpus);
}

ModelColumn model_column(const Interval& iv, const CoherenceSummary& summary) {
  ModelColumn m;
  const Meta& meta = iv.meta();
  for (size_t p = 0; p < meta.probes.size() && !m.measured; ++p) {
    const ProbeSpec* spec = find_probe(meta.probes[p].name);
    m.measured = spec && !spec->accesses.empty() && meta.probes[p].status.attached && iv.present(static_cast<int>(p));
  }
  m.xfers_per_cpu.assign(meta.ncpus, 0);
  for (const LineSummary& l : summary.lines)
    for (const CpuXfers& c : l.traffic.cpus) {
      if (c.cpu >= m.xfers_per_cpu.size()) m.xfers_per_cpu.resize(size_t(c.cpu) + 1, 0);
      m.xfers_per_cpu[c.cpu] += c.total();
    }
  return m;
}

void fill_rows(const Interval& iv, std::vector<TableRow>& rows, size_t first, size_t count, const ModelColumn* model) {
  const ColumnRefs refs(iv);
  for (size_t i = first; i < rows.size() && i - first < count; ++i) fill_values(iv, refs, rows[i], kEveryColumn, model);
}

std::vector<TableRow> cpu_rows(const Interval& iv, std::span<const int> cpus, int only, const ModelColumn* model) {
  const ColumnRefs refs(iv);
  std::vector<TableRow> rows;
  rows.reserve(cpus.size());
  for (int c : cpus) {
    TableRow r;
    r.label = std::to_string(c);
    r.cpus = {c};
    r.key = c;
    fill_values(iv, refs, r, only, model);
    rows.push_back(std::move(r));
  }
  return rows;
}

const char* to_string(TopoLevel l) {
  return l == TopoLevel::llc ? "LLC" : l == TopoLevel::cpu ? "CPU" : topo_level_name(l);
}

std::vector<CpuGroup> fold_topology(const HostInfo& h, std::span<const int> cpus, TopoLevel level) {
  // By CPU id, for the ids asked (a frame folds every CPU: 8192 map lookups and as many
  // labels made were most of a topology view's frame at 8192 CPUs).
  // Ids past kDirect (none on a real machine: a reader takes at most 8192 CPUs, but a
  // filter or a crafted topology may name any int) go through a map.
  constexpr int kDirect = 1 << 16;
  int top = -1;
  for (int c : cpus) top = std::max(top, std::min(c, kDirect - 1));
  std::vector<const CpuTopology*> by_cpu(size_t(top + 1), nullptr);
  std::map<int, const CpuTopology*> far;
  for (const CpuTopology& t : h.topology) {  // the last entry of an id wins, as before
    if (t.cpu >= 0 && t.cpu <= top)
      by_cpu[size_t(t.cpu)] = &t;
    else if (t.cpu >= kDirect || t.cpu < 0)
      far[t.cpu] = &t;
  }
  const auto topo_of = [&](int c) -> const CpuTopology* {
    if (c >= 0 && c <= top) return by_cpu[size_t(c)];
    auto it = far.find(c);
    return it == far.end() ? nullptr : it->second;
  };
  // Group key: (package, die, core) for cores, the id for the other levels; unknown last.
  // The label is the key's, made when its group is.
  using Key = std::tuple<int, int, int>;
  std::map<Key, CpuGroup> groups;
  for (int c : cpus) {
    const CpuTopology* t = topo_of(c);
    Key k{-1, -1, -1};
    if (t && level == TopoLevel::core) {
      if (t->package >= 0 && t->core >= 0) k = {t->package, t->die, t->core};
    } else if (t) {
      const int id = level == TopoLevel::llc ? t->llc : level == TopoLevel::node ? t->node : t->package;
      if (id >= 0) k = {id, 0, 0};
    }
    auto [it, made] = groups.try_emplace(k);
    CpuGroup& g = it->second;
    if (made) {
      if (std::get<0>(k) < 0)
        g.label = "unknown";
      else if (level == TopoLevel::core)
        g.label = fmt::format("pkg{} core{}", t->package, t->core);
      else
        g.label = fmt::format("{} {}", level == TopoLevel::package ? "pkg" : to_string(level), std::get<0>(k));
    }
    g.cpus.push_back(c);
  }
  std::vector<CpuGroup> out;
  for (auto& [k, g] : groups) {
    std::sort(g.cpus.begin(), g.cpus.end());
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const CpuGroup& a, const CpuGroup& b) {
    if ((a.label == "unknown") != (b.label == "unknown")) return b.label == "unknown";
    return a.cpus.front() < b.cpus.front();
  });
  return out;
}

std::vector<TableRow> group_rows(const Interval& iv, const std::vector<CpuGroup>& groups, int only,
                                 const ModelColumn* model) {
  const ColumnRefs refs(iv);
  std::vector<TableRow> rows;
  for (const CpuGroup& g : groups) {
    TableRow r;
    r.label = g.label;
    r.cpus = g.cpus;
    r.key = g.cpus.empty() ? 0 : g.cpus.front();
    fill_values(iv, refs, r, only, model);
    rows.push_back(std::move(r));
  }
  return rows;
}

int table_columns() { return static_cast<int>(cpu_columns().size()) + 1; }

std::string column_header(int i) {
  if (i <= 0 || i >= table_columns()) return "CPU";
  return cpu_columns()[size_t(i - 1)].header;
}

int find_column(std::string_view name) {
  if (name == "cpu" || name == "CPU") return 0;
  if (name.empty()) return -1;
  const auto& cols = cpu_columns();
  for (size_t i = 0; i < cols.size(); ++i)
    if (name == cols[i].probe || name == cols[i].header) return static_cast<int>(i) + 1;
  return -1;
}

void sort_rows(std::vector<TableRow>& rows, int col, bool reverse) {
  const size_t vi = col >= 1 && col < table_columns() ? size_t(col - 1) : SIZE_MAX;
  std::sort(rows.begin(), rows.end(), [&](const TableRow& a, const TableRow& b) {
    if (vi != SIZE_MAX && a.v[vi] != b.v[vi]) return reverse ? a.v[vi] < b.v[vi] : a.v[vi] > b.v[vi];
    if (vi == SIZE_MAX && reverse) return a.key > b.key;
    return a.key < b.key;
  });
}

double column_peak(const std::vector<TableRow>& rows, int col) {
  double best = kBlank;
  if (col < 1 || col >= table_columns()) return best;
  for (const TableRow& r : rows)
    if (r.v[size_t(col - 1)] >= 0) best = std::max(best, r.v[size_t(col - 1)]);
  return best;
}

double cpu_column_peak(const Interval& iv, std::span<const int> cpus, int col, const ModelColumn* model) {
  double best = kBlank;
  if (col < 1 || col >= table_columns()) return best;
  const size_t i = size_t(col - 1);
  const CpuColumn& cc = cpu_columns()[i];
  const int probe = column_probes(iv)[i];
  const FieldRef ref = field_ref(iv.meta(), probe, cc.field);
  for (const int& c : cpus) {
    const double v = value_of(iv, cc, probe, ref, std::span<const int>(&c, 1), model);
    if (v >= 0) best = std::max(best, v);
  }
  return best;
}

std::string cell_text(const CpuColumn& col, double v) {
  if (v == kUnavailable) return "-";
  if (v == kBlank) return "";
  return col.kind == CpuColumnKind::p99 ? format_ns(v) : format_rate(v);
}

std::vector<Line> render_table(const std::vector<TableRow>& rows, const TableStyle& st, int* first_col_shown) {
  const auto& cols = cpu_columns();
  int label_w = std::max(cells(st.label_header), 4);
  for (const TableRow& r : rows) label_w = std::max(label_w, cells(r.label));
  std::vector<Line> out;
  Line head;
  auto header_cell = [&](const std::string& text, int w, int col, bool left) {
    head.add(" ", Role::head);
    std::string t = left ? fit(text, w) : right(text, w);
    head.add(t, col == st.sort_col ? Role::sort_head : Role::head);
  };
  // Groups: CPU count and list (cut at kMaxListCells) after the label.
  constexpr int kMaxListCells = 30;
  std::vector<std::string> lists;
  int list_w = 8;
  if (st.cpu_list)
    for (const TableRow& r : rows) {
      std::string l = format_cpulist(r.cpus);
      if (cells(l) > kMaxListCells) l = l.substr(0, byte_of_cell(l, kMaxListCells - 3)) + "...";
      list_w = std::max(list_w, cells(l));
      lists.push_back(std::move(l));
    }
  header_cell(st.label_header, label_w, 0, st.cpu_list);
  if (st.cpu_list) {
    header_cell("CPUs", 4, -1, false);
    header_cell("CPU list", list_w, -1, true);
  }
  // Value columns that fit, from first_col on; the CPU list (groups) takes what is left.
  // Scrolled no further than needed to show the last column: where the columns from
  // first_col on leave room, earlier ones come back in (no blank space on the right).
  int used = head.width();
  auto col_w = [&](size_t i) { return std::max(7, cells(cols[i].header)); };
  int first = std::clamp(st.first_col, 0, std::max(static_cast<int>(cols.size()) - 1, 0));
  int tail = 0;
  for (size_t i = size_t(first); i < cols.size(); ++i) tail += 1 + col_w(i);
  while (first > 0 && used + tail + 1 + col_w(size_t(first - 1)) <= st.width) tail += 1 + col_w(size_t(--first));
  if (first_col_shown) *first_col_shown = first;
  std::vector<size_t> shown;
  for (size_t i = size_t(first); i < cols.size(); ++i) {
    int w = col_w(i);
    if (used + 1 + w > st.width) break;
    header_cell(cols[i].header, w, int(i) + 1, false);
    used += 1 + w;
    shown.push_back(i);
  }
  if (head.width() < st.width) head.add(std::string(size_t(st.width - head.width()), ' '), Role::head);
  clip(head, st.width);
  out.push_back(std::move(head));

  const int nrows = st.height > 0 ? st.height - 1 : static_cast<int>(rows.size());
  for (int i = std::max(st.first_row, 0); i < static_cast<int>(rows.size()) && i < st.first_row + nrows; ++i) {
    const TableRow& r = rows[size_t(i)];
    Line l;
    l.add(" ");
    l.add(st.cpu_list ? fit(r.label, label_w) : right(r.label, label_w));
    if (st.cpu_list) {
      l.add(" " + right(std::to_string(r.cpus.size()), 4));
      l.add(" " + fit(lists[size_t(i)], list_w), Role::dim);
    }
    for (size_t ci : shown) {
      int w = std::max(7, cells(cols[ci].header));
      std::string t = cell_text(cols[ci], r.v[ci]);
      l.add(" ");
      l.add(right(t, w), r.v[ci] == kUnavailable ? Role::dim : Role::normal);
    }
    clip(l, st.width);
    out.push_back(std::move(l));
  }
  return out;
}

// ---- histogram ----------------------------------------------------------------------

std::vector<HistRow> hist_rows(std::span<const uint64_t> buckets, const HistSummary& s, int max_rows) {
  std::vector<HistRow> rows;
  const int last = hist_top_bucket(buckets);
  if (last < 0 || max_rows <= 0) return rows;
  int first = 0;
  while (buckets[size_t(first)] == 0) ++first;
  const int n = last - first + 1;
  const int per = (n + max_rows - 1) / max_rows;
  for (int b0 = first; b0 <= last; b0 += per) {
    int b1 = std::min(b0 + per - 1, last);
    HistRow r;
    r.lo = sh_hist_lower(uint32_t(b0));
    r.hi = sh_hist_lower(uint32_t(b1)) + sh_hist_width(uint32_t(b1));
    for (int b = b0; b <= b1; ++b) r.count += buckets[size_t(b)];
    rows.push_back(r);
  }
  const std::pair<const char*, double> marks[] = {{"p10", s.p10}, {"p50", s.p50}, {"p90", s.p90},
                                                  {"p98", s.p98}, {"p99", s.p99}, {"max", double(s.max_ns)}};
  for (auto [name, v] : marks) {
    size_t at = rows.size() - 1;  // above the last bucket (clamped values): the last row
    for (size_t i = 0; i < rows.size(); ++i)
      if (v < double(rows[i].hi)) {
        at = i;
        break;
      }
    rows[at].marks += (rows[at].marks.empty() ? "" : " ") + std::string(name);
  }
  return rows;
}

std::vector<Line> render_histogram(const std::string& title, std::span<const uint64_t> buckets, const HistSummary& s,
                                   int width, int height, bool utf8) {
  std::vector<Line> out;
  Line t;
  t.add(title, Role::title);
  if (s.count) t.add(fmt::format(": {} events, mean {}", s.count, format_ns(s.mean_ns)));
  out.push_back(std::move(t));
  if (!s.count) {
    out.push_back(Line().add("no events in this interval", Role::dim));
    return out;
  }
  Line p;
  const std::pair<const char*, double> pct[] = {{"p10", s.p10}, {"p50", s.p50}, {"p90", s.p90},
                                                {"p98", s.p98}, {"p99", s.p99}, {"max", double(s.max_ns)}};
  for (auto [name, v] : pct) {
    p.add(name, Role::mark);
    p.add(fmt::format(" {}  ", format_ns(v)));
  }
  p.add(fmt::format("(ns; percentiles within +-{:.1f}%)", kPercentileRelError * 100), Role::dim);
  out.push_back(std::move(p));
  out.push_back(Line().add(fmt::format("{:>8} {:>8} {:>10}  bars: count per range", "from", "to", "count"), Role::head));
  const int rows_h = std::max(height - 3, 1);
  std::vector<HistRow> rows = hist_rows(buckets, s, rows_h);
  uint64_t most = 0;
  for (auto& r : rows) most = std::max(most, r.count);
  const int fixed = 8 + 1 + 8 + 1 + 10 + 2;
  const int bar_w = std::max(width - fixed - 24, 4);
  // Bucket bounds from 1 ms on are 1/16 of a power of two apart (6.25 %): two decimals of
  // ms keep two adjacent bounds apart where format_ns's one would print both as 1.0ms.
  auto bound = [](uint64_t ns) {
    return ns >= 1'000'000 && ns < 1'000'000'000 ? fmt::format("{:.2f}ms", double(ns) / 1e6) : format_ns(double(ns));
  };
  for (const HistRow& r : rows) {
    Line l;
    l.add(fmt::format("{:>8} {:>8} {:>10}  ", bound(r.lo), bound(r.hi), r.count));
    int len = most ? static_cast<int>(std::lround(double(r.count) * bar_w / double(most))) : 0;
    if (r.count && len == 0) len = 1;
    std::string bar;
    for (int i = 0; i < len; ++i) bar += utf8 ? "\u2588" : "#";
    l.add(bar, Role::bar);
    if (!r.marks.empty()) {
      l.add(std::string(size_t(bar_w - len + 1), ' '));
      l.add(r.marks, Role::mark);
    }
    clip(l, width);
    out.push_back(std::move(l));
  }
  return out;
}

// ---- cachelines (the l view) ----------------------------------------------------------

std::vector<LineRow> line_rows(const CoherenceSummary& s, const XferCost& cost, const ExactAccumulator* exact) {
  std::vector<LineRow> out;
  out.reserve(s.lines.size());
  for (const LineSummary& l : s.lines) {
    LineRow r;
    r.name = l.name;
    r.reads_per_s = l.reads_per_s;
    r.writes_per_s = l.writes_per_s;
    r.xfers_per_s = l.traffic.total();
    r.kb_per_s = r.xfers_per_s * s.line_bytes / 1024.0;
    for (int d = 0; d < kXferDistances; ++d)
      r.pct[size_t(d)] = r.xfers_per_s > 0 ? 100 * l.traffic.by_distance[size_t(d)] / r.xfers_per_s : -1;
    r.stall_us_per_s = stall_ns_per_s(l.traffic, cost) / 1e3;
    // The 3 CPUs with the most transfers: a partial sort of the line's CPUs (ascending cpu,
    // so ties keep the lower CPU first).
    std::vector<std::pair<int, double>> cpus;
    cpus.reserve(l.traffic.cpus.size());
    for (const CpuXfers& c : l.traffic.cpus)
      if (c.total() > 0) cpus.emplace_back(static_cast<int>(c.cpu), c.total());
    const size_t n = std::min<size_t>(3, cpus.size());
    std::partial_sort(cpus.begin(), cpus.begin() + std::ptrdiff_t(n), cpus.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    r.top.assign(cpus.begin(), cpus.begin() + std::ptrdiff_t(n));
    r.readers = l.readers;
    r.writers = l.writers;
    if (exact) {
      r.exact_per_s = exact->traffic(l.key).value_or(LineTraffic{}).total();
      r.gap_per_s = exact->gap_traffic(l.key).value_or(LineTraffic{}).total();
    }
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const LineRow& a, const LineRow& b) { return a.xfers_per_s > b.xfers_per_s; });
  return out;
}

std::string fixes_text(const Meta& meta) {
  if (!meta.layout) return "fixes: layout not recorded";
  return to_string(fixes_present(*meta.layout));
}

std::string fixes_short(const Meta& meta) {
  if (!meta.layout) return "fixes: layout not recorded";
  return short_string(fixes_present(*meta.layout));
}

LinesView render_lines(const Meta& meta, const CoherenceSummary& s, const XferCost& cost, int width,
                       const ExactAccumulator* exact) {
  LinesView v;
  v.fixes.add(fixes_text(meta), Role::label);
  clip(v.fixes, width);
  const std::vector<LineRow> rows = line_rows(s, cost, exact);
  int name_w = 4;
  for (const LineRow& r : rows) name_w = std::max(name_w, cells(r.name));
  name_w = std::min(name_w, 40);
  const std::string cols = "{:>8} {:>8} {:>8} {:>8} {:>5} {:>5} {:>5} {:>5} {:>10} {:>5} {:>5}  {}";
  // With --exact records: exact/s and gap/s right after the model's xfer/s.
  const std::string xcols = "{:>8} {:>8} ";
  std::string head = fmt::format(fmt::runtime(cols), "read/s", "write/s", "xfer/s", "KB/s", "smt%", "llc%", "pkg%", "rem%",
                                 "stall us/s", "rd", "wr", "top CPUs (xfer/s)");
  if (exact) head.insert(27, fmt::format(fmt::runtime(xcols), "exact/s", "gap/s"));  // after read/s write/s xfer/s
  v.head.add(" " + fit("LINE", name_w) + " " + head, Role::head);
  if (v.head.width() < width) v.head.add(std::string(size_t(width - v.head.width()), ' '), Role::head);
  clip(v.head, width);
  for (const LineRow& r : rows) {
    auto pct = [&](int d) { return r.pct[size_t(d)] < 0 ? std::string("-") : fmt::format("{:.0f}", r.pct[size_t(d)]); };
    std::string top;
    for (auto [cpu, x] : r.top) top += fmt::format("{}{} ({})", top.empty() ? "" : ", ", cpu, format_rate(x));
    Line l;
    l.add(" " + fit(r.name, name_w) + " ");
    std::string row = fmt::format(fmt::runtime(cols), format_rate(r.reads_per_s), format_rate(r.writes_per_s),
                                  format_rate(r.xfers_per_s), fmt::format("{:.1f}", r.kb_per_s), pct(0), pct(1), pct(2),
                                  pct(3), fmt::format("{:.2f}", r.stall_us_per_s), r.readers, r.writers, top);
    if (exact)
      row.insert(27, fmt::format(fmt::runtime(xcols), format_rate(r.exact_per_s.value_or(0)),
                                 format_rate(r.gap_per_s.value_or(0))));
    l.add(row);
    clip(l, width);
    v.rows.push_back(std::move(l));
  }
  if (rows.empty()) v.rows.push_back(Line().add(" no modeled line was accessed in this interval", Role::dim));
  for (const WhatIfResult& w : s.what_if) {
    Line l;
    l.add("what-if ", Role::label).add(w.what.title).add(": ");
    if (!w.applies) {
      l.add(meta.layout ? w.reason : w.reason + " (in the layout assumed for kernel " + meta.host.kernel_release + ")",
            Role::dim);
    } else {
      l.add(fmt::format("{} lines {} -> {} xfer/s", w.what.family, format_rate(w.before_xfers_per_s),
                        format_rate(w.after_xfers_per_s)));
      l.add(w.before_xfers_per_s > 0 ? fmt::format(" (x{:.2f})", w.after_xfers_per_s / w.before_xfers_per_s)
                                     : std::string(" (no traffic before)"),
            Role::title);
      l.add(fmt::format(", stall {:.2f} -> {:.2f} us/s", w.before_stall_ns_per_s / 1e3, w.after_stall_ns_per_s / 1e3));
      if (w.estimate != LineSummary::kIndependentArrivals) l.add("; " + w.estimate, Role::dim);
    }
    clip(l, width);
    v.tail.push_back(std::move(l));
  }
  for (const std::string& n : s.notes) {
    Line l;
    l.add("layout: " + n, Role::dim);
    clip(l, width);
    v.tail.push_back(std::move(l));
  }
  Line e;
  e.add(fmt::format("model: {}, {} B lines; stall at smt {} llc {} package {} remote {} ns: estimates "
                    "(README 'Cachelines'){}",
                    s.estimate, s.line_bytes, cost.ns[0], cost.ns[1], cost.ns[2], cost.ns[3],
                    exact ? fmt::format("; exact/s: the interval's {} --exact records{}, gap/s: the gap model of their "
                                        "per-CPU gaps",
                                        exact->records(),
                                        exact->lost() ? fmt::format(" ({} lost: exact/s a lower bound)", exact->lost()) : "")
                          : ""),
        Role::dim);
  clip(e, width);
  v.tail.push_back(std::move(e));
  return v;
}

// ---- header, summary, help ------------------------------------------------------------

namespace {

/// What a probe is in the header: measuring, blind (attached but its events cannot be
/// told apart) or unavailable.
enum class ProbeState { ok, blind, unavailable };
ProbeState probe_state(const Meta& meta, size_t pi, std::string* blind) {
  const ProbeStatus& st = meta.probes[pi].status;
  if (!st.attached) return ProbeState::unavailable;
  std::string b = blind_reason(meta, static_cast<int>(pi));
  if (blind) *blind = b;
  return b.empty() ? ProbeState::ok : ProbeState::blind;
}

/// Packs items (text, role) on lines that start with "probes" (continuations indented),
/// two spaces apart; an item wider than the line is cut with "...".
void pack_probes(std::vector<Line>& out, const std::vector<std::pair<std::string, Role>>& items, int width) {
  Line l;
  l.add("probes", Role::label);
  for (auto [text, role] : items) {
    if (l.width() + 2 + cells(text) > width && l.width() > 6) {
      out.push_back(std::move(l));
      l = Line();
      l.add("      ");
    }
    l.add("  ");
    if (l.width() + cells(text) > width)
      text = std::string(text.substr(0, byte_of_cell(text, std::max(width - l.width() - 3, 0)))) + "...";
    l.add(text, role);
  }
  clip(l, width);
  out.push_back(std::move(l));
}

}  // namespace

std::vector<Line> render_header(const Meta& meta, const HeaderInfo& h, int width, ProbeFold fold) {
  std::vector<Line> out;
  Line top;
  top.add(fmt::format("schedhot {}", h.mode), Role::title);
  top.add("  host ", Role::label).add(meta.host.hostname);
  top.add("  kernel ", Role::label).add(meta.host.kernel_release);
  top.add("  CPUs ", Role::label).add(fmt::format("{} online of {}", meta.host.online.size(), meta.ncpus));
  top.add("  interval ", Role::label).add(fmt::format("{:.3g} s", double(h.interval_ns) / 1e9));
  // The time goes right-aligned on the title line; where both do not fit (a narrow
  // terminal), on a line of its own under it, so it is never the part clipped away.
  int pad = width - top.width() - cells(h.when);
  if (pad >= 2 || h.when.empty()) {
    top.add(std::string(size_t(std::max(pad, 2)), ' '));
    top.add(h.when, Role::title);
  }
  clip(top, width);
  out.push_back(std::move(top));
  if (pad < 2 && !h.when.empty()) {
    Line w;
    w.add(h.when, Role::title);
    clip(w, width);
    out.push_back(std::move(w));
  }

  std::vector<std::pair<std::string, Role>> items;
  if (fold == ProbeFold::full) {
    // Attached probes packed on lines, each unavailable or blind one with its reason.
    for (size_t pi = 0; pi < meta.probes.size(); ++pi) {
      const ProbeMeta& pm = meta.probes[pi];
      const ProbeStatus& st = pm.status;
      std::string blind;
      ProbeState ps = probe_state(meta, pi, &blind);
      items.emplace_back(ps == ProbeState::unavailable ? pm.name + " unavailable: " + brief_reason(st.reason)
                         : ps == ProbeState::ok        ? fmt::format("{} {}", pm.name, st.backend_label())
                                                : fmt::format("{} {} blind: {}", pm.name, st.backend_label(),
                                                              brief_reason(blind.substr(0, blind.find(':')))),
                         ps == ProbeState::ok ? Role::good : Role::bad);
    }
    pack_probes(out, items, width);
  } else if (fold == ProbeFold::compact) {
    // Every probe in a few cells: its backend, or that it is unavailable or blind (p: why).
    for (size_t pi = 0; pi < meta.probes.size(); ++pi) {
      const ProbeMeta& pm = meta.probes[pi];
      ProbeState ps = probe_state(meta, pi, nullptr);
      items.emplace_back(ps == ProbeState::unavailable ? pm.name + " unavailable"
                         : ps == ProbeState::blind     ? pm.name + " blind"
                                                       : fmt::format("{} {}", pm.name, pm.status.backend_label()),
                         ps == ProbeState::ok ? Role::good : Role::bad);
    }
    pack_probes(out, items, width);
    if (out.back().width() + 2 + 10 <= width) out.back().add("  ").add("p: details", Role::dim);
  } else {
    // One line: how many probes measure, and which are blind or unavailable (by name
    // where the line has room, else by count only).
    int ok = 0;
    std::vector<std::string> blind, unavailable;
    for (size_t pi = 0; pi < meta.probes.size(); ++pi) {
      ProbeState ps = probe_state(meta, pi, nullptr);
      if (ps == ProbeState::ok) ++ok;
      else (ps == ProbeState::blind ? blind : unavailable).push_back(meta.probes[pi].name);
    }
    for (bool names : {true, false}) {
      Line l;
      l.add("probes", Role::label).add(fmt::format(" {} attached", ok), Role::good);
      auto group = [&](const std::vector<std::string>& v, const char* what) {
        if (v.empty()) return;
        std::string t = fmt::format(", {} {}", v.size(), what);
        if (names) t += fmt::format(" ({})", fmt::join(v, " "));
        l.add(t, Role::bad);
      };
      group(blind, "blind");
      group(unavailable, "unavailable");
      l.add("  ").add("p: details", Role::dim);
      if (names && l.width() > width) continue;
      clip(l, width);
      out.push_back(std::move(l));
      break;
    }
  }

  Line c;
  c.add("lost", Role::label).add(fmt::format(" {}", h.lost), h.lost ? Role::bad : Role::normal);
  c.add("  cost", Role::label).add(" " + h.cost);
  if (!h.state.empty()) c.add("  ").add(h.state, Role::title);
  // The fixes this kernel has, short, where the line has room (the l view has them in full).
  const std::string fixes = fixes_short(meta);
  if (c.width() + 2 + cells(fixes) <= width) c.add("  ").add(fixes, Role::dim);
  clip(c, width);
  out.push_back(std::move(c));
  return out;
}

std::vector<Line> render_header(const Meta& meta, const HeaderInfo& h, int width, int max_lines, ProbeFold* fold_used) {
  std::vector<Line> out;
  for (ProbeFold f : {ProbeFold::full, ProbeFold::compact, ProbeFold::count}) {
    out = render_header(meta, h, width, f);
    if (fold_used) *fold_used = f;
    if (max_lines <= 0 || static_cast<int>(out.size()) <= max_lines) break;
  }
  return out;
}

std::vector<Line> render_probes(const Meta& meta, int width) {
  std::vector<Line> out;
  out.push_back(Line().add("schedhot: probes", Role::title));
  out.push_back(Line());
  constexpr int kIndent = 15;
  // Words of text after the probe's name, wrapped at width under column kIndent.
  auto wrapped = [&](std::string name, const std::string& text, Role role) {
    Line l;
    l.add(fmt::format("  {:<{}}", name, kIndent - 2), Role::label);
    size_t i = 0;
    bool first = true;
    while (i < text.size()) {
      size_t j = text.find(' ', i);
      if (j == std::string::npos) j = text.size();
      std::string word = text.substr(i, j - i);
      i = j + 1;
      if (word.empty()) continue;
      if (!first && l.width() + 1 + cells(word) > width) {
        out.push_back(std::move(l));
        l = Line();
        l.add(std::string(kIndent, ' '));
        first = true;
      }
      if (!first) l.add(" ");
      l.add(word, role);
      first = false;
    }
    clip(l, width);
    out.push_back(std::move(l));
  };
  for (size_t pi = 0; pi < meta.probes.size(); ++pi) {
    const ProbeMeta& pm = meta.probes[pi];
    const ProbeStatus& st = pm.status;
    std::string blind;
    ProbeState ps = probe_state(meta, pi, &blind);
    if (ps == ProbeState::unavailable) {
      wrapped(pm.name, "unavailable: " + st.reason, Role::bad);
      continue;
    }
    const std::string what = attach_text(st.backend_label(), st.symbol.empty() ? "" : symbol_with_via(st.symbol, st.via));
    wrapped(pm.name, what, Role::good);
    if (ps == ProbeState::blind) wrapped("", "blind: " + blind, Role::bad);
  }
  return out;
}

std::vector<Line> render_summary(const Interval& iv, std::span<const int> cpus, int width) {
  std::vector<Line> out;
  const std::string fmtline = "{:<12} {:<26} {:>12} {:>9} {:>7} {:>7} {:>7} {:>7}";
  out.push_back(Line().add(fmt::format(fmt::runtime(fmtline), "PROBE", "BACKEND", "EVENTS", "RATE/s", "p50", "p90",
                                       "p99", "max"),
                           Role::head));
  clip(out.back(), width);
  const Meta& m = iv.meta();
  for (size_t pi = 0; pi < m.probes.size(); ++pi) {
    const int p = static_cast<int>(pi);
    const ProbeMeta& pm = m.probes[pi];
    const ProbeSpec* spec = find_probe(pm.name);
    Line l;
    const std::string blind = pm.status.attached ? blind_reason(m, p) : "";
    if (!pm.status.attached || !iv.present(p) || !spec || !blind.empty()) {
      l.add(fmt::format("{:<12} ", pm.name));
      l.add(!pm.status.attached ? "unavailable: " + brief_reason(pm.status.reason)
            : !blind.empty()    ? "blind: " + brief_reason(blind)
                                : "no data",
            Role::bad);
    } else {
      std::string backend = pm.status.backend_label();
      std::string p50 = "", p90 = "", p99 = "", mx = "";
      if (!spec->hist.empty()) {
        HistSummary h = iv.hist(p, spec->hist, cpus);
        if (h.count) p50 = format_ns(h.p50), p90 = format_ns(h.p90), p99 = format_ns(h.p99), mx = format_ns(double(h.max_ns));
      }
      l.add(fmt::format("{:<12} ", pm.name));
      l.add(fmt::format("{:<26}", backend.size() > 26 ? backend.substr(0, 23) + "..." : backend), Role::good);
      l.add(fmt::format(" {:>12} {:>9} {:>7} {:>7} {:>7} {:>7}", iv.count(p, spec->primary, cpus),
                        format_rate(iv.rate(p, spec->primary, cpus)), p50, p90, p99, mx));
    }
    clip(l, width);
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<Line> render_help(bool live, int width) {
  struct K {
    const char* keys;
    const char* what;
    int only;  ///< 0 both, 1 live, 2 replay
  };
  static const K keys[] = {
      {"q", "quit", 0},
      {"?", "this help (arrows, PgUp, PgDn scroll it; any other key closes it)", 0},
      {"p", "probes: each one's backend, or why it is unavailable or blind", 0},
      {"space", "pause the display (sampling and recording go on)", 1},
      {"space", "play / pause", 2},
      {"+ -", "sampling interval longer / shorter", 1},
      {"+ -", "playing speed 1x..16x", 2},
      {"t T", "previous / next sample", 2},
      {"j", "jump to a time since the start (30, 2.5s, 1m)", 2},
      {"w", "jump to the worst sample for the sort column", 2},
      {"< > F6", "sort column left / right", 0},
      {"r", "reverse the sort order", 0},
      {"/", "filter CPUs: a list or ranges (0-7,16); empty = all; starts with the current one (Ctrl-U clears)", 0},
      {"arrows PgUp PgDn", "scroll rows; left / right scroll columns", 0},
      {"Home End", "first / last rows", 0},
      {"c", "per-CPU table", 0},
      {"h H", "histogram view: next / previous probe (filtered CPUs, or all)", 0},
      {"o", "topology view: CPUs folded into LLCs, then nodes, packages, cores (o again: next level)", 0},
      {"s", "one summary line per probe", 0},
      {"l", "cachelines view: per modeled line reads, writes, transfers/s by distance, stall, readers/writers, top CPUs; "
            "fixes, what-ifs", 0},
      {"a", "tails view: per --catch rule caught and dropped (interval, since start), the last events with their stacks, "
            "top stacks and tasks, interrupt share", 0},
      {"A", "edit a --catch rule's threshold (e.g. idle>500us): re-armed now", 1},
      {"Esc", "back to the per-CPU table; cancels a prompt", 0},
  };
  std::vector<Line> out;
  out.push_back(Line().add(live ? "schedhot top: keys" : "schedhot replay: keys", Role::title));
  out.push_back(Line());
  for (const K& k : keys) {
    if (k.only == (live ? 2 : 1)) continue;
    Line l;
    l.add(fmt::format("  {:<18}", k.keys), Role::label).add(k.what);
    clip(l, width);
    out.push_back(std::move(l));
  }
  out.push_back(Line());
  out.push_back(Line().add("Rates are events/s between two adjacent samples; times in ns (us/ms/s where marked).", Role::dim));
  out.push_back(Line().add("'-' = not measured: probe unavailable or blind, CPU offline, or a proxy's duration.", Role::dim));
  out.push_back(Line().add("xfer/s: cacheline transfers/s the CPU misses on the modeled lines, from the coherence model "
                           "(an estimate; README 'Cachelines'); l: per line.",
                           Role::dim));
  for (auto& l : out) clip(l, width);
  return out;
}

Screen render_too_small(int width, int height) {
  Screen s;
  s.push_back(Line().add("terminal too small", Role::bad));
  s.push_back(Line().add(fmt::format("{}x{}, need {}x{}", width, height, kMinWidth, kMinHeight)));
  for (auto& l : s) clip(l, width);
  return s;
}

}  // namespace schedhot::tui
