#include "sample/sample.h"

#include "probe/module.h"
#include "sys/json_text.h"
#include "sys/units.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace schedhot {

int Meta::probe_index(std::string_view name) const {
  for (size_t i = 0; i < probes.size(); ++i)
    if (probes[i].name == name) return static_cast<int>(i);
  return -1;
}

size_t sample_bytes(const Sample& s) {
  size_t n = sizeof(Sample) + s.probes.capacity() * sizeof(ProbeSample) + s.online.capacity() * sizeof(int);
  for (const ProbeSample& p : s.probes) n += p.words.size() * sizeof(uint64_t);
  if (s.exact) n += s.exact->records.capacity() * sizeof(ExactRecord);
  if (s.gaps) n += s.gaps->counts.capacity() * sizeof(GapCounts);
  if (s.caught) {
    n += s.caught->events.capacity() * sizeof(CaughtEvent) + s.caught->stacks.capacity() * sizeof(std::vector<StackFrame>);
    for (const CaughtEvent& e : s.caught->events)
      if (e.comm.capacity() > 15) n += e.comm.capacity() + 1;  // past the short-string buffer
    for (const auto& st : s.caught->stacks) {
      n += st.capacity() * sizeof(StackFrame);
      for (const StackFrame& f : st)
        if (f.sym.capacity() > 15) n += f.sym.capacity() + 1;
    }
  }
  return n;
}

std::string blind_reason(const Meta& meta, int p) {
  if (p < 0 || size_t(p) >= meta.probes.size()) return "";
  const ProbeModule* m = find_module(meta.probes[size_t(p)].name);
  return m ? m->blind_reason(meta.host, meta.probes[size_t(p)].status) : "";
}

const CatchRule* Meta::catch_rule(std::string_view name) const {
  for (const CatchRule& r : catch_rules)
    if (r.probe == name) return &r;
  return nullptr;
}

bool catch_field(std::string_view name) {
  return name == "caught" || name == "catch_rate_drops" || name == "catch_full_drops";
}

void apply_catch_rules(Meta& m, std::vector<CatchRule> rules) {
  m.catch_rules = std::move(rules);
  for (ProbeMeta& p : m.probes) {
    if (!m.catch_rule(p.name)) {
      std::erase_if(p.slot.fields, [](const Field& f) { return catch_field(f.name); });
    } else if (const ProbeSpec* spec = find_probe(p.name)) {
      for (const Field& f : spec->slot.fields)  // back from the catalog, where make_meta dropped them
        if (catch_field(f.name) && !p.slot.find(f.name)) p.slot.fields.push_back(f);
    }
  }
}

Meta make_meta(const HostInfo& host, uint32_t ncpus, const std::vector<ProbeStatus>& statuses) {
  Meta m;
  m.host = host;
  m.ncpus = ncpus;
  const auto& cat = probe_catalog();
  for (size_t i = 0; i < cat.size(); ++i) {
    ProbeMeta pm;
    pm.name = cat[i].name;
    pm.slot = cat[i].slot;
    if (i < statuses.size()) pm.status = statuses[i];
    pm.labels = probe_modules()[i]->meta_labels();
    m.probes.push_back(std::move(pm));
  }
  apply_catch_rules(m, {});  // no rule: the catch counters are not named
  return m;
}

std::vector<uint64_t> summed_histogram(const Meta& meta, const Sample& s, int p, const std::string& field) {
  if (p < 0 || size_t(p) >= s.probes.size() || size_t(p) >= meta.probes.size() || !s.probes[size_t(p)].present)
    return {};
  const ProbeMeta& pm = meta.probes[size_t(p)];
  const Field* h = pm.slot.find(field);
  if (!h || h->kind != FieldKind::hist) return {};
  std::vector<uint64_t> b(SH_HIST_BUCKETS, 0);
  const SlotWords& w = s.probes[size_t(p)].words;
  if (w.is_hollow()) return {};  // no words to sum (Interval::first_summed reads them from a later sample)
  if (!w.shaped(meta.ncpus, pm.slot.slot_words) || h->offset + 2 + SH_HIST_BUCKETS > pm.slot.slot_words) return b;
  for (uint32_t c = 0; c < meta.ncpus; ++c) {
    const uint64_t* at = w.cpu(c) + h->offset + 2;  // struct sh_hist: sum_ns, max_ns, bucket[]
    for (size_t i = 0; i < SH_HIST_BUCKETS; ++i) b[i] += at[i];
  }
  return b;
}

bool refill_hollow(Sample& s, const Sample& later) {
  for (size_t p = 0; p < s.probes.size(); ++p) {
    const ProbeSample& a = s.probes[p];
    if (a.present && a.words.is_hollow() &&
        (p >= later.probes.size() || !a.words.refillable_from(later.probes[p].words)))
      return false;
  }
  for (size_t p = 0; p < s.probes.size(); ++p)
    if (s.probes[p].present && s.probes[p].words.is_hollow()) s.probes[p].words.refill(later.probes[p].words);
  return true;
}

