// workload.c: scheduler hot-path workloads for schedhot's VM tests.
// Build: gcc -O2 -static -pthread -o workload workload.c   (see build-workload.sh)
//
//   workload idle-churn    [-d S] [-t THREADS] [-u USEC] [-s SPIN_USEC] [-c CPULIST]
//   workload hackbench     [-d S] [-g GROUPS] [-l LOOPS] [-f FDS] [-m MSGBYTES]
//   workload fifo-sleepers [-d S] [-t THREADS] [-p PRIO] [-u USEC] [-s SPIN_USEC] [-c CPULIST]
//   workload hotplug       [-d S] [-n CYCLES] [-c CPULIST] [-y]
//   workload mix           [-d S] [-t THREADS] [-p PRIO]
//
// Every mode prints exactly one JSON line on stdout at the end (what it did,
// per thread); diagnostics go to stderr. Exit status 0 on success.
// Throughput (tests/bench/guest_cost.py): hackbench's "msgs_per_s" (messages received per
// second from the threads' start to their join), fifo-sleepers' and idle-churn's
// "iters_per_s" (sleep+spin iterations of all threads per second, same span, "elapsed_s").
//
// idle-churn:    threads nanosleep(USEC) then spin SPIN_USEC: many idle enter/exit cycles.
// hackbench:     per group FDS receivers with one socketpair each, FDS senders that write
//                LOOPS messages to every receiver of the group per round, rounds repeated
//                until -d expires (-d 0: exactly one round).
// fifo-sleepers: SCHED_FIFO PRIO threads sleeping USEC in a loop (cpupri_set on every
//                wake/sleep; cpupri_find_fitness on RT wakeups with >1 allowed CPU).
// hotplug:       offline then online each CPU of CPULIST (default: every hot-pluggable
//                online CPU but cpu0) via /sys/devices/system/cpu/cpuN/online, CYCLES
//                times (or until -d expires, if -d is given). Refuses to run unless / is an initramfs
//                (rootfs/ramfs/tmpfs) or -y is given, so it cannot unplug a host's CPUs.
// mix:           idle-churn + fifo-sleepers + hackbench at the same time.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXT 1024
#define MAXCPU 1024

static atomic_int g_stop;
static double g_dur;   // -d, for the JSON output

static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "workload: error: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static void spin_us(unsigned us) {
    if (!us) return;
    double end = now_s() + us / 1e6;
    while (now_s() < end) cpu_relax();
}

static void sleep_us(unsigned us) {
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

static int ncpus_online(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

// "0-3,6" -> cpus[]; returns count
static int parse_cpulist(const char *s, int *cpus, int max) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (e == p || a < 0) die("bad CPU list '%s'", s);
        p = e;
        if (*p == '-') { p++; b = strtol(p, &e, 10); if (e == p || b < a) die("bad CPU list '%s'", s); p = e; }
        for (long c = a; c <= b && n < max; c++) cpus[n++] = (int)c;
        if (*p == ',') p++;
        else if (*p) die("bad CPU list '%s'", s);
    }
    return n;
}

static void cpus_to_set(const int *cpus, int n, cpu_set_t *set) {
    CPU_ZERO(set);
    for (int i = 0; i < n; i++) CPU_SET(cpus[i], set);
}

static void json_u64_array(FILE *f, const uint64_t *v, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)v[i]);
    fputc(']', f);
}

static uint64_t sum_u64(const uint64_t *v, int n) {
    uint64_t s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}

// ---------------------------------------------------------------- options
struct opts {
    double dur;
    int threads, usec, spin, prio, groups, loops, fds, msg, cycles;
    int ncpus; int cpus[MAXCPU];
    int yes, dur_set;
};

// ---------------------------------------------------------------- idle-churn / fifo-sleepers
struct sleeper {
    pthread_t th;
    int idx, usec, spin, fifo;
    uint64_t iters;
};

static void *sleeper_fn(void *arg) {
    struct sleeper *s = arg;
    // A thread name of its own (comm), so that a caught event's task says which job it was
    // (the e2e looks for "fifo-sleeper" among --catch cpupri_set's tasks).
    pthread_setname_np(pthread_self(), s->fifo ? "fifo-sleeper" : "idle-churn");
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        sleep_us(s->usec);
        spin_us(s->spin);
        s->iters++;
    }
    return NULL;
}

struct sleepers_run {
    const char *name;
    int n, fifo, prio, usec, spin, ncpus;
    int *cpus;
    struct sleeper *t;
    double t0;   // threads started (now_s)
};

