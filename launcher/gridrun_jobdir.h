/*
 * gridrun's job directories on disk: the lock a running job holds on its
 * own, safe removal, and the clean-up that keeps only the last few failed
 * jobs' directories (--keep-failed).
 */
#ifndef GRIDRUN_JOBDIR_H
#define GRIDRUN_JOBDIR_H

#include <stdint.h>

/* In every job directory: held with flock(LOCK_EX) by the gridrun that
 * runs the job, for as long as it runs. */
#define GR_JOBDIR_LOCK "gridrun.lock"
/* In a failed job's directory: made when gridrun keeps it for the user;
 * its mtime orders the failed jobs for --keep-failed. */
#define GR_JOBDIR_FAILED "gridrun.failed"

/* Create GR_JOBDIR_LOCK in `dir` and lock it; the descriptor (close it
 * after the directory is gone or handed to the user), or -1 with errno. */
int gr_jobdir_lock(const char *dir);

/* Mark `dir` as a failed job's, for gr_jobdir_prune.  0 or -1 with errno. */
int gr_jobdir_mark_failed(const char *dir);

/* Remove job directory `dir` (a gridrun-XXXXXX in `base`) and everything
 * in it, never following a symbolic link.  0 or -1 with errno. */
int gr_jobdir_remove(const char *base, const char *dir);

/*
 * Keep the `keep` newest failed job directories in `base` (gridrun-XXXXXX
 * of ours, with GR_JOBDIR_FAILED), `own` among them when it is one, and
 * remove the others, skipping any whose lock another gridrun holds.
 * Returns how many were removed, or -1 with errno when `base` cannot be
 * read.
 */
int gr_jobdir_prune(const char *base, const char *own, uint32_t keep);

#endif
