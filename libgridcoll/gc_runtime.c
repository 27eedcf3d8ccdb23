/*
 * libgridcoll runtime: the grid world and the MPI calls every program
 * makes first.  docs/design/mpi-layer.md is the design; the environment
 * comes from gridrun (docs/gridrun.md).
 *
 * Without the GRIDCOLL_* environment, or with one site, every call passes
 * straight through to MPICH.  With several sites MPI_COMM_WORLD is the grid
 * world: grid rank = site offset + MPICH rank, and calls that are not
 * implemented across sites fail with an error naming them (gc_wrappers.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_mpi.h"
#include "gc_proto.h"
#include "gc_relay_client.h"
#include "gc_util.h"

/* Context ids at the top of the range belong to the library itself. */
#define GC_CTX_BARRIER   0xfffffff0u
#define GC_MAX_SITES     64
#define GC_THREAD_LEVEL  MPI_THREAD_SERIALIZED
#define PROGRESS_POLL_MS 100

struct gc_site {
    char name[GC_NAME_MAX + 1];
    int offset;
    int size;
};

static struct {
    int active; /* several sites: grid semantics on MPI_COMM_WORLD */
    int site_count;
    int site_index;
    struct gc_site sites[GC_MAX_SITES];
    int world_size;
    int grid_rank;
    int local_rank;
    int thread_level;
    struct gc_rc *rc;
    uint64_t barriers_done;
    uint64_t barrier_messages; /* from other coordinators, cumulative */
    int unsupported_class;
} grid = {.unsupported_class = -1};

/* ---- start-up --------------------------------------------------------- */

static const char *env_required(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr,
                "gridcoll: %s is not set (start the job with gridrun)\n", name);
        return NULL;
    }
    return v;
}

static int env_number(const char *name, unsigned long max, unsigned long *out)
{
    const char *v = env_required(name);
    if (v == NULL)
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno != 0 || *end != '\0' || v[0] == '-' || n > max) {
        fprintf(stderr, "gridcoll: %s='%s' is not a number in 0..%lu\n", name,
                v, max);
        return -1;
    }
    *out = n;
    return 0;
}

static int env_int(const char *name, int *out)
{
    unsigned long n;
    if (env_number(name, GC_MAX_RANK, &n) != 0)
        return -1;
    *out = (int)n;
    return 0;
}

/* GRIDCOLL_SITES = "name:offset:count,name:offset:count,..." */
static int parse_sites(const char *text)
{
    int status = -1;
    char *copy = strdup(text);
    char *save = NULL;
    if (copy == NULL)
        return -1;
    grid.site_count = 0;
    for (char *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        struct gc_site *s = &grid.sites[grid.site_count];
        char name[GC_NAME_MAX + 1];
        int offset, size, consumed = 0;
        if (grid.site_count == GC_MAX_SITES ||
            sscanf(item, "%63[^:]:%d:%d%n", name, &offset, &size, &consumed) !=
                3 ||
            item[consumed] != '\0' || offset < 0 || size <= 0) {
            fprintf(stderr, "gridcoll: GRIDCOLL_SITES entry '%s' is invalid\n",
                    item);
            goto cleanup;
        }
        snprintf(s->name, sizeof s->name, "%s", name);
        s->offset = offset;
        s->size = size;
        grid.site_count++;
    }
    status = grid.site_count > 0 ? 0 : -1;
cleanup:
    free(copy);
    return status;
}

