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

#include "coll/engine/coll_request.h"
#include "coll/engine/coll_sched.h"
#include "coll/internal_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "comm/gc_intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_ctxid.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_model.h"
#include "core/gc_progress.h"
#include "core/gc_settings.h"
#include "core/gc_world.h"
#include "gc_proto.h"
#include "gc_util.h"
#include "p2p/gc_p2p.h"
#include "p2p/gc_p2p_engine.h"
#include "p2p/layer_request.h"
#include "relay_client/gc_relay_client.h"
#include "runtime/gc_progress_thread.h"
#include "runtime/gc_runtime.h"

/*
 * The grid (relay session, grid world) is started by whichever comes
 * first, MPI_Init or an MPI_Session_init, and closed when the last of
 * them ends: MPI_Finalize, or the last MPI_Session_finalize.
 */
static struct {
    int local_rank;  /* rank in this site's MPICH world */
    int users;       /* the world model, until MPI_Finalize; open sessions */
    int world_model; /* MPI_Init was called, MPI_Finalize not yet */
    /* A session started the grid: the layer's own session, of which
     * gc_world.site_world is made (the program may finalize its own
     * sessions in any order). */
    MPI_Session session;
    /*
     * A session started the grid on a one-process site: MPICH 4.0.2 sets
     * up its network only for a "world" group of more than one process
     * (is_world_group in MPIR_Comm_create_from_group_impl), and its
     * progress then crashes, so the layer starts MPICH's world model
     * itself, hidden from the program (MPI_Initialized says 0 until the
     * program's own MPI_Init, which then skips PMPI_Init), and finalizes
     * it at exit unless the program does.
     */
    int hidden_world;
    int own_site_world; /* gc_world.site_world is the layer's to free */
} runtime = {.session = MPI_SESSION_NULL};

/* ---- start-up --------------------------------------------------------- */

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
    /* A pass serves the engine first: what it matched lets the layer's
     * requests, the duplications and then the schedules go on. */
    gc_progress_register(&gc_p2p_progress_hook);
    gc_progress_register(&layer_request_progress_hook);
    gc_progress_register(&gc_ctxid_progress_hook);
    gc_progress_register(&coll_sched_progress_hook);
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
 * Called right after PMPI_Init* or PMPI_Session_init: decide the mode and
 * join the grid, as grid rank SITE_OFFSET + rank in `site` (MPICH's
 * communicator of this site's processes).  A malformed setting
 * (`settings`: what gc_settings_load, which the caller ran first,
 * returned) stops the job here, whatever the mode, before the program
 * computes anything.
 */
static int grid_setup(int settings, MPI_Comm site)
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
    gc_world.site_world = site;
    PMPI_Comm_rank(site, &runtime.local_rank);
    PMPI_Comm_size(site, &local_size);
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
    /* Context block 0 is MPI_COMM_WORLD's (registered by MPI_Init), 1
     * the layer's grid communicator, whichever started the grid
     * (gc_comm_create.c starts after them). */
    gc_world.grid = gc_comm_world_init(site, GC_CTX_STRIDE);
    if (gc_world.grid == NULL) {
        fprintf(stderr, "gridcoll: out of memory\n");
        goto fail;
    }
    return MPI_SUCCESS;
fail:
    PMPI_Abort(site, 1);
    return MPI_ERR_OTHER;
}

static void finalize_hidden_world(void)
{
    int finalized = 1;
    if (PMPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        PMPI_Finalize();
}

/*
 * A session joins the grid (MPI_Session_init, after PMPI_Session_init):
 * the first starts it from a session of the layer's own, whose
 * mpi://WORLD is this site's processes.
 */
int gc_runtime_session_join(void)
{
    MPI_Group site_group = MPI_GROUP_NULL, self_group = MPI_GROUP_NULL;
    MPI_Comm site = MPI_COMM_NULL;
    const struct gc_site *sites;
    if (gc_world.active) {
        runtime.users++;
        return MPI_SUCCESS;
    }
    int settings = gc_settings_load();
    if (settings == 0 && gc_settings_sites(&sites) < 2)
        return MPI_SUCCESS; /* one site or none: MPICH alone */
    int status, level;
    if (gc_settings_site_size() == 1) {
        status = PMPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &level);
        if (status == MPI_SUCCESS) {
            runtime.hidden_world = 1;
            atexit(finalize_hidden_world);
            status = PMPI_Comm_dup(MPI_COMM_WORLD, &site);
        }
    } else {
        status = PMPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                   &runtime.session);
        if (status == MPI_SUCCESS)
            status = PMPI_Group_from_session_pset(runtime.session,
                                                  "mpi://WORLD", &site_group);
        if (status == MPI_SUCCESS)
            status = PMPI_Comm_create_from_group(
                site_group, "gridcoll://runtime", MPI_INFO_NULL,
                MPI_ERRORS_RETURN, &site);
        if (site_group != MPI_GROUP_NULL)
            PMPI_Group_free(&site_group);
        if (status == MPI_SUCCESS)
            status = PMPI_Group_from_session_pset(runtime.session, "mpi://SELF",
                                                  &self_group);
        if (status == MPI_SUCCESS)
            status = PMPI_Comm_create_from_group(
                self_group, "gridcoll://self", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                &gc_world.site_self);
        if (self_group != MPI_GROUP_NULL)
            PMPI_Group_free(&self_group);
    }
    if (status != MPI_SUCCESS) {
        fprintf(stderr, "gridcoll: MPI_Session_init: cannot make this "
                        "site's communicator to join the grid\n");
        return status;
    }
    runtime.own_site_world = 1;
    status = grid_setup(settings, site);
    if (status == MPI_SUCCESS && gc_world.active)
        runtime.users++;
    return status;
}

