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
#include <string.h>

#include "gc_group.h"

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
        return gc_report(comm, MPI_ERR_ARG, function, "newcomm is NULL");
    if (split_type == MPI_COMM_TYPE_HW_UNGUIDED || guided_site)
        return split_by_site(c, key, info, newcomm, function);
#ifdef MPIX_COMM_TYPE_NEIGHBORHOOD
    if (split_type == MPIX_COMM_TYPE_NEIGHBORHOOD)
        return gc_unsupported(
            comm, "MPI_Comm_split_type with MPIX_COMM_TYPE_NEIGHBORHOOD");
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
