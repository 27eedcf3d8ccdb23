#include "netns.h"

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int netns_path(const char *name, char *out, size_t len)
{
    int n = snprintf(out, len, NETNS_DIR "/%s", name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int netns_exists(const char *name)
{
    char path[sizeof NETNS_DIR + 256];
    if (netns_path(name, path, sizeof path) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0)
        return 1;
    return errno == ENOENT ? 0 : -1;
}

/* Run `ip ARGS...` and wait for it; 0 when it exits with status 0. */
static int run_ip(const char *const args[])
{
    /* Callers block their stop signals while they set up and tear down,
     * and ignore SIGPIPE; ip must inherit neither. */
    posix_spawnattr_t attr;
    sigset_t none, pipe;
    sigemptyset(&none);
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (posix_spawnattr_init(&attr) != 0)
        return -1;
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc =
        posix_spawnp(&pid, "ip", NULL, &attr, (char *const *)args, environ);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot run ip: %s\n",
                program_invocation_short_name, strerror(rc));
        return -1;
    }
    int wstatus;
    while (waitpid(pid, &wstatus, 0) == -1)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 ? 0 : -1;
}

int netns_add(const char *name)
{
    const char *args[] = {"ip", "netns", "add", name, NULL};
    return run_ip(args);
}

int netns_delete(const char *name)
{
    const char *args[] = {"ip", "netns", "delete", name, NULL};
    return run_ip(args);
}

/* 1 when the effective set holds `cap`, 0 when not, -1 on error. */
static int has_capability(unsigned cap)
{
    struct __user_cap_header_struct header = {
        .version = _LINUX_CAPABILITY_VERSION_3,
        .pid = 0,
    };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &header, data) == -1)
        return -1;
    return (int)((data[cap / 32].effective >> (cap % 32)) & 1);
}

int netns_check_privileges(const char *who)
{
    static const struct {
        unsigned cap;
        const char *name;
        const char *why;
    } needed[] = {
        {CAP_NET_ADMIN, "CAP_NET_ADMIN", "TAP devices"},
        {CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "network namespaces"},
    };
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        int has = has_capability(needed[i].cap);
        if (has == -1) {
            fprintf(stderr, "%s: capget: %s\n", who, strerror(errno));
            return -1;
        }
        if (!has) {
            fprintf(stderr, "%s: needs %s for its %s: run it as root\n", who,
                    needed[i].name, needed[i].why);
            return -1;
        }
    }
    return 0;
}
