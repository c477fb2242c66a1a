// The tick_broadcast_lock hot object (kernel/time/tick-broadcast.c): its address, alignment
// and neighbours from the symbol table, its line, fix (the lock alone in its line, v4.11),
// the what-if it cannot replay, and JSON.
#include "probe/objects/tick_broadcast_lock.h"

#include <algorithm>
#include <stdexcept>

#include <bpf/btf.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/layout.h"
#include "sys/json_text.h"

namespace schedhot {

namespace {

using namespace objects;

/// True when the table holds static (local) data symbols: kallsyms lists them only with
/// CONFIG_KALLSYMS_ALL; a System.map always does.
bool has_static_data(const SymbolTable& t) {
  return std::any_of(t.symbols().begin(), t.symbols().end(), [](const Symbol& s) {
    return s.module.empty() && (s.type == 'd' || s.type == 'b');
  });
}

void read_bcast_lock(BcastLockLayout& b, const SymbolTable* syms, int line_bytes, const std::string& src) {
  const char* kName = "tick_broadcast_lock";
  if (!syms || syms->empty()) {
    b.reason = "unknown: no symbol table readable";
    return;
  }
  if (syms->addresses_hidden()) {
    b.reason = "unknown: symbol addresses hidden (kernel.kptr_restrict, or not root)";
    return;
  }
  auto all = syms->find_all(kName);
  if (all.empty()) {
    b.reason = has_static_data(*syms) ? "unknown: tick_broadcast_lock not in the symbol table "
                                        "(no GENERIC_CLOCKEVENTS_BROADCAST?)"
                                      : "unknown: KALLSYMS_ALL off (no static data symbols in the symbol table)";
    return;
  }
  if (all.size() > 1) {
    b.reason = fmt::format("unknown: {} symbols named tick_broadcast_lock", all.size());
    return;
  }
  const uint64_t addr = all.front()->addr;
  b.address = addr;
  b.source = src;
  b.aligned = addr % uint64_t(line_bytes) == 0;
  const uint64_t lo = addr - addr % uint64_t(line_bytes), hi = lo + uint64_t(line_bytes);
  for (const Symbol& s : syms->symbols()) {
    if (!s.module.empty() || s.addr < lo || s.addr >= hi || s.name == kName) continue;
    b.neighbours.push_back(s);
  }
  std::sort(b.neighbours.begin(), b.neighbours.end(), [](const Symbol& x, const Symbol& y) {
    return x.addr != y.addr ? x.addr < y.addr : x.name < y.name;
  });
  b.own_line = *b.aligned && b.neighbours.empty();
}

void bcast_line(const CoherenceLayout& L, std::vector<LineDef>& out) {
  const int lb = L.line_bytes;
  const BcastLockLayout& b = L.bcast_lock;
  LineDef d;
  d.id = "tick_broadcast_lock";
  d.object = "tick_broadcast_lock line";
  d.line_offset = 0;
  d.allocation = "static";
  const std::optional<int64_t> lock_size = b.lock_bytes > 0 ? std::optional<int64_t>(b.lock_bytes) : std::nullopt;
  if (b.address) {
    const uint64_t lo = *b.address - *b.address % uint64_t(lb);
    d.address = lo;
    d.address_known = true;
    d.fields.push_back({"tick_broadcast_lock", int64_t(*b.address - lo), lock_size});
    for (auto& s : b.neighbours) d.fields.push_back({s.name, int64_t(s.addr - lo), std::nullopt});
    std::stable_sort(d.fields.begin(), d.fields.end(), [](const LineField& x, const LineField& y) { return *x.offset < *y.offset; });
  } else {
    d.fields.push_back({"tick_broadcast_lock", 0, lock_size});
    d.assumption = fmt::format("{}: assumed alone at the start of its line (__cacheline_aligned_in_smp)", b.reason);
  }
  out.push_back(std::move(d));
}

class TickBroadcastLock : public HotObject {
 public:
  std::string_view name() const override { return "tick_broadcast_lock"; }

  void read(const ReadInputs& in, CoherenceLayout& l) const override {
    if (in.btf) {
      const int lk = btf__find_by_name_kind(in.btf, "raw_spinlock", BTF_KIND_STRUCT);
      if (lk > 0) l.bcast_lock.lock_bytes = int64_t(btf__type_by_id(in.btf, uint32_t(lk))->size);
    }
    read_bcast_lock(l.bcast_lock, in.syms, in.line_bytes, in.syms_source);
    auto& b = l.bcast_lock;
    if (b.address) {
      l.notes.push_back(fmt::format("tick_broadcast_lock: 0x{:x} from {}, {}line-aligned, {} neighbour(s) in its line",
                                    *b.address, in.syms_source, *b.aligned ? "" : "not ", b.neighbours.size()));
    } else {
      l.notes.push_back(fmt::format("tick_broadcast_lock: {}: its line is modeled on an assumption (alone in its line, "
                                    "__cacheline_aligned_in_smp)",
                                    b.reason));
    }
  }

  void lines(const CoherenceLayout& L, std::vector<LineDef>& out) const override { bcast_line(L, out); }

