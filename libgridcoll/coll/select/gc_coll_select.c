/*
 * Algorithm coll_tables, selection, forced choices and WAN accounting for the
 * collectives (gc_coll_algo.h explains the scheme).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/engine/coll_request.h"
#include "coll/gc_coll.h"
#include "coll/node_shm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_settings.h"
#include "core/gc_world.h"
#include "gridcoll.h"
#include "p2p/gc_wan_stats.h"

/* Room per table in the statistics; checked when the stats are read. */
#define MAX_ALGOS 16

/* Per table entry: a grid algorithm's calls and WAN traffic, how often
 * the site phases chose a site algorithm. */
struct coll_stats {
    uint64_t calls;
    struct gc_wan_count wan;
};

static struct coll_stats stats[GC_COLL_KINDS][MAX_ALGOS];

/* t is one of `coll_tables` (coll_table_of). */
const char *coll_table_name(const struct coll_table *t)
{
    return gc_coll_kind_name((enum gc_coll_kind)(t - coll_tables));
}

const struct coll_table *coll_table_of(enum gc_coll_kind kind)
{
    return kind >= 0 && kind < GC_COLL_KINDS ? &coll_tables[kind] : NULL;
}

/* ---- forced choices ------------------------------------------------------ */

/* Set by GridColl_Set_algorithm; NULL: the environment decides. */
static const char *forced_by_call[GC_COLL_KINDS];
static char forced_storage[GC_COLL_KINDS][64];

/* GRIDCOLL_<NAME><suffix>, upper case, into `var`. */
static void env_name(const struct coll_table *t, const char *suffix, char *var,
                     size_t size)
{
    size_t at = (size_t)snprintf(var, size, "GRIDCOLL_");
    for (const char *p = coll_table_name(t); *p != '\0' && at + 1 < size; p++)
        var[at++] = (char)toupper((unsigned char)*p);
    var[at] = '\0';
    strncat(var, suffix, size - at - 1);
}

/* The index of algorithm `name` of `level` in t, -1 when there is none. */
static int find_algo(const struct coll_table *t, enum coll_level level,
                     const char *name)
{
    for (int i = 0; i < t->algo_count; i++)
        if (t->algos[i].level == level && strcmp(t->algos[i].name, name) == 0)
            return i;
    return -1;
}

static void list_names(const struct coll_table *t, enum coll_level level,
                       char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < t->algo_count; i++) {
        if (t->algos[i].level != level)
            continue;
        if (out[0] != '\0')
            strncat(out, ", ", size - strlen(out) - 1);
        strncat(out, t->algos[i].name, size - strlen(out) - 1);
    }
}

static const char *restrictions_of(const struct coll_algo *algo)
{
    return algo->restrictions != NULL ? algo->restrictions : "";
}

/* Runs blocking calls only: a site algorithm marked so (every grid
 * algorithm is a schedule, engine/coll_sched.h). */
static int blocking_only(const struct coll_algo *algo)
{
    return algo->level == COLL_SITE && algo->blocking;
}

static int usable(const struct coll_algo *algo, const struct coll_args *a)
{
    if (!coll_may_block(a) && blocking_only(algo))
        return 0;
    return algo->usable == NULL || algo->usable(a);
}

/*
 * The algorithm of `level` a forced name stands for, or an error through
 * the communicator's handler naming the variable and the valid choices.
 */
static int forced_algo(const struct coll_table *t, enum coll_level level,
                       const struct coll_args *a, const char *name,
                       const char *source, int *index)
{
    char names[256];
    *index = find_algo(t, level, name);
    if (*index >= 0 && usable(&t->algos[*index], a))
        return MPI_SUCCESS;
    list_names(t, level, names, sizeof names);
    if (*index < 0)
        return gc_error(a->comm->handle, MPI_ERR_ARG, a->fn,
                        "%s=%s is not %s algorithm of %s (valid: %s)", source,
                        name, level == COLL_GRID ? "an" : "a site",
                        coll_table_name(t), names);
    return gc_error(a->comm->handle, MPI_ERR_ARG, a->fn,
                    "%s=%s cannot run this call (%s; valid: %s)", source, name,
                    restrictions_of(&t->algos[*index]), names);
}

