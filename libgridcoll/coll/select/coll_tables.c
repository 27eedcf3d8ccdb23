/*
 * The algorithm tables of the collectives, one per kind, each with its
 * grid and site algorithms and the rules that choose among them
 * (gc_coll_algo.h explains the scheme; gc_coll_select.c reads them).
 */
#include "coll/allgather/allgather_site.h"
#include "coll/alltoall/alltoall.h"
#include "coll/node_shm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_settings.h"

#define ALGOS(a) a, (int)(sizeof a / sizeof *a)

/* ---- conditions of the site rules ---------------------------------------- */

/* Where the shm phases were measured to win (docs/algorithms/README.md,
 * "Node level"); finding out makes the node layer's communicators. */
static int one_node_test(const struct coll_args *a, int *holds)
{
    return coll_node_default(a->comm, a->fn, holds);
}
static const struct coll_when one_node = {
    "the site has several members, all on one node", one_node_test};

static int power_of_two_test(const struct coll_args *a, int *holds)
{
    int n = a->comm->local_size;
    *holds = (n & (n - 1)) == 0;
    return MPI_SUCCESS;
}
static const struct coll_when power_of_two = {
    "the site's members are a power of two", power_of_two_test};

static int k_divides_test(const struct coll_args *a, int *holds)
{
    int n = a->comm->local_size, k = gc_settings_allgather_k();
    *holds = n % (k < n ? k : n) == 0;
    return MPI_SUCCESS;
}
static const struct coll_when k_divides = {
    "the site's members are a multiple of min(K, members) "
    "(GRIDCOLL_ALLGATHER_K)",
    k_divides_test};

/* ---- the tables ---------------------------------------------------------- */

/*
 * Grid algorithms first, then the site algorithms (designated
 * initializers: the grid's fields left out).  The site ones other than
 * mpich are blocking code or use the node layer, which serves one
 * collective at a time: blocking calls only.
 */

static const struct coll_algo barrier_algos[] = {
    {.name = "hier",
     .description =
         "local barrier, site leaders exchange one empty message each "
         "(one WAN latency), local barrier",
     .build = barrier_grid_hier},
};
static const struct coll_rule barrier_rules[] = {{0, 0, 0, "hier"}};

static const struct coll_algo bcast_algos[] = {
    {.name = "hier",
     .description =
         "MagPIe: the root sends the packed buffer to one leader per "
         "site in segments, each site broadcasts every segment locally "
         "as it arrives (one WAN latency)",
     .cost = bcast_grid_hier_cost,
     .segmented = 1,
     .build = bcast_grid_hier},
    {.name = "multilane",
     .description =
         "two binary trees per site, half the message each, leaves swap "
         "halves, trees chained site to site, pipelined in segments "
         "(each byte crosses each WAN link once)",
     .cost = bcast_grid_multilane_cost,
     .segmented = 1,
     .build = bcast_grid_multilane},
    {.name = "binomial",
     .description = "binomial tree over all ranks numbered site by site, whole "
                    "message per edge",
     .cost = bcast_grid_binomial_cost,
     .build = bcast_grid_binomial},
    {.name = "scatter_allgather",
     .description =
         "van de Geijn: binomial scatter of p blocks, ring allgather, "
         "ranks numbered site by site",
     .restrictions = "packed message up to 1 GiB",
     .usable = bcast_grid_scatter_allgather_usable,
     .cost = bcast_grid_scatter_allgather_cost,
     .build = bcast_grid_scatter_allgather},
    {.name = "chain",
     .description =
         "pipelined chain through all ranks, site by site, in segments "
         "(each byte crosses each WAN link once)",
     .cost = bcast_grid_chain_cost,
     .segmented = 1,
     .build = bcast_grid_chain},
    /* site: the local bcasts of hier */
    {.name = "shm",
     .description = "the source writes each segment into its node's shared "
                    "memory and sends it to the other node leaders, which "
                    "write it into theirs; node members copy it out, chunk "
                    "by chunk (bcast_site_shm.c)",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .node = 1},
    {.name = "mpich",
     .description = "PMPI_Ibcast of each segment among the site's members",
     .restrictions = "",
     .level = COLL_SITE},
};
/*
 * Small messages: hier's one WAN latency.  Larger ones: multilane, whose
 * sites each send M once where hier's root sends (S-1) M; with two sites
 * both send M once and hier's fewer hops win up to a few segments
 * (docs/algorithms/bcast.md has the measurements).
 */
