/*
 * The forwarding database of gridwan's learning switch: which port (site)
 * a MAC address was last seen on.  Fixed size, no aging: the namespaces
 * behind the ports hold a handful of addresses, and an address that moves
 * is re-learnt from its next frame.
 */
#ifndef FDB_H
#define FDB_H

#include <stdint.h>

#define FDB_SLOTS 1024 /* power of two */
/* Learning stops at this many addresses (unknown ones are flooded), so
 * open addressing always finds a free slot quickly. */
#define FDB_MAX_ENTRIES (FDB_SLOTS * 3 / 4)

struct fdb_entry {
    uint8_t mac[6];
    uint8_t used;
    uint8_t port;
};

struct fdb {
    struct fdb_entry slot[FDB_SLOTS];
    unsigned count;
};

void fdb_init(struct fdb *fdb);
/* Record that `mac` (a frame's source) is behind `port`; group addresses
 * are never sources and are ignored. */
void fdb_learn(struct fdb *fdb, const uint8_t mac[6], unsigned port);
/* The port of `mac`, or -1 when unknown or a group address (flood). */
int fdb_lookup(const struct fdb *fdb, const uint8_t mac[6]);

#endif
