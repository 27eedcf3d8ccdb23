/*
 * The delay line of gridwan under simulated time: exact delay, a rate
 * limit that is exact over any stretch of time, tail drop, loss rates
 * within statistical bounds for fixed seeds, FIFO order and jitter bounds.
 * Statistical bounds are four standard deviations: with fixed seeds the
 * outcome is deterministic, the margin only guards against a biased RNG.
 */
#include "delay_line.h"
#include "unit_check.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS     1000000ull
#define US     1000ull
#define SECOND 1000000000ull
#define FRAME  1514u

static uint8_t payload[DL_MAX_FRAME];

/* Frame `seq` carries its number, so order can be checked on the way out. */
static enum dl_verdict offer(struct delay_line *dl, uint64_t now, uint32_t seq,
                             uint32_t len)
{
    memcpy(payload, &seq, sizeof seq);
    return dl_enqueue(dl, now, payload, len);
}

static uint32_t seq_of(const struct dl_frame *f)
{
    uint32_t seq;
    memcpy(&seq, f->data, sizeof seq);
    return seq;
}

static void test_delay_exact(void)
{
    struct dl_params p = {.delay_ns = 20 * MS, .queue_bytes = 1 << 20};
    struct delay_line dl;
    dl_init(&dl, &p, 1);
    CHECK(dl_next_due(&dl) == UINT64_MAX, "empty line has a due time");
    uint64_t t0 = 123456789;
    CHECK(offer(&dl, t0, 7, 60) == DL_QUEUED, "not queued");
    CHECK(dl_next_due(&dl) == t0 + 20 * MS, "due %" PRIu64, dl_next_due(&dl));
    CHECK(dl_dequeue(&dl, t0 + 20 * MS - 1) == NULL, "delivered early");
    struct dl_frame *f = dl_dequeue(&dl, t0 + 20 * MS);
    CHECK(f != NULL && f->len == 60 && seq_of(f) == 7, "wrong frame");
    free(f);
    CHECK(dl.c.delivered == 1 && dl.c.delivered_bytes == 60,
          "counters %" PRIu64 "/%" PRIu64, dl.c.delivered,
          dl.c.delivered_bytes);
    CHECK(dl_next_due(&dl) == UINT64_MAX, "line not empty");
    dl_free(&dl);
}

/* Back-to-back frames at a rate whose per-frame time is not a whole number
 * of nanoseconds: 1514 bytes at 3 Gbit/s take 4037.33 ns.  The virtual
 * clock carries the fraction, so N frames take exactly N times as long. */
static void test_rate_no_drift(void)
{
    struct dl_params p = {.rate_bps = 3000000000ull,
                          .delay_ns = 5 * MS,
                          .queue_bytes = 1ull << 40};
    struct delay_line dl;
    dl_init(&dl, &p, 1);
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; i++)
        offer(&dl, 0, i, FRAME);
    uint64_t bits_ns = (uint64_t)n * FRAME * 8 * SECOND;
    CHECK(dl.tail->sent_ns == bits_ns / p.rate_bps,
          "last frame sent at %" PRIu64 ", want %" PRIu64, dl.tail->sent_ns,
          bits_ns / p.rate_bps);
    CHECK(dl.head->sent_ns == (uint64_t)FRAME * 8 * SECOND / p.rate_bps,
          "first frame sent at %" PRIu64, dl.head->sent_ns);
    CHECK(dl.tail->due_ns == dl.tail->sent_ns + 5 * MS, "due %" PRIu64,
          dl.tail->due_ns);
    CHECK(dl_queue_bytes(&dl, 0) == (uint64_t)n * FRAME, "queue %" PRIu64,
          dl_queue_bytes(&dl, 0));
    /* Half-way through, half of the frames have left the queue. */
    uint64_t half = bits_ns / p.rate_bps / 2;
    uint64_t queued = dl_queue_bytes(&dl, half);
    CHECK(queued >= (uint64_t)n / 2 * FRAME &&
              queued <= (uint64_t)(n / 2 + 1) * FRAME,
          "queue at half time %" PRIu64, queued);
    dl_free(&dl);
}

/*
 * Offered load above the rate for two simulated seconds: whatever the
 * queue drops, what comes out in any one-second window of the busy period
 * is the rate, to within one frame.
 */
