// The hot-object registry and what the objects share: BTF member reading, re-layout after a
// what-if, the JSON checks, FieldTarget's line arithmetic.
#include <algorithm>
#include <stdexcept>

#include <bpf/btf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/layout.h"
#include "probe/objects/object.h"

namespace schedhot {

// ---- the registry ---------------------------------------------------------------------

const std::vector<const HotObject*>& hot_objects() {
  static const std::vector<const HotObject*> v = {&nohz_object(), &cpupri_object(), &tick_broadcast_lock_object()};
  return v;
}

const std::vector<WhatIf>& all_what_ifs() {
  static const std::vector<WhatIf> v = [] {
    std::vector<WhatIf> w;
    for (const HotObject* o : hot_objects())
      for (WhatIf& x : o->what_ifs()) w.push_back(std::move(x));
    std::stable_sort(w.begin(), w.end(), [](const WhatIf& a, const WhatIf& b) { return a.rank < b.rank; });
    return w;
  }();
  return v;
}

const HotObject* what_if_owner(std::string_view id) {
  for (const HotObject* o : hot_objects())
    for (const WhatIf& w : o->what_ifs())
      if (w.id == id) return o;
  return nullptr;
}

std::vector<WhatIf> HotObject::what_ifs() const { return {}; }
std::string HotObject::what_if_reason(const WhatIf&, const CoherenceLayout&) const { return ""; }
void HotObject::apply(const WhatIf&, CoherenceLayout&) const {}
std::string HotObject::source_text(const CoherenceLayout&) const { return ""; }

// ---- FieldTarget ----------------------------------------------------------------------

void FieldTarget::lines(int cpu, int line_bytes, std::vector<int64_t>& out) const {
  switch (mode) {
    case fixed: out.push_back(line_of(base, line_bytes)); return;
    case bit: out.push_back(line_of(base + int64_t(std::max(cpu, 0) / 64) * 8, line_bytes)); return;
    case int32: out.push_back(line_of(base + int64_t(std::max(cpu, 0)) * 4, line_bytes)); return;
    case scan: {
      const int64_t bytes = std::max<int64_t>(8, (nbits + 63) / 64 * 8);
      for (int64_t l = line_of(base, line_bytes); l <= line_of(base + bytes - 1, line_bytes); ++l) out.push_back(l);
      return;
    }
  }
}

FieldTarget FieldTarget::cpumask(std::string object, std::string family, int64_t base, int64_t nbits,
                                 std::string assumption, bool per_cpu) {
  return FieldTarget{std::move(object), std::move(family), std::move(assumption), base,
                     per_cpu ? FieldTarget::bit : FieldTarget::scan, nbits};
}

namespace objects {

// ---- BTF ------------------------------------------------------------------------------

std::string btf_name(const struct btf* btf, uint32_t off) {
  const char* n = btf__name_by_offset(btf, off);
  return n ? n : "";
}

const struct btf_type* btf_resolved(const struct btf* btf, uint32_t id) {
  const int r = btf__resolve_type(btf, id);
  return r < 0 ? nullptr : btf__type_by_id(btf, uint32_t(r));
}

std::vector<std::pair<MemberLayout, uint32_t>> btf_members_of(const struct btf* btf, const struct btf_type* t) {
  std::vector<std::pair<MemberLayout, uint32_t>> out;
  const struct btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    MemberLayout ml;
    ml.name = btf_name(btf, m->name_off);
    ml.offset = int64_t(btf_member_bit_offset(t, uint32_t(i)) / 8);
    const auto sz = btf__resolve_size(btf, m->type);
    ml.size = sz < 0 ? 0 : int64_t(sz);
    out.emplace_back(std::move(ml), m->type);
  }
  return out;
}

void cpumask_shape(const struct btf* btf, uint32_t type_id, bool& is_pointer, int64_t& bytes) {
  const struct btf_type* t = btf_resolved(btf, type_id);
  is_pointer = t && btf_is_ptr(t);
  if (is_pointer) {
    bytes = 0;
  } else {
    const auto sz = btf__resolve_size(btf, type_id);
    bytes = sz < 0 ? 0 : int64_t(sz);
  }
}

const MemberLayout* find_member(const std::vector<std::pair<MemberLayout, uint32_t>>& ms, std::string_view name,
                                uint32_t* type) {
  for (auto& [m, t] : ms)
    if (m.name == name) {
      if (type) *type = t;
      return &m;
    }
  return nullptr;
}

std::string join_names(const std::vector<MemberLayout>& ms) {
  std::string s;
  for (auto& m : ms) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

void relayout(std::vector<MemberLayout*>& ms) {
  std::sort(ms.begin(), ms.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  int64_t end = 0;
  for (auto* m : ms) {
    const int64_t al = std::clamp<int64_t>(m->size, 1, 8);
    const int64_t want = (end + al - 1) / al * al;
    if (m->offset > want) m->offset = want;
    end = m->offset + m->size;
  }
}

// ---- JSON -----------------------------------------------------------------------------

nlohmann::json member_json(const MemberLayout& m) { return {{"name", m.name}, {"offset", m.offset}, {"size", m.size}}; }

int64_t checked(const nlohmann::json& j, const char* key, const std::string& what, int64_t lo, int64_t hi) {
  if (!j.contains(key)) throw std::runtime_error(fmt::format("coherence layout: {}.{} missing", what, key));
  const auto& v = j.at(key);
  if (!v.is_number_integer()) throw std::runtime_error(fmt::format("coherence layout: {}.{} is not an integer", what, key));
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi)
    throw std::runtime_error(fmt::format("coherence layout: {}.{} = {} out of range {}..{}", what, key, x, lo, hi));
  return x;
}

MemberLayout member_from(const nlohmann::json& j, const std::string& what, int64_t struct_size) {
  if (!j.is_object()) throw std::runtime_error(fmt::format("coherence layout: {} is not an object", what));
  MemberLayout m;
  m.name = j.at("name").get<std::string>();
  m.offset = checked(j, "offset", what);
  m.size = checked(j, "size", what);
  if (m.offset + m.size > struct_size)
    throw std::runtime_error(fmt::format("coherence layout: {} ({} B at {}) outside its {} B struct", what, m.size,
                                         m.offset, struct_size));
  return m;
}

std::string without_unknown(const std::string& reason) {
  return reason.rfind("unknown: ", 0) == 0 ? reason.substr(9) : reason;
}

}  // namespace objects

}  // namespace schedhot
