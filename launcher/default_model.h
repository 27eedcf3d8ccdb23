/*
 * gridrun's default performance model (docs/model.md): `gridrun --probe`
 * writes the model of a layout into the model directory, and every later
 * job on the same layout finds it there.  One file per layout, named by a
 * hash of the layout's description; the file records the description in a
 * comment (gridcoll-probe --layout), so whoever reads it can tell which
 * layout it belongs to.
 */
#ifndef GRIDRUN_DEFAULT_MODEL_H
#define GRIDRUN_DEFAULT_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "gridrun_job.h"

/*
 * The layout's description, one line: every site's name and rank count;
 * `wan`, --wan's items in a fixed key order ("" = no emulated WAN); in
 * machine-file mode also every site's relay host, its wan= and local=
 * endpoints and the hosts that get ranks.  Malloc'd; NULL when out of
 * memory.
 */
char *dm_layout(const struct gr_job *job, bool machine_file, const char *wan);

/*
 * The model directory as an absolute path: $GRIDCOLL_MODEL_DIR, else
 * $XDG_CACHE_HOME/gridcoll (when absolute, as the XDG base directory
 * specification asks), else $HOME/.cache/gridcoll.  0, or -1 with the
 * reason in `err`.
 */
int dm_dir(char *out, size_t len, char *err, size_t err_len);

/* DIR/model-HASH.cfg, HASH 16 hex digits of FNV-1a over `layout`; 0, or
 * -1 when it does not fit. */
int dm_path(const char *dir, const char *layout, char *out, size_t len);

/* Make `dir` and its missing parents with mode 0700; 0, or -1 with errno
 * set. */
int dm_make_dir(const char *dir);

#endif
