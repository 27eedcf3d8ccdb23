/*
 * Shared parts of the all-to-all algorithms (coll/alltoall.h): the call
 * as packed block sizes, buffers sized at run time, and the local phase's
 * table of intra-site schedules with its selection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall.h"
#include "engine/coll_sched.h"
#include "gc_settings.h"

/* ---- the call ------------------------------------------------------------ */

/* The call's sides and the packed sizes into slen[] and rlen[]. */
static int call_fill(const struct coll_args *a, struct alltoall_call *k)
{
    struct gc_comm *c = a->comm;
    const struct coll_alltoall_args *u = &a->u.alltoall;
    int in_place = u->sbuf == MPI_IN_PLACE;
    k->c = c;
    k->src = in_place ? u->rbuf : u->sbuf;
    k->out = in_place ? u->rcv : u->snd;
    k->rbuf = u->rbuf;
    k->rcv = u->rcv;
    k->block = a->bytes;
    k->my_site = c->site[c->rank];
    int status = MPI_SUCCESS;
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++) {
        k->slen[r] = k->rlen[r] = 0;
        /* Count 0 first: the datatype of an empty block may be anything. */
        if (k->out->counts[r] > 0)
            status = coll_packed_size(c, k->out->counts[r], k->out->types[r],
                                      &k->slen[r]);
        if (status == MPI_SUCCESS && k->rcv->counts[r] > 0)
            status = coll_packed_size(c, k->rcv->counts[r], k->rcv->types[r],
                                      &k->rlen[r]);
    }
    return status;
}

int alltoall_call_sched(struct coll_sched *s, const struct coll_args *a,
                        struct alltoall_call *k)
{
    struct gc_comm *c = a->comm;
    *k = (struct alltoall_call){0};
    k->slen = coll_sched_alloc(s, 2 * (size_t)c->size * sizeof *k->slen);
    k->map.member = coll_sched_alloc(s, (size_t)c->size * sizeof(int));
    if (k->slen == NULL || k->map.member == NULL)
        return coll_no_mem(c);
    k->rlen = k->slen + c->size;
    /* The site map of site_map_build, in schedule memory. */
    int at = 0;
    for (int t = 0; t < GC_MAX_SITES; t++) {
        k->map.first[t] = at;
        for (int r = 0; r < c->size; r++)
            if (c->site[r] == t)
                k->map.member[at++] = r;
        k->map.count[t] = at - k->map.first[t];
    }
    return call_fill(a, k);
}

/* One side of the call, copied into the schedule. */
static const struct coll_side *side_copy(struct coll_sched *s,
                                         const struct coll_side *from)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t n = (size_t)c->size;
    struct coll_side *to = coll_sched_alloc(s, sizeof *to);
    int *counts = coll_sched_alloc(s, n * sizeof *counts);
    MPI_Aint *displs = coll_sched_alloc(s, n * sizeof *displs);
    MPI_Datatype *types = coll_sched_alloc(s, n * sizeof *types);
    if (to == NULL || counts == NULL || displs == NULL || types == NULL)
        return NULL;
    for (size_t r = 0; r < n; r++) {
        counts[r] = from->counts[r];
        displs[r] = from->displs[r];
        /* Count 0: the datatype of an empty block may be anything. */
        types[r] =
            counts[r] > 0 ? coll_sched_type(s, from->types[r]) : MPI_BYTE;
    }
    *to = (struct coll_side){counts, displs, types};
    return to;
}

int alltoall_keep_sides(struct coll_sched *s, const struct coll_args *a,
                        struct coll_args *kept)
{
    const struct coll_alltoall_args *u = &a->u.alltoall;
    *kept = *a;
    kept->u.alltoall.rcv = side_copy(s, u->rcv);
    kept->u.alltoall.snd =
        u->sbuf == MPI_IN_PLACE ? NULL : side_copy(s, u->snd);
    if (kept->u.alltoall.rcv == NULL ||
        (u->sbuf != MPI_IN_PLACE && kept->u.alltoall.snd == NULL))
        return coll_no_mem(a->comm);
    return MPI_SUCCESS;
}

int alltoall_pack(const struct alltoall_call *k, int r, unsigned char *at)
{
    return coll_pack(k->c, k->src + k->out->displs[r], k->out->counts[r],
                     k->out->types[r], at, k->slen[r]);
}

int alltoall_unpack(const struct alltoall_call *k, int r,
                    const unsigned char *at)
{
    return coll_unpack(k->c, at, k->rlen[r], k->rbuf + k->rcv->displs[r],
                       k->rcv->counts[r], k->rcv->types[r]);
}

int alltoall_room(struct coll_sched *s, unsigned char **buf, size_t *cap,
                  size_t bytes)
{
    if (*buf != NULL && bytes <= *cap)
        return 0;
    *buf = coll_sched_alloc(s, bytes);
    *cap = bytes;
    return *buf != NULL ? 0 : -1;
}

