/*
 * Network namespaces by name, kept by `ip netns` under /run/netns, and the
 * privileges that making them and their devices needs.  Shared by gridwan
 * and by gridrun, which places its sites in namespaces behind gridwan.
 */
#ifndef NETNS_H
#define NETNS_H

#include <stddef.h>

#define NETNS_DIR "/run/netns"

/* NETNS_DIR/NAME into `out`: 0, or -1 when it does not fit. */
int netns_path(const char *name, char *out, size_t len);
/* 1 when namespace `name` exists, 0 when not, -1 on error (errno set). */
int netns_exists(const char *name);
/* `ip netns add NAME` and `ip netns delete NAME`: 0, or -1 (ip has said
 * why on stderr). */
int netns_add(const char *name);
int netns_delete(const char *name);

/* CAP_NET_ADMIN (TAP devices) and CAP_SYS_ADMIN (namespaces, setns) in the
 * effective set: 0, or -1 after one line on stderr, "WHO: needs CAP_...",
 * that names the missing capability. */
int netns_check_privileges(const char *who);

#endif
