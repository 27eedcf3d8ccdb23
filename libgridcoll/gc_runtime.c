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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/coll_request.h"
#include "gc_intercomm.h"
#include "gc_model.h"
#include "gc_mpi.h"
#include "gc_proto.h"
#include "gc_relay_client.h"
#include "gc_settings.h"
#include "gc_util.h"

#define GC_THREAD_LEVEL MPI_THREAD_SERIALIZED

struct gc_world gc_world;

static struct {
    int local_rank; /* rank in this site's MPICH world */
    int unsupported_class;
} runtime = {.unsupported_class = -1};

/* ---- start-up --------------------------------------------------------- */

const struct gc_sched_fattree *gc_site_fattree(void)
{
    return gc_world.has_fattree ? &gc_world.fattree : NULL;
}

void gc_fatal_relay(const char *during)
{
    fprintf(stderr, "gridcoll: grid rank %d (site %s): %s: %s\n",
            gc_world.grid_rank, gc_world.sites[gc_world.site_index].name,
            during, gc_world.rc ? gc_rc_error(gc_world.rc) : "no connection");
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

/* gc_settings_load checked that gridrun set the relay's variables. */
static int connect_relay(void)
{
    const char *endpoint = gc_settings_relay();
    const char *token_file = gc_settings_token_file();
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
        .job_id = gc_settings_job_id(),
        .rank = (uint32_t)gc_world.grid_rank,
    };
    gc_p2p_callbacks(&opt.on_alloc, &opt.on_complete);
    int status = gc_rc_connect(&opt, &gc_world.rc, err, sizeof err);
    memset(token, 0, sizeof token);
    if (status != 0)
        fprintf(stderr, "gridcoll: grid rank %d cannot join relay %s: %s\n",
                gc_world.grid_rank, endpoint, err);
    return status;
}

/*
 * GRIDCOLL_MODEL: the performance model selection uses (docs/model.md).
 * Every rank reads the same file, so all choose alike; a file that does
 * not load, or lacks one of the job's sites, stops the job: the user
 * asked for model-driven choices and should not silently get the rules.
 */
static struct gc_model model;
static int model_site_map[GC_MAX_SITES];

static int load_model(void)
{
    const char *path = gc_settings_model();
    if (path == NULL)
        return 0;
    char err[512];
    if (gc_model_load(path, &model, err, sizeof err) != 0) {
        fprintf(stderr, "gridcoll: GRIDCOLL_MODEL: %s\n", err);
        return -1;
    }
    for (int s = 0; s < gc_world.site_count; s++) {
        model_site_map[s] = gc_model_site_index(&model, gc_world.sites[s].name);
        if (model_site_map[s] < 0) {
            fprintf(stderr,
                    "gridcoll: GRIDCOLL_MODEL: %s: no site '%s' (the job's "
                    "sites must be among the model's)\n",
                    path, gc_world.sites[s].name);
            return -1;
        }
    }
    gc_model_set_active(&model, model_site_map);
    return 0;
}

/*
 * Called right after PMPI_Init*: decide the mode and join the grid.  A
 * malformed setting (`settings`: what gc_settings_load, which MPI_Init
 * ran first, returned) stops the job here, whatever the mode, before the
 * program computes anything.
 */