Sample make_sample(const Meta& meta) {
  Sample s;
  s.probes.resize(meta.probes.size());
  for (size_t i = 0; i < meta.probes.size(); ++i) {
    s.probes[i].present = meta.probes[i].status.attached;
    if (s.probes[i].present) s.probes[i].words.assign(meta.ncpus, meta.probes[i].slot.slot_words);
  }
  return s;
}

void reshape_sample(const Meta& meta, Sample& s) {
  s.seq = 0;
  s.mono_ns = s.wall_ns = 0;
  s.online.clear();
  s.exact.reset();
  s.gaps.reset();
  s.caught.reset();
  s.probes.resize(meta.probes.size());
  for (size_t i = 0; i < meta.probes.size(); ++i) {
    ProbeSample& p = s.probes[i];
    p.present = meta.probes[i].status.attached;
    const uint32_t sw = p.present ? meta.probes[i].slot.slot_words : 0;
    if (!p.present || !sw || !meta.ncpus)
      p.words.clear();
    else if (!p.words.shaped(meta.ncpus, sw))
      p.words.assign(meta.ncpus, sw);
  }
}

namespace {
FieldKind kind_from_string(const std::string& s) {
  if (s == "counter") return FieldKind::counter;
  if (s == "counter_array") return FieldKind::counter_array;
  if (s == "hist") return FieldKind::hist;
  if (s == "private") return FieldKind::priv;
  throw std::runtime_error(fmt::format("unknown field kind '{}'", s));
}
}  // namespace

void to_json(nlohmann::json& j, const Meta& m) {
  nlohmann::json probes = nlohmann::json::array();
  for (auto& p : m.probes) {
    nlohmann::json fields = nlohmann::json::array();
    for (auto& f : p.slot.fields)
      fields.push_back({{"name", f.name}, {"offset", f.offset}, {"nwords", f.nwords}, {"kind", to_string(f.kind)}, {"doc", f.doc}});
    probes.push_back({{"name", p.name}, {"slot_words", p.slot.slot_words}, {"fields", fields},
                      {"status", p.status}, {"labels", p.labels}});
  }
  j = {{"tool_version", m.tool_version},
       {"command", m.command},
       {"host", m.host},
       {"ncpus", m.ncpus},
       {"start_wall_ns", m.start_wall_ns},
       {"start_mono_ns", m.start_mono_ns},
       {"interval_ns", m.interval_ns},
       {"hist", {{"sub_bits", m.hist_sub_bits}, {"max_msb", m.hist_max_msb}, {"buckets", SH_HIST_BUCKETS}}},
       {"probes", probes}};
  if (m.layout) j["layout"] = *m.layout;
  if (!m.gap_lines.empty()) {
    nlohmann::json g = nlohmann::json::array();
    for (const Meta::GapLine& l : m.gap_lines) g.push_back({l.object, l.line});
    j["gap_lines"] = std::move(g);
    if (m.gap_samples_per_s) j["gap_samples_per_s"] = m.gap_samples_per_s;
  }
  if (!m.catch_rules.empty()) {
    nlohmann::json r = nlohmann::json::array();
    for (const CatchRule& c : m.catch_rules)
      r.push_back({{"rule", c.text}, {"probe", c.probe}, {"asked_ns", c.asked_ns}, {"percentile", c.percentile},
                   {"threshold_ns", c.threshold_ns}, {"per_sec", c.per_sec}});
    j["catch_rules"] = std::move(r);
  }
}