/* Close the relay session and forget the grid. */
static void grid_close(void)
{
    GC_ENTER();
    if (!gc_world.active)
        return;
    gc_thread_stop();
    gc_coll_print_stats();
    gc_bsend_flush();
    /* No rank may leave while another site could still address it. */
    gc_coll_barrier(gc_world.grid);
    if (gc_rc_close(gc_world.rc, 30000) != 0)
        fprintf(stderr,
                "gridcoll: grid rank %d: relay session did not "
                "close cleanly\n",
                gc_world.grid_rank);
    gc_world.rc = NULL;
    coll_request_shutdown();
    layer_request_shutdown();
    gc_p2p_shutdown();
    gc_comm_release_all();
    gc_world.grid = NULL;
    gc_world.active = 0;
    if (runtime.own_site_world) {
        PMPI_Comm_free(&gc_world.site_world);
        gc_world.site_world = MPI_COMM_WORLD;
        runtime.own_site_world = 0;
    }
    if (runtime.session != MPI_SESSION_NULL) {
        PMPI_Comm_free(&gc_world.site_self);
        gc_world.site_self = MPI_COMM_SELF;
        PMPI_Session_finalize(&runtime.session);
    }
}

/*
 * The world model or a session leaves.  MPI_Finalize, the last, closes the
 * grid; after the last session the program may start sessions again (MPI
 * 4.1 §11.3.1), and neither MPICH (the hidden world) nor the relay (the
 * rank's one session) can be joined twice, so the grid stays until exit.
 */
void gc_runtime_leave(int world_model)
{
    static int close_registered;
    if (--runtime.users > 0)
        return;
    if (world_model)
        grid_close();
    else if (!close_registered)
        close_registered = atexit(grid_close) == 0;
}

/*
 * MPI_Init and MPI_Init_thread.  The level the program gets is MPICH's:
 * up to MPI_THREAD_MULTIPLE, where the library lock (gc_lock.h) guards
 * the layer from the program's threads.  The progress thread calls into
 * MPICH while the program may call MPICH functions the layer does not
 * define, so with GRIDCOLL_ASYNC_PROGRESS=1 MPICH runs at
 * MPI_THREAD_MULTIPLE whatever the program asked; the program is told
 * the level it asked for.  Without several sites the setting turns on
 * MPICH's own progress thread instead (MPIR_CVAR_ASYNC_PROGRESS, unless
 * the environment sets it).
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
        runtime.hidden_world ? PMPI_Query_thread(&mpich_level)
        : async
            ? PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &mpich_level)
        : required == NULL ? PMPI_Init(argc, argv)
                           : PMPI_Init_thread(argc, argv, asked, &mpich_level);
    if (rc != MPI_SUCCESS)
        return rc;
    runtime.hidden_world = 0; /* the program's now */
    if (!async && required == NULL)
        PMPI_Query_thread(&mpich_level);
    gc_world.thread_level = async && mpich_level > asked ? asked : mpich_level;
    /* A session may have started the grid already. */
    if (!gc_world.active) {
        MPI_Comm site = MPI_COMM_WORLD;
        if (settings == 0 && gc_settings_sites(&sites) > 1) {
            rc = PMPI_Comm_dup(MPI_COMM_WORLD, &site);
            runtime.own_site_world = rc == MPI_SUCCESS;
        }
        if (rc == MPI_SUCCESS)
            rc = grid_setup(settings, site);
    }
    if (rc != MPI_SUCCESS || !gc_world.active)
        goto done;
    if (gc_comm_find(MPI_COMM_WORLD) == NULL &&
        gc_comm_world_init(MPI_COMM_WORLD, 0) == NULL) {
        fprintf(stderr, "gridcoll: out of memory\n");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    runtime.world_model = 1;
    runtime.users++;
    if (gc_world.thread_level == MPI_THREAD_MULTIPLE)
        gc_lock_enable();
    if (async && mpich_level < MPI_THREAD_MULTIPLE)
        fprintf(stderr,
                "gridcoll: GRIDCOLL_ASYNC_PROGRESS=1 needs MPICH at "
                "MPI_THREAD_MULTIPLE, which it does not provide: no progress "
                "thread\n");
    else if (async && gc_thread_start() != 0)
        rc = gc_error(MPI_COMM_WORLD, MPI_ERR_INTERN,
                      "MPI_Init: cannot start the progress thread", NULL);
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

int MPI_Initialized(int *flag)
{
    if (!runtime.hidden_world)
        return PMPI_Initialized(flag);
    *flag = 0;
    return MPI_SUCCESS;
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
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Comm_rank(comm, rank);
    *rank = gc_comm_group_rank(c);
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
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
    return PMPI_Abort(gc_comm_is_grid(comm) ? gc_world.site_world : comm,
                      errorcode);
}

int MPI_Finalize(void)
{
    GC_ENTER();
    if (gc_world.active && runtime.world_model) {
        runtime.world_model = 0;
        gc_runtime_leave(1);
    }
    return PMPI_Finalize();
}
