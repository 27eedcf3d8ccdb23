/*
 * Job directories: every one holds GR_JOBDIR_LOCK, which its gridrun
 * keeps locked while the job runs.  After a failure, gridrun keeps the
 * directory for the user and removes the oldest failed ones beyond
 * --keep-failed; without that, a sweep of benchmarks with expected
 * failures leaves one directory per failure behind.
 *
 * What may be removed is decided carefully, since the directory they
 * live in (/tmp) is shared: only directories named as mkdtemp names
 * ours, owned by us, holding a lock file nobody holds and the failure
 * mark; everything is opened relative to a descriptor with O_NOFOLLOW,
 * so a symbolic link planted in place of a directory or file is never
 * followed, only removed as the link it is.
 */
#include "gridrun_jobdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_PREFIX "gridrun-"
/* Directories within a job directory: gridrun makes none, so anything
 * deeper than this is not a job directory's. */
#define MAX_DEPTH 8
/* Passes over a directory while removing it: readdir need not return
 * entries of a directory being changed. */
#define MAX_PASSES 4

struct failed_dir {
    char name[sizeof(NAME_PREFIX) + 6];
    struct timespec when;
};

int gr_jobdir_lock(const char *dir)
{
    int fd = -1, saved = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    fd = openat(dfd, GR_JOBDIR_LOCK,
                O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    /* A fresh file nobody else can have opened yet: cannot block. */
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
        goto cleanup;
    close(dfd);
    return fd;
cleanup:
    saved = errno;
    if (fd >= 0)
        close(fd);
    close(dfd);
    errno = saved;
    return -1;
}

int gr_jobdir_mark_failed(const char *dir)
{
    int status = -1, saved = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    int fd =
        openat(dfd, GR_JOBDIR_FAILED,
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        goto cleanup;
    status = close(fd);
cleanup:
    saved = errno;
    close(dfd);
    errno = saved;
    return status;
}

/* "gridrun-" and the six letters or digits mkdtemp puts for XXXXXX. */
static bool is_job_dir_name(const char *name)
{
    size_t n = sizeof(NAME_PREFIX) - 1;
    if (strncmp(name, NAME_PREFIX, n) != 0 || strlen(name) != n + 6)
        return false;
    for (const char *p = name + n; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

/* A job directory of ours in `bfd`: a real directory (not a link to one)
 * owned by us.  Its descriptor, or -1. */
static int open_job_dir(int bfd, const char *name)
{
    int dfd =
        openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    struct stat st;
    if (fstat(dfd, &st) != 0 || st.st_uid != geteuid()) {
        close(dfd);
        errno = EPERM;
        return -1;
    }
    return dfd;
}

/* Remove everything in directory `dfd`; 0, or -1 with errno. */
static int remove_contents(int dfd, int depth)
{
    int status = 0;
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        int copy = dup(dfd);
        if (copy < 0)
            return -1;
        DIR *d = fdopendir(copy);
        if (d == NULL) {
            close(copy);
            return -1;
        }
        rewinddir(d);
        bool removed = false;
        status = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            struct stat st;
            if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue; /* gone meanwhile */
            int flags = 0;
            if (S_ISDIR(st.st_mode)) {
                int sub = depth < MAX_DEPTH ? openat(dfd, e->d_name,
                                                     O_RDONLY | O_DIRECTORY |
                                                         O_NOFOLLOW | O_CLOEXEC)
                                            : -1;
                if (sub < 0 || remove_contents(sub, depth + 1) != 0)
                    status = -1;
                if (sub >= 0)
                    close(sub);
                flags = AT_REMOVEDIR;
            }
            if (unlinkat(dfd, e->d_name, flags) == 0)
                removed = true;
            else if (errno != ENOENT)
                status = -1;
        }
        closedir(d);
        if (!removed)
            break;
    }
    return status;
}

/* Remove job directory `name` of `bfd`, whose lock `dfd`'s gridrun holds
 * (ours, or one we took). */
static int remove_dir_at(int bfd, const char *name, int dfd)
{
    if (remove_contents(dfd, 0) != 0)
        return -1;
    return unlinkat(bfd, name, AT_REMOVEDIR);
}

int gr_jobdir_remove(const char *base, const char *dir)
{
    const char *slash = strrchr(dir, '/');
    const char *name = slash != NULL ? slash + 1 : dir;
    int status = -1, saved = 0, dfd = -1;
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bfd < 0)
        return -1;
    dfd = open_job_dir(bfd, name);
    if (dfd < 0)
        goto cleanup;
    status = remove_dir_at(bfd, name, dfd);
cleanup:
    saved = errno;
    if (dfd >= 0)
        close(dfd);
    close(bfd);
    errno = saved;
    return status;
}

static int newest_first(const void *a, const void *b)
{
    const struct failed_dir *x = a, *y = b;
    if (x->when.tv_sec != y->when.tv_sec)
        return x->when.tv_sec > y->when.tv_sec ? -1 : 1;
    if (x->when.tv_nsec != y->when.tv_nsec)
        return x->when.tv_nsec > y->when.tv_nsec ? -1 : 1;
    return strcmp(y->name, x->name);
}

/* Remove failed job directory `name` unless a gridrun holds its lock:
 * taking the lock first means no gridrun can be using it, and none can
 * take it while we remove it.  1 removed, 0 left alone. */
static int remove_unlocked(int bfd, const char *name)
{
    int removed = 0;
    int lfd = -1;
    int dfd = open_job_dir(bfd, name);
    if (dfd < 0)
        goto cleanup;
    lfd = openat(dfd, GR_JOBDIR_LOCK, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) != 0)
        goto cleanup;
    removed = remove_dir_at(bfd, name, dfd) == 0;
cleanup:
    if (lfd >= 0)
        close(lfd);
    if (dfd >= 0)
        close(dfd);
    return removed;
}