static void sleepers_start(struct sleepers_run *r) {
    if (r->n < 1 || r->n > MAXT) die("thread count out of range in %s", r->name);
    r->t = calloc(r->n, sizeof(*r->t));
    r->t0 = now_s();
    pthread_attr_t at;
    pthread_attr_init(&at);
    if (r->fifo) {
        struct sched_param sp = {.sched_priority = r->prio};
        pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&at, SCHED_FIFO);
        pthread_attr_setschedparam(&at, &sp);
    }
    if (r->ncpus) {
        cpu_set_t set;
        cpus_to_set(r->cpus, r->ncpus, &set);
        pthread_attr_setaffinity_np(&at, sizeof(set), &set);
    }
    for (int i = 0; i < r->n; i++) {
        r->t[i] = (struct sleeper){.idx = i, .usec = r->usec, .spin = r->spin, .fifo = r->fifo};
        int e = pthread_create(&r->t[i].th, &at, sleeper_fn, &r->t[i]);
        if (e) { errno = e; die("pthread_create (%s) failed (SCHED_FIFO needs root/CAP_SYS_NICE)", strerror(e)); }
    }
    pthread_attr_destroy(&at);
}

static void sleepers_join_json(struct sleepers_run *r, FILE *f) {
    uint64_t *v = calloc(r->n, sizeof(*v));
    for (int i = 0; i < r->n; i++) { pthread_join(r->t[i].th, NULL); v[i] = r->t[i].iters; }
    double el = now_s() - r->t0;
    fprintf(f, "{\"mode\":\"%s\",\"duration_s\":%.3f,\"threads\":%d,\"usec\":%d,\"spin_usec\":%d", r->name, g_dur,
            r->n, r->usec, r->spin);
    if (r->fifo) fprintf(f, ",\"policy\":\"SCHED_FIFO\",\"prio\":%d", r->prio);
    if (r->ncpus) {
        fprintf(f, ",\"cpus\":[");
        for (int i = 0; i < r->ncpus; i++) fprintf(f, "%s%d", i ? "," : "", r->cpus[i]);
        fputc(']', f);
    }
    uint64_t tot = sum_u64(v, r->n);
    fprintf(f, ",\"total\":%llu,\"elapsed_s\":%.3f,\"iters_per_s\":%.1f,\"per_thread\":", (unsigned long long)tot, el,
            el > 0 ? tot / el : 0.0);
    json_u64_array(f, v, r->n);
    fputc('}', f);
    free(v);
    free(r->t);
}

// ---------------------------------------------------------------- hackbench
struct hb_group;
struct hb_thread {
    pthread_t th;
    struct hb_group *g;
    int idx;
    uint64_t msgs, rounds;
};
struct hb_group {
    int fds, loops, msg, once;
    int rfd[MAXT], wfd[MAXT];        // receiver i reads rfd[i]; senders write wfd[i]
    struct hb_thread snd[MAXT], rcv[MAXT];
};

static int write_full(int fd, const char *b, size_t n) {
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        b += w; n -= (size_t)w;
    }
    return 0;
}

static void *hb_sender(void *arg) {
    struct hb_thread *t = arg;
    struct hb_group *g = t->g;
    char buf[4096];
    memset(buf, 'D', sizeof(buf));
    do {
        for (int l = 0; l < g->loops; l++)
            for (int r = 0; r < g->fds; r++) {
                if (write_full(g->wfd[r], buf, g->msg)) { perror("workload: hackbench write"); exit(1); }
                t->msgs++;
            }
        t->rounds++;
    } while (!g->once && !atomic_load_explicit(&g_stop, memory_order_relaxed));
    buf[0] = 'E';
    for (int r = 0; r < g->fds; r++)
        if (write_full(g->wfd[r], buf, g->msg)) { perror("workload: hackbench write"); exit(1); }
    return NULL;
}

