/*
 * libgridcoll's environment settings (gc_settings.h).  The table below is
 * the only place a GRIDCOLL_* variable is declared: parsing at MPI_Init,
 * the checks that gridrun set what it must, `gridcoll-info --settings`
 * and the "Settings" section of docs/gridcoll.md (its --markdown output)
 * all walk it, so they cannot disagree.
 *
 * Everything is parsed and checked at MPI_Init, so a malformed value
 * stops the job before it computes anything, with a message naming the
 * variable, the value and what it should be, instead of failing (or
 * being ignored) at the first collective that reads it.  Algorithm names are
 * the exception: they are checked against the algorithm tables by the
 * collective that uses them, which knows which algorithms can run the
 * call.
 */
#include "core/gc_settings.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/gc_world.h"
#include "gc_proto.h"
#include "gc_util.h"

enum setting_type {
    SET_STRING, /* any text */
    SET_INT,    /* decimal integer in min..max */
    SET_BOOL,   /* 0 or 1 */
    SET_SIZE,   /* bytes, K, M or G suffix (gc_settings_parse_size), min..max */
    SET_SITES,  /* NAME:OFFSET:COUNT,... */
    SET_FATTREE,   /* M1,...,ML (gc_sched_fattree_parse) */
    SET_NODE_SIZE, /* K[,cyclic] */
    SET_TYPES
};

enum setting_flag {
    SF_GRIDRUN = 1u << 0,  /* set by gridrun for every rank */
    SF_GRID = 1u << 1,     /* required once GRIDCOLL_SITES is set */
    SF_MULTI = 1u << 2,    /* required when GRIDCOLL_SITES has two sites */
    SF_PER_COLL = 1u << 3, /* one variable per collective table: `name` is
                              a pattern with <COLL>, `store` an array */
    SF_ALGO = 1u << 4,     /* an algorithm name (gc_settings_algorithm) */
    SF_USER = 1u << 5,     /* with SF_GRIDRUN: the user's value reaches the
                              ranks when gridrun has none of its own */
};

struct sites_value {
    int count;
    struct gc_site sites[GC_MAX_SITES];
};

struct fattree_value {
    int has;
    struct gc_sched_fattree tree;
};

struct node_size_value {
    int k;
    int cyclic;
};

/* The parsed values; what the accessors return.  The initial values are
 * the defaults, as the table's rows say. */
static struct {
    struct sites_value sites;
    int64_t site_index, site_offset, site_size, world_size, job_id, appnum;
    char *relay, *token_file, *model;
    struct fattree_value fattree;
    char *algorithm[GC_COLL_KINDS];
    size_t segsize[GC_COLL_KINDS];
    char *bcast_local, *allreduce_local, *allgather_local, *alltoall_local;
    int64_t allgather_k;
    size_t shm_bytes;
    struct node_size_value node_size;
    int64_t stats, async_progress;
    size_t rndv_threshold, eager_window;
    int64_t rndv_push_ms;
} values = {
    .appnum = -1,
    .allgather_k = GC_SETTINGS_ALLGATHER_K_DEFAULT,
    .shm_bytes = GC_SETTINGS_SHM_BYTES_DEFAULT,
    .rndv_threshold = GC_SETTINGS_RNDV_THRESHOLD_DEFAULT,
    .eager_window = GC_SETTINGS_EAGER_WINDOW_DEFAULT,
    .rndv_push_ms = GC_SETTINGS_RNDV_PUSH_MS_DEFAULT,
};

struct setting {
    const char *name; /* GRIDCOLL_X, or a pattern with <COLL> */
    enum setting_type type;
    unsigned flags;
    void *store;        /* in `values`; an array for SF_PER_COLL */
    int64_t def;        /* SET_INT, SET_BOOL, SET_SIZE */
    int64_t min, max;   /* SET_INT, SET_SIZE */
    const char *shape;  /* the value's form in the listing; NULL: the type's */
    const char *expect; /* "is not <expect>"; NULL: from type and bounds */
    const char *def_text; /* default as documented; NULL: from `def` */
    const char *doc;
};

#define KIB(n) ((int64_t)(n) << 10)
#define TIB(n) ((int64_t)(n) << 40)