static void test_rate_throughput(uint64_t rate_bps, uint64_t offered_bps)
{
    struct dl_params p = {
        .rate_bps = rate_bps, .delay_ns = 5 * MS, .queue_bytes = 100000};
    struct delay_line dl;
    dl_init(&dl, &p, 1);
    uint64_t gap = (uint64_t)FRAME * 8 * SECOND / offered_bps;
    uint64_t window_bytes = 0;
    uint32_t seq = 0;
    for (uint64_t t = 0; t < 2 * SECOND; t += gap) {
        struct dl_frame *f;
        while ((f = dl_dequeue(&dl, t)) != NULL) {
            if (f->due_ns > SECOND / 2 && f->due_ns <= SECOND / 2 + SECOND)
                window_bytes += f->len;
            free(f);
        }
        offer(&dl, t, seq++, FRAME);
    }
    uint64_t want = rate_bps / 8;
    CHECK(window_bytes + FRAME >= want && window_bytes <= want + FRAME,
          "%" PRIu64 " bit/s offered %" PRIu64 ": %" PRIu64
          " bytes in one second, want %" PRIu64,
          rate_bps, offered_bps, window_bytes, want);
    CHECK(dl.c.dropped_queue > 0, "overload without drops");
    CHECK(dl.c.queue_max <= p.queue_bytes, "queue grew to %" PRIu64,
          dl.c.queue_max);
    dl_free(&dl);
}

/* 1 Mbit/s: a 1000-byte frame takes 8 ms to serialize. */
static void test_tail_drop(void)
{
    struct dl_params p = {
        .rate_bps = 1000000, .delay_ns = 10 * MS, .queue_bytes = 10000};
    struct delay_line dl;
    dl_init(&dl, &p, 1);
    int queued = 0;
    int dropped = 0;
    for (uint32_t i = 0; i < 15; i++) {
        enum dl_verdict v = offer(&dl, 0, i, 1000);
        queued += v == DL_QUEUED;
        dropped += v == DL_DROP_QUEUE;
        CHECK(v == (i < 10 ? DL_QUEUED : DL_DROP_QUEUE), "frame %u: %d", i,
              (int)v);
    }
    CHECK(queued == 10 && dropped == 5 && dl.c.dropped_queue == 5,
          "queued %d dropped %d", queued, dropped);
    CHECK(dl_queue_bytes(&dl, 0) == 10000, "queue %" PRIu64,
          dl_queue_bytes(&dl, 0));
    /* One frame later there is room for exactly one more. */
    CHECK(dl_queue_bytes(&dl, 8 * MS - 1) == 10000, "left the queue early");
    CHECK(offer(&dl, 8 * MS - 1, 100, 1000) == DL_DROP_QUEUE,
          "accepted into a full queue");
    CHECK(dl_queue_bytes(&dl, 8 * MS) == 9000, "queue %" PRIu64,
          dl_queue_bytes(&dl, 8 * MS));
    CHECK(offer(&dl, 8 * MS, 101, 1000) == DL_QUEUED, "no room after 8 ms");
    CHECK(offer(&dl, 8 * MS, 102, 1000) == DL_DROP_QUEUE, "queue overfull");
    CHECK(dl.c.queue_max == 10000, "queue_max %" PRIu64, dl.c.queue_max);
    /* The frame accepted at 8 ms leaves after the ten ahead of it. */
    CHECK(dl.tail->sent_ns == 11 * 8 * MS, "sent at %" PRIu64,
          dl.tail->sent_ns);
    dl_free(&dl);

    /* Without a rate the queue bounds the bytes held while delayed. */
    struct dl_params q = {.delay_ns = SECOND, .queue_bytes = 3000};
    dl_init(&dl, &q, 1);
    for (uint32_t i = 0; i < 3; i++)
        CHECK(offer(&dl, i, i, 1000) == DL_QUEUED, "frame %u dropped", i);
    CHECK(offer(&dl, 3, 3, 1000) == DL_DROP_QUEUE, "held more than 3000");
    free(dl_dequeue(&dl, SECOND));
    CHECK(offer(&dl, SECOND, 4, 1000) == DL_QUEUED, "no room after one left");
    dl_free(&dl);
}

/* Drop count of `n` frames at loss `p`, and the pattern of the first 64. */
static uint64_t run_loss(double p, uint64_t seed, uint32_t n, uint64_t *bits)
{
    struct dl_params params = {.loss = p, .queue_bytes = 1 << 20};
    struct delay_line dl;
    dl_init(&dl, &params, seed);
    *bits = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (offer(&dl, i, i, 60) == DL_DROP_LOSS && i < 64)
            *bits |= 1ull << i;
        free(dl_dequeue(&dl, i));
    }
    uint64_t drops = dl.c.dropped_loss;
    CHECK(dl.c.delivered + drops == n, "frames unaccounted for");
    dl_free(&dl);
    return drops;
}

static void check_loss_rate(double p, uint64_t seed, uint32_t n)
{
    uint64_t bits;
    uint64_t drops = run_loss(p, seed, n, &bits);
    double mean = p * n;
    double bound = 4 * sqrt(n * p * (1 - p));
    CHECK(fabs((double)drops - mean) <= bound,
          "loss %g seed %" PRIu64 ": %" PRIu64 " of %u dropped, want %.0f "
          "+- %.0f",
          p, seed, drops, n, mean, bound);
}

