// The gap model (src/model/gaps.h) checked on real accesses: replays a recording made with
// `record --exact`, feeding its records both to the ownership machine (the exact count) and
// to GapTracker (the probes' per-CPU gap state, built here from the records' times), and
// prints per line the independent-arrivals model, the gap model and the exact count.
//   build/tests/schedhot_gap_replay REC.shot...
// Analysis knobs (environment), for what README "Cachelines" and issue 29's note report:
//   GAP_PER=OBJECT      per interval, the gap model and the exact count of OBJECT's lines
//   GAP_DUMP=OBJECT     the first 400 records touching OBJECT after GAP_FROM seconds (3)
//   GAP_BIN_MS=X        the gap model run on bins of X ms with the others' rates of each bin
//                       (the time-binned variant that was measured and rejected)
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "model/gaps.h"
#include "model/interval.h"
#include "model/lines.h"
#include "store/recording.h"

using namespace schedhot;

int main(int argc, char** argv) {
  const char* dump = getenv("GAP_DUMP");
  int dumped = 0;
  const char* per = getenv("GAP_PER");
  const uint64_t bin_ns = uint64_t(atof(getenv("GAP_BIN_MS") ?: "0") * 1e6);
  uint64_t cur_bin = 0;
  std::map<LineKey, double> bin_x;
  for (int f = 1; f < argc; ++f) {
    auto rd = RecordingReader::open(argv[f]);
    const Meta& meta = rd->meta();
    const CoherenceLayout layout = layout_of(meta);
    LinePlan plan(meta, layout);
    TopologyIndex topo(meta.host.topology);
    CoherenceAccumulator model(meta);
    ExactAccumulator exact(meta);
    GapTracker gaps;
    std::map<LineKey, uint32_t> ids;
    std::vector<LineKey> keys;
    std::map<LineKey, double> gap_x;  // transfers x seconds
    Sample prev, s;
    bool have = false;
    double secs = 0;
    while (rd->next(s)) {
      if (have) {
        Interval iv(meta, prev, s);
        if (iv.seconds() > 0) {
          model.add(iv);
          if (s.exact) {
            exact.add(iv.seconds(), *s.exact);
            for (const ExactRecord& r : s.exact->records)
              for (const auto& [k, w] : plan.event_lines(r.probe, r.word, int(r.cpu))) {
                auto [it, fresh] = ids.emplace(k, uint32_t(keys.size()));
                if (fresh) keys.push_back(k);
                if (bin_ns && r.ts_ns / bin_ns != cur_bin) {
                  for (uint32_t id : gaps.lines()) {
                    auto g = gaps.take(id);
                    bin_x[keys[id]] += gap_model(topo, g, bin_ns / 1e9).total() * (bin_ns / 1e9);
                  }
                  cur_bin = r.ts_ns / bin_ns;
                }
                gaps.feed({r.ts_ns, r.cpu, it->second, w});
                if (dump && k.object == dump && dumped < 400 && secs > atof(getenv("GAP_FROM") ?: "3")) {
                  std::printf("D %llu cpu %u %c probe %u word %u\n", (unsigned long long)r.ts_ns, r.cpu, w ? 'W' : 'R', r.probe, r.word);
                  ++dumped;
                }
              }
          }
          std::unique_ptr<ExactAccumulator> one;
          if (per && s.exact) {
            one = std::make_unique<ExactAccumulator>(meta);
            one->add(iv.seconds(), *s.exact);
          }
          for (uint32_t id : bin_ns ? std::vector<uint32_t>{} : gaps.lines()) {
            auto g = gaps.take(id);
            const double gx = gap_model(topo, g, iv.seconds()).total();
            gap_x[keys[id]] += gx * iv.seconds();
            if (one && keys[id].object == per) {
              auto t = one->traffic(keys[id]);
              std::printf("I t=%5.1f %s line %lld gap %9.1f exact %9.1f ratio %.2f\n", secs, per, (long long)keys[id].line, gx,
                          t ? t->total() : 0.0, t && t->total() > 0 ? gx / t->total() : 0.0);
            }
          }
          secs += iv.seconds();
        }
      }
      prev = s;
      have = true;
    }
    const CoherenceSummary sum = model.summary();
    std::printf("%s: %.1f s, %llu exact records, %llu lost\n", argv[f], secs, (unsigned long long)exact.records(),
                (unsigned long long)exact.lost());
    for (const LineSummary& l : sum.lines) {
      auto ex = exact.traffic(l.key);
      const double e = ex ? ex->total() : 0, g = (bin_ns ? bin_x[l.key] : gap_x[l.key]) / secs, m = l.traffic.total();
      std::printf("  %-44s model %9.1f  gap %9.1f  exact %9.1f /s   model/exact %6.2f  gap/exact %6.3f  (exact %6.0f)\n",
                  l.name.c_str(), m, g, e, e > 0 ? m / e : 0, e > 0 ? g / e : 0, ex ? e * exact.seconds() : 0);
    }
  }
}