static const struct coll_rule bcast_rules[] = {
    {0, 0, 64 * 1024, "hier"},
    {3, 0, 0, "multilane"},
    {0, 0, 256 * 1024, "hier"},
    {0, 0, 0, "multilane"},
    /* site: shm where it won on loopback, from 256 KiB (below it neither
     * won consistently; docs/algorithms/bcast.md, "Node level") */
    {0, 256 * 1024, 0, "shm", &one_node},
    {0, 0, 0, "mpich"},
};

static const struct coll_algo reduce_algos[] = {
    {.name = "hier",
     .description =
         "MagPIe: local reduce on every site, leaders send partial "
         "results to the root in segments, folded in rank order as they "
         "arrive (non-commutative op on interleaved sites: every "
         "contribution to the root)",
     .cost = reduce_grid_hier_cost,
     .segmented = 1,
     .build = reduce_grid_hier},
};
static const struct coll_rule reduce_rules[] = {{0, 0, 0, "hier"}};

/* Site-ordered folding of partial results is rank order for this op. */
static int op_partials_in_order(const struct coll_args *a, MPI_Op op)
{
    int in_order = 0;
    return coll_site_partials_ok(a->comm, op, &in_order) == MPI_SUCCESS &&
           in_order;
}

static int partials_in_order(const struct coll_args *a)
{
    return op_partials_in_order(a, a->u.reduce.op);
}

static int scatter_partials_in_order(const struct coll_args *a)
{
    return op_partials_in_order(a, a->u.reduce_scatter.op);
}

static int sites_contiguous(const struct coll_args *a)
{
    return coll_sites_contiguous(a->comm);
}

#define SITE_ORDER_RESTRICTION                                                 \
    "a non-commutative op only when every site's members are one "             \
    "contiguous range of ranks"

static const struct coll_algo allreduce_algos[] = {
    {.name = "reduce_bcast",
     .description = "hierarchical Reduce to rank 0, then hierarchical Bcast "
                    "(two WAN latencies)",
     .cost = allreduce_grid_reduce_bcast_cost,
     .build = allreduce_grid_reduce_bcast},
    {.name = "hier",
     .description =
         "local reduce, every leader sends its site's partial result to every "
         "other leader (one WAN latency), fold in site order, local bcast",
     .restrictions = SITE_ORDER_RESTRICTION,
     .usable = partials_in_order,
     .cost = allreduce_grid_hier_cost,
     .build = allreduce_grid_hier},
    {.name = "multileader",
     .description =
         "local reduce-scatter, every member exchanges its slice with the "
         "members of the other sites whose slices overlap it (segmented), "
         "fold, local allgather",
     .restrictions = SITE_ORDER_RESTRICTION,
     .usable = partials_in_order,
     .cost = allreduce_grid_multileader_cost,
     .segmented = 1,
     .build = allreduce_grid_multileader},
    /* site: the local reduce and bcast of hier, the reduce-scatter of
     * multileader */
    {.name = "shm",
     .description = "cyclic parallel reduction in each node's shared memory, "
                    "node leaders reduce over PMPI; the result back through "
                    "shared memory (reduce_site_shm.c, bcast_site_shm.c); "
                    "multileader: the same reduction as its reduce-scatter "
                    "when the site is one node",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .node = 1},
    {.name = "mpich",
     .description = "PMPI_Ireduce and PMPI_Ibcast (hier), "
                    "PMPI_Ireduce_scatter (multileader) on the site's members",
     .restrictions = "",
     .level = COLL_SITE},
};
/* hier while the WAN round decides: over the emulated WAN (20 ms, 1
 * Gbit/s) it was ahead up to 1 MiB on 2+2, 4+4 and 3+5 ranks (1 MiB: 45-74
 * against 76-82 ms) and behind at 16 MiB (340-721 against 252-374 ms);
 * multileader beyond 4 MiB.  On loopback sites, where local phases weigh
 * more than the "WAN", multileader led from 4 KiB: a model
 * (GRIDCOLL_MODEL) decides from measured costs instead
 * (docs/algorithms/allreduce.md). */
