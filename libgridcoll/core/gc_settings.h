/*
 * libgridcoll's environment: one table of every GRIDCOLL_* variable the
 * library reads (gc_settings.c), parsed once at MPI_Init into typed values
 * that the rest of the library reads through the accessors below, and
 * printed by `gridcoll-info --settings` (docs/gridcoll.md, "Settings").
 *
 * Before gc_settings_load, and for a variable that is unset or empty, an
 * accessor returns the variable's default.
 */
#ifndef GC_SETTINGS_H
#define GC_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/gc_coll_kind.h"
#include "core/gc_world.h"
#include "patterns/gc_sched.h"

/* Defaults of the settings table (the node layer prints its own too). */
/* Kumar & Kale, section 4.5: a larger k sends from the NIC more often;
 * 8 = 2 * 4^1 keeps kShift's +k shift and kPrefix's ring congestion free
 * by Lemma 6, and is a power of two as kPrefix needs. */
#define GC_SETTINGS_ALLGATHER_K_DEFAULT    8
#define GC_SETTINGS_SHM_BYTES_DEFAULT      ((size_t)4 << 20)
#define GC_SETTINGS_RNDV_THRESHOLD_DEFAULT ((size_t)64 << 10)
#define GC_SETTINGS_EAGER_WINDOW_DEFAULT   ((size_t)32 << 20)
#define GC_SETTINGS_RNDV_PUSH_MS_DEFAULT   2000

/*
 * Parse the environment (MPI_Init, MPI_Session_init; again on every call).
 * 0, or -1 after printing one line to stderr per malformed variable,
 * naming it, its value and what it should be, and per variable gridrun
 * should have set but did not.
 */
int gc_settings_load(void);

/*
 * The table as documentation (gridcoll-info --settings): name, type,
 * default, the value in this process's environment when set (flagged when
 * malformed) and the text.  `markdown`: the same as one Markdown table,
 * for docs/gridcoll.md.
 */
/*
 * For the listing, what a collective's variables accept, from the tables
 * of coll/select/ (settings know no algorithm): writes into out what
 * variable `variable` of collective `kind` (-1: a site level's variable)
 * takes, its algorithm names (`algorithm`) or its default; 0 when there
 * is nothing to say.
 */
typedef int gc_settings_note_fn(const char *variable, int kind, int algorithm,
                                char *out, size_t size);
void gc_settings_print(FILE *out, int markdown, gc_settings_note_fn *note);
/* Bytes with an optional K, M or G suffix (powers of 1024), not 0:
 * 0, else -1. */
int gc_settings_parse_size(const char *text, size_t *value);

/* ---- set by gridrun ------------------------------------------------------ */

/* The job's sites from GRIDCOLL_SITES (count, 0 when unset: not a grid
 * job) and *sites their list in grid order. */
int gc_settings_sites(const struct gc_site **sites);
/* GRIDCOLL_SITE_INDEX, _SITE_OFFSET, _SITE_SIZE, GRIDCOLL_WORLD_SIZE. */
int gc_settings_site_index(void);
int gc_settings_site_offset(void);
int gc_settings_site_size(void);
int gc_settings_world_size(void);
/* GRIDCOLL_APPNUM, -1 when unset. */
int gc_settings_appnum(void);
/* GRIDCOLL_JOB_ID, GRIDCOLL_RELAY, GRIDCOLL_TOKEN_FILE (NULL: unset). */
uint32_t gc_settings_job_id(void);
const char *gc_settings_relay(void);
const char *gc_settings_token_file(void);
/* GRIDCOLL_FATTREE: this site's fat tree, NULL when none. */
const struct gc_sched_fattree *gc_settings_fattree(void);
/* GRIDCOLL_MODEL: the performance model's file, NULL when none. */
const char *gc_settings_model(void);

/* ---- chosen by the user -------------------------------------------------- */

/*
 * The algorithm named by an algorithm-forcing variable, `name` one of
 * GRIDCOLL_<COLL> (a collective table's grid level) or GRIDCOLL_{BCAST,
 * ALLREDUCE,ALLGATHER,ALLTOALL}_LOCAL (a table's site level); NULL when
 * unset.  Checked against the algorithm tables where they are used, not
 * here.
 */
const char *gc_settings_algorithm(const char *name);
/* GRIDCOLL_<COLL>_SEGSIZE of collective `kind` (enum gc_coll_kind), 0 when
 * unset (then the
 * table's default_segsize). */
size_t gc_settings_segsize(enum gc_coll_kind kind);
/* GRIDCOLL_STATS. */
int gc_settings_stats(void);
/* GRIDCOLL_ALLGATHER_K. */
int gc_settings_allgather_k(void);
/* GRIDCOLL_SHM_BYTES. */
size_t gc_settings_shm_bytes(void);
/* GRIDCOLL_NODE_SIZE=K[,cyclic]: *k = 0 when unset (real nodes). */
void gc_settings_node_size(int *k, int *cyclic);
/*
 * GRIDCOLL_ASYNC_PROGRESS: 1 when a progress thread should drive the
 * relay session and the collective schedules while the program computes
 * outside MPI.
 */
int gc_settings_async_progress(void);
/* GRIDCOLL_RNDV_THRESHOLD: a point-to-point message to another site
 * larger than this waits for its receive (gc_p2p_rndv.c). */
size_t gc_settings_rndv_threshold(void);
/* GRIDCOLL_EAGER_WINDOW: eager bytes a process may have sent to another
 * that its receives have not yet taken, at least the threshold. */
size_t gc_settings_eager_window(void);
/* GRIDCOLL_RNDV_PUSH_MS: how long a rendezvous send waits for a sign of
 * its receiver before it sends its data unasked; 0: never. */
int gc_settings_rndv_push_ms(void);

#endif