static const struct setting settings[] = {
    /* set by gridrun (docs/gridrun.md, ENVIRONMENT CONTRACT) */
    {.name = "GRIDCOLL_SITES",
     .type = SET_SITES,
     .flags = SF_GRIDRUN,
     .store = &values.sites,
     .def_text = "unset",
     .doc = "Every site of the job in grid order: its name, the grid rank of "
            "its first rank and its number of ranks.  Set, the program joins "
            "the grid (with one site MPICH alone is the grid); unset, it is a "
            "plain MPICH job and every call passes straight through."},
    {.name = "GRIDCOLL_SITE_INDEX",
     .type = SET_INT,
     .flags = SF_GRIDRUN | SF_GRID,
     .store = &values.site_index,
     .min = 0,
     .max = GC_MAX_RANK,
     .doc = "This rank's site, an index into GRIDCOLL_SITES."},
    {.name = "GRIDCOLL_SITE_OFFSET",
     .type = SET_INT,
     .flags = SF_GRIDRUN | SF_GRID,
     .store = &values.site_offset,
     .min = 0,
     .max = GC_MAX_RANK,
     .doc = "Grid rank of this site's first rank (its entry in "
            "GRIDCOLL_SITES); a rank's grid rank is this plus its MPICH "
            "rank."},
    {.name = "GRIDCOLL_SITE_SIZE",
     .type = SET_INT,
     .flags = SF_GRIDRUN | SF_GRID,
     .store = &values.site_size,
     .min = 0,
     .max = GC_MAX_RANK,
     .doc = "Number of ranks of this site (its entry in GRIDCOLL_SITES); the "
            "site's MPICH job must have exactly as many."},
    {.name = "GRIDCOLL_WORLD_SIZE",
     .type = SET_INT,
     .flags = SF_GRIDRUN | SF_GRID,
     .store = &values.world_size,
     .min = 0,
     .max = GC_MAX_RANK,
     .doc = "Number of ranks of the whole grid job."},
    {.name = "GRIDCOLL_APPNUM",
     .type = SET_INT,
     .flags = SF_GRIDRUN,
     .store = &values.appnum,
     .def = -1,
     .min = 0,
     .max = INT_MAX,
     .def_text = "unset",
     .doc = "This rank's application number, MPI_APPNUM of the grid world: "
            "the index of its program among the job's (gridrun's ':' "
            "segments or the machine file's program=), counted over every "
            "site.  Unset, MPICH's own answers."},
    {.name = "GRIDCOLL_JOB_ID",
     .type = SET_INT,
     .flags = SF_GRIDRUN | SF_MULTI,
     .store = &values.job_id,
     .min = 0,
     .max = UINT32_MAX,
     .doc = "Job identifier the rank presents to its relay, the relays' "
            "job_id."},
    {.name = "GRIDCOLL_RELAY",
     .type = SET_STRING,
     .flags = SF_GRIDRUN | SF_MULTI,
     .store = &values.relay,
     .shape = "endpoint",
     .def_text = "unset",
     .doc = "The site relay's endpoint for ranks: unix:/path, /path or "
            "host:port."},
    {.name = "GRIDCOLL_TOKEN_FILE",
     .type = SET_STRING,
     .flags = SF_GRIDRUN | SF_MULTI,
     .store = &values.token_file,
     .shape = "path",
     .def_text = "unset",
     .doc = "File holding the job token the rank proves to its relay that "
            "it knows."},
    {.name = "GRIDCOLL_FATTREE",
     .type = SET_FATTREE,
     .flags = SF_GRIDRUN | SF_USER,
     .store = &values.fattree,
     .def_text = "none",
     .doc = "This site's network as the fat tree FT(L; M1..ML), leaves = the "
            "site's ranks in order, for the intra-site schedules (alltoall's "
            "local phase opt).  gridrun sets it from the machine file's "
            "fattree= or --fattree; a value in gridrun's own environment "
            "reaches the sites they leave without one."},
    {.name = "GRIDCOLL_MODEL",
     .type = SET_STRING,
     .flags = SF_GRIDRUN | SF_USER,
     .store = &values.model,
     .shape = "path",
     .def_text = "none",
     .doc = "Performance model measured by gridcoll-probe (docs/model.md): "
            "every collective whose table has cost functions then picks the "
            "algorithm and segment size of least predicted cost instead of "
            "the default rules, GRIDCOLL_<COLL> and GRIDCOLL_<COLL>_SEGSIZE "
            "still overriding.  A file that does not load, or lacks one of "
            "the job's sites, stops MPI_Init.  gridrun --model FILE sets it, "
            "and so does gridrun with the layout's default model; else the "
            "value in gridrun's environment reaches the ranks."},

    /* chosen by the user, for every rank of the job */
    {.name = "GRIDCOLL_<COLL>",
     .type = SET_STRING,
     .flags = SF_PER_COLL | SF_ALGO,
     .store = values.algorithm,
     .shape = "algorithm",
     .def_text = "the table's rules",
     .doc = "Run collective <coll> with this algorithm of its table "
            "(GRIDCOLL_ALLTOALL=lg, GRIDCOLL_BCAST=hier).  A name that is "
            "not in the table, or whose restrictions exclude the call, is an "
            "MPI error of the call that lists the valid names.  "
            "GridColl_Set_algorithm takes precedence."},
    {.name = "GRIDCOLL_<COLL>_SEGSIZE",
     .type = SET_SIZE,
     .flags = SF_PER_COLL,
     .store = values.segsize,
     .min = 1,
     .max = INT64_MAX,
     .expect = "a segment size (a positive number of bytes, optionally with "
               "K, M or G)",
     .def_text = "the table's",
     .doc = "Pipeline segment size of collective <coll>'s algorithms that "
            "cut messages into segments; the collectives without such "
            "algorithms ignore it."},
    {.name = "GRIDCOLL_BCAST_LOCAL",
     .type = SET_STRING,
     .flags = SF_ALGO,
     .store = &values.bcast_local,
     .shape = "shm or mpich",
     .def_text = "by size",
     .doc = "Site algorithm of bcast (the site level of its table: the "
            "local bcasts of hier): shm (through each node's shared memory) "
            "or mpich.  By default shm from 256 KiB when the site has "
            "several members, all on one node.  A name not in the site "
            "level is an MPI error of the call that lists the valid names."},
    {.name = "GRIDCOLL_ALLREDUCE_LOCAL",
     .type = SET_STRING,
     .flags = SF_ALGO,
     .store = &values.allreduce_local,
     .shape = "shm or mpich",
     .def_text = "by layout",
     .doc = "Site algorithm of allreduce (the site level of its table: "
            "the local phases of hier and multileader): shm (reduction in "
            "each node's shared memory) or mpich.  By default shm when the "
            "site has several members, all on one node.  A name not in the "
            "site level is an MPI error of the call that lists the valid "
            "names."},
    {.name = "GRIDCOLL_ALLGATHER_LOCAL",
     .type = SET_STRING,
     .flags = SF_ALGO,
     .store = &values.allgather_local,
     .shape = "strategy",
     .def_text = "by size",
     .doc = "Site algorithm of allgather and allgatherv (the site level of "
            "their table: the intra-site strategy of hier and of allreduce "
            "multileader's local allgather: ring, kshift, mesh, shm, ...); "
            "a name not in the site level is an MPI error of the call that "
            "lists the valid names."},
    {.name = "GRIDCOLL_ALLGATHER_K",
     .type = SET_INT,
     .store = &values.allgather_k,
     .def = GC_SETTINGS_ALLGATHER_K_DEFAULT,
     .min = 1,
     .max = INT_MAX,
     .doc = "The k of the kshift and kprefix intra-site allgather "
            "strategies (and of the default choice between them)."},
    {.name = "GRIDCOLL_ALLTOALL_LOCAL",
     .type = SET_STRING,
     .flags = SF_ALGO,
     .store = &values.alltoall_local,
     .shape = "schedule",
     .def_text = "by size",
     .doc = "Site algorithm of alltoall(v,w) (the site level of their "
            "table: the exchange inside each site of lg and hier: lin, xor, "
            "opt, bruck, mpich); a name not in the site level is an MPI "
            "error of the call that lists the valid names."},
    {.name = "GRIDCOLL_SHM_BYTES",
     .type = SET_SIZE,
     .store = &values.shm_bytes,
     .def = (int64_t)GC_SETTINGS_SHM_BYTES_DEFAULT,
     .min = KIB(4),
     .max = TIB(1),
     .expect = "a size from 4096 bytes to 1 TiB (optionally with K, M or G)",
     .doc = "Shared memory per node for the shm local phases; larger "
            "messages go through it in chunks."},
    {.name = "GRIDCOLL_NODE_SIZE",
     .type = SET_NODE_SIZE,
     .store = &values.node_size,
     .def_text = "real nodes",
     .doc = "Testing: cut each node into virtual nodes of up to K members, "
            "consecutive or interleaved (cyclic), for the shm local phases."},
    {.name = "GRIDCOLL_STATS",
     .type = SET_BOOL,
     .store = &values.stats,
     .def = 0,
     .doc = "1: at MPI_Finalize, local rank 0 of each site prints to stderr, "
            "per collective and algorithm used, the calls and the bytes and "
            "messages the site sent across the WAN, and per site algorithm "
            "how often the site's phases chose it (gridcoll-stats: lines)."},
    {.name = "GRIDCOLL_ASYNC_PROGRESS",
     .type = SET_BOOL,
     .store = &values.async_progress,
     .def = 0,
     .doc = "1: a progress thread drives the relay session and the "
            "collective schedules while the program computes outside MPI "
            "(MPICH then runs at MPI_THREAD_MULTIPLE; on one site, MPICH's "
            "own progress thread)."},
    {.name = "GRIDCOLL_RNDV_THRESHOLD",
     .type = SET_SIZE,
     .store = &values.rndv_threshold,
     .def = (int64_t)GC_SETTINGS_RNDV_THRESHOLD_DEFAULT,
     .min = 0,
     .max = TIB(1),
     .expect = "a size up to 1 TiB (optionally with K, M or G)",
     .doc = "A point-to-point message to another site larger than this "
            "goes eager only into receives its receiver has posted for the "
            "sender; otherwise it announces itself and sends its data once "
            "the receiver has matched it (rendezvous, docs/protocol.md), so "
            "a rank that does not receive holds no such data.  Smaller ones "
            "go eager within GRIDCOLL_EAGER_WINDOW.  1024G: eager only.  "
            "Collectives' internal transfers are always eager."},
    {.name = "GRIDCOLL_EAGER_WINDOW",
     .type = SET_SIZE,
     .store = &values.eager_window,
     .def = (int64_t)GC_SETTINGS_EAGER_WINDOW_DEFAULT,
     .min = 0,
     .max = TIB(1),
     .expect = "a size up to 1 TiB (optionally with K, M or G)",
     .doc = "Eager bytes (each message rounded up to 64, plus 64 for its "
            "envelope) of messages up to GRIDCOLL_RNDV_THRESHOLD a process "
            "may have sent to one process on another site beyond what the "
            "receiver's matching took and the receives it posted: what a "
            "rank that does not receive holds at most per sender.  A "
            "message that does not fit goes by rendezvous, so a flood of "
            "small messages is bounded too.  It must cover the "
            "bandwidth-delay product for a stream of small messages to "
            "keep its speed, as the relays' flow.rank_credit (32M) does.  "
            "In use: at least two messages of GRIDCOLL_RNDV_THRESHOLD."},
    {.name = "GRIDCOLL_RNDV_PUSH_MS",
     .type = SET_INT,
     .store = &values.rndv_push_ms,
     .def = GC_SETTINGS_RNDV_PUSH_MS_DEFAULT,
     .min = 0,
     .max = INT_MAX,
     .doc = "Milliseconds a rendezvous send waits for any answer from its "
            "receiver (one comes as soon as the receiver's library reads the "
            "announcement) before it sends its data unasked, as an eager "
            "send would: a receiver blocked in a call that does not drive "
            "the relay session (a plain MPICH call) cannot answer.  0: "
            "never (strict bound; use with GRIDCOLL_ASYNC_PROGRESS=1)."},
};
enum { SETTING_COUNT = sizeof settings / sizeof *settings };