static const struct coll_rule allreduce_rules[] = {
    {0, 0, 4 << 20, "hier"},
    {0, 0, 0, "multileader"},
    {0, 0, 0, "reduce_bcast"},
    /* site: shm wherever it can, at every size (docs/algorithms/allreduce.md,
     * "Node level") */
    {0, 0, 0, "shm", &one_node},
    {0, 0, 0, "mpich"},
};

static const struct coll_algo reduce_scatter_algos[] = {
    {.name = "reduce_scatterv",
     .description =
         "hierarchical Reduce of the whole vector to rank 0, "
         "then hierarchical Scatterv of the pieces (two WAN latencies)",
     .build = reduce_scatter_grid_reduce_scatterv},
    {.name = "hier",
     .description =
         "local reduce-scatter over every member of a site, each member sends "
         "the pieces of its slice straight to their owners on other sites "
         "(segmented, one WAN latency), owners fold in site order",
     .restrictions = SITE_ORDER_RESTRICTION,
     .usable = scatter_partials_in_order,
     .build = reduce_scatter_grid_hier},
};
/* hier whenever it can run the call; the rank-order fallback else. */
static const struct coll_rule reduce_scatter_rules[] = {
    {0, 0, 0, "hier"},
    {0, 0, 0, "reduce_scatterv"},
};

static const struct coll_algo scan_algos[] = {
    {.name = "gather_scatter",
     .description = "every contribution to rank 0 (Gather), prefixes in "
                    "rank order there, Scatter back (two WAN latencies)",
     .build = scan_grid_gather_scatter},
    {.name = "hier",
     .description =
         "local scan, each site's last member sends the site total to the "
         "leaders of the sites after it (one WAN latency), leaders fold the "
         "prefix and broadcast it locally, members apply it",
     .restrictions =
         "every site's members one contiguous range of ranks, for any op",
     .usable = sites_contiguous,
     .build = scan_grid_hier},
};
/* hier whenever it can run the call; the rank-order fallback else. */
static const struct coll_rule scan_rules[] = {
    {0, 0, 0, "hier"},
    {0, 0, 0, "gather_scatter"},
};

static const struct coll_algo gather_algos[] = {
    {.name = "hier",
     .description =
         "MagPIe: local gather to each site leader, leaders send their "
         "site's packed blocks to the root",
     .build = gather_grid_hier},
};
static const struct coll_rule gather_rules[] = {{0, 0, 0, "hier"}};

static const struct coll_algo scatter_algos[] = {
    {.name = "hier",
     .description = "MagPIe: the root sends each site leader its site's packed "
                    "blocks, local scatter",
     .build = scatter_grid_hier},
};
static const struct coll_rule scatter_rules[] = {{0, 0, 0, "hier"}};

