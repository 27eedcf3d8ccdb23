/*
 * gridwan: an emulated WAN between network namespaces (docs/gridwan.md).
 *
 * Each namespace gets a TAP device; frames read from one TAP pass a
 * learning switch into the delay line of each (source, destination) pair
 * they go to, and are written to the destination's TAP when due.  One
 * single-threaded libevent loop: a timer per direction wakes it for that
 * direction's next due frame (timerfd-backed through
 * EVENT_BASE_FLAG_PRECISE_TIMER, so microseconds rather than the
 * millisecond of epoll_wait), and the rate limit is a virtual clock inside
 * the delay line, so frames 12 us apart at 1 Gbit/s need no timer each:
 * one wakeup delivers whatever has come due.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
/* The kernel's struct sched_attr; glibc's <sched.h> would clash with it
 * and has no sched_setattr. */
#include <linux/sched.h>
#include <linux/sched/types.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "delay_line.h"
#include "fdb.h"
#include "gc_log.h"
#include "gc_util.h"
#include "netns.h"
#include "tap.h"
#include "wan_options.h"

#define TAP_NAME "wan0"
/* Frames read from one TAP per wakeup before the other TAPs and the
 * timers get their turn. */
#define READ_BATCH 64

/* Each stops gridwan cleanly: a hangup must not leave namespaces behind
 * any more than SIGTERM does. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define STOP_SIGNAL_COUNT (sizeof stop_signals / sizeof stop_signals[0])

struct gridwan;

struct site {
    struct gridwan *gw;
    unsigned index;
    struct tap tap;
    bool ns_created;
    struct event *readable;
};

/* Frames from site `src` to site `dst`. */
struct direction {
    struct gridwan *gw;
    unsigned src;
    unsigned dst;
    struct delay_line line;
    struct event *due;
    uint64_t write_errors;
    uint64_t write_error_bytes;
    /* How late frames were written, against their due time: the
     * emulator's own contribution to the delay (wakeup latency). */
    uint64_t late_sum_ns;
    uint64_t late_max_ns;
};

struct gridwan {
    struct wan_options opt;
    struct site sites[WAN_MAX_SITES];
    struct direction *dirs; /* [src * site_count + dst], diagonal unused */
    struct fdb fdb;
    struct event_base *base;
    struct event *signals[STOP_SIGNAL_COUNT];
    struct event *end;
    bool ready;
    int status;
    uint8_t frame[DL_MAX_FRAME];
};

static struct direction *direction(struct gridwan *gw, unsigned src,
                                   unsigned dst)
{
    return &gw->dirs[src * gw->opt.site_count + dst];
}

static void stop(struct gridwan *gw, int status)
{
    if (status > gw->status)
        gw->status = status;
    event_base_loopbreak(gw->base);
}

/* Wake up when the first frame of `d` is due.  Rounded up to the
 * microsecond of libevent's timeval: a timer that fired early would find
 * nothing due and cost a second wakeup. */
static void arm(struct direction *d)
{
    uint64_t due = dl_next_due(&d->line);
    uint64_t now = gc_now_ns();
    uint64_t us = due > now ? (due - now + 999) / 1000 : 0;
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
                         .tv_usec = (suseconds_t)(us % 1000000)};
    if (evtimer_add(d->due, &tv) == -1) {
        gc_log_error("cannot arm the timer of %s->%s", d->gw->opt.ns[d->src],
                     d->gw->opt.ns[d->dst]);
        stop(d->gw, 1);
    }
}

static void on_due(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct direction *d = arg;
    int out = d->gw->sites[d->dst].tap.fd;
    for (;;) {
        uint64_t now = gc_now_ns();
        struct dl_frame *f = dl_dequeue(&d->line, now);
        if (f == NULL)
            break;
        uint64_t late = now - f->due_ns;
        d->late_sum_ns += late;
        if (late > d->late_max_ns)
            d->late_max_ns = late;
        /* A TAP takes a whole frame or fails (EIO once its link is down):
         * the frame is lost, as on a real wire. */
        if (write(out, f->data, f->len) == -1) {
            if (d->write_errors++ == 0)
                gc_log_warn("%s->%s: write to %s: %s (counted from now on)",
                            d->gw->opt.ns[d->src], d->gw->opt.ns[d->dst],
                            TAP_NAME, strerror(errno));
            d->write_error_bytes += f->len;
        }
        free(f);
    }
    if (dl_next_due(&d->line) != UINT64_MAX)
        arm(d);
}