static int rule_matches(const struct coll_rule *r, enum coll_level level,
                        const struct coll_args *a)
{
    int size = level == COLL_GRID ? a->comm->site_count : a->comm->local_size;
    return size >= r->min_size && a->bytes >= r->min_bytes &&
           (r->max_bytes == 0 || a->bytes <= r->max_bytes);
}

/* The default of `level`: its first rule that applies (struct coll_rule). */
static int select_default(const struct coll_table *t, enum coll_level level,
                          const struct coll_args *a, int *index)
{
    for (int r = 0; r < t->rule_count; r++) {
        const struct coll_rule *rule = &t->rules[r];
        *index = find_algo(t, level, rule->algo);
        if (*index < 0 || !rule_matches(rule, level, a) ||
            !usable(&t->algos[*index], a))
            continue;
        int holds = 1;
        /* Last: the node layer's condition is a collective of the site. */
        int status =
            rule->when != NULL ? rule->when->test(a, &holds) : MPI_SUCCESS;
        if (status != MPI_SUCCESS || holds)
            return status;
    }
    /* Nonblocking calls whose rules name blocking-only algorithms. */
    for (*index = 0; *index < t->algo_count; ++*index)
        if (t->algos[*index].level == level && usable(&t->algos[*index], a))
            return MPI_SUCCESS;
    if (!coll_may_block(a))
        return gc_unsupported(a->comm->handle, a->fn);
    /* The levels end with an unbounded rule for an algorithm without
     * restrictions; getting here is a bug in a table. */
    return gc_error(a->comm->handle, MPI_ERR_INTERN,
                    "collective on a grid communicator: no algorithm "
                    "applies (GridColl bug)",
                    NULL);
}

/* ---- model mode ---------------------------------------------------------- */

/* Segment sizes model mode tries: powers of two in this range. */
#define MODEL_MIN_SEGSIZE ((size_t)16 * 1024)
#define MODEL_MAX_SEGSIZE ((size_t)16 * 1024 * 1024)

int coll_model_choose(const struct coll_table *t,
                      const struct coll_cost_args *c, size_t fixed_segsize,
                      const struct coll_args *a, struct coll_prediction *out)
{
    int best = -1;
    for (int i = 0; i < t->algo_count; i++) {
        const struct coll_algo *algo = &t->algos[i];
        struct coll_prediction *p = &out[i];
        p->candidate = algo->cost != NULL && (a == NULL || usable(algo, a));
        p->segsize = 0;
        p->cost = 0;
        if (!p->candidate)
            continue;
        struct coll_cost_args try = *c;
        try.segsize = fixed_segsize > 0 ? fixed_segsize : t->default_segsize;
        p->cost = algo->cost(&try);
        if (algo->segmented) {
            p->segsize = try.segsize;
            /* Sizes beyond the message cost what the message costs. */
            for (size_t seg = MODEL_MIN_SEGSIZE; fixed_segsize == 0; seg *= 2) {
                try.segsize = seg;
                double cost = algo->cost(&try);
                if (cost < p->cost) {
                    p->cost = cost;
                    p->segsize = seg;
                }
                if (seg >= c->bytes || seg >= MODEL_MAX_SEGSIZE)
                    break;
            }
        }
        if (best < 0 || p->cost < out[best].cost)
            best = i;
    }
    return best;
}

/* The root's comm rank for the kinds that have one, else rank 0. */
static int call_root(enum gc_coll_kind kind, const struct coll_args *a)
{
    switch (kind) {
    case GC_COLL_BCAST: return a->u.bcast.root;
    case GC_COLL_REDUCE: return a->u.reduce.root;
    case GC_COLL_GATHER:
    case GC_COLL_GATHERV:
    case GC_COLL_SCATTER:
    case GC_COLL_SCATTERV: return a->u.rooted.root;
    default: return 0;
    }
}

/*
 * With a model, a call whose `bytes` every member knows (not the
 * v-forms) and a table with cost functions: the cheapest predicted
 * algorithm, and its segment size into a->segsize; -1 when the rules
 * decide.  For a `forced` algorithm (>= 0), only its segment size, the
 * one its cost function predicts best, and `forced` is returned.  The inputs
 * are the model every member read from the same file, the communicator's layout
 * and the call's arguments, so every member chooses alike.
 */