int gr_jobdir_prune(const char *base, const char *own, uint32_t keep)
{
    const char *slash = own != NULL ? strrchr(own, '/') : NULL;
    const char *own_name = slash != NULL ? slash + 1 : own;
    struct failed_dir *found = NULL;
    size_t count = 0, cap = 0;
    int status = -1;
    DIR *d = NULL;
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bfd < 0)
        goto cleanup;
    int copy = dup(bfd);
    if (copy < 0)
        goto cleanup;
    d = fdopendir(copy);
    if (d == NULL) {
        close(copy);
        goto cleanup;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_job_dir_name(e->d_name) ||
            (own_name != NULL && strcmp(e->d_name, own_name) == 0))
            continue;
        int dfd = open_job_dir(bfd, e->d_name);
        if (dfd < 0)
            continue;
        struct stat st;
        bool failed =
            fstatat(dfd, GR_JOBDIR_FAILED, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode);
        close(dfd);
        if (!failed)
            continue;
        if (count == cap) {
            size_t ncap = cap ? 2 * cap : 32;
            struct failed_dir *n = realloc(found, ncap * sizeof(*found));
            if (n == NULL)
                goto cleanup;
            found = n;
            cap = ncap;
        }
        snprintf(found[count].name, sizeof(found[count].name), "%s", e->d_name);
        found[count].when = st.st_mtim;
        count++;
    }
    if (count > 0)
        qsort(found, count, sizeof(*found), newest_first);
    /* Our own directory, when it is a failed one, is the newest. */
    size_t others = own != NULL ? (keep > 0 ? keep - 1 : 0) : keep;
    status = 0;
    for (size_t i = others; i < count; i++)
        status += remove_unlocked(bfd, found[i].name);
cleanup:
    if (d != NULL)
        closedir(d);
    if (bfd >= 0) {
        int saved = errno;
        close(bfd);
        errno = saved;
    }
    free(found);
    return status;
}