static void offer(struct direction *d, uint64_t now, const uint8_t *frame,
                  uint32_t len)
{
    bool idle = dl_next_due(&d->line) == UINT64_MAX;
    enum dl_verdict verdict = dl_enqueue(&d->line, now, frame, len);
    if (verdict == DL_NO_MEMORY) {
        gc_log_error("out of memory for a frame of %u bytes", len);
        stop(d->gw, 1);
    } else if (verdict == DL_QUEUED && idle) {
        arm(d);
    }
}

/* The learning switch: a known unicast destination gets the frame, any
 * other destination floods it to every other site. */
static void switch_frame(struct gridwan *gw, unsigned src, uint32_t len)
{
    const uint8_t *frame = gw->frame;
    if (len < WAN_ETH_HLEN)
        return;
    fdb_learn(&gw->fdb, frame + 6, src);
    int port = fdb_lookup(&gw->fdb, frame);
    uint64_t now = gc_now_ns();
    if (port >= 0) {
        if ((unsigned)port != src)
            offer(direction(gw, src, (unsigned)port), now, frame, len);
        return;
    }
    for (unsigned dst = 0; dst < gw->opt.site_count; dst++)
        if (dst != src)
            offer(direction(gw, src, dst), now, frame, len);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct site *s = arg;
    struct gridwan *gw = s->gw;
    for (int i = 0; i < READ_BATCH; i++) {
        ssize_t n = read(fd, gw->frame, sizeof gw->frame);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN) {
                gc_log_error("%s: read from %s: %s", gw->opt.ns[s->index],
                             TAP_NAME, strerror(errno));
                stop(gw, 1);
            }
            return;
        }
        switch_frame(gw, s->index, (uint32_t)n);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    gc_log_info("%s: stopping", strsignal((int)sig));
    stop(arg, 0);
}

static void on_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gc_log_info("--duration is over: stopping");
    stop(arg, 0);
}

/*
 * Frames are due at exact times, but on a busy machine a woken gridwan can
 * wait for another task's whole time slice (milliseconds) before it runs.
 * Linux 6.12 and later (EEVDF) take sched_runtime of a SCHED_OTHER task as
 * a request for shorter slices: the task keeps its fair share of CPU and
 * is picked soon after it wakes.  Older kernels ignore the field.
 * --rt-priority asks for SCHED_FIFO instead, which no fair task delays.
 */
#define SLICE_NS 100000 /* the shortest slice the kernel grants */

static int set_scheduling(unsigned rt_priority)
{
    struct sched_attr attr;
    memset(&attr, 0, sizeof attr);
    /* Start from the current attributes, so that a nice value given by
     * whoever started gridwan stays. */
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) == -1) {
        gc_log_error("sched_getattr: %s", strerror(errno));
        return -1;
    }
    attr.size = sizeof attr;
    attr.sched_flags = 0;
    if (rt_priority != 0) {
        attr.sched_policy = SCHED_FIFO;
        attr.sched_priority = rt_priority;
    } else {
        attr.sched_runtime = SLICE_NS;
    }
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == -1) {
        if (rt_priority != 0) {
            gc_log_error("--rt-priority %u: %s", rt_priority, strerror(errno));
            return -1;
        }
        gc_log_warn("cannot ask for %d us time slices (%s): delays may "
                    "stretch on a busy machine",
                    SLICE_NS / 1000, strerror(errno));
    }
    return 0;
}

static void format_addr(uint32_t addr, char *out, size_t len)
{
    struct in_addr in = {.s_addr = htonl(addr)};
    inet_ntop(AF_INET, &in, out, (socklen_t)len);
}

static int setup_sites(struct gridwan *gw)
{
    const struct wan_options *o = &gw->opt;
    for (unsigned i = 0; i < o->site_count; i++) {
        struct site *s = &gw->sites[i];
        int exists = netns_exists(o->ns[i]);
        if (exists == -1) {
            gc_log_error("namespace %s: %s", o->ns[i], strerror(errno));
            return -1;
        }
        if (!exists) {
            if (netns_add(o->ns[i]) != 0) {
                gc_log_error("cannot create namespace %s", o->ns[i]);
                return -1;
            }
            s->ns_created = true;
        }
        struct tap_config cfg = {
            .ns = o->ns[i],
            .ifname = TAP_NAME,
            .mtu = o->mtu,
            .addr = wan_site_addr(o, i),
            .prefix_len = o->prefix_len,
        };
        char err[256];
        if (tap_open_in_ns(&cfg, &s->tap, err, sizeof err) != 0) {
            gc_log_error("namespace %s: %s", o->ns[i], err);
            return -1;
        }
        s->readable = event_new(gw->base, s->tap.fd, EV_READ | EV_PERSIST,
                                on_readable, s);
        if (s->readable == NULL || event_add(s->readable, NULL) == -1) {
            gc_log_error("cannot watch %s in %s", TAP_NAME, o->ns[i]);
            return -1;
        }
    }
    return 0;
}