/* ---- parsers ------------------------------------------------------------- */

/*
 * Parse `text` (non-empty) into `store`.  0, or -1 with, when there is
 * more to say than "is not <expect>", the reason in `why`.
 */
typedef int parse_fn(const struct setting *s, const char *text, void *store,
                     char *why, size_t why_len);

static int parse_string(const struct setting *s, const char *text, void *store,
                        char *why, size_t why_len)
{
    (void)s;
    char *copy = strdup(text);
    if (copy == NULL) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    *(char **)store = copy;
    return 0;
}

static int parse_int(const struct setting *s, const char *text, void *store,
                     char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || n < s->min || n > s->max)
        return -1;
    *(int64_t *)store = n;
    return 0;
}

static int parse_bool(const struct setting *s, const char *text, void *store,
                      char *why, size_t why_len)
{
    (void)s;
    (void)why;
    (void)why_len;
    if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0)
        return -1;
    *(int64_t *)store = text[0] == '1';
    return 0;
}

int gc_settings_parse_size(const char *text, size_t *value)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || text[0] == '-')
        return -1;
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case '\0': break;
    default: return -1;
    }
    if (shift > 0 && *++end != '\0')
        return -1;
    if (v == 0 || v > (SIZE_MAX >> shift))
        return -1;
    *value = (size_t)v << shift;
    return 0;
}

