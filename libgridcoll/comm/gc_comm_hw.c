/*
 * The site as an MPI-4 hardware level (MPI 4.1 §7.4.2,
 * MPI_Comm_split_type), and the info of grid communicators.
 *
 * Levels, from the top: the grid (a communicator spanning sites), the
 * site ("gridcoll://site", one communicator per site), the node (MPICH's
 * shared-memory level, "mpi_shared_memory"), then MPICH's own levels
 * below.  MPI_COMM_TYPE_HW_UNGUIDED gives the next level down that is a
 * strict subset of the communicator, and names it in the new
 * communicator's info key mpi_hw_resource_type; MPI_COMM_TYPE_HW_GUIDED
 * with that key set to "gridcoll://site" splits by site.  A site's part
 * of a grid communicator is a plain MPICH communicator (gc_comm_create.c),
 * so the level name is kept as an attribute of the layer's on the new
 * communicator, which MPI_Comm_get_info reports.
 */
#include <stdint.h>
#include <string.h>

#include "comm/gc_comm_create.h"
#include "comm/gc_group.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"

#define HW_KEY       "mpi_hw_resource_type"
#define HW_SITE      "gridcoll://site"
#define HW_NODE      "mpi_shared_memory"
#define HW_VALUE_MAX 64

/* The level a communicator was split at (a static string), by handle. */
static int hw_keyval = MPI_KEYVAL_INVALID;

static int hw_level_set(MPI_Comm comm, const char *level)
{
    if (hw_keyval == MPI_KEYVAL_INVALID) {
        int status = PMPI_Comm_create_keyval(
            MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &hw_keyval, NULL);
        if (status != MPI_SUCCESS)
            return status;
    }
    return PMPI_Comm_set_attr(comm, hw_keyval, (void *)level);
}

static const char *hw_level(MPI_Comm comm)
{
    const char *level = NULL;
    int flag = 0;
    if (hw_keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(comm, hw_keyval, &level, &flag) != MPI_SUCCESS ||
        !flag)
        return NULL;
    return level;
}

/*
 * The new communicator's level, in its info and, as MPICH does for
 * MPI_COMM_TYPE_HW_UNGUIDED, in the info the program passed (MPI 4.0
 * §7.4.2 says the key is "set" without naming the object).
 */
static int hw_level_report(MPI_Comm newcomm, MPI_Info info, const char *level)
{
    int status = hw_level_set(newcomm, level);
    if (status == MPI_SUCCESS && info != MPI_INFO_NULL)
        status = PMPI_Info_set(info, HW_KEY, level);
    return status;
}

/* Grid communicator c split by site: this site's members, in c's order
 * for equal keys, a plain MPICH communicator. */
static int split_by_site(struct gc_comm *c, int key, MPI_Info info,
                         MPI_Comm *newcomm, const char *function)
{
    int status = gc_comm_split_grid(c, gc_world.site_index, key, MPI_SUCCESS,
                                    newcomm, function);
    if (status == MPI_SUCCESS)
        status = hw_level_report(*newcomm, info, HW_SITE);
    return status;
}

#ifdef MPIX_COMM_TYPE_NEIGHBORHOOD
/* FNV-1a: the same value gives the same hash on every member. */
static uint64_t hint_hash(const char *value)
{
    uint64_t h = 14695981039346656037u;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

/*
 * MPICH's MPIX_COMM_TYPE_NEIGHBORHOOD on grid communicator c, by MPICH's
 * rules (src/mpi/comm/comm_split_type_nbhd.c): the members sharing the
 * directory info key nbhd_common_dirname names, when every member names
 * the same one; else the network level network_topo names, when every
 * member names the same one (or none); else MPI_COMM_NULL.  Members agree
 * over the whole communicator; the split itself is MPICH's on this site's
 * part, with only the chosen key: a file system or a switch is taken
 * never to span sites.
 */
static int split_neighborhood(struct gc_comm *c, int key, MPI_Info info,
                              MPI_Comm *newcomm)
{
    static const char *const keys[] = {"nbhd_common_dirname", "network_topo"};
    char value[2][MPI_MAX_INFO_VAL + 1];
    int set[2] = {0, 0};
    /* Each key's hash and its complement, by MPI_MAX: the maxima are the
     * member's own pair exactly when every member has the same hash. */
    uint64_t hashes[4];
    for (int k = 0; k < 2; k++) {
        if (info == MPI_INFO_NULL ||
            PMPI_Info_get(info, keys[k], MPI_MAX_INFO_VAL, value[k], &set[k]) !=
                MPI_SUCCESS ||
            !set[k]) {
            set[k] = 0;
            value[k][0] = '\0';
        }
        hashes[2 * k] = hint_hash(value[k]);
        hashes[2 * k + 1] = ~hashes[2 * k];
    }
    uint64_t most[4];
    memcpy(most, hashes, sizeof most);
    int status =
        MPI_Allreduce(MPI_IN_PLACE, most, 4, MPI_UINT64_T, MPI_MAX, c->handle);
    if (status != MPI_SUCCESS)
        return status;
    int equal[2];
    for (int k = 0; k < 2; k++)
        equal[k] = most[2 * k] == hashes[2 * k] &&
                   most[2 * k + 1] == hashes[2 * k + 1];
    int chosen = equal[0] && set[0] ? 0 : equal[1] && set[1] ? 1 : -1;
    *newcomm = MPI_COMM_NULL;
    if (chosen < 0)
        return MPI_SUCCESS;
    MPI_Info only = MPI_INFO_NULL;
    status = PMPI_Info_create(&only);
    if (status == MPI_SUCCESS)
        status = PMPI_Info_set(only, keys[chosen], value[chosen]);
    if (status == MPI_SUCCESS) {
        unsigned held = gc_block_begin();
        status = PMPI_Comm_split_type(c->local, MPIX_COMM_TYPE_NEIGHBORHOOD,
                                      key, only, newcomm);
        gc_block_end(held);
    }
    if (only != MPI_INFO_NULL)
        PMPI_Info_free(&only);
    return status;
}
#endif

/*
 * Unguided split of a communicator on this site alone: the node level
 * when the communicator spans nodes (every member's node is then a strict
 * subset of it, so all members agree), MPICH's levels below otherwise.
 */
static int split_site_unguided(MPI_Comm comm, int key, MPI_Info info,
                               MPI_Comm *newcomm)
{
    int size, node_size;
    int status =
        PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, key, info, newcomm);
    if (status != MPI_SUCCESS)
        return status;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_size(*newcomm, &node_size);
    if (node_size < size)
        return hw_level_report(*newcomm, info, HW_NODE);
    PMPI_Comm_free(newcomm);
    return PMPI_Comm_split_type(comm, MPI_COMM_TYPE_HW_UNGUIDED, key, info,
                                newcomm);
}