static void test_loss(void)
{
    check_loss_rate(0.05, 1, 100000);
    check_loss_rate(0.05, 42, 100000);
    check_loss_rate(0.001, 1, 1000000);
    check_loss_rate(0.5, 7, 100000);
    uint64_t a, b, c;
    run_loss(0.3, 5, 64, &a);
    run_loss(0.3, 5, 64, &b);
    run_loss(0.3, 6, 64, &c);
    CHECK(a == b, "same seed, different losses");
    CHECK(a != c, "different seeds, same losses");
    CHECK(run_loss(0, 1, 10000, &a) == 0, "loss 0 dropped frames");
    CHECK(run_loss(1, 1, 10000, &a) == 10000, "loss 1 let frames through");
}

/* Frames 10 us apart with +-5 ms jitter: jitter alone would reorder almost
 * every pair; the line keeps them in order. */
static void test_fifo_with_jitter(void)
{
    struct dl_params p = {.rate_bps = 1000000000,
                          .delay_ns = 10 * MS,
                          .jitter_ns = 5 * MS,
                          .queue_bytes = 1 << 24};
    struct delay_line dl;
    dl_init(&dl, &p, 3);
    const uint32_t n = 5000;
    uint32_t next = 0;
    uint64_t last_due = 0;
    int in_order = 1;
    int due_monotonic = 1;
    int due_in_bounds = 1;
    for (uint64_t t = 0; next < n; t += 10 * US) {
        if (t / (10 * US) < n)
            offer(&dl, t, (uint32_t)(t / (10 * US)), FRAME);
        struct dl_frame *f;
        while ((f = dl_dequeue(&dl, t)) != NULL) {
            in_order &= seq_of(f) == next;
            due_monotonic &= f->due_ns >= last_due;
            due_in_bounds &= f->due_ns >= f->sent_ns + 5 * MS;
            last_due = f->due_ns;
            next++;
            free(f);
        }
    }
    CHECK(in_order, "frames reordered");
    CHECK(due_monotonic, "due times go backwards");
    CHECK(due_in_bounds, "a frame was due before delay - jitter");
    dl_free(&dl);
}

/* Frames far enough apart that order never holds one back: the added delay
 * is uniform over [delay - jitter, delay + jitter]. */
static void test_jitter_bounds(void)
{
    struct dl_params p = {
        .delay_ns = 10 * MS, .jitter_ns = 2 * MS, .queue_bytes = 1 << 20};
    struct delay_line dl;
    dl_init(&dl, &p, 9);
    const uint32_t n = 4000;
    uint64_t lo = UINT64_MAX;
    uint64_t hi = 0;
    double sum = 0;
    int below_mid = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t = (uint64_t)i * 50 * MS;
        offer(&dl, t, i, 100);
        struct dl_frame *f = dl_dequeue(&dl, t + 20 * MS);
        uint64_t d = f->due_ns - t;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
        sum += (double)d;
        below_mid += d < 10 * MS;
        free(f);
    }
    CHECK(lo >= 8 * MS && hi <= 12 * MS,
          "delay outside [8, 12] ms: %" PRIu64 "..%" PRIu64, lo, hi);
    CHECK(lo < 8 * MS + 20 * US && hi > 12 * MS - 20 * US,
          "range not covered: %" PRIu64 "..%" PRIu64, lo, hi);
    /* Uniform over 4 ms: sd 1.155 ms, sd of the mean 0.018 ms. */
    double mean = sum / n;
    CHECK(fabs(mean - 10 * MS) < 0.08 * MS, "mean delay %.0f ns", mean);
    CHECK(abs(below_mid - (int)n / 2) < 4 * 32, "%d of %u below the delay",
          below_mid, n);
    dl_free(&dl);
}

/* The largest frame at the highest rate keeps the arithmetic in range,
 * and frames left in the line are freed with it. */
static void test_limits(void)
{
    struct dl_params p = {.rate_bps = 100000000000ull,
                          .delay_ns = 10 * SECOND,
                          .queue_bytes = 1ull << 30};
    struct delay_line dl;
    dl_init(&dl, &p, 1);
    for (uint32_t i = 0; i < 100; i++)
        offer(&dl, 0, i, DL_MAX_FRAME);
    uint64_t want = 100ull * DL_MAX_FRAME * 8 * SECOND / p.rate_bps;
    CHECK(dl.tail->sent_ns == want, "sent at %" PRIu64 ", want %" PRIu64,
          dl.tail->sent_ns, want);
    CHECK(dl.held_frames == 100, "held %" PRIu64, dl.held_frames);
    dl_free(&dl);
    CHECK(dl.head == NULL && dl.held_bytes == 0, "not emptied");
}

int main(void)
{
    test_delay_exact();
    test_rate_no_drift();
    test_rate_throughput(100000000, 150000000);
    test_rate_throughput(1000000000, 1300000000);
    test_rate_throughput(7000000, 50000000);
    test_tail_drop();
    test_loss();
    test_fifo_with_jitter();
    test_jitter_bounds();
    test_limits();
    return unit_check_report("");
}