static int parse_size(const struct setting *s, const char *text, void *store,
                      char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    size_t n;
    if (gc_settings_parse_size(text, &n) != 0 || n < (uint64_t)s->min ||
        n > (uint64_t)s->max)
        return -1;
    *(size_t *)store = n;
    return 0;
}

/* "name:offset:count,name:offset:count,..." */
static int parse_sites(const struct setting *s, const char *text, void *store,
                       char *why, size_t why_len)
{
    (void)s;
    int status = -1;
    struct sites_value *v = store;
    char *copy = strdup(text);
    char *save = NULL;
    if (copy == NULL) {
        snprintf(why, why_len, "out of memory");
        goto cleanup;
    }
    v->count = 0;
    for (char *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        char name[GC_NAME_MAX + 1];
        int offset, size, consumed = 0;
        if (v->count == GC_MAX_SITES) {
            snprintf(why, why_len, "more than %d sites", GC_MAX_SITES);
            goto cleanup;
        }
        if (sscanf(item, "%63[^:]:%d:%d%n", name, &offset, &size, &consumed) !=
                3 ||
            item[consumed] != '\0' || offset < 0 || size <= 0) {
            snprintf(why, why_len, "entry '%s' is invalid", item);
            goto cleanup;
        }
        struct gc_site *site = &v->sites[v->count++];
        snprintf(site->name, sizeof site->name, "%s", name);
        site->offset = offset;
        site->size = size;
    }
    status = v->count > 0 ? 0 : -1;
cleanup:
    if (status != 0)
        v->count = 0; /* no half list: not a grid job */
    free(copy);
    return status;
}