static int setup_directions(struct gridwan *gw)
{
    const struct wan_options *o = &gw->opt;
    unsigned n = o->site_count;
    gw->dirs = calloc((size_t)n * n, sizeof *gw->dirs);
    if (gw->dirs == NULL) {
        gc_log_error("out of memory");
        return -1;
    }
    struct dl_params p = {
        .rate_bps = o->rate_bps,
        .delay_ns = o->delay_ns,
        .jitter_ns = o->jitter_ns,
        .loss = o->loss,
        .queue_bytes = o->queue_bytes,
    };
    for (unsigned src = 0; src < n; src++) {
        for (unsigned dst = 0; dst < n; dst++) {
            if (src == dst)
                continue;
            struct direction *d = direction(gw, src, dst);
            d->gw = gw;
            d->src = src;
            d->dst = dst;
            /* Independent, reproducible draws per direction. */
            dl_init(&d->line, &p, o->seed ^ ((uint64_t)src << 32 | dst));
            d->due = evtimer_new(gw->base, on_due, d);
            if (d->due == NULL) {
                gc_log_error("out of memory");
                return -1;
            }
        }
    }
    return 0;
}

static int setup(struct gridwan *gw)
{
    for (unsigned i = 0; i < WAN_MAX_SITES; i++) {
        gw->sites[i].gw = gw;
        gw->sites[i].index = i;
        gw->sites[i].tap.fd = -1;
        gw->sites[i].tap.stats_fd = -1;
    }
    fdb_init(&gw->fdb);
    struct event_config *cfg = event_config_new();
    if (cfg == NULL ||
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER |
                                       EVENT_BASE_FLAG_NO_CACHE_TIME) == -1) {
        event_config_free(cfg);
        gc_log_error("cannot configure libevent");
        return -1;
    }
    gw->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (gw->base == NULL) {
        gc_log_error("cannot create the event loop");
        return -1;
    }
    if (set_scheduling(gw->opt.rt_priority) != 0 || setup_directions(gw) != 0 ||
        setup_sites(gw) != 0)
        return -1;

    for (size_t i = 0; i < STOP_SIGNAL_COUNT; i++) {
        gw->signals[i] = evsignal_new(gw->base, stop_signals[i], on_signal, gw);
        if (gw->signals[i] == NULL || event_add(gw->signals[i], NULL) == -1) {
            gc_log_error("cannot set up signal handling");
            return -1;
        }
    }
    gw->end = evtimer_new(gw->base, on_end, gw);
    if (gw->end == NULL) {
        gc_log_error("out of memory");
        return -1;
    }
    if (gw->opt.duration_ns != 0) {
        uint64_t us = gw->opt.duration_ns / 1000;
        struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
                             .tv_usec = (suseconds_t)(us % 1000000)};
        if (evtimer_add(gw->end, &tv) == -1) {
            gc_log_error("cannot arm the --duration timer");
            return -1;
        }
    }
    return 0;
}

static void print_ready(const struct gridwan *gw)
{
    const struct wan_options *o = &gw->opt;
    char delay[32], jitter[32], rate[32];
    wan_format_time(o->delay_ns, delay, sizeof delay);
    wan_format_time(o->jitter_ns, jitter, sizeof jitter);
    wan_format_rate(o->rate_bps, rate, sizeof rate);
    printf("gridwan: ready ns=");
    for (unsigned i = 0; i < o->site_count; i++)
        printf("%s%s", i ? "," : "", o->ns[i]);
    printf(" addrs=");
    for (unsigned i = 0; i < o->site_count; i++) {
        char addr[INET_ADDRSTRLEN];
        format_addr(wan_site_addr(o, i), addr, sizeof addr);
        printf("%s%s", i ? "," : "", addr);
    }
    char subnet[INET_ADDRSTRLEN];
    format_addr(o->subnet, subnet, sizeof subnet);
    printf(" subnet=%s/%u dev=%s delay=%s jitter=%s rate=%s loss=%.3f%% "
           "queue=%" PRIu64 " mtu=%u seed=%" PRIu64 "\n",
           subnet, o->prefix_len, TAP_NAME, delay, jitter, rate, o->loss * 100,
           o->queue_bytes, o->mtu, o->seed);
    fflush(stdout);
}