static int model_select(const struct coll_table *t, struct coll_args *a,
                        int forced)
{
    const int *site_map;
    const struct gc_model *m = gc_model_active(&site_map);
    if (m == NULL || a->bytes == 0)
        return forced >= 0 ? forced : -1;
    const struct gc_comm *c = a->comm;
    int compact[GC_MAX_SITES], site_size[GC_MAX_SITES] = {0},
                               model_site[GC_MAX_SITES];
    int sites = 0;
    for (int w = 0; w < gc_world.site_count; w++)
        if (c->leader[w] >= 0) {
            compact[w] = sites;
            model_site[sites++] = site_map[w];
        }
    for (int r = 0; r < c->size; r++)
        site_size[compact[c->site[r]]]++;
    enum gc_coll_kind kind = (enum gc_coll_kind)(t - coll_tables);
    struct coll_cost_args cost = {
        .site_count = sites,
        .size = c->size,
        .site_size = site_size,
        .model = m,
        .model_site = model_site,
        .root_site = compact[c->site[call_root(kind, a)]],
        .bytes = a->bytes,
    };
    size_t fixed = gc_settings_segsize(kind);
    struct coll_prediction out[MAX_ALGOS];
    int chosen =
        coll_model_choose(t, &cost, fixed != 0 ? a->segsize : 0, a, out);
    if (forced >= 0)
        chosen = out[forced].candidate ? forced : -1;
    if (chosen >= 0 && t->algos[chosen].segmented)
        a->segsize = out[chosen].segsize;
    return forced >= 0 ? forced : chosen;
}

/*
 * Both levels: the `forced` algorithm (from `source`), else at the grid
 * level the model's choice, else the default rules.  A forced algorithm
 * that runs blocking calls only leaves the nonblocking ones to the
 * default.
 */
static int select_level(const struct coll_table *t, enum coll_level level,
                        struct coll_args *a, const char *forced,
                        const char *source, int *index)
{
    if (forced != NULL && forced[0] != '\0' && !coll_may_block(a)) {
        int k = find_algo(t, level, forced);
        if (k >= 0 && blocking_only(&t->algos[k]))
            forced = NULL;
    }
    if (forced != NULL && forced[0] != '\0') {
        int status = forced_algo(t, level, a, forced, source, index);
        if (status == MPI_SUCCESS && level == COLL_GRID)
            model_select(t, a, *index);
        return status;
    }
    if (level == COLL_GRID && (*index = model_select(t, a, -1)) >= 0)
        return MPI_SUCCESS;
    return select_default(t, level, a, index);
}

static int select_algo(const struct coll_table *t, struct coll_args *a,
                       int *index)
{
    char var[64];
    env_name(t, "", var, sizeof var);
    enum gc_coll_kind kind = (enum gc_coll_kind)(t - coll_tables);
    const char *forced = forced_by_call[kind],
               *source = "GridColl_Set_algorithm";
    if (forced == NULL) {
        forced = gc_settings_algorithm(var);
        source = var;
    }
    return select_level(t, COLL_GRID, a, forced, source, index);
}

/* What a site rule's condition or `usable` sees of a nonblocking call:
 * only whether the request is NULL counts. */
static MPI_Request site_nonblocking;

int coll_site_select(enum gc_coll_kind kind, struct gc_comm *c, const char *fn,
                     int blocking, size_t bytes, const struct coll_algo **algo)
{
    const struct coll_table *t = &coll_tables[kind];
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .bytes = bytes,
                          .request = blocking ? NULL : &site_nonblocking};
    int index;
    int status =
        select_level(t, COLL_SITE, &a, gc_settings_algorithm(t->site_var),
                     t->site_var, &index);
    if (status != MPI_SUCCESS)
        return status;
    if (index < MAX_ALGOS)
        stats[kind][index].calls++;
    *algo = &t->algos[index];
    return MPI_SUCCESS;
}

/* GRIDCOLL_<COLL>_SEGSIZE was checked at MPI_Init (gc_settings.c). */
static int select_segsize(const struct coll_table *t, struct coll_args *a)
{
    size_t forced = gc_settings_segsize((enum gc_coll_kind)(t - coll_tables));
    a->segsize = forced != 0 ? forced : t->default_segsize;
    return MPI_SUCCESS;
}