int alltoall_type_bytes(MPI_Count count, MPI_Datatype type, MPI_Count *bytes)
{
    MPI_Count size;
    *bytes = 0;
    if (count == 0)
        return MPI_SUCCESS;
    int status = PMPI_Type_size_c(type, &size);
    if (status != MPI_SUCCESS)
        return status;
    if (size > 0 && count > (MPI_Count)(INT64_MAX / size))
        return MPI_ERR_COUNT;
    *bytes = count * size;
    return MPI_SUCCESS;
}

/* ---- the local phase: schedules and their selection ---------------------- */

/* MPICH's own Alltoallw on `local`: a collective, so no private context. */
static int site_mpich(MPI_Comm comm, const struct alltoall_exchange *x,
                      const struct alltoall_pattern *pattern)
{
    (void)pattern;
    return PMPI_Alltoallw_c(x->sbuf, x->scounts, x->sdispls, x->stypes, x->rbuf,
                            x->rcounts, x->rdispls, x->rtypes, comm);
}

struct local_algo {
    const char *name;
    const char *description;
    alltoall_site_fn *run;
    const struct alltoall_pattern *pattern;
};

static const struct local_algo local_algos[] = {
    {"lin",
     "linear shift: in phase p rank i sends to (i+p) mod n and receives "
     "from (i-p) mod n, one pair at a time",
     alltoall_site_pairwise, &alltoall_site_lin},
    {"xor",
     "pairwise exchange: in phase p rank i exchanges with i XOR p (phases "
     "up to the next power of two, partners >= n sit out)",
     alltoall_site_pairwise, &alltoall_site_xor},
    {"opt",
     "Prisacari fat-tree optimal: permuted variable-base exchange on the "
     "site's fattree= (GRIDCOLL_FATTREE), B_min(l) messages leave every "
     "level-l subtree in every phase; without a tree, lin",
     alltoall_site_pairwise, &alltoall_site_opt},
    {"bruck",
     "Bruck et al.: ceil(log2 n) steps, in step k every block whose index "
     "has bit k set moves 2^k ranks on (small messages)",
     alltoall_site_bruck, NULL},
    {"mpich", "one PMPI_Alltoallw on the site's communicator (MPICH's choice)",
     site_mpich, NULL},
};
enum { LOCAL_ALGO_COUNT = sizeof local_algos / sizeof *local_algos };

/* The first rule whose bounds hold wins (0 as a maximum: no bound). */
struct local_rule {
    int min_ranks;
    size_t min_bytes;
    size_t max_bytes;
    const char *algo;
};

/*
 * Bruck sends about (n/2) log2(n) blocks per rank instead of n-1, in
 * log2(n) steps instead of n-1: it wins while start-ups dominate, small
 * blocks on many ranks; these are MPICH's own bounds for choosing it
 * (MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256 bytes, 8 ranks), which MPICH's
 * Alltoallw never applies itself.  Otherwise MPICH's Alltoallw, which
 * posts the pairs in blocks (MPIR_CVAR_ALLTOALL_THROTTLE) rather than one
 * phase at a time: on one node or one switch no pairing order beats that,
 * and it was the fastest measured here (docs/algorithms.md, "Alltoall").  lin
 * and xor, one pair at a time, are for networks where the order of the pairs
 * matters (fat trees).
 */
static const struct local_rule local_rules[] = {
    {8, 1, 256, "bruck"},
    {0, 0, 0, "mpich"},
};
enum { LOCAL_RULE_COUNT = sizeof local_rules / sizeof *local_rules };

#define LOCAL_ENV "GRIDCOLL_ALLTOALL_LOCAL"

static const struct local_algo *local_named(const char *name)
{
    for (int i = 0; i < LOCAL_ALGO_COUNT; i++)
        if (strcmp(local_algos[i].name, name) == 0)
            return &local_algos[i];
    return NULL;
}

static int local_select(struct gc_comm *c, const char *fn, size_t pair_bytes,
                        const struct local_algo **algo)
{
    const char *env = gc_settings_algorithm(LOCAL_ENV);
    if (env != NULL && env[0] != '\0') {
        *algo = local_named(env);
        if (*algo != NULL)
            return MPI_SUCCESS;
        char text[256], names[128] = "";
        for (int i = 0; i < LOCAL_ALGO_COUNT; i++) {
            if (i > 0)
                strncat(names, ", ", sizeof names - strlen(names) - 1);
            strncat(names, local_algos[i].name,
                    sizeof names - strlen(names) - 1);
        }
        snprintf(text, sizeof text,
                 "%s: %s=%s is not a local all-to-all schedule (valid: %s)", fn,
                 LOCAL_ENV, env, names);
        return gc_error(c->handle, MPI_ERR_ARG, text);
    }
    for (int r = 0; r < LOCAL_RULE_COUNT; r++) {
        const struct local_rule *rule = &local_rules[r];
        if (c->local_size >= rule->min_ranks && pair_bytes >= rule->min_bytes &&
            (rule->max_bytes == 0 || pair_bytes <= rule->max_bytes)) {
            *algo = local_named(rule->algo);
            return MPI_SUCCESS;
        }
    }
    return gc_error(c->handle, MPI_ERR_INTERN,
                    "all-to-all inside a site: no schedule applies "
                    "(GridColl bug)");
}