static int parse_fattree(const struct setting *s, const char *text, void *store,
                         char *why, size_t why_len)
{
    (void)s;
    struct fattree_value *v = store;
    if (gc_sched_fattree_parse(text, &v->tree, why, why_len) != 0)
        return -1;
    v->has = 1;
    return 0;
}

/* "K" or "K,cyclic", K in 1..INT_MAX. */
static int parse_node_size(const struct setting *s, const char *text,
                           void *store, char *why, size_t why_len)
{
    (void)s;
    (void)why;
    (void)why_len;
    struct node_size_value *v = store;
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (errno != 0 || end == text || n < 1 || n > INT_MAX)
        return -1;
    if (strcmp(end, ",cyclic") == 0)
        v->cyclic = 1;
    else if (*end != '\0')
        return -1;
    else
        v->cyclic = 0;
    v->k = (int)n;
    return 0;
}

static const struct setting_type_info {
    const char *shape; /* the value's form, in listings */
    const char *expect;
    size_t size; /* of one stored value */
    parse_fn *parse;
} types[SET_TYPES] = {
    [SET_STRING] = {"string", "a string", sizeof(char *), parse_string},
    [SET_INT] = {"int", NULL, sizeof(int64_t), parse_int},
    [SET_BOOL] = {"bool 0 or 1", "0 or 1", sizeof(int64_t), parse_bool},
    [SET_SIZE] = {"size", NULL, sizeof(size_t), parse_size},
    [SET_SITES] = {"NAME:OFFSET:COUNT,...",
                   "a list of sites NAME:OFFSET:COUNT,...",
                   sizeof(struct sites_value), parse_sites},
    [SET_FATTREE] = {"M1,...,ML", "a fat tree M1,...,ML",
                     sizeof(struct fattree_value), parse_fattree},
    [SET_NODE_SIZE] = {"K[,cyclic]",
                       "a positive integer, optionally followed by "
                       "\",cyclic\"",
                       sizeof(struct node_size_value), parse_node_size},
};