/* The value of mpi_hw_resource_type in info, "" when absent. */
static void guided_type(MPI_Info info, char value[HW_VALUE_MAX + 1])
{
    int flag = 0;
    value[0] = '\0';
    if (info != MPI_INFO_NULL && (PMPI_Info_get(info, HW_KEY, HW_VALUE_MAX,
                                                value, &flag) != MPI_SUCCESS ||
                                  !flag))
        value[0] = '\0';
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                        MPI_Comm *newcomm)
{
    GC_ENTER();
    static const char function[] = "MPI_Comm_split_type";
    char value[HW_VALUE_MAX + 1];
    struct gc_comm *c = gc_comm_find(comm);
    int guided_site = 0;
    if (split_type == MPI_COMM_TYPE_HW_GUIDED && gc_world.active) {
        guided_type(info, value);
        guided_site = strcmp(value, HW_SITE) == 0;
    }
    if (c == NULL) {
        GC_LEAVE(); /* MPICH's alone from here, and it blocks */
        /* On this site alone: the site is the whole communicator. */
        if (guided_site && comm != MPI_COMM_NULL) {
            int status = PMPI_Comm_split(comm, 0, key, newcomm);
            return status == MPI_SUCCESS
                       ? hw_level_report(*newcomm, info, HW_SITE)
                       : status;
        }
        if (split_type == MPI_COMM_TYPE_HW_UNGUIDED && gc_world.active &&
            comm != MPI_COMM_NULL)
            return split_site_unguided(comm, key, info, newcomm);
        return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    }
    if (c->inter != NULL)
        return gc_unsupported(comm,
                              "MPI_Comm_split_type on an intercommunicator");
    if (newcomm == NULL)
        return gc_error(comm, MPI_ERR_ARG, function, "newcomm is NULL");
    if (split_type == MPI_COMM_TYPE_HW_UNGUIDED || guided_site)
        return split_by_site(c, key, info, newcomm, function);
#ifdef MPIX_COMM_TYPE_NEIGHBORHOOD
    if (split_type == MPIX_COMM_TYPE_NEIGHBORHOOD)
        return split_neighborhood(c, key, info, newcomm);
#endif
    /* The other types (shared memory, MPICH's hardware levels, unknown
     * resource types: MPI_COMM_NULL) split within a node, so within this
     * site: MPICH's answer on this site's part is the answer (MPI_UNDEFINED
     * included), and its order is the parent's rank order for equal
     * keys. */
    unsigned held = gc_block_begin();
    int status = PMPI_Comm_split_type(c->local, split_type, key, info, newcomm);
    gc_block_end(held);
    return status;
}

/*
 * Hints of a grid communicator: MPICH keeps those the program set on the
 * handle (its part on this site), and applies them to this site's
 * traffic; across sites the layer honours none of MPICH's own (vci,
 * multi_nic_*), so it reports the mpi_assert_* the program set.  Every
 * communicator split at a hardware level also reports the level.
 */
int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    GC_ENTER();
    static const char assert_prefix[] = "mpi_assert_";
    MPI_Info mpich = MPI_INFO_NULL;
    int nkeys = 0;
    int status = PMPI_Comm_get_info(comm, &mpich);
    if (status != MPI_SUCCESS)
        return status;
    if (!gc_comm_is_grid(comm)) {
        *info_used = mpich;
    } else {
        status = PMPI_Info_create(info_used);
        if (status == MPI_SUCCESS)
            status = PMPI_Info_get_nkeys(mpich, &nkeys);
        for (int k = 0; k < nkeys && status == MPI_SUCCESS; k++) {
            char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
            int flag = 0;
            status = PMPI_Info_get_nthkey(mpich, k, key);
            if (status != MPI_SUCCESS ||
                strncmp(key, assert_prefix, sizeof assert_prefix - 1) != 0)
                continue;
            status = PMPI_Info_get(mpich, key, MPI_MAX_INFO_VAL, value, &flag);
            if (status == MPI_SUCCESS && flag)
                status = PMPI_Info_set(*info_used, key, value);
        }
        PMPI_Info_free(&mpich);
    }
    const char *level = hw_level(comm);
    if (status == MPI_SUCCESS && level != NULL)
        status = PMPI_Info_set(*info_used, HW_KEY, level);
    return status;
}
