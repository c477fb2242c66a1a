// tracecount.c: counts the lines of one ftrace per-CPU buffer by function (or event) and
// by time window, for guest-lib.sh's ftrace_count_window. awk needs minutes under TCG for
// the ~10^6 lines a no-ARAT guest writes in a few seconds; this takes seconds.
// Build: gcc -O2 -static -o tracecount tracecount.c   (see build-workload.sh)
//
//   tracecount -a START_NS -b END_NS [-e EDGE_NS] -c LABEL FILE
//
// FILE is a per_cpu/cpuN/trace file printed with context-info on, on an ns trace clock
// (mono), so every event line holds "SECONDS.MICROSECONDS: NAME" (an event's NAME ends
// with ':'). For each NAME it prints one line
//   NAME LABEL IN_WINDOW TOTAL EDGE_START EDGE_END
// where IN_WINDOW counts timestamps t in (START_NS, END_NS], EDGE_START those in
// (START_NS, START_NS+EDGE_NS], EDGE_END those in (END_NS, END_NS+EDGE_NS] (EDGE_NS default
// 1 ms); an event is prefixed "event:". Then "#LOST LABEL LOST_EVENTS UNPARSED_LINES".
// A timestamp is the start of its microsecond (that is all the text format prints).
//
//   tracecount -q QUERIES -c LABEL FILE
//
// Nearest-line queries (the bcast_wait holder oracle, e2e-init.sh holder_oracle): QUERIES
// holds lines "ID NAME T_NS" (NAME as above, "event:" for an event). For each, in order,
// it prints "ID LABEL DELTA_NS" with DELTA_NS = (the timestamp of FILE's line of NAME
// nearest to T_NS) - T_NS, or "ID LABEL none" when FILE has no line of NAME.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXNAMES 256

struct name {
    char s[128];
    uint64_t win, tot, es, ee;
};
static struct name names[MAXNAMES];
static int nnames;

static struct name *lookup(const char *s, size_t n, int event) {
    char key[128];
    int k = snprintf(key, sizeof key, "%s%.*s", event ? "event:" : "", (int)n, s);
    if (k < 0 || (size_t)k >= sizeof key) return NULL;
    for (int i = 0; i < nnames; i++)
        if (!strcmp(names[i].s, key)) return &names[i];
    if (nnames == MAXNAMES) return NULL;
    strcpy(names[nnames].s, key);
    return &names[nnames++];
}

static uint64_t num(const char *opt, const char *v) {
    char *e;
    unsigned long long x = strtoull(v, &e, 10);
    if (e == v || *e) {
        fprintf(stderr, "tracecount: bad %s '%s'\n", opt, v);
        exit(2);
    }
    return x;
}

// Finds "DIGITS.DIGITS: " (or ":" at the end): the timestamp field. Returns the NAME start.
static const char *timestamp(const char *line, uint64_t *t) {
    for (const char *p = strchr(line, ':'); p; p = strchr(p + 1, ':')) {
        if (p[1] != ' ' && p[1] != '\n' && p[1] != 0) continue;
        const char *q = p;
        uint64_t us = 0, mul = 1, sec = 0;
        while (q > line && q[-1] >= '0' && q[-1] <= '9') { q--; us += (uint64_t)(*q - '0') * mul; mul *= 10; }
        if (q == p || q == line || q[-1] != '.') continue;
        const char *r = --q;
        mul = 1;
        while (r > line && r[-1] >= '0' && r[-1] <= '9') { r--; sec += (uint64_t)(*r - '0') * mul; mul *= 10; }
        if (r == q || (r > line && r[-1] != ' ')) continue;
        *t = sec * 1000000000ull + us * 1000ull;
        return p[1] ? p + 2 : p + 1;
    }
    return NULL;
}

// The timestamps of one name's lines, in file order (a per-CPU buffer is in time order).
struct times {
    uint64_t *t;
    size_t n, cap;
};

