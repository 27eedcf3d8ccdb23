/*
 * One direction of an emulated WAN link: the frames one site sends to
 * another.  A frame offered to the line is
 *
 *   1. lost with probability `loss` (seeded RNG, independent per frame);
 *   2. tail-dropped when the bottleneck queue cannot take it;
 *   3. serialized at `rate_bps` after the frames ahead of it;
 *   4. delivered `delay_ns` (+ jitter) after its last bit was serialized.
 *
 * Everything is computed from a clock the caller passes in (nanoseconds,
 * never going backwards), so the line has no timers of its own: the caller
 * asks when the next frame is due and wakes up then.  Tests drive it with
 * simulated time.
 */
#ifndef DELAY_LINE_H
#define DELAY_LINE_H

#include <stdint.h>

struct dl_params {
    /* Bottleneck rate in bit/s, counting whole frames as given to
     * dl_enqueue; 0 = no bottleneck (frames are only delayed). */
    uint64_t rate_bps;
    uint64_t delay_ns;
    /* Uniform in [-jitter_ns, +jitter_ns]; at most delay_ns. */
    uint64_t jitter_ns;
    /* Probability in [0, 1] that a frame is lost. */
    double loss;
    /* With a rate: bytes of frames not yet completely serialized (the
     * frame on the wire included).  Without: bytes held by the line. */
    uint64_t queue_bytes;
};

struct dl_frame {
    struct dl_frame *next;
    uint64_t sent_ns; /* its last bit left the bottleneck */
    uint64_t due_ns;  /* delivery time */
    uint32_t len;
    unsigned char data[];
};

struct dl_counters {
    uint64_t delivered; /* frames handed out by dl_dequeue */
    uint64_t delivered_bytes;
    uint64_t dropped_queue;
    uint64_t dropped_loss;
    uint64_t queue_max; /* largest queue occupancy seen, bytes */
};

struct delay_line {
    struct dl_params p;
    uint64_t loss_threshold; /* a 64-bit draw below it loses the frame */
    int loss_always;
    uint64_t rng[4];
    /* Virtual clock of the bottleneck: busy until free_ns plus
     * free_rem / rate_bps nanoseconds, so frame costs that are not whole
     * nanoseconds add up without drift. */
    uint64_t free_ns;
    uint64_t free_rem;
    uint64_t last_due_ns;
    struct dl_frame *head;
    struct dl_frame *tail;
    struct dl_frame *unsent; /* first frame not completely serialized */
    uint64_t queued_bytes;   /* bytes from `unsent` to `tail` */
    uint64_t held_bytes;     /* bytes from `head` to `tail` */
    uint64_t held_frames;
    struct dl_counters c;
};

enum dl_verdict {
    DL_QUEUED,
    DL_DROP_LOSS,
    DL_DROP_QUEUE,
    DL_NO_MEMORY,
};

/* Parameters are copied; `seed` fixes the loss and jitter draws. */
void dl_init(struct delay_line *dl, const struct dl_params *p, uint64_t seed);
/* Frees the frames still in the line. */
void dl_free(struct delay_line *dl);

/* Longest frame the line takes: keeps len * 8e9 + rate in 64 bits. */
#define DL_MAX_FRAME 65536u

/* Offer a frame of 1..DL_MAX_FRAME bytes at time `now`; the data is copied
 * when it is queued. */
enum dl_verdict dl_enqueue(struct delay_line *dl, uint64_t now,
                           const void *data, uint32_t len);
/* Due time of the first frame, or UINT64_MAX when the line is empty. */
uint64_t dl_next_due(const struct delay_line *dl);
/* The first frame if it is due at `now`, else NULL; free() it. */
struct dl_frame *dl_dequeue(struct delay_line *dl, uint64_t now);
/* Bytes in the bottleneck queue at `now` (what tail drop compares). */
uint64_t dl_queue_bytes(struct delay_line *dl, uint64_t now);

#endif