  std::optional<FieldTarget> field_target(const std::string& f, bool, int, const CoherenceLayout& L) const override {
    if (f != "tick_broadcast_lock") return std::nullopt;
    std::string a;
    if (!L.bcast_lock.own_line) a = "placement unknown (" + L.bcast_lock.reason + "): modeled as its own line";
    return FieldTarget{"tick_broadcast_lock", "tick_broadcast_lock", a, 0, FieldTarget::fixed, 0};
  }

  std::optional<std::string> line_name(const std::string& object, int64_t line, const CoherenceLayout&) const override {
    if (object != "tick_broadcast_lock") return std::nullopt;
    if (line == 0) return object;
    return fmt::format("{} line {}", object, line);
  }

  Fix fix(const CoherenceLayout& l) const override {
    Fix f{"bcast_lock_own_line", "tick_broadcast_lock", std::nullopt, "", "alone in its line", "shares its line",
          "bcast_lock line", "alone", "shared", "tick_broadcast_lock on its own line", ""};
    if (l.bcast_lock.own_line)
      f.present = *l.bcast_lock.own_line;
    else
      f.reason = l.bcast_lock.reason.empty() ? "address unknown" : l.bcast_lock.reason;
    return f;
  }

  std::vector<WhatIf> what_ifs() const override {
    return {{"bcast_lock_line", "tick/broadcast: reduce lock cacheline contention (tick_broadcast_lock in its own line, v4.11)",
             "tick_broadcast_lock", false, 3}};
  }

  std::string what_if_reason(const WhatIf&, const CoherenceLayout& l) const override {
    const BcastLockLayout& bl = l.bcast_lock;
    return bl.own_line ? (*bl.own_line ? "this kernel has it: tick_broadcast_lock is alone in its line"
                                       : "the lock shares its line, but its neighbours' accesses are not traced: "
                                         "nothing to replay")
                       : "this kernel very likely has it (v4.11+); the lock's line is unknown (" +
                             (bl.reason.empty() ? std::string("no address") : bl.reason) + ")";
  }

  std::string assume(int, CoherenceLayout& L) const override {
    L.bcast_lock.reason = "not recorded";
    return "";
  }

  std::string source_text(const CoherenceLayout& l) const override {
    const BcastLockLayout& b = l.bcast_lock;
    if (b.address)
      return fmt::format("tick_broadcast_lock 0x{:x} from {}", *b.address, b.source.empty() ? "the symbol table" : b.source);
    return fmt::format("tick_broadcast_lock unknown ({})", b.reason.empty() ? "not found" : without_unknown(b.reason));
  }

  nlohmann::json to_json(const CoherenceLayout& l) const override {
    const auto& b = l.bcast_lock;
    nlohmann::json neigh = nlohmann::json::array();
    for (auto& s : b.neighbours) neigh.push_back({{"name", s.name}, {"addr", s.addr}, {"type", std::string(1, s.type)}});
    return {{"address", b.address ? nlohmann::json(*b.address) : nlohmann::json(nullptr)},
            {"reason", b.reason},
            {"source", b.source},
            {"lock_bytes", b.lock_bytes},
            {"aligned", b.aligned ? nlohmann::json(*b.aligned) : nlohmann::json(nullptr)},
            {"neighbours", neigh},
            {"own_line", b.own_line ? nlohmann::json(*b.own_line) : nlohmann::json(nullptr)}};
  }

  void from_json(const nlohmann::json& bj, CoherenceLayout& l) const override {
    auto& b = l.bcast_lock;
    if (!json_at<nlohmann::json>(bj, "address").is_null()) b.address = json_at<uint64_t>(bj, "address");
    b.reason = json_value(bj, "reason", "");
    b.source = json_value(bj, "source", "");
    b.lock_bytes = checked(bj, "lock_bytes", "tick_broadcast_lock", 0, 4096);
    if (!json_at<nlohmann::json>(bj, "aligned").is_null()) b.aligned = json_at<bool>(bj, "aligned");
    if (!json_at<nlohmann::json>(bj, "own_line").is_null()) b.own_line = json_at<bool>(bj, "own_line");
    const auto& nb = bj.at("neighbours");
    if (!nb.is_array() || nb.size() > 4096) throw std::runtime_error("coherence layout: tick_broadcast_lock.neighbours malformed");
    for (auto& s : nb) {
      Symbol sym;
      sym.name = json_at<std::string>(s, "name");
      sym.addr = json_at<uint64_t>(s, "addr");
      const std::string t = json_value(s, "type", "?");
      sym.type = t.size() == 1 ? t[0] : '?';
      if (b.address && (sym.addr / uint64_t(l.line_bytes) != *b.address / uint64_t(l.line_bytes)))
        throw std::runtime_error(fmt::format("coherence layout: neighbour {} is not in tick_broadcast_lock's line", sym.name));
      b.neighbours.push_back(std::move(sym));
    }
    if (!b.address && (b.aligned || b.own_line || !b.neighbours.empty()))
      throw std::runtime_error("coherence layout: tick_broadcast_lock facts without its address");
  }
};

}  // namespace

const HotObject& tick_broadcast_lock_object() {
  static const TickBroadcastLock o;
  return o;
}

}  // namespace schedhot