static const struct coll_table *table_named(const char *collective)
{
    for (int k = 0; collective != NULL && k < GC_COLL_KINDS; k++)
        if (strcmp(gc_coll_kind_name((enum gc_coll_kind)k), collective) == 0)
            return &coll_tables[k];
    return NULL;
}

const char *GridColl_Algorithm_name(const char *collective, int index)
{
    const struct coll_table *t = table_named(collective);
    for (int i = 0; t != NULL && i < t->algo_count; i++)
        if (t->algos[i].level == COLL_GRID && index-- == 0)
            return t->algos[i].name;
    return NULL;
}

/* The algorithm each collective's last call ran; NULL: none yet. */
static const struct coll_algo *last_run[GC_COLL_KINDS];

const char *GridColl_Algorithm_used(const char *collective)
{
    const struct coll_table *t = table_named(collective);
    if (t == NULL || last_run[t - coll_tables] == NULL)
        return NULL;
    return last_run[t - coll_tables]->name;
}

int GridColl_Set_algorithm(const char *collective, const char *algorithm)
{
    const struct coll_table *t = table_named(collective);
    if (t == NULL)
        return MPI_ERR_ARG;
    int k = (int)(t - coll_tables);
    if (algorithm == NULL) {
        forced_by_call[k] = NULL;
        return MPI_SUCCESS;
    }
    if (find_algo(t, COLL_GRID, algorithm) < 0)
        return MPI_ERR_ARG;
    snprintf(forced_storage[k], sizeof forced_storage[k], "%s", algorithm);
    forced_by_call[k] = forced_storage[k];
    return MPI_SUCCESS;
}

/* The schedule of algorithm `algo` for the call, not started. */
static int build_schedule(enum gc_coll_kind kind, const struct coll_algo *algo,
                          struct coll_args *a, struct coll_stats *slot,
                          struct coll_sched **built)
{
    struct coll_sched *s =
        coll_sched_new(a->comm, a->fn, slot != NULL ? &slot->wan : NULL);
    *built = NULL;
    if (s == NULL)
        return coll_no_mem(a->comm);
    int status = algo->build(s, a);
    /* The op of a reduction: the program may free it once an MPI_I*
     * call returned. */
    MPI_Op op = kind == GC_COLL_REDUCE_SCATTER ? a->u.reduce_scatter.op
                : kind == GC_COLL_REDUCE || kind == GC_COLL_ALLREDUCE ||
                        kind == GC_COLL_SCAN
                    ? a->u.reduce.op
                    : MPI_OP_NULL;
    if (status == MPI_SUCCESS && op != MPI_OP_NULL &&
        coll_sched_hold_op(s, op) != MPI_SUCCESS)
        status = coll_no_mem(a->comm);
    if (status != MPI_SUCCESS) {
        coll_sched_free(s);
        return status;
    }
    *built = s;
    return MPI_SUCCESS;
}

/* Pick the algorithm and account the call to it. */
static int pick(enum gc_coll_kind kind, struct coll_args *a,
                const struct coll_algo **algo, struct coll_stats **slot)
{
    const struct coll_table *t = &coll_tables[kind];
    int index;
    int status = select_segsize(t, a);
    if (status == MPI_SUCCESS)
        status = select_algo(t, a, &index);
    if (status != MPI_SUCCESS)
        return status;
    /* Past the room of the statistics, the calls go uncounted and their
     * traffic counts as the layer's. */
    *slot = index < MAX_ALGOS ? &stats[kind][index] : NULL;
    if (*slot != NULL)
        (*slot)->calls++;
    last_run[kind] = *algo = &t->algos[index];
    return MPI_SUCCESS;
}

int coll_build(enum gc_coll_kind kind, struct coll_args *a,
               struct coll_sched **s)
{
    const struct coll_algo *algo;
    struct coll_stats *slot;
    *s = NULL;
    int status = pick(kind, a, &algo, &slot);
    return status == MPI_SUCCESS ? build_schedule(kind, algo, a, slot, s)
                                 : status;
}

/*
 * A schedule algorithm: built for this call, then run to its end
 * (blocking), started behind a request (nonblocking) or kept for
 * MPI_Start (persistent).
 */