static void *hb_receiver(void *arg) {
    struct hb_thread *t = arg;
    struct hb_group *g = t->g;
    char buf[4096];
    int ends = 0;
    while (ends < g->fds) {
        size_t got = 0;
        while (got < (size_t)g->msg) {
            ssize_t r = read(g->rfd[t->idx], buf + got, g->msg - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { perror("workload: hackbench read"); exit(1); }
            got += (size_t)r;
        }
        if (buf[0] == 'E') ends++;
        else t->msgs++;
    }
    return NULL;
}

struct hb_run {
    int groups, fds, loops, msg, once;
    struct hb_group *g;
    double t0, t1;
};

static void hb_start(struct hb_run *h) {
    if (h->groups < 1 || h->fds < 1 || h->fds > MAXT || h->loops < 1 || h->msg < 1 || h->msg > 4096)
        die("hackbench parameters out of range%s", "");
    h->g = calloc(h->groups, sizeof(*h->g));
    h->t0 = now_s();
    for (int gi = 0; gi < h->groups; gi++) {
        struct hb_group *g = &h->g[gi];
        g->fds = h->fds; g->loops = h->loops; g->msg = h->msg; g->once = h->once;
        for (int i = 0; i < g->fds; i++) {
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) die("socketpair: %s", strerror(errno));
            g->rfd[i] = sv[0]; g->wfd[i] = sv[1];
        }
        for (int i = 0; i < g->fds; i++) {
            g->rcv[i] = (struct hb_thread){.g = g, .idx = i};
            if (pthread_create(&g->rcv[i].th, NULL, hb_receiver, &g->rcv[i])) die("pthread_create: %s", strerror(errno));
        }
        for (int i = 0; i < g->fds; i++) {
            g->snd[i] = (struct hb_thread){.g = g, .idx = i};
            if (pthread_create(&g->snd[i].th, NULL, hb_sender, &g->snd[i])) die("pthread_create: %s", strerror(errno));
        }
    }
}

static void hb_join_json(struct hb_run *h, FILE *f) {
    int n = h->groups * h->fds;
    uint64_t *sent = calloc(n, sizeof(uint64_t)), *recv = calloc(n, sizeof(uint64_t)), rounds = 0;
    for (int gi = 0; gi < h->groups; gi++) {
        struct hb_group *g = &h->g[gi];
        for (int i = 0; i < g->fds; i++) { pthread_join(g->snd[i].th, NULL); sent[gi * h->fds + i] = g->snd[i].msgs; rounds += g->snd[i].rounds; }
        for (int i = 0; i < g->fds; i++) { pthread_join(g->rcv[i].th, NULL); recv[gi * h->fds + i] = g->rcv[i].msgs; }
        for (int i = 0; i < g->fds; i++) { close(g->rfd[i]); close(g->wfd[i]); }
    }
    h->t1 = now_s();
    uint64_t ts = sum_u64(sent, n), tr = sum_u64(recv, n);
    fprintf(f, "{\"mode\":\"hackbench\",\"groups\":%d,\"fds\":%d,\"loops\":%d,\"msg_bytes\":%d,\"sender_rounds\":%llu,"
               "\"messages_sent\":%llu,\"messages_received\":%llu,\"ok\":%s,\"elapsed_s\":%.3f,\"msgs_per_s\":%.1f,\"per_sender\":",
            h->groups, h->fds, h->loops, h->msg, (unsigned long long)rounds, (unsigned long long)ts,
            (unsigned long long)tr, ts == tr ? "true" : "false", h->t1 - h->t0,
            h->t1 > h->t0 ? tr / (h->t1 - h->t0) : 0.0);
    json_u64_array(f, sent, n);
    fprintf(f, ",\"per_receiver\":");
    json_u64_array(f, recv, n);
    fputc('}', f);
    free(sent); free(recv); free(h->g);
    if (ts != tr) { fprintf(stderr, "workload: hackbench lost messages\n"); }
}

// ---------------------------------------------------------------- hotplug
static int cpu_online_path(int cpu, char *p, size_t n) {
    snprintf(p, n, "/sys/devices/system/cpu/cpu%d/online", cpu);
    return access(p, W_OK) == 0;
}

static int write_str(const char *path, const char *s) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return -errno;
    ssize_t w = write(fd, s, strlen(s));
    int e = w < 0 ? -errno : 0;
    close(fd);
    return e;
}

// Refuse to hot-unplug CPUs of a machine that is not a throw-away initramfs guest
// (root on rootfs/ramfs/tmpfs) unless -y is given.
static int root_is_initramfs(void) {
    FILE *f = fopen("/proc/self/mounts", "r");
    char dev[256], mnt[256], type[64];
    int ok = 0;
    if (!f) return 0;
    while (fscanf(f, "%255s %255s %63s %*[^\n]", dev, mnt, type) == 3)
        if (!strcmp(mnt, "/")) ok = !strcmp(type, "rootfs") || !strcmp(type, "ramfs") || !strcmp(type, "tmpfs");
    fclose(f);
    return ok;
}