/* ---- names of the per-collective variables ------------------------------- */

/* `pattern` with <COLL> replaced by collective k's name in capitals. */
static void expand_name(const char *pattern, enum gc_coll_kind k, char *out,
                        size_t size)
{
    const char *at = strstr(pattern, "<COLL>");
    const char *coll = gc_coll_kind_name(k);
    size_t n = 0;
    for (const char *p = pattern; *p != '\0' && n + 1 < size; p++) {
        if (p != at) {
            out[n++] = *p;
            continue;
        }
        for (const char *c = coll; *c != '\0' && n + 1 < size; c++)
            out[n++] = (char)toupper((unsigned char)*c);
        p += strlen("<COLL>") - 1;
    }
    out[n] = '\0';
}

/* Where variable `index` of setting s (0 unless per collective) lives. */
static void *slot(const struct setting *s, int index)
{
    return (char *)s->store + (size_t)index * types[s->type].size;
}

static int instances(const struct setting *s)
{
    return (s->flags & SF_PER_COLL) ? GC_COLL_KINDS : 1;
}

static void instance_name(const struct setting *s, int index, char *out,
                          size_t size)
{
    if (s->flags & SF_PER_COLL)
        expand_name(s->name, (enum gc_coll_kind)index, out, size);
    else
        snprintf(out, size, "%s", s->name);
}

/* ---- loading ------------------------------------------------------------- */

static void set_default(const struct setting *s, int index)
{
    void *store = slot(s, index);
    switch (s->type) {
    case SET_STRING:
        free(*(char **)store);
        *(char **)store = NULL;
        break;
    case SET_INT:
    case SET_BOOL: *(int64_t *)store = s->def; break;
    case SET_SIZE: *(size_t *)store = (size_t)s->def; break;
    default: memset(store, 0, types[s->type].size); break;
    }
}

/* "is not ..." for s. */
static const char *expectation(const struct setting *s, char *buf, size_t size)
{
    if (s->expect != NULL)
        return s->expect;
    if (types[s->type].expect != NULL)
        return types[s->type].expect;
    snprintf(buf, size, "a number in %" PRId64 "..%" PRId64, s->min, s->max);
    return buf;
}

/*
 * Parse variable `name` (s itself, or one of its family) from the
 * environment into `store`.  1 when set, 0 when unset or empty (store
 * untouched), -1 when malformed: then the message is in `message`.
 */
static int parse_one(const struct setting *s, const char *name, void *store,
                     char *message, size_t message_len)
{
    const char *text = getenv(name);
    char why[256] = "", expect[64];
    if (text == NULL || text[0] == '\0')
        return 0;
    if (types[s->type].parse(s, text, store, why, sizeof why) == 0)
        return 1;
    snprintf(message, message_len, "%s='%s' is not %s%s%s", name, text,
             expectation(s, expect, sizeof expect), why[0] ? ": " : "", why);
    return -1;
}

int gc_settings_load(void)
{
    int status = 0;
    int present[SETTING_COUNT] = {0};
    char name[64], message[768];
    for (int i = 0; i < SETTING_COUNT; i++) {
        const struct setting *s = &settings[i];
        for (int j = 0; j < instances(s); j++) {
            set_default(s, j);
            instance_name(s, j, name, sizeof name);
            int found = parse_one(s, name, slot(s, j), message, sizeof message);
            if (found < 0) {
                fprintf(stderr, "gridcoll: %s\n", message);
                status = -1;
            }
            present[i] |= found > 0;
        }
    }
    /* What gridrun always sets: missing, the job was not started by it
     * (or by an older one); with one site the relay is not needed. */
    int sites = values.sites.count;
    for (int i = 0; i < SETTING_COUNT; i++) {
        const struct setting *s = &settings[i];
        if (present[i] || !((s->flags & SF_GRID && sites > 0) ||
                            (s->flags & SF_MULTI && sites > 1)))
            continue;
        fprintf(stderr,
                "gridcoll: %s is not set (start the job with gridrun)\n",
                s->name);
        status = -1;
    }
    return status;
}