static void print_counters(struct gridwan *gw)
{
    unsigned n = gw->opt.site_count;
    for (unsigned src = 0; src < n; src++) {
        for (unsigned dst = 0; dst < n; dst++) {
            if (src == dst)
                continue;
            const struct direction *d = direction(gw, src, dst);
            const struct dl_counters *c = &d->line.c;
            printf("gridwan: %s->%s forwarded=%" PRIu64 " bytes=%" PRIu64
                   " dropped_queue=%" PRIu64 " dropped_loss=%" PRIu64
                   " write_errors=%" PRIu64 " queue_max=%" PRIu64
                   " in_flight=%" PRIu64 " late_avg_us=%.1f"
                   " late_max_us=%.1f\n",
                   gw->opt.ns[src], gw->opt.ns[dst],
                   c->delivered - d->write_errors,
                   c->delivered_bytes - d->write_error_bytes, c->dropped_queue,
                   c->dropped_loss, d->write_errors, c->queue_max,
                   d->line.held_frames,
                   c->delivered
                       ? (double)d->late_sum_ns / 1e3 / (double)c->delivered
                       : 0.0,
                   (double)d->late_max_ns / 1e3);
        }
    }
    /* Frames lost before the delay line: gridwan did not read the TAP
     * before its queue filled (it was not scheduled, or is too slow). */
    for (unsigned i = 0; i < n; i++) {
        uint64_t dropped;
        if (tap_tx_dropped(&gw->sites[i].tap, TAP_NAME, &dropped) == 0)
            printf("gridwan: %s %s not_read_dropped=%" PRIu64 "\n",
                   gw->opt.ns[i], TAP_NAME, dropped);
        else
            gc_log_warn("%s: cannot read the counters of %s", gw->opt.ns[i],
                        TAP_NAME);
    }
    /* Writing to a TAP runs the receiving namespace's network stack in
     * gridwan's system call, so system time includes the receivers' TCP. */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        printf("gridwan: cpu user_s=%.2f sys_s=%.2f\n",
               (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    fflush(stdout);
}

/* Releases whatever setup got to, in any state; 0, or 1 when a namespace
 * it created could not be deleted. */
static int teardown(struct gridwan *gw)
{
    int status = 0;
    unsigned n = gw->opt.site_count;
    if (gw->dirs != NULL) {
        for (unsigned i = 0; i < n * n; i++) {
            if (gw->dirs[i].due != NULL)
                event_free(gw->dirs[i].due);
            dl_free(&gw->dirs[i].line);
        }
        free(gw->dirs);
    }
    /* Closing the descriptor removes the TAP from its namespace. */
    for (unsigned i = 0; i < n; i++) {
        struct site *s = &gw->sites[i];
        if (s->readable != NULL)
            event_free(s->readable);
        tap_close(&s->tap);
    }
    for (size_t i = 0; i < STOP_SIGNAL_COUNT; i++)
        if (gw->signals[i] != NULL)
            event_free(gw->signals[i]);
    if (gw->end != NULL)
        event_free(gw->end);
    if (gw->base != NULL)
        event_base_free(gw->base);
    for (unsigned i = 0; i < n; i++) {
        if (gw->sites[i].ns_created && netns_delete(gw->opt.ns[i]) != 0) {
            gc_log_error("cannot delete namespace %s", gw->opt.ns[i]);
            status = 1;
        }
    }
    return status;
}

int main(int argc, char **argv)
{
    static struct gridwan gw;
    char err[256];
    gc_log_init("gridwan", GC_LOG_INFO);
    switch (wan_options_parse(argc, argv, &gw.opt, err, sizeof err)) {
    case WAN_OPTIONS_RUN: break;
    case WAN_OPTIONS_HELP: wan_options_usage(stdout); return 0;
    case WAN_OPTIONS_ERROR: fprintf(stderr, "gridwan: %s\n", err); return 2;
    }
    if (netns_check_privileges("gridwan") != 0)
        return 1;

    /* Stop signals wait until the loop handles them, so one that comes
     * during setup or teardown still leaves nothing behind.  A reader that
     * went away (`gridwan ... | head -1`) must not kill gridwan with
     * SIGPIPE before it has removed its namespaces. */
    sigset_t blocked, old_mask;
    sigemptyset(&blocked);
    for (size_t i = 0; i < STOP_SIGNAL_COUNT; i++)
        sigaddset(&blocked, stop_signals[i]);
    sigprocmask(SIG_BLOCK, &blocked, &old_mask);
    signal(SIGPIPE, SIG_IGN);

    if (setup(&gw) == 0) {
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        gw.ready = true;
        print_ready(&gw);
        if (event_base_dispatch(gw.base) == -1) {
            gc_log_error("event loop failed");
            gw.status = 1;
        }
        sigprocmask(SIG_BLOCK, &blocked, NULL);
    } else {
        gw.status = 1;
    }
    if (gw.ready)
        print_counters(&gw);
    if (teardown(&gw) != 0)
        gw.status = 1;
    return gw.status;
}
