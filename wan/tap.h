/*
 * Network namespaces by name, kept by `ip netns` under /run/netns, and TAP
 * devices inside them.
 */
#ifndef TAP_H
#define TAP_H

#include <stddef.h>
#include <stdint.h>

/* 1 when namespace `name` exists, 0 when not, -1 on error (errno set). */
int netns_exists(const char *name);
/* `ip netns add NAME` and `ip netns delete NAME`: 0, or -1 (ip has said
 * why on stderr). */
int netns_add(const char *name);
int netns_delete(const char *name);

struct tap_config {
    const char *ns;     /* existing namespace */
    const char *ifname; /* device name inside it */
    uint32_t mtu;
    uint32_t addr; /* IPv4, host byte order */
    unsigned prefix_len;
};

/*
 * Create a TAP device inside the namespace (entered and left again with
 * setns, so the caller must be single-threaded), give it the MTU and the
 * address, and bring it and the namespace's loopback up.  The device lives
 * as long as the returned descriptor (non-blocking, close-on-exec): closing
 * it removes the device.  0 and *fd, or -1 with a reason in `err`.
 */
int tap_open_in_ns(const struct tap_config *cfg, int *fd, char *err,
                   size_t err_len);

#endif
