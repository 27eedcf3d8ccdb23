#include "fdb.h"

#include <string.h>

void fdb_init(struct fdb *fdb)
{
    memset(fdb, 0, sizeof *fdb);
}

static int is_group(const uint8_t mac[6])
{
    return mac[0] & 1;
}

static unsigned hash(const uint8_t mac[6])
{
    /* FNV-1a: the low bytes of locally administered MACs are often all
     * that differs. */
    uint32_t h = 2166136261u;
    for (int i = 0; i < 6; i++)
        h = (h ^ mac[i]) * 16777619u;
    return h & (FDB_SLOTS - 1);
}

/* The slot holding `mac`, or the free slot where it would go. */
static unsigned find(const struct fdb *fdb, const uint8_t mac[6])
{
    unsigned i = hash(mac);
    while (fdb->slot[i].used && memcmp(fdb->slot[i].mac, mac, 6) != 0)
        i = (i + 1) & (FDB_SLOTS - 1);
    return i;
}

void fdb_learn(struct fdb *fdb, const uint8_t mac[6], unsigned port)
{
    if (is_group(mac))
        return;
    struct fdb_entry *e = &fdb->slot[find(fdb, mac)];
    if (!e->used) {
        if (fdb->count == FDB_MAX_ENTRIES)
            return;
        memcpy(e->mac, mac, 6);
        e->used = 1;
        fdb->count++;
    }
    e->port = (uint8_t)port;
}

int fdb_lookup(const struct fdb *fdb, const uint8_t mac[6])
{
    if (is_group(mac))
        return -1;
    const struct fdb_entry *e = &fdb->slot[find(fdb, mac)];
    return e->used ? e->port : -1;
}