static int grid_setup(int settings)
{
    const struct gc_site *sites;
    int offset, site_size, local_size;
    if (settings != 0)
        goto fail;
    gc_world.site_count = gc_settings_sites(&sites);
    if (gc_world.site_count == 0)
        return MPI_SUCCESS; /* not started by gridrun: plain MPICH */
    memcpy(gc_world.sites, sites, (size_t)gc_world.site_count * sizeof *sites);
    gc_world.site_index = gc_settings_site_index();
    gc_world.size = gc_settings_world_size();
    offset = gc_settings_site_offset();
    site_size = gc_settings_site_size();
    if (gc_settings_fattree() != NULL) {
        gc_world.fattree = *gc_settings_fattree();
        gc_world.has_fattree = 1;
    }
    if (gc_world.site_index >= gc_world.site_count ||
        gc_world.sites[gc_world.site_index].offset != offset ||
        gc_world.sites[gc_world.site_index].size != site_size) {
        fprintf(stderr, "gridcoll: GRIDCOLL_SITE_* disagree with "
                        "GRIDCOLL_SITES\n");
        goto fail;
    }
    if (gc_world.site_count == 1)
        return MPI_SUCCESS; /* one site: MPICH alone is the grid */
    PMPI_Comm_rank(MPI_COMM_WORLD, &runtime.local_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &local_size);
    if (local_size != site_size) {
        fprintf(stderr,
                "gridcoll: site %s was launched with %d ranks but the grid "
                "expects %d\n",
                gc_world.sites[gc_world.site_index].name, local_size,
                site_size);
        goto fail;
    }
    gc_world.grid_rank = offset + runtime.local_rank;
    if (load_model() != 0 || connect_relay() != 0)
        goto fail;
    gc_world.active = 1;
    if (gc_comm_world_init() != 0) {
        fprintf(stderr, "gridcoll: out of memory\n");
        goto fail;
    }
    return MPI_SUCCESS;
fail:
    PMPI_Abort(MPI_COMM_WORLD, 1);
    return MPI_ERR_OTHER;
}

/*
 * MPI_Init and MPI_Init_thread.  The progress thread calls into MPICH
 * while the program may call MPICH functions the layer does not define,
 * so with GRIDCOLL_ASYNC_PROGRESS=1 MPICH runs at MPI_THREAD_MULTIPLE
 * whatever the program asked; the program is told the level it asked
 * for, at most GC_THREAD_LEVEL.  Without several sites the setting turns
 * on MPICH's own progress thread instead (MPIR_CVAR_ASYNC_PROGRESS,
 * unless the environment sets it).
 */
static int init(int *argc, char ***argv, const int *required, int *provided)
{
    const struct gc_site *sites;
    int settings = gc_settings_load();
    int async = settings == 0 && gc_settings_async_progress();
    /* One site is MPICH alone: its own progress thread does the work. */
    if (async && gc_settings_sites(&sites) <= 1) {
        setenv("MPIR_CVAR_ASYNC_PROGRESS", "1", 0);
        async = 0;
    }
    /* MPI_Init (required NULL) keeps MPICH's default level
     * (MPIR_CVAR_DEFAULT_THREAD_LEVEL) unless the thread needs more. */
    int asked = required != NULL ? *required : MPI_THREAD_SINGLE;
    int mpich_level = MPI_THREAD_SINGLE;
    int rc =
        async ? PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &mpich_level)
        : required == NULL ? PMPI_Init(argc, argv)
                           : PMPI_Init_thread(argc, argv, asked, &mpich_level);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!async && required == NULL)
        PMPI_Query_thread(&mpich_level);
    gc_world.thread_level = async && mpich_level > asked ? asked : mpich_level;
    rc = grid_setup(settings);
    if (rc != MPI_SUCCESS || !gc_world.active)
        goto done;
    /* The relay session is driven by whichever thread is inside MPI, one
     * at a time: more than SERIALIZED would be a promise we do not keep. */
    if (gc_world.thread_level > GC_THREAD_LEVEL)
        gc_world.thread_level = GC_THREAD_LEVEL;
    if (async && mpich_level < MPI_THREAD_MULTIPLE)
        fprintf(stderr,
                "gridcoll: GRIDCOLL_ASYNC_PROGRESS=1 needs MPICH at "
                "MPI_THREAD_MULTIPLE, which it does not provide: no progress "
                "thread\n");
    else if (async && gc_thread_start() != 0)
        rc = gc_error(MPI_COMM_WORLD, MPI_ERR_INTERN,
                      "MPI_Init: cannot start the progress thread");
done:
    if (provided != NULL)
        *provided = gc_world.thread_level;
    return rc;
}

int MPI_Init(int *argc, char ***argv)
{
    return init(argc, argv, NULL, NULL);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return init(argc, argv, &required, provided);
}

int MPI_Query_thread(int *provided)
{
    if (!gc_world.active)
        return PMPI_Query_thread(provided);
    *provided = gc_world.thread_level;
    return MPI_SUCCESS;
}