static const struct coll_algo allgather_algos[] = {
    {.name = "gather_bcast",
     .description = "hierarchical Gather(v) to rank 0, hierarchical Bcast "
                    "of the whole result",
     .build = allgatherv_grid_gather_bcast},
    {.name = "hier",
     .description = "intra-site allgather (site level), leaders exchange "
                    "their sites' packed blocks (one WAN latency), local bcast",
     .build = allgather_grid_hier},
    /* site: Kumar & Kale's strategies (allgather_site.h), the local
     * allgather of hier and of allreduce multileader */
    {.name = "ring",
     .description =
         "P-1 steps, each rank forwards one block to its right neighbour",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.allgather = allgather_site_ring},
    {.name = "recursive_doubling",
     .description = "log P pairwise exchanges of doubling size; non-powers "
                    "of two: the ranks that had a partner hand its half on "
                    "within their subtree",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.allgather = allgather_site_recursive_doubling},
    {.name = "kshift",
     .description = "each block goes to k neighbours at once, the one k "
                    "away forwards it on: about P/k rounds "
                    "(k: GRIDCOLL_ALLGATHER_K)",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.allgather = allgather_site_kshift},
    {.name = "kprefix",
     .description = "prefix exchange (XOR) in groups of k, ring between "
                    "groups (k: the largest power of two <= "
                    "GRIDCOLL_ALLGATHER_K dividing P)",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.allgather = allgather_site_kprefix},
    {.name = "mesh",
     .description = "2-D mesh combining: row multicast, then rows to "
                    "columns; holes in the last row mapped onto full rows",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.allgather = allgather_site_mesh},
    {.name = "hypercube",
     .description = "dimension exchange with the last two dimensions "
                    "direct; ranks past a power of two fold onto the cube "
                    "and get everything at the end",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.allgather = allgather_site_hypercube},
    {.name = "mpich",
     .description = "MPICH's own Allgatherv on the site's members "
                    "(Iallgatherv in nonblocking calls)",
     .restrictions = "",
     .level = COLL_SITE,
     .site.allgather = allgather_site_mpich},
    {.name = "shm",
     .description = "blocks into each node's shared memory, node leaders "
                    "exchange their nodes' blocks, members copy out while "
                    "the leaders' messages arrive",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .node = 1,
     .site.allgather = allgather_site_shm},
};
/*
 * Site: Kumar & Kale.  Short blocks (under 8 KB, section 4.6): the alpha
 * terms dominate, so combine: the hypercube sends log2 P messages (eq. 4)
 * against the mesh's 2 sqrt(P) (eq. 3), but off a power of two its fold
 * doubles the bytes and adds a message (eq. 5) while the mesh's holes
 * cost nothing (section 3.1).  Long blocks: every strategy moves (P-1) m
 * per rank, so the fewest rounds on the critical path win: kShift's ~P/k
 * rounds (eq. 10) against the ring's P-1 (eq. 7), as long as P is a
 * multiple of k, where kShift is congestion free on a fat tree (Lemma 6);
 * otherwise the ring, which is congestion free for every P (Lemma 1).
 * Before all these: shm when the site is one node of several members.
 */
static const struct coll_rule allgather_rules[] = {
    {0, 0, 0, "hier"},
    {0, 0, 0, "shm", &one_node},
    {0, 0, 8192, "hypercube", &power_of_two},
    {0, 0, 8192, "mesh"},
    {0, 0, 0, "kshift", &k_divides},
    {0, 0, 0, "ring"},
    /* nonblocking calls */
    {0, 0, 0, "mpich"},
};

/* Alltoall, Alltoallv and Alltoallw: every algorithm moves packed blocks,
 * so per-pair counts and datatypes only change byte counts. */
