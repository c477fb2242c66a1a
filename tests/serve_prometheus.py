#!/usr/bin/env python3
"""A real Prometheus (Debian's, started here) scrapes `schedhot serve` on this host (root):
the target is up with no scrape error (Prometheus asks for OpenMetrics first, so that
parser takes the text), schedhot_samples_total grows between scrapes, every probe's info
series is stored with its attach status, and the histograms give PromQL's
histogram_quantile an answer (NaN exactly when nothing was counted).

Then Prometheus against `schedhot report` over the same window: a `schedhot record`
started beside serve counts the same kernel events in its own maps. For a window of W s of
scrapes (first scrape t1, last t2), every counter's increase in Prometheus must lie between
report's totals over an inner and an outer window, and Prometheus's rate() between the
rates those give: a scraped value is serve's latest sample, whose wall time the same scrape
carries (schedhot_last_sample_timestamp_seconds), so the counts Prometheus saw are those
between two known sample times a and b; report over [a + i/5, b - i/5] takes record's
samples inside them (report's edges reach a tenth of an interval i beyond: the inner count,
at most Prometheus's) and over [a - 2i, b + 2i] takes in a record sample
beyond each edge (the outer count, at least it). The band's width, what the recording
counted in those edges, is the tolerance, measured rather than guessed. Likewise histogram_quantile(0.99) over the
window must fall in the same power-of-two bucket as report's p99 (Prometheus knows only
the 2^k ns bounds and interpolates linearly inside one; report's own error is
percentile_error), and the histogram's count increase within the band. Proxies get no
extra room: serve's and record's programs run one after the other on the same event, and
every proxy reads only state that cannot change between them (rq->idle_balance and
rq->nohz_tick_stopped, which only this CPU writes; cpu_to_pri[cpu], written under the rq
lock sched_switch holds). The nohz_exit proxy used to read idle_cpu()'s inputs, which a
remote wakeup writes, and the two programs differed (CI: +147 against [146, 146], then
+136 against [139, 142]); this test is what found it.
Kills what it starts. Usage: serve_prometheus.py SCHEDHOT"""
import json, math, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prometheus_util import Checks, Prometheus, stop  # noqa: E402

exe = sys.argv[1]
sport, pport = 19881, 19882
W = 12            # s of scrapes compared
INTERVAL = 0.25   # serve's and record's sample interval, s
td = tempfile.mkdtemp()
rec_path = os.path.join(td, "rec.shot")
t = Checks()
check = t.check