/* ---- the grid world --------------------------------------------------- */

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Comm_rank(comm, rank);
    *rank = gc_comm_group_rank(c);
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Comm_size(comm, size);
    *size = gc_comm_group_size(c);
    return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    /* The local job ends with `errorcode`; gridrun sees the exit status
     * and stops every other site. */
    if (gc_world.active)
        fprintf(stderr, "gridcoll: grid rank %d called MPI_Abort(%d)\n",
                gc_world.grid_rank, errorcode);
    return PMPI_Abort(gc_comm_is_grid(comm) ? MPI_COMM_WORLD : comm, errorcode);
}

int MPI_Finalize(void)
{
    if (gc_world.active) {
        gc_thread_stop();
        gc_coll_print_stats();
        /* No rank may leave while another site could still address it. */
        gc_coll_barrier(gc_comm_find(MPI_COMM_WORLD));
        if (gc_rc_close(gc_world.rc, 30000) != 0)
            fprintf(stderr,
                    "gridcoll: grid rank %d: relay session did not "
                    "close cleanly\n",
                    gc_world.grid_rank);
        gc_world.rc = NULL;
        coll_request_shutdown();
        gc_p2p_shutdown();
        gc_comm_release_all();
        gc_world.active = 0;
    }
    return PMPI_Finalize();
}

/* ---- calls not supported across sites --------------------------------- */

/* One error code per function, made once: its string names the call. */
static int unsupported_code(const char *function, const char *where)
{
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
        if (runtime.unsupported_class < 0 &&
            PMPI_Add_error_class(&runtime.unsupported_class) != MPI_SUCCESS)
            runtime.unsupported_class = MPI_ERR_OTHER;
        snprintf(text, sizeof text, "%s is not supported %s (GridColl)",
                 function, where);
        if (PMPI_Add_error_code(runtime.unsupported_class, &code) ==
                MPI_SUCCESS &&
            PMPI_Add_error_string(code, text) == MPI_SUCCESS) {
            codes[code_count].function = function;
            codes[code_count].code = code;
            code_count++;
        }
    }
    return code;
}

int gc_unsupported(MPI_Comm comm, const char *function)
{
    int code = unsupported_code(function, "on a communicator that spans sites");
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

/*
 * MPI-4 sessions do not join the grid yet: a session's mpi://WORLD would
 * be this site's MPICH job alone, silently.  In a job launched across
 * sites the call fails, loudly, through the handler it was given.
 */
int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler,
                     MPI_Session *session)
{
    GC_ENTER();
    int rc = PMPI_Session_init(info, errhandler, session);
    const struct gc_site *sites;
    if (rc != MPI_SUCCESS)
        return rc;
    /* Only whether the job spans sites matters here; a malformed setting
     * has been reported and stops MPI_Init, if the program calls it. */
    gc_settings_load();
    if (gc_settings_sites(&sites) < 2)
        return rc;
    fprintf(stderr, "gridcoll: MPI_Session_init is not supported in a job "
                    "that spans sites (MPI-4 sessions would see one site "
                    "only); use MPI_Init or MPI_Init_thread\n");
    int code =
        unsupported_code("MPI_Session_init", "in a job that spans sites");
    PMPI_Session_finalize(session);
    *session = MPI_SESSION_NULL;
    /* MPICH 4.0.2's MPI_Session_call_errhandler aborts even under
     * MPI_ERRORS_RETURN, and the session is gone: the handler's two
     * predefined behaviours by hand. */
    if (errhandler != MPI_ERRORS_RETURN)
        exit(EXIT_FAILURE);
    return code;
}

int gc_error(MPI_Comm comm, int code, const char *detail)
{
    /* The predefined class is returned as is, so MPI_Error_class works on
     * it (MPICH cannot attach a string to a code of a predefined class).
     * When the error ends the job, the detail naming the call is printed
     * first: MPICH's own message would only say "Invalid rank". */
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(comm, &handler);
    if (handler == MPI_ERRORS_ARE_FATAL || handler == MPI_ERRORS_ABORT)
        fprintf(stderr, "gridcoll: grid rank %d: %s\n", gc_world.grid_rank,
                detail);
    if (handler != MPI_ERRHANDLER_NULL)
        PMPI_Errhandler_free(&handler);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}
