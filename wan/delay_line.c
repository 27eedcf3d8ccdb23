#include "delay_line.h"

#include <stdlib.h>
#include <string.h>

/*
 * xoshiro256** (Blackman and Vigna): fast and statistically sound for loss
 * and jitter draws.  Its state is filled through splitmix64 so that every
 * seed, 0 included, gives a good stream.
 */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

void dl_init(struct delay_line *dl, const struct dl_params *p, uint64_t seed)
{
    memset(dl, 0, sizeof *dl);
    dl->p = *p;
    for (int i = 0; i < 4; i++)
        dl->rng[i] = splitmix64(&seed);
    /* The threshold is loss * 2^64; a probability that rounds to 2^64
     * does not fit in 64 bits and means "every frame". */
    double threshold = p->loss * 0x1p64;
    if (threshold >= 0x1p64)
        dl->loss_always = 1;
    else
        dl->loss_threshold = (uint64_t)threshold;
}

void dl_free(struct delay_line *dl)
{
    struct dl_frame *f = dl->head;
    while (f != NULL) {
        struct dl_frame *next = f->next;
        free(f);
        f = next;
    }
    dl->head = dl->tail = dl->unsent = NULL;
    dl->queued_bytes = dl->held_bytes = dl->held_frames = 0;
}

/* Frames whose last bit has left the bottleneck by `now` leave the queue;
 * sent times grow along the list, so this stops at the first that has not. */
static void advance(struct delay_line *dl, uint64_t now)
{
    while (dl->unsent != NULL && dl->unsent->sent_ns <= now) {
        dl->queued_bytes -= dl->unsent->len;
        dl->unsent = dl->unsent->next;
    }
}

uint64_t dl_queue_bytes(struct delay_line *dl, uint64_t now)
{
    advance(dl, now);
    return dl->queued_bytes;
}

static int lost(struct delay_line *dl)
{
    if (dl->loss_always)
        return 1;
    return dl->loss_threshold != 0 && rng_next(dl->rng) < dl->loss_threshold;
}

/* When the frame's last bit leaves a bottleneck that serializes at
 * rate_bps after everything accepted before it. */
static uint64_t serialize(struct delay_line *dl, uint64_t now, uint32_t len)
{
    if (dl->p.rate_bps == 0)
        return now;
    if (dl->free_ns <= now) {
        dl->free_ns = now;
        dl->free_rem = 0;
    }
    uint64_t bit_ns = (uint64_t)len * 8u * 1000000000u + dl->free_rem;
    dl->free_ns += bit_ns / dl->p.rate_bps;
    dl->free_rem = bit_ns % dl->p.rate_bps;
    return dl->free_ns;
}

static uint64_t delivery_time(struct delay_line *dl, uint64_t sent)
{
    uint64_t due = sent + dl->p.delay_ns;
    if (dl->p.jitter_ns != 0) {
        uint64_t span = 2 * dl->p.jitter_ns + 1;
        /* 53 random bits scaled to [0, span): uniform to within 2^-53. */
        uint64_t draw = (uint64_t)((double)(rng_next(dl->rng) >> 11) * 0x1p-53 *
                                   (double)span);
        due = due - dl->p.jitter_ns + draw;
    }
    /* A frame never overtakes the one ahead of it: jitter reorders
     * nothing, as on a single path. */
    if (due < dl->last_due_ns)
        due = dl->last_due_ns;
    dl->last_due_ns = due;
    return due;
}

enum dl_verdict dl_enqueue(struct delay_line *dl, uint64_t now,
                           const void *data, uint32_t len)
{
    if (lost(dl)) {
        dl->c.dropped_loss++;
        return DL_DROP_LOSS;
    }
    uint64_t occupied =
        dl->p.rate_bps != 0 ? dl_queue_bytes(dl, now) : dl->held_bytes;
    if (occupied + len > dl->p.queue_bytes) {
        dl->c.dropped_queue++;
        return DL_DROP_QUEUE;
    }
    struct dl_frame *f = malloc(sizeof *f + len);
    if (f == NULL)
        return DL_NO_MEMORY;
    f->next = NULL;
    f->len = len;
    memcpy(f->data, data, len);
    f->sent_ns = serialize(dl, now, len);
    f->due_ns = delivery_time(dl, f->sent_ns);

    if (dl->tail != NULL)
        dl->tail->next = f;
    else
        dl->head = f;
    dl->tail = f;
    if (f->sent_ns > now) {
        if (dl->unsent == NULL)
            dl->unsent = f;
        dl->queued_bytes += len;
    }
    dl->held_bytes += len;
    dl->held_frames++;
    if (occupied + len > dl->c.queue_max)
        dl->c.queue_max = occupied + len;
    return DL_QUEUED;
}

uint64_t dl_next_due(const struct delay_line *dl)
{
    return dl->head != NULL ? dl->head->due_ns : UINT64_MAX;
}

struct dl_frame *dl_dequeue(struct delay_line *dl, uint64_t now)
{
    struct dl_frame *f = dl->head;
    if (f == NULL || f->due_ns > now)
        return NULL;
    /* due >= sent, so this moves `unsent` past f before f goes. */
    advance(dl, now);
    dl->head = f->next;
    if (dl->head == NULL)
        dl->tail = NULL;
    dl->held_bytes -= f->len;
    dl->held_frames--;
    dl->c.delivered++;
    dl->c.delivered_bytes += f->len;
    return f;
}
