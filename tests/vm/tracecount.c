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

int main(int argc, char **argv) {
    uint64_t a = 0, b = 0, e = 1000000;
    const char *label = "cpu?";
    int opt, have = 0;
    while ((opt = getopt(argc, argv, "a:b:e:c:")) != -1) {
        switch (opt) {
        case 'a': a = num("-a", optarg); have |= 1; break;
        case 'b': b = num("-b", optarg); have |= 2; break;
        case 'e': e = num("-e", optarg); break;
        case 'c': label = optarg; break;
        default: have = -1;
        }
    }
    if (have != 3 || optind != argc - 1) {
        fprintf(stderr, "usage: tracecount -a START_NS -b END_NS [-e EDGE_NS] -c LABEL FILE\n");
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