static int mode_hotplug(struct opts *o) {
    char p[128];
    if (!o->yes && !root_is_initramfs())
        die("refusing to offline CPUs outside an initramfs guest (add -y to do it anyway)%s", "");
    int cpus[MAXCPU], n = 0;
    if (o->ncpus) {
        for (int i = 0; i < o->ncpus; i++) {
            if (!cpu_online_path(o->cpus[i], p, sizeof(p))) die("cpu%s has no writable online file", (snprintf(p, sizeof p, "%d", o->cpus[i]), p));
            cpus[n++] = o->cpus[i];
        }
    } else {
        for (int c = 1; c < MAXCPU; c++) {
            if (!cpu_online_path(c, p, sizeof(p))) continue;
            FILE *f = fopen(p, "r");
            int on = 0;
            if (f) { if (fscanf(f, "%d", &on) != 1) on = 0; fclose(f); }
            if (on) cpus[n++] = c;
        }
    }
    if (!n) die("no hot-pluggable CPU found (need /sys mounted, >1 CPU and root)%s", "");
    uint64_t off[MAXCPU] = {0}, on[MAXCPU] = {0};
    int errors = 0, cycles = 0;
    double t_off = 0, t_on = 0, t0 = now_s(), end = o->dur > 0 ? t0 + o->dur : 1e300;
    for (; cycles < o->cycles && now_s() < end; cycles++) {
        for (int i = 0; i < n; i++) {
            cpu_online_path(cpus[i], p, sizeof(p));
            double a = now_s();
            int e = write_str(p, "0");
            double b = now_s();
            if (e) { fprintf(stderr, "workload: offline cpu%d: %s\n", cpus[i], strerror(-e)); errors++; continue; }
            off[i]++; t_off += b - a;
            e = write_str(p, "1");
            double c = now_s();
            if (e) { fprintf(stderr, "workload: online cpu%d: %s\n", cpus[i], strerror(-e)); errors++; continue; }
            on[i]++; t_on += c - b;
        }
    }
    uint64_t toff = sum_u64(off, n), ton = sum_u64(on, n);
    printf("{\"mode\":\"hotplug\",\"cycles_requested\":%d,\"cycles_done\":%d,\"offline_ops\":%llu,\"online_ops\":%llu,"
           "\"errors\":%d,\"avg_offline_ms\":%.3f,\"avg_online_ms\":%.3f,\"elapsed_s\":%.3f,\"cpus\":[",
           o->cycles, cycles, (unsigned long long)toff, (unsigned long long)ton, errors,
           toff ? t_off * 1e3 / toff : 0.0, ton ? t_on * 1e3 / ton : 0.0, now_s() - t0);
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", cpus[i]);
    printf("],\"per_cpu_offline\":");
    json_u64_array(stdout, off, n);
    printf("}\n");
    return errors ? 1 : 0;
}

// ---------------------------------------------------------------- main
static void run_for(double dur) {
    if (dur > 0) {
        struct timespec ts = {(time_t)dur, (long)((dur - (time_t)dur) * 1e9)};
        while (nanosleep(&ts, &ts) && errno == EINTR) {}
    }
    atomic_store(&g_stop, 1);
}

static void usage(int rc) {
    fprintf(rc ? stderr : stdout,
        "usage: workload MODE [options]\n"
        "  idle-churn    [-d S] [-t THREADS] [-u USEC=50] [-s SPIN_USEC=5] [-c CPULIST]\n"
        "  hackbench     [-d S] [-g GROUPS=1] [-l LOOPS=100] [-f FDS=10] [-m MSGBYTES=100]  (-d 0: one round)\n"
        "  fifo-sleepers [-d S] [-t THREADS] [-p PRIO=50] [-u USEC=1000] [-s SPIN_USEC=0] [-c CPULIST]\n"
        "  hotplug       [-d S] [-n CYCLES=3] [-c CPULIST] [-y]  (-y: allowed outside an initramfs guest)\n"
        "  mix           [-d S] [-t THREADS] [-p PRIO=50]\n"
        "  -d S: duration in seconds (default 5; for hotplug an optional time limit, default none)\n"
        "  THREADS defaults to the number of online CPUs (fifo-sleepers: CPUs + 2)\n");
    exit(rc);
}