static void on_message(void *arg, const struct gc_rc_msg_info *info, void *buf,
                       int library_allocated)
{
    (void)arg;
    if (library_allocated)
        free(buf);
    if (info->context_id == GC_CTX_BARRIER) {
        grid.barrier_messages++;
        return;
    }
    /* Nothing else is sent across sites yet: a message here means a peer
     * runs a different library version; stopping beats guessing. */
    fprintf(stderr,
            "gridcoll: unexpected message from grid rank %u (context %u); "
            "mixed library versions?\n",
            info->src_rank, info->context_id);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

static void *on_alloc(void *arg, const struct gc_rc_msg_info *info)
{
    (void)arg;
    (void)info;
    return NULL; /* library buffer: only empty control messages so far */
}

/* Fatal: the job cannot go on without its relay; say why and stop. */
static void relay_failed(const char *what)
{
    fprintf(stderr, "gridcoll: grid rank %d (site %s): %s: %s\n",
            grid.grid_rank, grid.sites[grid.site_index].name, what,
            grid.rc ? gc_rc_error(grid.rc) : "no connection");
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

static int connect_relay(void)
{
    const char *endpoint = env_required("GRIDCOLL_RELAY");
    const char *token_file = env_required("GRIDCOLL_TOKEN_FILE");
    unsigned long job_id;
    if (endpoint == NULL || token_file == NULL ||
        env_number("GRIDCOLL_JOB_ID", UINT32_MAX, &job_id) != 0)
        return -1;
    uint8_t token[GC_TOKEN_MAX];
    char err[512];
    int token_len =
        gc_token_read_file(token_file, token, sizeof token, err, sizeof err);
    if (token_len < 0) {
        fprintf(stderr, "gridcoll: %s\n", err);
        return -1;
    }
    struct gc_rc_options opt = {
        .endpoint = endpoint,
        .token = token,
        .token_len = (size_t)token_len,
        .job_id = (uint32_t)job_id,
        .rank = (uint32_t)grid.grid_rank,
        .on_alloc = on_alloc,
        .on_complete = on_message,
    };
    int status = gc_rc_connect(&opt, &grid.rc, err, sizeof err);
    memset(token, 0, sizeof token);
    if (status != 0)
        fprintf(stderr, "gridcoll: grid rank %d cannot join relay %s: %s\n",
                grid.grid_rank, endpoint, err);
    return status;
}

/* Called right after PMPI_Init*: decide the mode and join the grid. */
static int grid_setup(void)
{
    const char *sites = getenv("GRIDCOLL_SITES");
    if (sites == NULL)
        return MPI_SUCCESS; /* not started by gridrun: plain MPICH */
    int offset, site_size, local_size;
    if (parse_sites(sites) != 0 ||
        env_int("GRIDCOLL_SITE_INDEX", &grid.site_index) != 0 ||
        env_int("GRIDCOLL_SITE_OFFSET", &offset) != 0 ||
        env_int("GRIDCOLL_SITE_SIZE", &site_size) != 0 ||
        env_int("GRIDCOLL_WORLD_SIZE", &grid.world_size) != 0)
        goto fail;
    if (grid.site_index >= grid.site_count ||
        grid.sites[grid.site_index].offset != offset ||
        grid.sites[grid.site_index].size != site_size) {
        fprintf(stderr, "gridcoll: GRIDCOLL_SITE_* disagree with "
                        "GRIDCOLL_SITES\n");
        goto fail;
    }
    if (grid.site_count == 1)
        return MPI_SUCCESS; /* one site: MPICH alone is the grid */
    PMPI_Comm_rank(MPI_COMM_WORLD, &grid.local_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &local_size);
    if (local_size != site_size) {
        fprintf(stderr,
                "gridcoll: site %s was launched with %d ranks but the grid "
                "expects %d\n",
                grid.sites[grid.site_index].name, local_size, site_size);
        goto fail;
    }
    grid.grid_rank = offset + grid.local_rank;
    if (connect_relay() != 0)
        goto fail;
    grid.active = 1;
    return MPI_SUCCESS;
fail:
    PMPI_Abort(MPI_COMM_WORLD, 1);
    return MPI_ERR_OTHER;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Query_thread(&grid.thread_level);
    return grid_setup();
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc != MPI_SUCCESS)
        return rc;
    grid.thread_level = *provided;
    rc = grid_setup();
    /* The relay session is driven by whichever thread is inside MPI, one
     * at a time: more than SERIALIZED would be a promise we do not keep. */
    if (grid.active && grid.thread_level > GC_THREAD_LEVEL)
        grid.thread_level = GC_THREAD_LEVEL;
    *provided = grid.thread_level;
    return rc;
}

int MPI_Query_thread(int *provided)
{
    if (!grid.active)
        return PMPI_Query_thread(provided);
    *provided = grid.thread_level;
    return MPI_SUCCESS;
}

/* ---- the grid world --------------------------------------------------- */

int gc_comm_is_grid(MPI_Comm comm)
{
    /* Communicators derived from the grid world (dup, split, ...) are not
     * created yet: their constructors refuse grid communicators, so only
     * the world itself can span sites. */
    return grid.active && comm == MPI_COMM_WORLD;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    if (!gc_comm_is_grid(comm))
        return PMPI_Comm_rank(comm, rank);
    *rank = grid.grid_rank;
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    if (!gc_comm_is_grid(comm))
        return PMPI_Comm_size(comm, size);
    *size = grid.world_size;
    return MPI_SUCCESS;
}

/*
 * Barrier across sites: local barrier, one message between every pair of
 * site coordinators (local rank 0), local barrier.  One WAN latency.
 */
static int grid_barrier(void)
{
    int rc = PMPI_Barrier(MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return rc;
    if (grid.local_rank == 0) {
        uint64_t others = (uint64_t)grid.site_count - 1;
        grid.barriers_done++;
        for (int s = 0; s < grid.site_count; s++) {
            if (s == grid.site_index)
                continue;
            if (gc_rc_send(grid.rc, (uint32_t)grid.sites[s].offset,
                           GC_CTX_BARRIER, 0, NULL, 0) != 0)
                relay_failed("barrier");
        }
        /* Counts are cumulative: a faster site's next barrier message may
         * arrive before this one completes, and is kept for it. */
        while (grid.barrier_messages < grid.barriers_done * others)
            if (gc_rc_progress(grid.rc, PROGRESS_POLL_MS) < 0)
                relay_failed("barrier");
    }
    return PMPI_Barrier(MPI_COMM_WORLD);
}

int MPI_Barrier(MPI_Comm comm)
{
    if (!gc_comm_is_grid(comm))
        return PMPI_Barrier(comm);
    return grid_barrier();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    /* The local job ends with `errorcode`; gridrun sees the exit status
     * and stops every other site. */
    if (grid.active)
        fprintf(stderr, "gridcoll: grid rank %d called MPI_Abort(%d)\n",
                grid.grid_rank, errorcode);
    return PMPI_Abort(gc_comm_is_grid(comm) ? MPI_COMM_WORLD : comm, errorcode);
}

int MPI_Finalize(void)
{
    if (grid.active) {
        /* No rank may leave while another site could still address it. */
        grid_barrier();
        if (gc_rc_close(grid.rc, 30000) != 0)
            fprintf(stderr,
                    "gridcoll: grid rank %d: relay session did not "
                    "close cleanly\n",
                    grid.grid_rank);
        grid.rc = NULL;
        grid.active = 0;
    }
    return PMPI_Finalize();
}

/* ---- calls not supported across sites --------------------------------- */

int gc_unsupported(MPI_Comm comm, const char *function)
{
    /* One error code per function, made once: the string names the call. */
    static struct {
        const char *function;
        int code;
    } codes[512];
    static int code_count;
    int code = MPI_ERR_OTHER;
    for (int i = 0; i < code_count; i++)
        if (codes[i].function == function ||
            strcmp(codes[i].function, function) == 0)
            code = codes[i].code;
    if (code == MPI_ERR_OTHER &&
        code_count < (int)(sizeof codes / sizeof *codes)) {
        char text[MPI_MAX_ERROR_STRING];
        if (grid.unsupported_class < 0 &&
            PMPI_Add_error_class(&grid.unsupported_class) != MPI_SUCCESS)
            grid.unsupported_class = MPI_ERR_OTHER;
        snprintf(text, sizeof text,
                 "%s is not supported on a communicator that spans sites "
                 "(GridColl)",
                 function);
        if (PMPI_Add_error_code(grid.unsupported_class, &code) == MPI_SUCCESS &&
            PMPI_Add_error_string(code, text) == MPI_SUCCESS) {
            codes[code_count].function = function;
            codes[code_count].code = code;
            code_count++;
        }
    }
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}