def report(frm=None, to=None):
    """report --json over [frm, to] (s since the recording's start): ({probe: entry}, window)."""
    args = [exe, "report", rec_path, "--json"]
    if frm is not None:
        args += ["--from", f"{max(frm, 0):.3f}", "--to", f"{to:.3f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"report {args[4:]}: {r.stderr.strip()}")
        return {}, {}
    d = json.loads(r.stdout)
    return {p["name"]: p for p in d["probes"]}, d["window"] | {"percentile_error": d["percentile_error"]}


def window_count(probes, name, counter):
    """A counter's total in a report, or the histogram count when counter is None."""
    p = probes.get(name) or {}
    if counter is None:
        return (p.get("latency_ns") or {}).get("count", 0)
    return ((p.get("counters") or {}).get(counter) or {}).get("total")


rec = subprocess.Popen([exe, "record", "-i", str(INTERVAL), "-d", "0", "-o", rec_path, "-q"])
s = subprocess.Popen([exe, "serve", "--listen", f"127.0.0.1:{sport}", "-i", str(INTERVAL), "-q"])
prom = Prometheus(td, pport, f"""  - job_name: schedhot
    static_configs: [{{targets: ["127.0.0.1:{sport}"]}}]
""")
query = prom.query
try:
    target = prom.wait_up('schedhot_samples_total{job="schedhot"}')
    t_up = time.time()
    check(target is not None, f"Prometheus scraped schedhot (target up within 40 s): {target and target['lastError']}")
    if target is None:
        sys.exit(1)
    check(target["lastError"] == "", f"no scrape error: {target['lastError']!r}")
    time.sleep(3)
    first = float(query("schedhot_samples_total")[0]["value"][1])
    inc = query("increase(schedhot_samples_total[3s])")
    check(bool(inc) and float(inc[0]["value"][1]) > 0, f"schedhot_samples_total grows between scrapes (now {first:g}): {inc}")
    probes = json.loads(subprocess.run([exe, "probes", "--json"], capture_output=True, text=True).stdout or "{}").get("probes")
    info = query("schedhot_probe_info")
    stored = {r["metric"]["probe"]: r["metric"]["attached"] for r in info}
    print(f"stored probe info: {stored}")
    if isinstance(probes, list):
        want = {x["probe"]: "true" if x.get("attached") else "false" for x in probes if "probe" in x}
        check(bool(want) and stored == want,
              f"every probe's info series is stored with the attach status `schedhot probes` gives: {want}")
    else:
        check(len(stored) >= 4, f"the probes' info series are stored ({len(stored)})")
    attached = [k for k, v in stored.items() if v == "true"]
    hists = query('count by (__name__) ({__name__=~"schedhot_.*_seconds_bucket"})')
    check(not attached or bool(hists), f"histograms stored for the attached probes {attached}: {[h['metric'] for h in hists]}")
    for h in hists:
        name = h["metric"]["__name__"]
        base = name[: -len("_bucket")]
        q = query(f"histogram_quantile(0.99, sum by (le) ({name}))")
        v = float(q[0]["value"][1]) if q else float("nan")
        n = float(query(f"sum({base}_count)")[0]["value"][1])
        print(f"histogram_quantile(0.99, {name}) = {v} s over {n:g} since attach")
        check(bool(q) and ((0 < v <= 1.1) if n > 0 else math.isnan(v)),
              f"histogram_quantile answers on {name}: {v} s ({'a number' if n > 0 else 'NaN: nothing counted yet'})")
        les = query(f"count({name})")
        check(bool(les) and int(les[0]["value"][1]) == 26, f"{name}: 26 buckets (2^6-1..2^30-1 ns and +Inf): {les}")

    # ---- Prometheus against schedhot report over the same window
    time.sleep(max(0.0, t_up + W + 2 - time.time()))
    T = time.time() - 1  # the instant PromQL evaluates at: a scrape and samples on both sides
    time.sleep(1 + 2 * INTERVAL)
    rec.send_signal(signal.SIGINT)
    check(rec.wait(30) == 0, "schedhot record beside serve stops cleanly on SIGINT")
    _, whole = report()
    start = whole["start_wall_ns"] / 1e9
    scrapes = query(f"schedhot_samples_total[{W}s]", time=T)[0]["values"]
    t1, t2 = scrapes[0][0], scrapes[-1][0]
    span = t2 - t1
    # The wall time of the sample each scrape showed, by scrape stamp: a scraped counter
    # holds the events up to that instant.
    stamped = query(f"schedhot_last_sample_timestamp_seconds[{W}s]", time=T)
    sample_at = {ts: float(v) for ts, v in (stamped[0]["values"] if stamped else [])}
    check(bool(sample_at) and all(t - 5 <= a <= t + 1 for t, a in sample_at.items()),
          f"every scrape carries its sample's wall time, before the scrape: "
          f"{[round(a - t, 3) for t, a in sample_at.items()]} s from the scrape")
    bands = {}

    def band(vals):
        """(inner, outer) reports around the samples a series' first and last scrapes showed."""
        a, b = sample_at.get(vals[0][0]), sample_at.get(vals[-1][0])
        if a is None or b is None:
            return {}, {}
        if (a, b) not in bands:
            # report's edges take in samples up to a tenth of an interval beyond them.
            bands[(a, b)] = (report(a + INTERVAL / 5 - start, b - INTERVAL / 5 - start)[0],  # record's samples inside
                             report(a - 2 * INTERVAL - start, b + 2 * INTERVAL - start)[0])  # a record sample beyond each edge
        return bands[(a, b)]

    nominal, nw = report(sample_at.get(t1, t1) - start, sample_at.get(t2, t2) - start)
    print(f"window: {len(scrapes)} scrapes over {span:.2f} s; report's: {nw.get('samples')} samples over "
          f"{nw.get('seconds', 0):.2f} s, starting {nw.get('start_wall_ns', 0) / 1e9 - t1:+.3f} s from the first scrape")
    compared = 0
    for name, p in nominal.items():
        if p.get("status") != "attached":
            continue
        for c, v in (p.get("counters") or {}).items():
            if not isinstance(v, dict):
                continue  # a proxy's unseen counter: absent in both
            metric = f"schedhot_{name}_{c}_total"
            raw = query(f"{metric}[{W}s]", time=T)
            rate = query(f"rate({metric}[{W}s])", time=T)
            if not raw or not rate:
                check(False, f"{metric}: report has it, Prometheus does not")
                continue
            vals = raw[0]["values"]
            d = float(vals[-1][1]) - float(vals[0][1])
            inner, outer = band(vals)
            lo, hi = window_count(inner, name, c), window_count(outer, name, c)
            r = float(rate[0]["value"][1])
            # rate() extrapolates to the range's edges, which keeps the slope unless the
            # counter was 0 at the first scrape (then it stops at zero): compare the slope then.
            slope = float(vals[0][1]) == 0 and d > 0
            cmp_rate = d / span if slope else r
            what = f"slope {cmp_rate:.2f}/s (rate() {r:.2f}/s stops at zero)" if slope else f"rate() {r:.2f}/s"
            # rate() is d x (the sampled interval extrapolated, at most to the range's edges) /
            # the sampled interval / the range: at most d over this series' own sampled
            # interval, which is shorter than span when its first scrape came later.
            mspan = float(vals[-1][0]) - float(vals[0][0])
            top = (hi or 0) / (mspan if slope is False and mspan > 0 else span)
            check(lo is not None and lo <= d <= hi and lo / span - 1e-9 <= cmp_rate <= top + 1e-9,
                  f"{metric}: Prometheus +{d:g} in [{lo}, {hi}]{' (a proxy)' if p.get('proxy') else ''}, "
                  f"{what} in [{(lo or 0) / span:.2f}, {top:.2f}]; report {v['rate_per_s']:.2f}/s over the window")
            compared += 1
        lat = p.get("latency_ns")
        hist = f"schedhot_{name}_{'residency' if name == 'idle' else 'lat'}_seconds"  # idle's is residency
        if not query(f"{hist}_count", time=T):
            continue
        raw = query(f"{hist}_count[{W}s]", time=T)[0]["values"]
        d = float(raw[-1][1]) - float(raw[0][1])
        inner, outer = band(raw)
        lo, hi = window_count(inner, name, None), window_count(outer, name, None)
        check(lo <= d <= hi, f"{hist}_count: Prometheus +{d:g} in [{lo}, {hi}]")
        q = query(f"histogram_quantile(0.99, sum by (le) (rate({hist}_bucket[{W}s])))", time=T)
        pq = float(q[0]["value"][1]) * 1e9 if q else float("nan")
        if d < 20 or not lat:
            # A busy host (other work on every core) has no idle exits to measure: both
            # sides must say there is nothing, and the quantile is not compared.
            check(d < 20 and (math.isnan(pq) if d == 0 else True),
                  f"{hist}: only {d:g} events in the window (the host did not idle?): quantile not compared (PromQL {pq} ns)")
            continue
        if not pq > 0:  # NaN or 0 with events in the window: PromQL lost them
            check(False, f"{hist}: histogram_quantile(0.99) {pq} ns over {d:g} events")
            continue
        err = nw["percentile_error"]
        reps = [x for x in ((inner.get(name) or {}).get("latency_ns"), lat, (outer.get(name) or {}).get("latency_ns")) if x]
        # The bucket (2^k - 1, 2^(k+1) - 1] ns (le = 2^k - 1: whole ns below 2^k) that holds
        # Prometheus's estimate; at a bound exactly, either side.
        k = math.floor(math.log2(pq + 1))
        lo_b, hi_b = 2.0 ** (k - (1 if pq == 2.0 ** k - 1 else 0)) - 1, 2.0 ** (k + 1) - 1
        # The 0.99 rank can sit at a bucket's edge: when fewer events than Prometheus's window
        # and report's differ by lie between the rank and the edge, report's p99 may fall in
        # the neighbouring bucket, and that bucket is accepted too.
        inc = {float(r["metric"]["le"]) * 1e9: float(r["value"][1]) for r in  # le in s, bounds in ns
               query(f"sum by (le) (increase({hist}_bucket[{W}s]))", time=T)}
        total = inc.get(float("inf"), 0.0)
        below = lambda le: max((v for b, v in inc.items() if b <= le * (1 + 1e-9)), default=0.0)  # noqa: E731
        rank, slack = 0.99 * total, abs(d - window_count(nominal, name, None)) + 1
        if below(hi_b) - rank <= slack * total / max(d, 1):
            hi_b = 2 * hi_b + 1
        if rank - below(lo_b) <= slack * total / max(d, 1):
            lo_b = (lo_b - 1) / 2
        ok = any(lo_b * (1 - err) <= x["p99"] <= hi_b * (1 + err) for x in reps)
        check(ok, f"{hist}: histogram_quantile(0.99) {pq:.0f} ns and report's p99 {[x['p99'] for x in reps]} ns "
                  f"(inner, same, outer window) share the bucket [{lo_b:.0f}, {hi_b:.0f}) ns (+-{err:.1%}; "
                  f"a neighbour when the rank is within {slack:g} events of the edge)")
        compared += 1
    check(compared >= 1, f"{compared} counters and histograms compared with report over the same window")
    check(s.poll() is None, "schedhot serve still up")
finally:
    stop(prom.proc, s, rec)
    shutil.rmtree(td, ignore_errors=True)
sys.exit(t.exit_status())
