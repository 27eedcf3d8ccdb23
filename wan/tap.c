#include "tap.h"

#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((format(printf, 3, 4))) static void
set_err(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static int set_flag_up(int sock, const char *ifname)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) == -1)
        return -1;
    ifr.ifr_flags |= IFF_UP;
    return ioctl(sock, SIOCSIFFLAGS, &ifr);
}

static void set_sockaddr(struct sockaddr *sa, uint32_t addr)
{
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(addr);
    memcpy(sa, &in, sizeof in);
}

/* The device's settings, made through a socket of the namespace we are
 * in; the old ioctls need no netlink code for this. */
static int configure(const struct tap_config *cfg, char *err, size_t err_len)
{
    int status = -1;
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock == -1) {
        set_err(err, err_len, "socket: %s", strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", cfg->ifname);
    ifr.ifr_mtu = (int)cfg->mtu;
    if (ioctl(sock, SIOCSIFMTU, &ifr) == -1) {
        set_err(err, err_len, "MTU %u: %s", cfg->mtu, strerror(errno));
        goto cleanup;
    }
    ifr.ifr_qlen = TAP_TX_QUEUE_LEN;
    if (ioctl(sock, SIOCSIFTXQLEN, &ifr) == -1) {
        set_err(err, err_len, "queue length: %s", strerror(errno));
        goto cleanup;
    }
    /* The address first (it gets a classful mask), then the mask, which
     * also sets the broadcast address and the subnet route. */
    set_sockaddr(&ifr.ifr_addr, cfg->addr);
    if (ioctl(sock, SIOCSIFADDR, &ifr) == -1) {
        set_err(err, err_len, "address: %s", strerror(errno));
        goto cleanup;
    }
    set_sockaddr(&ifr.ifr_netmask, ~0u << (32 - cfg->prefix_len));
    if (ioctl(sock, SIOCSIFNETMASK, &ifr) == -1) {
        set_err(err, err_len, "netmask: %s", strerror(errno));
        goto cleanup;
    }
    if (set_flag_up(sock, cfg->ifname) == -1 || set_flag_up(sock, "lo") == -1) {
        set_err(err, err_len, "link up: %s", strerror(errno));
        goto cleanup;
    }
    status = 0;
cleanup:
    close(sock);
    return status;
}

int tap_open_in_ns(const struct tap_config *cfg, struct tap *tap, char *err,
                   size_t err_len)
{
    int status = -1;
    int home = -1;
    int target = -1;
    bool entered = false;
    char path[PATH_MAX];
    tap->fd = -1;
    tap->stats_fd = -1;

    home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home == -1) {
        set_err(err, err_len, "/proc/self/ns/net: %s", strerror(errno));
        goto cleanup;
    }
    if (netns_path(cfg->ns, path, sizeof path) != 0) {
        set_err(err, err_len, "namespace name too long: %s", cfg->ns);
        goto cleanup;
    }
    target = open(path, O_RDONLY | O_CLOEXEC);
    if (target == -1) {
        set_err(err, err_len, "%s: %s", path, strerror(errno));
        goto cleanup;
    }
    if (setns(target, CLONE_NEWNET) == -1) {
        set_err(err, err_len, "setns %s: %s", path, strerror(errno));
        goto cleanup;
    }
    entered = true;

    /* Opened inside the namespace, so the device is born there. */
    tap->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (tap->fd == -1) {
        set_err(err, err_len, "/dev/net/tun: %s", strerror(errno));
        goto cleanup;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", cfg->ifname);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(tap->fd, TUNSETIFF, &ifr) == -1) {
        set_err(err, err_len, "TAP %s: %s", cfg->ifname, strerror(errno));
        goto cleanup;
    }
    if (configure(cfg, err, err_len) != 0)
        goto cleanup;
    tap->stats_fd = open("/proc/self/net/dev", O_RDONLY | O_CLOEXEC);
    if (tap->stats_fd == -1) {
        set_err(err, err_len, "/proc/self/net/dev: %s", strerror(errno));
        goto cleanup;
    }
    status = 0;
cleanup:
    if (entered && setns(home, CLONE_NEWNET) == -1) {
        set_err(err, err_len, "cannot return to the original namespace: %s",
                strerror(errno));
        status = -1;
    }
    if (home != -1)
        close(home);
    if (target != -1)
        close(target);
    if (status != 0)
        tap_close(tap);
    return status;
}

void tap_close(struct tap *tap)
{
    if (tap->fd != -1)
        close(tap->fd);
    if (tap->stats_fd != -1)
        close(tap->stats_fd);
    tap->fd = tap->stats_fd = -1;
}

int tap_tx_dropped(const struct tap *tap, const char *ifname, uint64_t *dropped)
{
    /* Two header lines and one line per device of the namespace. */
    char text[16384];
    ssize_t n = pread(tap->stats_fd, text, sizeof text - 1, 0);
    if (n == -1)
        return -1;
    text[n] = '\0';
    char key[IFNAMSIZ + 2];
    snprintf(key, sizeof key, "%s:", ifname);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        line += strspn(line, " ");
        if (strncmp(line, key, strlen(key)) != 0)
            continue;
        /* Receive: bytes packets errs drop fifo frame compressed
         * multicast; transmit: bytes packets errs drop ... */
        unsigned long long v[12];
        if (sscanf(line + strlen(key),
                   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                   "%llu",
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                   &v[8], &v[9], &v[10], &v[11]) != 12)
            return -1;
        *dropped = v[11];
        return 0;
    }
    return -1;
}