/*
 * The point-to-point schedules write blocks of rbuf while others are still
 * to be sent: in place, the outgoing blocks are packed away first.  Like
 * the schedules, returns error codes without calling handlers.
 */
static int run_in_place(const struct gc_comm *c, MPI_Comm comm,
                        const struct local_algo *algo,
                        const struct alltoall_exchange *x)
{
    size_t n = (size_t)c->local_size;
    MPI_Count *counts = malloc(n * sizeof *counts);
    MPI_Aint *displs = malloc(n * sizeof *displs);
    MPI_Datatype *types = malloc(n * sizeof *types);
    unsigned char *packed = NULL;
    int status = MPI_SUCCESS;
    if (counts == NULL || displs == NULL || types == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    MPI_Aint total = 0;
    for (size_t r = 0; r < n && status == MPI_SUCCESS; r++) {
        status = alltoall_type_bytes(x->rcounts[r], x->rtypes[r], &counts[r]);
        displs[r] = total;
        types[r] = MPI_BYTE;
        total += (MPI_Aint)counts[r];
    }
    if (status != MPI_SUCCESS)
        goto cleanup;
    packed = coll_alloc((size_t)total);
    if (packed == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    for (size_t r = 0; r < n && status == MPI_SUCCESS; r++) {
        MPI_Count position = 0;
        if (counts[r] > 0)
            status = PMPI_Pack_c(
                (const char *)x->rbuf + x->rdispls[r], x->rcounts[r],
                x->rtypes[r], packed + displs[r], counts[r], &position, comm);
    }
    struct alltoall_exchange copy = *x;
    copy.sbuf = packed;
    copy.scounts = counts;
    copy.sdispls = displs;
    copy.stypes = types;
    if (status == MPI_SUCCESS)
        status = algo->run(comm, &copy, algo->pattern);
cleanup:
    free(counts);
    free(displs);
    free(types);
    free(packed);
    return status;
}

int alltoall_local(struct gc_comm *c, const char *fn, size_t pair_bytes,
                   const struct alltoall_exchange *x)
{
    const struct local_algo *algo;
    MPI_Comm comm = c->local;
    int status = local_select(c, fn, pair_bytes, &algo);
    if (status != MPI_SUCCESS)
        return status;
    if (algo->run == site_mpich)
        return algo->run(comm, x, algo->pattern);
    status = coll_local_p2p(c, &comm);
    if (status != MPI_SUCCESS)
        return status;
    status = x->sbuf == MPI_IN_PLACE ? run_in_place(c, comm, algo, x)
                                     : algo->run(comm, x, algo->pattern);
    if (status == MPI_SUCCESS)
        return status;
    if (status == MPI_ERR_NO_MEM)
        return coll_no_mem(c);
    char text[160];
    snprintf(text, sizeof text, "%s: exchange inside a site (%s) failed", fn,
             algo->name);
    return gc_error(c->handle, status, text);
}

void alltoall_local_print(FILE *out)
{
    fprintf(out,
            "alltoall local phase (%s=NAME; the phase inside each site of "
            "alltoall, alltoallv and alltoallw)\n",
            LOCAL_ENV);
    for (int i = 0; i < LOCAL_ALGO_COUNT; i++)
        fprintf(out, "  %-20s %s\n", local_algos[i].name,
                local_algos[i].description);
    fprintf(out, "  default:");
    for (int r = 0; r < LOCAL_RULE_COUNT; r++) {
        const struct local_rule *rule = &local_rules[r];
        fprintf(out, "%s %s", r > 0 ? "; else" : "", rule->algo);
        if (rule->min_ranks > 0)
            fprintf(out, " from %d ranks", rule->min_ranks);
        if (rule->min_bytes > 0)
            fprintf(out, " from %zu bytes", rule->min_bytes);
        if (rule->max_bytes > 0)
            fprintf(out, " up to %zu bytes", rule->max_bytes);
        if (rule->min_bytes > 0 || rule->max_bytes > 0)
            fprintf(out, " a pair");
    }
    fprintf(out, "\n\n");
}
