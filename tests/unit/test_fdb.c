/* gridwan's forwarding database: learning, moves, group addresses, and a
 * full table that floods instead of forgetting. */
#include "fdb.h"
#include "unit_check.h"

#include <stdio.h>
#include <string.h>

/* A locally administered unicast address numbered `n`. */
static void mac_of(unsigned n, uint8_t mac[6])
{
    uint8_t m[6] = {0x02,
                    0x00,
                    (uint8_t)(n >> 24),
                    (uint8_t)(n >> 16),
                    (uint8_t)(n >> 8),
                    (uint8_t)n};
    memcpy(mac, m, 6);
}

static struct fdb fdb;

int main(void)
{
    uint8_t a[6], b[6];
    mac_of(1, a);
    mac_of(2, b);
    fdb_init(&fdb);
    CHECK(fdb_lookup(&fdb, a) == -1, "empty table knows a");
    fdb_learn(&fdb, a, 0);
    fdb_learn(&fdb, b, 3);
    CHECK(fdb_lookup(&fdb, a) == 0, "a on %d", fdb_lookup(&fdb, a));
    CHECK(fdb_lookup(&fdb, b) == 3, "b on %d", fdb_lookup(&fdb, b));
    fdb_learn(&fdb, a, 2);
    CHECK(fdb_lookup(&fdb, a) == 2, "a did not move: %d", fdb_lookup(&fdb, a));
    CHECK(fdb.count == 2, "count %u", fdb.count);

    static const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t multicast[6] = {0x33, 0x33, 0, 0, 0, 1};
    fdb_learn(&fdb, broadcast, 1);
    fdb_learn(&fdb, multicast, 1);
    CHECK(fdb_lookup(&fdb, broadcast) == -1, "broadcast not flooded");
    CHECK(fdb_lookup(&fdb, multicast) == -1, "multicast not flooded");
    CHECK(fdb.count == 2, "group address learnt: count %u", fdb.count);

    /* Fill the table: known addresses stay, new ones are flooded. */
    for (unsigned i = 3; fdb.count < FDB_MAX_ENTRIES; i++) {
        uint8_t m[6];
        mac_of(i, m);
        fdb_learn(&fdb, m, i % 7);
    }
    uint8_t late[6];
    mac_of(1u << 20, late);
    fdb_learn(&fdb, late, 5);
    CHECK(fdb_lookup(&fdb, late) == -1, "learnt past the limit");
    CHECK(fdb_lookup(&fdb, b) == 3, "lost b when full");
    int all_found = 1;
    for (unsigned i = 3; i < FDB_MAX_ENTRIES + 1; i++) {
        uint8_t m[6];
        mac_of(i, m);
        all_found &= fdb_lookup(&fdb, m) == (int)(i % 7);
    }
    CHECK(all_found, "a learnt address was lost");
    return unit_check_report("");
}