int coll_run(enum gc_coll_kind kind, struct coll_args *a)
{
    struct coll_sched *s;
    int status = coll_build(kind, a, &s);
    if (status != MPI_SUCCESS)
        return status;
    if (a->request == NULL) {
        status = coll_sched_run(s);
        coll_sched_free(s);
        return status;
    }
    return a->persistent ? coll_request_persistent(s, a->request)
                         : coll_request_start(s, a->request);
}

/*
 * GRIDCOLL_STATS=1: every site's local rank 0 prints, per collective and
 * algorithm used, the calls and what the site's ranks sent across the WAN
 * (bytes and messages, summed over the site), and per site algorithm
 * chosen (level=site) how many times the site's phases chose it.  Called
 * by MPI_Finalize on every rank of the world, before its barrier.
 */
void gc_coll_print_stats(void)
{
    if (!gc_settings_stats())
        return;
    /* Slot GC_COLL_KINDS * MAX_ALGOS is the layer's own traffic. */
    enum { SLOTS = GC_COLL_KINDS * MAX_ALGOS + 1 };
    uint64_t *calls = calloc(2 * SLOTS, sizeof *calls);
    uint64_t *traffic = calloc(4 * SLOTS, sizeof *traffic);
    if (calls == NULL || traffic == NULL)
        goto cleanup;
    uint64_t *site_calls = calls + SLOTS, *site_traffic = traffic + 2 * SLOTS;
    for (int k = 0; k < GC_COLL_KINDS; k++)
        for (int i = 0; i < coll_tables[k].algo_count && i < MAX_ALGOS; i++) {
            int slot = k * MAX_ALGOS + i;
            calls[slot] = stats[k][i].calls;
            traffic[2 * slot] = stats[k][i].wan.bytes;
            traffic[2 * slot + 1] = stats[k][i].wan.messages;
        }
    traffic[2 * (SLOTS - 1)] = gc_wan_internal()->bytes;
    traffic[2 * (SLOTS - 1) + 1] = gc_wan_internal()->messages;
    /* A collective's members all count its calls (the site's maximum is
     * the number of calls); bytes and messages add up over the site. */
    if (PMPI_Reduce(calls, site_calls, SLOTS, MPI_UINT64_T, MPI_MAX, 0,
                    gc_world.site_world) != MPI_SUCCESS ||
        PMPI_Reduce(traffic, site_traffic, 2 * SLOTS, MPI_UINT64_T, MPI_SUM, 0,
                    gc_world.site_world) != MPI_SUCCESS)
        goto cleanup;
    int local_rank;
    PMPI_Comm_rank(gc_world.site_world, &local_rank);
    if (local_rank != 0)
        goto cleanup;
    const char *site = gc_world.sites[gc_world.site_index].name;
    for (int slot = 0; slot < SLOTS; slot++) {
        int last = slot == SLOTS - 1;
        if (!last && site_calls[slot] == 0)
            continue;
        const struct coll_table *t = &coll_tables[slot / MAX_ALGOS];
        if (!last && t->algos[slot % MAX_ALGOS].level == COLL_SITE) {
            fprintf(stderr,
                    "gridcoll-stats: site=%s coll=%s level=site algo=%s "
                    "calls=%llu\n",
                    site, coll_table_name(t), t->algos[slot % MAX_ALGOS].name,
                    (unsigned long long)site_calls[slot]);
            continue;
        }
        fprintf(stderr,
                "gridcoll-stats: site=%s coll=%s algo=%s calls=%llu "
                "wan_bytes=%llu wan_messages=%llu\n",
                site, last ? "internal" : coll_table_name(t),
                last ? "-" : t->algos[slot % MAX_ALGOS].name,
                (unsigned long long)site_calls[slot],
                (unsigned long long)site_traffic[2 * slot],
                (unsigned long long)site_traffic[2 * slot + 1]);
    }
cleanup:
    free(calls);
    free(traffic);
}

/* ---- listing ------------------------------------------------------------- */

