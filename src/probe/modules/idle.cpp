// The idle probe (bpf/idle.bpf.c): power:cpu_idle entries, exits, states and residency.
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "probe/modules/fields.h"
#include "schedhot.skel.h"

namespace schedhot {

namespace {

using namespace fields;

class Idle : public ProbeModule {
 public:
  Idle() {
    ProbeSpec& p = spec_;
    p.id = SH_P_IDLE;
    p.name = "idle";
    p.target = "power:cpu_idle";
    p.what = "idle entries and exits, entries by idle state, idle residency";
    p.kind = ProbeKind::tracepoint;
    p.tp_programs = {{"cpu_idle", false}};
    p.slot.slot_words = sizeof(sh_idle_slot) / W;
    p.slot.fields = {counter("entries", SH_WORDS(sh_idle_slot, entries), "idle entries"),
                       counter("exits", SH_WORDS(sh_idle_slot, exits), "idle exits"),
                       array("by_state", SH_WORDS(sh_idle_slot, by_state), SH_IDLE_STATES,
                             "entries by idle state index (7 = 7 and deeper)"),
                       priv(SH_WORDS(sh_idle_slot, ts), 1),
                       hist("lat", SH_WORDS(sh_idle_slot, lat), "idle residency, ns"),
                       priv(SH_WORDS(sh_idle_slot, state), 1)};
    catch_fields(p.slot.fields, SH_WORDS(sh_idle_slot, c));
    p.primary = "exits";
    p.secondary = {"entries"};
    p.hist = "lat";
    p.hist_what = "residency";
    p.hist_metric = "residency";
    p.columns = {{"idle/s", "exits"}};
    p.table_rank = -1;  // the table's first column and default sort
  }
  bpf_program* program(schedhot_bpf* s, Backend b, ProgRole role, int index) const override {
    return b == Backend::tracepoint && role == ProgRole::tracepoint && index == 0 ? s->progs.idle__tp_cpu_idle : nullptr;
  }
  bpf_map* slots_map(schedhot_bpf* s) const override { return s->maps.idle_slots; }
  /// The idle state index of the residency (power:cpu_idle's state).
  std::string caught_detail_text(uint64_t detail, const CaughtRun&) const override {
    return fmt::format("state {}", detail);
  }

};

SCHEDHOT_PROBE_MODULE(Idle, SH_P_IDLE);

}  // namespace

}  // namespace schedhot