/* ---- accessors ----------------------------------------------------------- */

int gc_settings_sites(const struct gc_site **sites)
{
    *sites = values.sites.sites;
    return values.sites.count;
}

int gc_settings_site_index(void)
{
    return (int)values.site_index;
}

int gc_settings_site_offset(void)
{
    return (int)values.site_offset;
}

int gc_settings_site_size(void)
{
    return (int)values.site_size;
}

int gc_settings_world_size(void)
{
    return (int)values.world_size;
}

int gc_settings_appnum(void)
{
    return (int)values.appnum;
}

uint32_t gc_settings_job_id(void)
{
    return (uint32_t)values.job_id;
}

const char *gc_settings_relay(void)
{
    return values.relay;
}

const char *gc_settings_token_file(void)
{
    return values.token_file;
}

const struct gc_sched_fattree *gc_settings_fattree(void)
{
    return values.fattree.has ? &values.fattree.tree : NULL;
}

const char *gc_settings_model(void)
{
    return values.model;
}

const char *gc_settings_algorithm(const char *name)
{
    char expanded[64];
    for (int i = 0; i < SETTING_COUNT; i++) {
        const struct setting *s = &settings[i];
        if (!(s->flags & SF_ALGO))
            continue;
        for (int j = 0; j < instances(s); j++) {
            instance_name(s, j, expanded, sizeof expanded);
            if (strcmp(expanded, name) == 0)
                return *(char **)slot(s, j);
        }
    }
    /* A caller asking for a variable the table lacks would silently never
     * see it set: say so, the table needs the row. */
    fprintf(stderr,
            "gridcoll: %s is not in the settings table (GridColl bug)\n", name);
    return NULL;
}

size_t gc_settings_segsize(enum gc_coll_kind kind)
{
    return values.segsize[kind];
}

int gc_settings_stats(void)
{
    return (int)values.stats;
}

int gc_settings_allgather_k(void)
{
    return (int)values.allgather_k;
}

size_t gc_settings_shm_bytes(void)
{
    return values.shm_bytes;
}

void gc_settings_node_size(int *k, int *cyclic)
{
    *k = values.node_size.k;
    *cyclic = values.node_size.cyclic;
}

int gc_settings_async_progress(void)
{
    return (int)values.async_progress;
}

size_t gc_settings_rndv_threshold(void)
{
    return values.rndv_threshold;
}

size_t gc_settings_eager_window(void)
{
    return values.eager_window;
}

int gc_settings_rndv_push_ms(void)
{
    return (int)values.rndv_push_ms;
}

/* ---- documentation ------------------------------------------------------- */

/* A size with the largest suffix gc_settings_parse_size takes that divides it.
 */
static const char *format_size(int64_t bytes, char *buf, size_t size)
{
    static const char suffix[] = "GMK";
    for (int i = 0; i < 3; i++) {
        int shift = 30 - 10 * i;
        if (bytes > 0 && bytes % ((int64_t)1 << shift) == 0) {
            snprintf(buf, size, "%" PRId64 "%c", bytes >> shift, suffix[i]);
            return buf;
        }
    }
    snprintf(buf, size, "%" PRId64, bytes);
    return buf;
}

static const char *shape_of(const struct setting *s, char *buf, size_t size)
{
    char lo[32], hi[32];
    if (s->shape != NULL)
        return s->shape;
    if (s->type == SET_INT)
        snprintf(buf, size, "int %" PRId64 "..%" PRId64, s->min, s->max);
    else if (s->type == SET_SIZE && s->max != INT64_MAX)
        snprintf(buf, size, "size %s..%s", format_size(s->min, lo, sizeof lo),
                 format_size(s->max, hi, sizeof hi));
    else
        return types[s->type].shape;
    return buf;
}

