/*
 * The performance model: what gridcoll-probe measured on a grid, read
 * from a libconfig file (docs/model.md).  Per site the local point-to-point
 * cost α + mβ and Steffenel's contention signature γ, δ, M of the local
 * all-to-all (eq. 4-5); per pair of sites the WAN's α_w + mβ_w through the
 * relays, the gap between back-to-back messages, and the per-byte cost of
 * bulk transfers with many messages in flight.  Times in seconds, sizes
 * in bytes.  No MPI here: gridcoll-info and the unit tests use it too.
 */
#ifndef GC_MODEL_H
#define GC_MODEL_H

#include <stddef.h>

#define GC_MODEL_NAME_MAX    63
#define GC_MODEL_MAX_SITES   64
#define GC_MODEL_VERSION     1
#define GC_MODEL_MAX_SAMPLES 32

struct gc_model_site {
    char name[GC_MODEL_NAME_MAX + 1];
    int size; /* ranks it had when measured */
    double alpha, beta;
    double gamma, delta;
    double threshold; /* M of eq. 5: δ applies from this many bytes */
};

/* Measured times of a link by message size, sizes increasing. */
struct gc_model_curve {
    int count;
    double bytes[GC_MODEL_MAX_SAMPLES];
    double time[GC_MODEL_MAX_SAMPLES];
};

struct gc_model_link {
    double alpha, beta; /* one message alone: alpha_w + m beta_w */
    double gap;         /* per message, back to back (LogP's g) */
    double beta_bulk;   /* per byte, many messages in flight */
    /*
     * Optional measured times by size (increasing); when present they
     * replace the linear formulas: the WAN path is not linear in the size
     * (TCP's ramp on streams that went quiet, a lost segment's round trip
     * in a burst, striping above the relay's chunk size).
     *   one_way:  one message of m bytes alone, one way;
     *   exchange: the two sites' first members send each other m bytes at
     *             once, until both have them: what an all-to-all's WAN
     *             phase puts on the link, data both ways on the same
     *             streams.
     */
    struct gc_model_curve one_way, exchange;
};

struct gc_model {
    int site_count;
    struct gc_model_site sites[GC_MODEL_MAX_SITES];
    /* [a * site_count + b], a != b; symmetric (the file has pairs). */
    struct gc_model_link links[GC_MODEL_MAX_SITES * GC_MODEL_MAX_SITES];
};

/*
 * Read `path` into `m`.  0 on success; -1 with "path:line: message" (or
 * "path: message" when no line applies) in `err`.
 */
int gc_model_load(const char *path, struct gc_model *m, char *err,
                  size_t err_size);

/* Index of the site called `name`, or -1. */
int gc_model_site_index(const struct gc_model *m, const char *name);

static inline const struct gc_model_link *
gc_model_link(const struct gc_model *m, int a, int b)
{
    return &m->links[a * m->site_count + b];
}

/*
 * One message of m bytes alone over link l: piecewise linear between the
 * one_way samples (the first sample's time below it, the last one's plus
 * (m - last) beta above), or alpha + m beta without samples.
 */
double gc_model_one_way(const struct gc_model_link *l, double m);

/*
 * m bytes each way at once over link l: the exchange samples the same
 * way (beyond the last, beta_bulk per byte: many messages in flight), or
 * 0 for a model measured without them (nothing known beyond the other
 * parameters).
 */
double gc_model_exchange(const struct gc_model_link *l, double m);

/*
 * Write `m` as a model file, flushed to disk; 0 or -1 with errno set.
 * `comment` goes into comment lines at the top, one per line of it (how
 * and where it was measured).
 */
int gc_model_write(const struct gc_model *m, const char *path,
                   const char *comment);

/*
 * The model libgridcoll selects with (GRIDCOLL_MODEL, read at MPI_Init),
 * or NULL.  site_map[s]: the model's site for the job's site s.
 */
const struct gc_model *gc_model_active(const int **site_map);
void gc_model_set_active(const struct gc_model *m, const int *site_map);

#endif