static const struct coll_algo alltoall_algos[] = {
    {.name = "lg",
     .description =
         "Steffenel's Local Group: blocks regrouped inside each site, then "
         "every block crosses the WAN once, max(n_s, n_t) messages from "
         "site s to site t, straight to the destination ranks",
     .cost = alltoall_grid_lg_cost,
     .build = alltoall_grid_lg},
    {.name = "hier",
     .description =
         "MagPIe: each site's blocks for other sites gathered at one "
         "coordinator, one WAN message per ordered pair of sites, local "
         "scatter",
     .cost = alltoall_grid_hier_cost,
     .build = alltoall_grid_hier},
    {.name = "direct",
     .description =
         "every pair of ranks on different sites exchanges one message "
         "over the relays; local phase inside each site",
     .cost = alltoall_grid_direct_cost,
     .build = alltoall_grid_direct},
    /* site: the exchange inside each site of lg and hier (alltoall.h) */
    {.name = "lin",
     .description = "linear shift: in phase p rank i sends to (i+p) mod n "
                    "and receives from (i-p) mod n, one pair at a time",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.alltoall = {alltoall_site_pairwise, &alltoall_site_lin}},
    {.name = "xor",
     .description = "pairwise exchange: in phase p rank i exchanges with i "
                    "XOR p (phases up to the next power of two, partners >= "
                    "n sit out)",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.alltoall = {alltoall_site_pairwise, &alltoall_site_xor}},
    {.name = "opt",
     .description = "Prisacari fat-tree optimal: permuted variable-base "
                    "exchange on the site's fattree= (GRIDCOLL_FATTREE), "
                    "B_min(l) messages leave every level-l subtree in every "
                    "phase; without a tree, lin",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.alltoall = {alltoall_site_pairwise, &alltoall_site_opt}},
    {.name = "bruck",
     .description = "Bruck et al.: ceil(log2 n) steps, in step k every "
                    "block whose index has bit k set moves 2^k ranks on "
                    "(small messages)",
     .restrictions = "",
     .level = COLL_SITE,
     .blocking = 1,
     .site.alltoall = {alltoall_site_bruck, NULL}},
    {.name = "mpich",
     .description = "one PMPI_Alltoallw on the site's communicator "
                    "(MPICH's choice; Ialltoallw in nonblocking calls)",
     .restrictions = "",
     .level = COLL_SITE,
     .site.alltoall = {alltoall_site_mpich, NULL}},
};
/*
 * lg while its fewer, larger WAN messages pay; from 512 KiB a pair the
 * messages are large anyway and direct skips lg's regrouping inside the
 * sites (docs/algorithms/alltoall.md has the measurements).  The v- and
 * w-forms, whose block sizes differ by pair, take lg.
 */
/*
 * Site: Bruck sends about (n/2) log2(n) blocks per rank instead of n-1, in
 * log2(n) steps instead of n-1: it wins while start-ups dominate, small
 * blocks on many ranks; these are MPICH's own bounds for choosing it
 * (MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256 bytes, 8 ranks), which MPICH's
 * Alltoallw never applies itself.  Otherwise MPICH's Alltoallw, which
 * posts the pairs in blocks (MPIR_CVAR_ALLTOALL_THROTTLE) rather than one
 * phase at a time: on one node or one switch no pairing order beats that,
 * and it was the fastest measured here (docs/algorithms/alltoall.md).
 * lin and xor, one pair at a time, are for networks where the order of
 * the pairs matters (fat trees).
 */
#define ALLTOALL_SITE_RULES                                                    \
    {8, 1, 256, "bruck"},                                                      \
    {                                                                          \
        0, 0, 0, "mpich"                                                       \
    }
static const struct coll_rule alltoall_rules[] = {
    {0, 0, (512 << 10) - 1, "lg"},
    {0, 0, 0, "direct"},
    ALLTOALL_SITE_RULES,
};
static const struct coll_rule alltoallv_rules[] = {
    {0, 0, 0, "lg"},
    ALLTOALL_SITE_RULES,
};

static const struct coll_algo neighbor_algos[] = {
    {.name = "direct",
     .description =
         "every rank sends each neighbour its block and receives each of its "
         "own, inside a site over MPICH, between sites over the relays",
     .build = neighbor_grid_direct},
    {.name = "bundled",
     .description =
         "the blocks from one site to another gathered at one member of each "
         "site and sent as one relay message (v-, w-forms: after a header of "
         "their sizes), split and delivered there; where one block crosses, "
         "and inside sites, direct",
     .restrictions = "two or more blocks from one site to another",
     .usable = neighbor_grid_bundled_usable,
     .build = neighbor_grid_bundled},
};
/*
 * bundled where it saves WAN messages (usable: the topology's plan has a
 * direction with two or more blocks) and blocks are small: each bundled
 * block saves a WAN message, the relays' gap g = 9.3 us a message on the
 * reference model (docs/model.md), and costs two local hops and two
 * copies, 4 m bytes moved inside the site: 6.6 us at m = 8 KiB and
 * 5 GB/s, still below g.  Kumar and Kale (section 4.6) also measured
 * combining ahead of direct sends below 8 KB.  bytes is the block size
 * of allgather and alltoall, equal on every member; the v- and w-forms
 * (bytes 0, sizes the members do not share) stay direct.
 */