/* One level of t: its algorithms, then its default rules. */
static void print_level(FILE *out, const struct coll_table *t,
                        enum coll_level level)
{
    for (int i = 0; i < t->algo_count; i++) {
        const struct coll_algo *algo = &t->algos[i];
        if (algo->level != level)
            continue;
        fprintf(out, "  %-20s %s\n", algo->name, algo->description);
        const char *restrictions = restrictions_of(algo);
        if (restrictions[0] != '\0' || blocking_only(algo))
            fprintf(out, "  %-20s restrictions: %s%s%s\n", "", restrictions,
                    restrictions[0] != '\0' && blocking_only(algo) ? "; " : "",
                    blocking_only(algo) ? "blocking calls only" : "");
    }
    fprintf(out, "  %s:", level == COLL_GRID ? "default" : "site default");
    const char *sep = "";
    for (int r = 0; r < t->rule_count; r++) {
        const struct coll_rule *rule = &t->rules[r];
        if (find_algo(t, level, rule->algo) < 0)
            continue;
        fprintf(out, "%s %s", sep, rule->algo);
        sep = "; else";
        if (rule->min_size > 0)
            fprintf(out, " from %d %s", rule->min_size,
                    level == COLL_GRID ? "sites" : "members");
        if (rule->min_bytes > 0)
            fprintf(out, " from %zu bytes", rule->min_bytes);
        if (rule->max_bytes > 0)
            fprintf(out, " up to %zu bytes", rule->max_bytes);
        if (rule->when != NULL)
            fprintf(out, " when %s", rule->when->text);
    }
    fprintf(out, "\n");
}

void coll_print_algorithms(FILE *out)
{
    for (int k = 0; k < GC_COLL_KINDS; k++) {
        const struct coll_table *t = &coll_tables[k];
        char var[64];
        env_name(t, "", var, sizeof var);
        fprintf(out, "%s (%s=NAME", coll_table_name(t), var);
        if (t->default_segsize > 0) {
            env_name(t, "_SEGSIZE", var, sizeof var);
            fprintf(out, ", %s=BYTES, default %zu", var, t->default_segsize);
        }
        fprintf(out, ")\n");
        print_level(out, t, COLL_GRID);
        if (t->site_var != NULL) {
            fprintf(out, "  site level (%s=NAME): %s\n", t->site_var,
                    t->site_doc);
            print_level(out, t, COLL_SITE);
        }
        fprintf(out, "\n");
    }
    coll_node_print(out);
}

/* A CSV field (RFC 4180): quoted when it holds a comma, quote or newline. */
static void print_csv_field(FILE *out, const char *text)
{
    if (strpbrk(text, ",\"\n") == NULL) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

void coll_print_algorithms_csv(FILE *out)
{
    fprintf(out, "coll,level,algo,description,restrictions,blocking\n");
    for (int k = 0; k < GC_COLL_KINDS; k++)
        for (int i = 0; i < coll_tables[k].algo_count; i++) {
            const struct coll_algo *algo = &coll_tables[k].algos[i];
            fprintf(out, "%s,%s,%s,", gc_coll_kind_name((enum gc_coll_kind)k),
                    algo->level == COLL_GRID ? "grid" : "site", algo->name);
            print_csv_field(out, algo->description);
            fputc(',', out);
            print_csv_field(out, restrictions_of(algo));
            fprintf(out, ",%d\n", blocking_only(algo));
        }
}

/* The names of one level of t, comma-separated, from out's n bytes on. */
static void level_names(const struct coll_table *t, enum coll_level level,
                        char *out, size_t size, int n)
{
    const char *sep = "";
    for (int i = 0; i < t->algo_count && n < (int)size; i++) {
        if (t->algos[i].level != level)
            continue;
        n += snprintf(out + n, size - (size_t)n, "%s%s", sep, t->algos[i].name);
        sep = ", ";
    }
}

int coll_setting_note(const char *variable, int kind, int algorithm, char *out,
                      size_t size)
{
    if (kind >= 0) {
        const struct coll_table *t = &coll_tables[kind];
        if (algorithm)
            level_names(t, COLL_GRID, out, size, 0);
        else if (t->default_segsize > 0)
            snprintf(out, size, "default %zu", t->default_segsize);
        else
            return 0;
        return 1;
    }
    /* A site level's variable: the first table that has it. */
    for (int k = 0; k < GC_COLL_KINDS; k++)
        if (coll_tables[k].site_var != NULL &&
            strcmp(coll_tables[k].site_var, variable) == 0) {
            level_names(&coll_tables[k], COLL_SITE, out, size, 0);
            return 1;
        }
    return 0;
}