static const char *default_of(const struct setting *s, char *buf, size_t size)
{
    if (s->def_text != NULL)
        return s->def_text;
    if (s->flags & (SF_GRID | SF_MULTI))
        return "unset";
    if (s->type == SET_SIZE)
        return format_size(s->def, buf, size);
    snprintf(buf, size, "%" PRId64, s->def);
    return buf;
}

static const char *origin_of(const struct setting *s)
{
    if (s->flags & SF_GRID)
        return "gridrun, required with GRIDCOLL_SITES";
    if (s->flags & SF_MULTI)
        return "gridrun, required with two sites or more";
    if ((s->flags & SF_GRIDRUN) && (s->flags & SF_USER))
        return "gridrun or the user";
    if (s->flags & SF_GRIDRUN)
        return "gridrun";
    return "the user";
}

/* What `note` says of each variable of s, one line each. */
static void print_notes(FILE *out, const struct setting *s,
                        gc_settings_note_fn *note)
{
    char name[64], line[512];
    for (int k = 0; k < instances(s); k++) {
        instance_name(s, k, name, sizeof name);
        int n = snprintf(line, sizeof line, "%s: ", name);
        if (note(name, (s->flags & SF_PER_COLL) ? k : -1,
                 (s->flags & SF_ALGO) != 0, line + n, sizeof line - (size_t)n))
            gc_print_wrapped(out, line, 8);
    }
}

/* The variable's value in this environment, checked as MPI_Init would. */
static void print_current(FILE *out, const struct setting *s, int index)
{
    /* Large enough for any type's stored value. */
    union {
        struct sites_value sites;
        struct fattree_value fattree;
        char *text;
        int64_t number;
        size_t size;
    } scratch;
    char name[64], message[768], line[1024];
    const char *text;
    memset(&scratch, 0, sizeof scratch);
    instance_name(s, index, name, sizeof name);
    text = getenv(name);
    if (text == NULL || text[0] == '\0')
        return;
    int found = parse_one(s, name, &scratch, message, sizeof message);
    if (found > 0)
        snprintf(line, sizeof line, "current: %s=%s", name, text);
    else
        snprintf(line, sizeof line, "current: %s (malformed: MPI_Init fails)",
                 message);
    if (found > 0 && s->type == SET_STRING)
        free(scratch.text);
    gc_print_wrapped(out, line, 4);
}

static void print_markdown(FILE *out)
{
    char shape[80], def[64]; /* "size " + two format_size results */
    fputs("| variable | value | default | set by | meaning |\n"
          "|---|---|---|---|---|\n",
          out);
    for (int i = 0; i < SETTING_COUNT; i++) {
        const struct setting *s = &settings[i];
        fprintf(out, "| `%s` | ", s->name);
        gc_print_markdown_cell(out, shape_of(s, shape, sizeof shape));
        fputs(" | ", out);
        gc_print_markdown_cell(out, default_of(s, def, sizeof def));
        fputs(" | ", out);
        gc_print_markdown_cell(out, origin_of(s));
        fputs(" | ", out);
        gc_print_markdown_cell(out, s->doc);
        fputs(" |\n", out);
    }
}

void gc_settings_print(FILE *out, int markdown, gc_settings_note_fn *note)
{
    if (markdown) {
        print_markdown(out);
        return;
    }
    gc_print_wrapped(out,
                     "Every variable is read once, at MPI_Init; a malformed "
                     "value stops MPI_Init with a message naming it.  An "
                     "empty value counts as unset.  Sizes take a number of "
                     "bytes with an optional K, M or G suffix.",
                     0);
    fputc('\n', out);
    for (int i = 0; i < SETTING_COUNT; i++) {
        const struct setting *s = &settings[i];
        char shape[80], def[64];
        fprintf(out, "%s (%s, default %s, set by %s)\n", s->name,
                shape_of(s, shape, sizeof shape),
                default_of(s, def, sizeof def), origin_of(s));
        for (int j = 0; j < instances(s); j++)
            print_current(out, s, j);
        gc_print_wrapped(out, s->doc, 4);
        if (s->flags & (SF_PER_COLL | SF_ALGO))
            print_notes(out, s, note);
    }
}
