/* TAP devices inside network namespaces (netns.h). */
#ifndef TAP_H
#define TAP_H

#include <stddef.h>
#include <stdint.h>

struct tap_config {
    const char *ns;     /* existing namespace */
    const char *ifname; /* device name inside it */
    uint32_t mtu;
    uint32_t addr; /* IPv4, host byte order */
    unsigned prefix_len;
};

/* Frames the kernel queues for gridwan on each TAP: at 1 Gbit/s about
 * 120 ms of full frames, so a gridwan that is not scheduled for a while
 * delays frames instead of losing them. */
#define TAP_TX_QUEUE_LEN 10000

struct tap {
    int fd; /* frames; non-blocking, close-on-exec */
    /* The namespace's /proc/net/dev, opened inside it: the kernel's
     * counters of the device, readable from any namespace later. */
    int stats_fd;
};

/*
 * Create a TAP device inside the namespace (entered and left again with
 * setns, so the caller must be single-threaded), give it the MTU, the
 * address and TAP_TX_QUEUE_LEN, and bring it and the namespace's loopback
 * up.  The device lives as long as tap->fd: closing it removes the device.
 * 0, or -1 with a reason in `err`.
 */
int tap_open_in_ns(const struct tap_config *cfg, struct tap *tap, char *err,
                   size_t err_len);
void tap_close(struct tap *tap);

/* Frames the kernel dropped on their way to gridwan because the device's
 * queue was full: 0 and *dropped, or -1. */
int tap_tx_dropped(const struct tap *tap, const char *ifname,
                   uint64_t *dropped);

#endif