void from_json(const nlohmann::json& j, Meta& m) {
  // Every key is read through sys/json_text.h's json_value / json_at / json_reading, so a
  // wrong one is said by its path ("probes[0].fields[1].offset: expected a number, found a
  // string"), never as nlohmann's "[json.exception...]" text.
  try {
    if (!j.is_object()) throw JsonShapeError("", "expected an object, found " + json_words::a(j.type_name()));
    m.tool_version = json_value(j, "tool_version", "");
    m.command = json_value(j, "command", "");
    m.host = json_at<HostInfo>(j, "host");
    m.ncpus = json_at<uint32_t>(j, "ncpus");
    if (m.ncpus == 0 || m.ncpus > 65536) throw std::runtime_error(fmt::format("CPU count {} out of range", m.ncpus));
    if (!valid_line_bytes(m.host.cacheline_bytes))
      throw std::runtime_error(fmt::format("cacheline size {} B is not a power of two in 16..4096", m.host.cacheline_bytes));
    for (int c : m.host.online)
      if (c < 0 || static_cast<uint32_t>(c) >= m.ncpus)
        throw std::runtime_error(fmt::format("online CPU {} of a recording of {} CPUs", c, m.ncpus));
    m.start_wall_ns = json_value(j, "start_wall_ns", uint64_t{0});
    m.start_mono_ns = json_value(j, "start_mono_ns", uint64_t{0});
    m.interval_ns = json_value(j, "interval_ns", uint64_t{0});  // 0: not known (hand-made metadata)
    if (m.interval_ns > kMaxIntervalNs)
      throw std::runtime_error(fmt::format("sample interval {} ns out of range (at most 24 h)", m.interval_ns));
    const auto h = json_at<nlohmann::json>(j, "hist");
    json_reading("hist", [&] {
      m.hist_sub_bits = json_at<uint32_t>(h, "sub_bits");
      m.hist_max_msb = json_at<uint32_t>(h, "max_msb");
    });
    if (m.hist_sub_bits != SH_HIST_SUB_BITS || m.hist_max_msb != SH_HIST_MAX_MSB)
      throw std::runtime_error(fmt::format("histogram geometry {}/{} is not this build's {}/{}", m.hist_sub_bits,
                                           m.hist_max_msb, SH_HIST_SUB_BITS, SH_HIST_MAX_MSB));
    m.probes.clear();
    json_each(j, "probes", [&](const nlohmann::json& pj) {
      ProbeMeta p;
      p.name = json_at<std::string>(pj, "name");
      if (m.probes.size() >= 1024) throw std::runtime_error("too many probes");
      for (const ProbeMeta& q : m.probes)
        if (q.name == p.name) throw std::runtime_error(fmt::format("probe {} is listed twice", p.name));
      p.slot.slot_words = json_at<uint32_t>(pj, "slot_words");
      if (p.slot.slot_words == 0 || p.slot.slot_words > 65536)
        throw std::runtime_error(fmt::format("probe {}: slot size {} words out of range", p.name, p.slot.slot_words));
      json_each(pj, "fields", [&](const nlohmann::json& fj) {
        Field f;
        f.name = json_at<std::string>(fj, "name");
        f.offset = json_at<uint32_t>(fj, "offset");
        f.nwords = json_at<uint32_t>(fj, "nwords");
        f.kind = kind_from_string(json_at<std::string>(fj, "kind"));
        f.doc = json_value(fj, "doc", "");
        if (uint64_t(f.offset) + f.nwords > p.slot.slot_words)
          throw std::runtime_error(fmt::format("probe {}: field {} outside its slot", p.name, f.name));
        if (f.kind == FieldKind::hist && f.nwords != 2 + SH_HIST_BUCKETS)
          throw std::runtime_error(fmt::format("probe {}: histogram {} has {} words", p.name, f.name, f.nwords));
        p.slot.fields.push_back(std::move(f));
      });
      p.status = json_at<ProbeStatus>(pj, "status");
      if (pj.contains("labels")) p.labels = json_at<std::vector<std::string>>(pj, "labels");
      m.probes.push_back(std::move(p));
    });
    if (m.probes.size() > 1024) throw std::runtime_error("too many probes");
    m.layout.reset();
    if (auto it = j.find("layout"); it != j.end() && !it->is_null())
      m.layout = json_reading("layout", [&] { return it->get<CoherenceLayout>(); });
    m.gap_lines.clear();
    if (auto it = j.find("gap_lines"); it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() > Meta::kMaxGapLines)
        throw std::runtime_error(fmt::format("gap_lines is not an array of at most {} lines", Meta::kMaxGapLines));
      std::set<std::pair<std::string, int64_t>> seen;
      for (const auto& l : *it) {
        if (!l.is_array() || l.size() != 2 || !l[0].is_string() || !l[1].is_number_integer())
          throw std::runtime_error("gap_lines: an entry is not [object, integer line]");
        Meta::GapLine g{l[0].get<std::string>(), l[1].get<int64_t>()};
        if (!seen.insert({g.object, g.line}).second)
          throw std::runtime_error(fmt::format("gap_lines: {} line {} is named twice", g.object, g.line));
        m.gap_lines.push_back(std::move(g));
      }
    }
    m.gap_samples_per_s = 0;
    if (auto it = j.find("gap_samples_per_s"); it != j.end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1'000'000'000)
        throw std::runtime_error("gap_samples_per_s is not a whole number from 0 to 1000000000");
      m.gap_samples_per_s = static_cast<uint32_t>(it->get<int64_t>());
    }
    m.catch_rules.clear();
    if (j.contains("catch_rules"))
      json_each(j, "catch_rules", [&](const nlohmann::json& rj) {
        CatchRule r;
        r.text = json_at<std::string>(rj, "rule");
        r.probe = json_at<std::string>(rj, "probe");
        r.asked_ns = json_at<uint64_t>(rj, "asked_ns");
        r.percentile = json_at<double>(rj, "percentile");
        r.threshold_ns = json_at<uint64_t>(rj, "threshold_ns");
        r.per_sec = json_at<uint32_t>(rj, "per_sec");
        if (m.probe_index(r.probe) < 0) throw std::runtime_error(fmt::format("catch rule {}: no probe {}", r.text, r.probe));
        if (m.catch_rule(r.probe)) throw std::runtime_error(fmt::format("probe {} has two catch rules", r.probe));
        if (!(r.percentile >= 0 && r.percentile < 100))
          throw std::runtime_error(fmt::format("catch rule {}: percentile {} out of range", r.text, r.percentile));
        if (m.catch_rules.size() >= m.probes.size()) throw std::runtime_error("more catch rules than probes");
        m.catch_rules.push_back(std::move(r));
      });
  } catch (const nlohmann::json::exception& e) {  // one not read through json_reading: in words all the same
    throw json_shape_error(e);  // the reader says "bad metadata" (reader.cpp try_open)
  }
}

}  // namespace schedhot