static int to_int(const char *s, const char *what) {
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || *e || v < 0 || v > 1000000000) die("bad value for %s", what);
    return (int)v;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) usage(argc < 2);
    const char *mode = argv[1];
    if (!strcmp(mode, "mark") && argc == 3) {  /* a phase boundary on the log: its CLOCK_MONOTONIC time */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("{\"mark\":\"%s\",\"mono_ns\":%llu}\n", argv[2],
               (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
        return 0;
    }
    struct opts o = {.dur = 5, .threads = 0, .usec = -1, .spin = -1, .prio = 50, .groups = 1, .loops = 100,
                     .fds = 10, .msg = 100, .cycles = 3};
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "d:t:u:s:p:g:l:f:m:n:c:yh")) != -1) {
        switch (opt) {
        case 'd': { char *e; o.dur = strtod(optarg, &e); if (e == optarg || *e || o.dur < 0) die("bad -d '%s'", optarg); o.dur_set = 1; break; }
        case 't': o.threads = to_int(optarg, "-t"); break;
        case 'u': o.usec = to_int(optarg, "-u"); break;
        case 's': o.spin = to_int(optarg, "-s"); break;
        case 'p': o.prio = to_int(optarg, "-p"); break;
        case 'g': o.groups = to_int(optarg, "-g"); break;
        case 'l': o.loops = to_int(optarg, "-l"); break;
        case 'f': o.fds = to_int(optarg, "-f"); break;
        case 'm': o.msg = to_int(optarg, "-m"); break;
        case 'n': o.cycles = to_int(optarg, "-n"); break;
        case 'c': o.ncpus = parse_cpulist(optarg, o.cpus, MAXCPU); break;
        case 'y': o.yes = 1; break;
        case 'h': usage(0); break;
        default: usage(2);
        }
    }
    if (optind != argc) die("unexpected argument '%s'", argv[optind]);
    int ncpu = ncpus_online();
    double t0 = now_s();
    g_dur = o.dur;

    if (!strcmp(mode, "idle-churn") || !strcmp(mode, "fifo-sleepers")) {
        int fifo = mode[0] == 'f';
        struct sleepers_run r = {.name = mode, .fifo = fifo, .prio = o.prio,
                                 .n = o.threads ? o.threads : (fifo ? ncpu + 2 : ncpu),
                                 .usec = o.usec >= 0 ? o.usec : (fifo ? 1000 : 50),
                                 .spin = o.spin >= 0 ? o.spin : (fifo ? 0 : 5),
                                 .ncpus = o.ncpus, .cpus = o.cpus};
        if (fifo && (o.prio < 1 || o.prio > 99)) die("-p must be 1..99%s", "");
        sleepers_start(&r);
        run_for(o.dur);
        sleepers_join_json(&r, stdout);
        printf("\n");
        return 0;
    }
    if (!strcmp(mode, "hackbench")) {
        struct hb_run h = {.groups = o.groups, .fds = o.fds, .loops = o.loops, .msg = o.msg, .once = o.dur == 0};
        hb_start(&h);
        run_for(o.dur);
        hb_join_json(&h, stdout);
        printf("\n");
        return 0;
    }
    if (!strcmp(mode, "hotplug")) {
        if (!o.dur_set) o.dur = 0;   // -n CYCLES decides, unless a time limit is given
        g_dur = o.dur;
        return mode_hotplug(&o);
    }
    if (!strcmp(mode, "mix")) {
        int t = o.threads ? o.threads : ncpu;
        struct sleepers_run idle = {.name = "idle-churn", .n = t, .usec = 50, .spin = 5};
        struct sleepers_run rt = {.name = "fifo-sleepers", .fifo = 1, .prio = o.prio, .n = t + 2, .usec = 1000};
        struct hb_run h = {.groups = 1, .fds = ncpu < 4 ? 2 : 4, .loops = 50, .msg = 100};
        if (o.prio < 1 || o.prio > 99) die("-p must be 1..99%s", "");
        sleepers_start(&idle);
        sleepers_start(&rt);
        hb_start(&h);
        run_for(o.dur);
        printf("{\"mode\":\"mix\",\"duration_s\":%.3f,\"ncpus\":%d,\"idle_churn\":", o.dur, ncpu);
        sleepers_join_json(&idle, stdout);
        printf(",\"fifo_sleepers\":");
        sleepers_join_json(&rt, stdout);
        printf(",\"hackbench\":");
        hb_join_json(&h, stdout);
        printf(",\"elapsed_s\":%.3f}\n", now_s() - t0);
        return 0;
    }
    fprintf(stderr, "workload: error: unknown mode '%s'\n", mode);
    usage(2);
    return 2;
}