static const struct coll_rule neighbor_rules[] = {
    {0, 1, 8 * 1024, "bundled"},
    {0, 0, 0, "direct"},
};

/* The site phases, and the bytes their rules compare. */
#define BCAST_SITE "the local bcasts of hier; bytes: the packed message"
#define ALLREDUCE_SITE                                                         \
    "the local phases of hier and multileader; bytes: the packed vector"
#define ALLGATHER_SITE                                                         \
    "the local allgather of allgather(v) hier and allreduce multileader; "     \
    "bytes: a member's packed block, on average (rounded up)"
#define ALLTOALL_SITE                                                          \
    "the exchange inside each site of alltoall(v,w) lg and hier; bytes: "      \
    "what an average pair of the site's members exchanges"

const struct coll_table coll_tables[GC_COLL_KINDS] = {
    [GC_COLL_BARRIER] = {ALGOS(barrier_algos), ALGOS(barrier_rules), 0},
    [GC_COLL_BCAST] = {ALGOS(bcast_algos), ALGOS(bcast_rules), 256 * 1024,
                       "GRIDCOLL_BCAST_LOCAL", BCAST_SITE},
    [GC_COLL_REDUCE] = {ALGOS(reduce_algos), ALGOS(reduce_rules), 256 * 1024},
    [GC_COLL_ALLREDUCE] = {ALGOS(allreduce_algos), ALGOS(allreduce_rules),
                           256 * 1024, "GRIDCOLL_ALLREDUCE_LOCAL",
                           ALLREDUCE_SITE},
    [GC_COLL_REDUCE_SCATTER] = {ALGOS(reduce_scatter_algos),
                                ALGOS(reduce_scatter_rules), 256 * 1024},
    [GC_COLL_SCAN] = {ALGOS(scan_algos), ALGOS(scan_rules), 0},
    [GC_COLL_GATHER] = {ALGOS(gather_algos), ALGOS(gather_rules), 0},
    [GC_COLL_GATHERV] = {ALGOS(gather_algos), ALGOS(gather_rules), 0},
    [GC_COLL_SCATTER] = {ALGOS(scatter_algos), ALGOS(scatter_rules), 0},
    [GC_COLL_SCATTERV] = {ALGOS(scatter_algos), ALGOS(scatter_rules), 0},
    [GC_COLL_ALLGATHER] = {ALGOS(allgather_algos), ALGOS(allgather_rules), 0,
                           "GRIDCOLL_ALLGATHER_LOCAL", ALLGATHER_SITE},
    [GC_COLL_ALLGATHERV] = {ALGOS(allgather_algos), ALGOS(allgather_rules), 0,
                            "GRIDCOLL_ALLGATHER_LOCAL", ALLGATHER_SITE},
    [GC_COLL_ALLTOALL] = {ALGOS(alltoall_algos), ALGOS(alltoall_rules), 0,
                          "GRIDCOLL_ALLTOALL_LOCAL", ALLTOALL_SITE},
    [GC_COLL_ALLTOALLV] = {ALGOS(alltoall_algos), ALGOS(alltoallv_rules), 0,
                           "GRIDCOLL_ALLTOALL_LOCAL", ALLTOALL_SITE},
    [GC_COLL_ALLTOALLW] = {ALGOS(alltoall_algos), ALGOS(alltoallv_rules), 0,
                           "GRIDCOLL_ALLTOALL_LOCAL", ALLTOALL_SITE},
    [GC_COLL_NEIGHBOR] = {ALGOS(neighbor_algos), ALGOS(neighbor_rules), 0},
};
