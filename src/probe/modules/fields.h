// Helpers for the modules' slot fields: named fields at word offsets of the abi.h structs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "probe/catalog.h"
#include "schedhot/abi.h"

namespace schedhot::fields {

inline constexpr uint32_t W = 8;  // bytes per word

/// Word offset of member in struct T.
#define SH_WORDS(T, member) static_cast<uint32_t>(offsetof(T, member) / ::schedhot::fields::W)

inline Field counter(const char* name, uint32_t off, const char* doc) { return {name, off, 1, FieldKind::counter, doc}; }
inline Field array(const char* name, uint32_t off, uint32_t n, const char* doc) {
  return {name, off, n, FieldKind::counter_array, doc};
}
inline Field hist(const char* name, uint32_t off, const char* doc) {
  return {name, off, sizeof(sh_hist) / W, FieldKind::hist, doc};
}
inline Field priv(uint32_t off, uint32_t n) { return {"_private", off, n, FieldKind::priv, "BPF-private state"}; }

/// The --catch counts of an embedded struct sh_catch at word offset base (META keeps them
/// only for a probe with a rule: sample.h apply_catch_rules).
inline void catch_fields(std::vector<Field>& v, uint32_t base) {
  // Witnesses (Field::witness): bpf/common.bpf.h sh_catch_note counts an event after its
  // histogram add (sh_hist_add), and tails' accounted check compares the two per CPU.
  v.push_back(counter("caught", base + SH_WORDS(sh_catch, caught), "events at or over the --catch rule's threshold, caught"));
  v.push_back(counter("catch_rate_drops", base + SH_WORDS(sh_catch, rate_drops),
                      "events at or over the threshold not caught: over the rule's rate on this CPU"));
  v.push_back(counter("catch_full_drops", base + SH_WORDS(sh_catch, full_drops),
                      "events at or over the threshold not caught: the perf buffer refused them (full, or none on a "
                      "CPU brought back online during the run)"));
  for (size_t i = v.size() - 3; i < v.size(); ++i) v[i].witness = true;
  v.push_back(priv(base + SH_WORDS(sh_catch, win_ns), 2));
}

/// The fields of an embedded struct sh_func at word offset base.
inline void func_fields(std::vector<Field>& v, uint32_t base) {
  v.push_back(counter("calls", base + SH_WORDS(sh_func, calls), "function entries"));
  v.push_back(counter("nested", base + SH_WORDS(sh_func, nested),
                      "entries that found 4 open entries (exits lost); the timing stack was reset"));
  v.push_back(counter("orphan_exits", base + SH_WORDS(sh_func, orphan_exits), "exits without a seen entry"));
  v.push_back(priv(base + SH_WORDS(sh_func, t), sizeof(sh_timing) / W));
  v.push_back(hist("lat", base + SH_WORDS(sh_func, lat), "entry-to-exit time, ns"));
  catch_fields(v, base + SH_WORDS(sh_func, c));
}

}  // namespace schedhot::fields

#include "probe/module.h"

namespace schedhot::fields {

/// A function probe's program for (backend, role): the four programs of its .bpf.c
/// (fexit/kretprobe null when the probe is not timed).
inline bpf_program* function_program(Backend b, ProgRole role, bpf_program* fentry, bpf_program* fexit,
                                     bpf_program* kprobe, bpf_program* kretprobe) {
  if (b == Backend::fentry) return role == ProgRole::entry ? fentry : role == ProgRole::exit ? fexit : nullptr;
  if (b == Backend::kprobe) return role == ProgRole::entry ? kprobe : role == ProgRole::exit ? kretprobe : nullptr;
  return nullptr;
}

/// The address of a text symbol, 0 when absent or not text.
inline uint64_t text_addr(const KernelFacts& facts, const char* name) {
  const Symbol* s = facts.kallsyms.find(name);
  return (s && s->is_text()) ? s->addr : 0;
}

}  // namespace schedhot::fields
