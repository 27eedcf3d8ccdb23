/*
 * Machine files: which hosts a grid job may use, grouped into sites
 * (clusters), and each site's relay.  docs/machinefile.md is the user
 * documentation of the format.
 *
 *   # comment
 *   node01   slots=4 cluster=alpha
 *   node02   slots=4 cluster=alpha
 *   gw-alpha cluster=alpha relay wan=gw-alpha.example.org:7500
 *            local=10.0.0.1:7400          (continuation is NOT allowed:
 *                                           one host per line)
 *   node11   slots=8 cluster=beta
 *   gw-beta  cluster=beta relay wan=203.0.113.5:7500 connect=dial
 *   gw-gamma cluster=gamma relay service=gw-gamma.example.org:7443
 *            (a running gridrelay service; then every site names one)
 *   node12   cluster=beta program=./ocn -steps 10     (the rest of the line)
 *
 * Sites are ordered by first appearance; that order defines grid ranks
 * (site offset + local rank).
 */
#ifndef MACHINEFILE_H
#define MACHINEFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gc_sched.h"

#define MF_NAME_MAX     63
#define MF_HOST_MAX     255
#define MF_ENDPOINT_MAX 255

enum mf_connect {
    MF_CONNECT_AUTO = 0, /* the site whose name sorts first dials */
    MF_CONNECT_DIAL,     /* this site's relay dials its peers */
    MF_CONNECT_LISTEN,   /* peers dial this site's relay */
};

struct mf_host {
    char name[MF_HOST_MAX + 1];
    uint32_t slots; /* ranks this host may run; 0 on a pure relay host */
    int line;
};

struct mf_site {
    char name[MF_NAME_MAX + 1];
    int first_line;        /* line where the site first appears */
    struct mf_host *hosts; /* hosts with slots > 0, in file order */
    uint32_t host_count;
    uint32_t total_slots;

    /* The site's relay (exactly one per site). */
    char relay_host[MF_HOST_MAX + 1];
    char relay_wan[MF_ENDPOINT_MAX + 1];   /* host:port peers dial */
    char relay_local[MF_ENDPOINT_MAX + 1]; /* endpoint for ranks; "" =
                                              launcher's choice */
    enum mf_connect relay_connect;
    /* service=: the control endpoint (host:port or unix:/path) of the
     * site's running gridrelay service; "" = gridrun starts the relay. */
    char relay_service[MF_ENDPOINT_MAX + 1];
    bool relay_names_service; /* service= given, even with a bad value */
    int relay_line;

    /* The site network as a fat tree (fattree=M1,M2,... on any line of
     * the site, the same on every line that has it); 0 levels and line 0
     * when no line has it. */
    struct gc_sched_fattree fattree;
    int fattree_line; /* first line that gave it */

    /* The site's program= (MPMD): the rest of that line, split into words
     * (one malloc'd block); NULL and line 0 when no line has it. */
    char **program;
    int program_argc;
    int program_line;
};

struct machinefile {
    struct mf_site *sites; /* in order of first appearance */
    uint32_t site_count;
};

/*
 * Parse `path`.  Each problem is printed to `errors` as
 * "file:line: message" (all of them); returns 0 when the file is valid,
 * -1 otherwise (then `mf` holds nothing to free).  Errors: unknown key,
 * key without value or bad value, missing cluster=, a site with no relay,
 * a site with two relays, duplicate host (same name twice), slots not a
 * positive integer, relay line without wan=, bad endpoint syntax, bad
 * connect= value, bad fattree= list, lines of one site with different
 * fattree=, program= without a program or given twice for a site, a file
 * with no site.
 */
int machinefile_load(const char *path, struct machinefile *mf, FILE *errors);
void machinefile_free(struct machinefile *mf);

/*
 * Place `np` ranks on the sites' slots, site by site in file order (fill
 * site 0's slots, then site 1's, ...).  Writes ranks per site into
 * `ranks_per_site` (site_count entries).  Returns 0, or -1 with a reason
 * in `err` when np is 0 or exceeds the total number of slots.
 */
int machinefile_distribute(const struct machinefile *mf, uint32_t np,
                           uint32_t *ranks_per_site, char *err, size_t err_len);

#endif