static int near_queries(const char *qpath, const char *label, const char *path) {
    struct query { char id[64]; struct name *m; uint64_t t; } *q = NULL;
    size_t nq = 0, qcap = 0;
    FILE *qf = fopen(qpath, "r");
    if (!qf) { perror(qpath); return 1; }
    char id[64], nm[128];
    unsigned long long t;
    while (fscanf(qf, "%63s %127s %llu", id, nm, &t) == 3) {
        if (nq == qcap) {
            qcap = qcap ? 2 * qcap : 256;
            q = realloc(q, qcap * sizeof *q);
            if (!q) { perror("realloc"); return 1; }
        }
        int ev = !strncmp(nm, "event:", 6);
        struct name *m = lookup(ev ? nm + 6 : nm, strlen(ev ? nm + 6 : nm), ev);
        if (!m) { fprintf(stderr, "tracecount: too many names\n"); return 1; }
        snprintf(q[nq].id, sizeof q[nq].id, "%s", id);
        q[nq].m = m;
        q[nq].t = t;
        nq++;
    }
    fclose(qf);
    struct times *ts = calloc(MAXNAMES, sizeof *ts);
    int asked = nnames;
    FILE *f = fopen(path, "r");
    if (!f || !ts) { perror(path); return 1; }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        uint64_t tt;
        const char *s;
        if (line[0] == '#' || !(s = timestamp(line, &tt))) continue;
        size_t n = strcspn(s, " \n");
        int event = n > 0 && s[n - 1] == ':';
        char key[128];
        int k = snprintf(key, sizeof key, "%s%.*s", event ? "event:" : "", (int)(event ? n - 1 : n), s);
        if (k < 0 || (size_t)k >= sizeof key) continue;
        for (int i = 0; i < asked; i++) {
            if (strcmp(names[i].s, key)) continue;
            struct times *x = &ts[i];
            if (x->n == x->cap) {
                x->cap = x->cap ? 2 * x->cap : 4096;
                x->t = realloc(x->t, x->cap * sizeof *x->t);
                if (!x->t) { perror("realloc"); return 1; }
            }
            x->t[x->n++] = tt;
            break;
        }
    }
    fclose(f);
    for (size_t i = 0; i < nq; i++) {
        struct times *x = &ts[q[i].m - names];
        if (!x->n) { printf("%s %s none\n", q[i].id, label); continue; }
        size_t lo = 0, hi = x->n;  // first timestamp >= t
        while (lo < hi) { size_t mid = (lo + hi) / 2; if (x->t[mid] < q[i].t) lo = mid + 1; else hi = mid; }
        long long best = 0;
        int have = 0;
        if (lo < x->n) { best = (long long)(x->t[lo] - q[i].t); have = 1; }
        if (lo > 0) {
            long long d = -(long long)(q[i].t - x->t[lo - 1]);
            if (!have || -d < best) best = d;
        }
        printf("%s %s %lld\n", q[i].id, label, best);
    }
    return 0;
}

int main(int argc, char **argv) {
    uint64_t a = 0, b = 0, e = 1000000;
    const char *label = "cpu?", *queries = NULL;
    int opt, have = 0;
    while ((opt = getopt(argc, argv, "a:b:e:c:q:")) != -1) {
        switch (opt) {
        case 'a': a = num("-a", optarg); have |= 1; break;
        case 'b': b = num("-b", optarg); have |= 2; break;
        case 'e': e = num("-e", optarg); break;
        case 'c': label = optarg; break;
        case 'q': queries = optarg; break;
        default: have = -1;
        }
    }
    if (queries && have == 0 && optind == argc - 1) return near_queries(queries, label, argv[optind]);
    if (have != 3 || optind != argc - 1) {
        fprintf(stderr, "usage: tracecount -a START_NS -b END_NS [-e EDGE_NS] -c LABEL FILE\n"
                        "       tracecount -q QUERIES -c LABEL FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[optind], "r");
    if (!f) {
        perror(argv[optind]);
        return 1;
    }
    char line[4096];
    uint64_t lost = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        const char *l = strstr(line, "[LOST ");
        if (l && strstr(l, " EVENTS]")) {
            lost += strtoull(l + 6, NULL, 10);
            continue;
        }
        uint64_t t;
        const char *s = timestamp(line, &t);
        if (!s) {
            if (strspn(line, " \t\n") != strlen(line)) bad++;
            continue;
        }
        size_t n = strcspn(s, " \n");
        int event = n > 0 && s[n - 1] == ':';
        struct name *m = lookup(s, event ? n - 1 : n, event);
        if (!m || n == 0) {
            bad++;
            continue;
        }
        m->tot++;
        if (t > a && t <= b) m->win++;
        if (t > a && t <= a + e) m->es++;
        if (t > b && t <= b + e) m->ee++;
    }
    fclose(f);
    for (int i = 0; i < nnames; i++)
        printf("%s %s %llu %llu %llu %llu\n", names[i].s, label, (unsigned long long)names[i].win,
               (unsigned long long)names[i].tot, (unsigned long long)names[i].es, (unsigned long long)names[i].ee);
    printf("#LOST %s %llu %llu\n", label, (unsigned long long)lost, (unsigned long long)bad);
    return 0;
}
