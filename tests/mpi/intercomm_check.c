/*
 * Intercommunicators (tests/integration/test_mpi_intercomm.py): made with
 * MPI_Intercomm_create from groups that interleave sites (world ranks by
 * parity), from uneven groups (the first third against the rest, over a
 * duplicate of MPI_COMM_WORLD as peer), and between two groups of one
 * site over a site-local peer (MPICH's own intercommunicator), made by
 * all processes or by that site's alone, and by
 * MPI_Intercomm_create_from_groups from the parity groups.  On each:
 * membership (sizes, ranks, remote group, MPI_Comm_test_inter,
 * attributes), point-to-point byte for byte with statuses naming remote
 * ranks (wildcards, synchronous, ready and buffered sends, probes, matched
 * probes, Sendrecv, MPI_PROC_NULL, persistent and partitioned
 * requests, ranks out of range), every MPI-2 intercommunicator collective in
 * both directions with MPI_ROOT and MPI_PROC_NULL (derived types, a
 * non-commutative reduction), the nonblocking and persistent forms of
 * those that compose group collectives (all outstanding at once,
 * completed in reverse order; persistent ones started twice, in
 * different orders on different members), MPI_Intercomm_merge's order, and
 * MPI_Comm_dup, MPI_Comm_split, MPI_Comm_create, MPI_Comm_compare and
 * MPI_Comm_free.
 *
 * Prints "OK <case>" per case; arguments select cases by prefix.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

#define N 37 /* elements per block: odd, to catch off-by-one layouts */

/* An intercommunicator and what it must be: both groups' world ranks. */
struct ic {
    MPI_Comm comm;
    int group; /* 0 or 1: which of the two groups this process is in */
    int lsize, rsize, lrank;
    int *lw, *rw; /* world ranks by group rank: local, remote */
};

static int world_rank, world_size;
/* Each world rank's site, as its site's first world rank. */
static int *site_of;

/* Whether both groups live on one site: MPICH's own intercommunicator
 * (the "alone" case, made on one site before site_of is gathered). */
static int one_site(const struct ic *x)
{
    if (site_of == NULL)
        return 1;
    int same = 1;
    for (int i = 0; i < x->lsize; i++)
        same &= site_of[x->lw[i]] == site_of[world_rank];
    for (int j = 0; j < x->rsize; j++)
        same &= site_of[x->rw[j]] == site_of[world_rank];
    return same;
}

static int value(int sender, int receiver, int i)
{
    return sender * 100003 + receiver * 1009 + i * 7 + 1;
}

/* The same values as the large-count forms (MPI_Gatherv_c, ...) take
 * them; NULL for NULL. */
static MPI_Count *wide_counts(const int *v, int n)
{
    if (v == NULL)
        return NULL;
    MPI_Count *w = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = v[i];
    return w;
}

static MPI_Aint *wide_displs(const int *v, int n)
{
    if (v == NULL)
        return NULL;
    MPI_Aint *w = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = v[i];
    return w;
}

static void expect_int(int got, int want, const char *what)
{
    if (got != want)
        fail("%s: got %d, want %d", what, got, want);
}

static void expect_ints(const int *got, int n, int sender, int receiver,
                        const char *what)
{
    for (int i = 0; i < n; i++)
        if (got[i] != value(sender, receiver, i))
            fail("%s: element %d is %d, want %d (sender %d)", what, i, got[i],
                 value(sender, receiver, i), sender);
}

/* ---- construction ------------------------------------------------------ */

/*
 * The intercommunicator between the members of `color` 0 and 1 (world
 * ranks; -1: not in it) whose leaders are their lowest world ranks
 * (`key` -1 puts a leader first), created over `peer`, whose ranks of the
 * two leaders are peer_leader[0..1].
 */
static void make_ic(struct ic *x, int color, MPI_Comm peer,
                    const int peer_leader[2])
{
    int *colors = xmalloc((size_t)world_size * sizeof *colors);
    MPI_CHECK(
        MPI_Allgather(&color, 1, MPI_INT, colors, 1, MPI_INT, MPI_COMM_WORLD));
    memset(x, 0, sizeof *x);
    x->comm = MPI_COMM_NULL;
    x->group = color;
    x->lw = xmalloc((size_t)world_size * sizeof(int));
    x->rw = xmalloc((size_t)world_size * sizeof(int));
    for (int r = 0; r < world_size; r++) {
        if (colors[r] < 0)
            continue;
        if (colors[r] == color)
            x->lw[x->lsize++] = r;
        else
            x->rw[x->rsize++] = r;
    }
    free(colors);
    MPI_Comm local;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color,
                             world_rank, &local));
    if (color < 0)
        return;
    for (int i = 0; i < x->lsize; i++)
        if (x->lw[i] == world_rank)
            x->lrank = i;
    MPI_CHECK(MPI_Intercomm_create(local, 0, peer, peer_leader[!color], 12345,
                                   &x->comm));
    MPI_CHECK(MPI_Comm_free(&local));
}

static void free_ic(struct ic *x)
{
    if (x->comm != MPI_COMM_NULL)
        MPI_CHECK(MPI_Comm_free(&x->comm));
    free(x->lw);
    free(x->rw);
}

/* World ranks of a group's members. */
static void group_world_ranks(MPI_Group g, int n, int *out)
{
    MPI_Group world;
    int *seq = xmalloc((size_t)n * sizeof *seq);
    for (int i = 0; i < n; i++)
        seq[i] = i;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHECK(MPI_Group_translate_ranks(g, n, seq, world, out));
    MPI_CHECK(MPI_Group_free(&world));
    free(seq);
}

static void check_members(const struct ic *x, MPI_Comm comm)
{
    int flag, n, *ranks = xmalloc((size_t)world_size * sizeof *ranks);
    MPI_Group g;
    MPI_CHECK(MPI_Comm_test_inter(comm, &flag));
    expect_int(flag, 1, "MPI_Comm_test_inter");
    MPI_CHECK(MPI_Comm_size(comm, &n));
    expect_int(n, x->lsize, "MPI_Comm_size");
    MPI_CHECK(MPI_Comm_rank(comm, &n));
    expect_int(n, x->lrank, "MPI_Comm_rank");
    MPI_CHECK(MPI_Comm_remote_size(comm, &n));
    expect_int(n, x->rsize, "MPI_Comm_remote_size");
    MPI_CHECK(MPI_Comm_remote_group(comm, &g));
    MPI_CHECK(MPI_Group_size(g, &n));
    expect_int(n, x->rsize, "remote group size");
    group_world_ranks(g, x->rsize, ranks);
    for (int j = 0; j < x->rsize; j++)
        expect_int(ranks[j], x->rw[j], "remote group member");
    MPI_CHECK(MPI_Group_free(&g));
    MPI_CHECK(MPI_Comm_group(comm, &g));
    MPI_CHECK(MPI_Group_rank(g, &n));
    expect_int(n, x->lrank, "local group rank");
    group_world_ranks(g, x->lsize, ranks);
    for (int i = 0; i < x->lsize; i++)
        expect_int(ranks[i], x->lw[i], "local group member");
    MPI_CHECK(MPI_Group_free(&g));
    int *ub;
    MPI_CHECK(MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag));
    if (!flag || *ub < 32767)
        fail("MPI_TAG_UB missing or below 32767");
    free(ranks);
}

/* ---- point-to-point ---------------------------------------------------- */

static void check_p2p(const struct ic *x, MPI_Comm comm)
{
    int r = x->rsize, l = x->lsize, me = world_rank;
    int *in = xmalloc((size_t)r * N * sizeof *in);
    int *out = xmalloc((size_t)r * N * sizeof *out);
    MPI_Request *reqs = xmalloc((size_t)2 * r * sizeof *reqs);
    MPI_Status *st = xmalloc((size_t)2 * r * sizeof *st);
    int seen[4096] = {0};

    /* Wildcard receives: every remote member sends one message tagged
     * with its rank; statuses must name it. */
    for (int j = 0; j < r; j++)
        MPI_CHECK(MPI_Irecv(in + j * N, N, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                            comm, &reqs[j]));
    for (int j = 0; j < r; j++) {
        for (int i = 0; i < N; i++)
            out[j * N + i] = value(me, x->rw[j], i);
        MPI_CHECK(MPI_Isend(out + j * N, N, MPI_INT, j, x->lrank, comm,
                            &reqs[r + j]));
    }
    MPI_CHECK(MPI_Waitall(2 * r, reqs, st));
    for (int j = 0; j < r; j++) {
        int src = st[j].MPI_SOURCE, count;
        expect_int(st[j].MPI_TAG, src, "wildcard status tag = source");
        if (src < 0 || src >= r || seen[src]++)
            fail("wildcard status source %d", src);
        MPI_CHECK(MPI_Get_count(&st[j], MPI_INT, &count));
        expect_int(count, N, "wildcard count");
        expect_ints(in + j * N, N, x->rw[src], me, "wildcard data");
    }

    /* As the wildcards above take any tag, the next messages wait for
     * every member of the other group to have its own. */
    MPI_CHECK(MPI_Barrier(comm));

    /* Synchronous sends to remote rank lrank % r, received by named
     * source in rank order. */
    MPI_CHECK(MPI_Issend(out, N, MPI_INT, x->lrank % r, 7, comm, &reqs[0]));
    for (int a = x->lrank; a < r; a += l) {
        MPI_Status s;
        MPI_CHECK(MPI_Recv(in, N, MPI_INT, a, 7, comm, &s));
        expect_int(s.MPI_SOURCE, a, "named status source");
        /* The sender's first block, addressed to its remote rank 0. */
        expect_ints(in, N, x->rw[a], x->lw[0], "ssend data");
    }
    MPI_CHECK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));

    /* Probe, Mprobe and Iprobe of wildcard messages, then receive. */
    for (int round = 0; round < 3; round++) {
        for (int j = 0; j < r; j++)
            MPI_CHECK(MPI_Isend(out + j * N, N, MPI_INT, j, 100 + x->lrank,
                                comm, &reqs[j]));
        for (int k = 0; k < r; k++) {
            MPI_Status s;
            MPI_Message m;
            int count, flag = 0;
            if (round == 0) {
                MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &s));
            } else if (round == 1) {
                MPI_CHECK(
                    MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &m, &s));
            } else {
                while (!flag)
                    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm,
                                         &flag, &s));
            }
            expect_int(s.MPI_TAG, 100 + s.MPI_SOURCE, "probe status");
            MPI_CHECK(MPI_Get_count(&s, MPI_INT, &count));
            expect_int(count, N, "probe count");
            MPI_Status rs;
            if (round == 1)
                MPI_CHECK(MPI_Mrecv(in, N, MPI_INT, &m, &rs));
            else
                MPI_CHECK(MPI_Recv(in, N, MPI_INT, s.MPI_SOURCE, s.MPI_TAG,
                                   comm, &rs));
            expect_int(rs.MPI_SOURCE, s.MPI_SOURCE, "received after probe");
            expect_ints(in, N, x->rw[s.MPI_SOURCE], me, "probed data");
        }
        MPI_CHECK(MPI_Waitall(r, reqs, st));
    }

    /* The probes above take any tag: no member sends more until every
     * member of the other group is done with them. */
    MPI_CHECK(MPI_Barrier(comm));

    /* Sendrecv with remote rank lrank % r; the members it receives from
     * are those a with a % l == lrank. */
    int first = x->lrank < r ? x->lrank : -1;
    MPI_Status s;
    if (first >= 0) {
        MPI_CHECK(MPI_Sendrecv(out, N, MPI_INT, x->lrank % r, 9, in, N, MPI_INT,
                               first, 9, comm, &s));
        expect_int(s.MPI_SOURCE, first, "sendrecv source");
        expect_ints(in, N, x->rw[first], x->lw[0], "sendrecv data");
        for (int a = first + l; a < r; a += l) {
            MPI_CHECK(MPI_Recv(in, N, MPI_INT, a, 9, comm, &s));
            expect_ints(in, N, x->rw[a], x->lw[0], "sendrecv rest");
        }
    } else {
        MPI_CHECK(MPI_Send(out, N, MPI_INT, x->lrank % r, 9, comm));
    }
    /* Ready and buffered sends to remote rank lrank % r, into receives
     * posted before an intercommunicator barrier. */
    int k = 0, size;
    for (int a = x->lrank; a < r; a += l, k++)
        MPI_CHECK(MPI_Irecv(in + k * N, N, MPI_INT, a, 11, comm, &reqs[k]));
    MPI_CHECK(MPI_Barrier(comm));
    MPI_CHECK(MPI_Rsend(out, N, MPI_INT, x->lrank % r, 11, comm));
    MPI_CHECK(MPI_Waitall(k, reqs, st));
    for (int a = x->lrank, i = 0; a < r; a += l, i++) {
        expect_int(st[i].MPI_SOURCE, a, "rsend source");
        expect_ints(in + i * N, N, x->rw[a], x->lw[0], "rsend data");
    }
    MPI_CHECK(MPI_Pack_size(N, MPI_INT, comm, &size));
    size += MPI_BSEND_OVERHEAD;
    void *attached = xmalloc((size_t)size);
    MPI_CHECK(MPI_Buffer_attach(attached, size));
    MPI_CHECK(MPI_Bsend(out, N, MPI_INT, x->lrank % r, 12, comm));
    for (int a = x->lrank; a < r; a += l) {
        MPI_CHECK(MPI_Recv(in, N, MPI_INT, MPI_ANY_SOURCE, 12, comm, &s));
        expect_ints(in, N, x->rw[s.MPI_SOURCE], x->lw[0], "bsend data");
    }
    MPI_CHECK(MPI_Buffer_detach(&attached, &size));
    free(attached);

    MPI_CHECK(MPI_Recv(in, N, MPI_INT, MPI_PROC_NULL, 0, comm, &s));
    expect_int(s.MPI_SOURCE, MPI_PROC_NULL, "MPI_PROC_NULL source");
    MPI_CHECK(MPI_Send(out, N, MPI_INT, MPI_PROC_NULL, 0, comm));
    free(in);
    free(out);
    free(reqs);
    free(st);
}

/*
 * Persistent and partitioned requests: local rank i < min(l, r) and
 * remote rank i exchange twice through one pair of requests; statuses
 * name the remote rank.  Partitioned ones also on a duplicate.  Ranks of
 * the local group's size are refused.
 */
static void check_p2p_persistent(const struct ic *x, MPI_Comm comm)
{
    enum { PARTS = 4 };
    int i = x->lrank, peer_world = i < x->rsize ? x->rw[i] : -1;
    int *in = xmalloc(PARTS * N * sizeof *in);
    int *out = xmalloc(PARTS * N * sizeof *out);
    MPI_Request reqs[2];
    MPI_Status st[2];
    MPI_Comm comms[2] = {comm, MPI_COMM_NULL};
    MPI_CHECK(MPI_Comm_dup(comm, &comms[1]));
    if (peer_world >= 0) {
        MPI_CHECK(MPI_Send_init(out, N, MPI_INT, i, 21, comm, &reqs[0]));
        MPI_CHECK(MPI_Recv_init(in, N, MPI_INT, i, 21, comm, &reqs[1]));
        for (int run = 0; run < 2; run++) {
            for (int k = 0; k < N; k++)
                out[k] = value(world_rank, peer_world, k + run);
            MPI_CHECK(MPI_Startall(2, reqs));
            MPI_CHECK(MPI_Waitall(2, reqs, st));
            expect_int(st[1].MPI_SOURCE, i, "persistent receive source");
            for (int k = 0; k < N; k++)
                expect_int(in[k], value(peer_world, world_rank, k + run),
                           "persistent receive data");
        }
        MPI_CHECK(MPI_Request_free(&reqs[0]));
        MPI_CHECK(MPI_Request_free(&reqs[1]));

        for (int c = 0; c < 2; c++) {
            MPI_CHECK(MPI_Psend_init(out, PARTS, N, MPI_INT, i, 22, comms[c],
                                     MPI_INFO_NULL, &reqs[0]));
            MPI_CHECK(MPI_Precv_init(in, PARTS, N, MPI_INT, i, 22, comms[c],
                                     MPI_INFO_NULL, &reqs[1]));
            for (int k = 0; k < PARTS * N; k++) {
                out[k] = value(world_rank, peer_world, k);
                in[k] = -1;
            }
            MPI_CHECK(MPI_Startall(2, reqs));
            MPI_CHECK(MPI_Pready_range(0, PARTS - 1, reqs[0]));
            MPI_CHECK(MPI_Waitall(2, reqs, st));
            expect_int(st[1].MPI_SOURCE, i, "partitioned receive source");
            expect_ints(in, PARTS * N, peer_world, world_rank,
                        "partitioned receive data");
            MPI_CHECK(MPI_Request_free(&reqs[0]));
            MPI_CHECK(MPI_Request_free(&reqs[1]));
        }
    }
    MPI_CHECK(MPI_Comm_free(&comms[1]));

    /* Ranks name the remote group: its size is out of range even when the
     * local group is larger. */
    int class;
    MPI_Request bad;
    MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    MPI_Error_class(MPI_Psend_init(out, 1, 1, MPI_INT, x->rsize, 0, comm,
                                   MPI_INFO_NULL, &bad),
                    &class);
    expect_int(class, MPI_ERR_RANK, "MPI_Psend_init to the remote size");
    MPI_Error_class(MPI_Precv_init(in, 1, 1, MPI_INT, x->rsize, 0, comm,
                                   MPI_INFO_NULL, &bad),
                    &class);
    expect_int(class, MPI_ERR_RANK, "MPI_Precv_init from the remote size");
    MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL));
    free(in);
    free(out);
}

/* ---- collectives -------------------------------------------------------- */

/* The root argument for a call rooted at rank `rr` of group `rg`. */
static int root_arg(const struct ic *x, int rg, int rr)
{
    if (x->group != rg)
        return rr;
    return x->lrank == rr ? MPI_ROOT : MPI_PROC_NULL;
}

static void check_rooted(const struct ic *x, MPI_Comm comm, int rg, int rr)
{
    int r = x->rsize, me = world_rank, root = root_arg(x, rg, rr);
    int leaf = x->group != rg, is_root = root == MPI_ROOT;
    int root_world = leaf ? x->rw[rr] : x->lw[rr];
    int big = (x->lsize > r ? x->lsize : r) * (N + x->lsize + r);
    int *buf = xmalloc((size_t)2 * big * sizeof *buf);
    int *mine = xmalloc((size_t)2 * N * sizeof *mine);
    int *counts = xmalloc((size_t)r * sizeof *counts);
    int *displs = xmalloc((size_t)r * sizeof *displs);
    MPI_Datatype strided;
    /* Every other int of 2N: packing on the way. */
    MPI_CHECK(MPI_Type_vector(N, 1, 2, MPI_INT, &strided));
    MPI_CHECK(MPI_Type_commit(&strided));

    /* Bcast of a strided buffer; the root group's others are untouched. */
    for (int i = 0; i < 2 * N; i++)
        buf[i] = is_root ? (i % 2 ? -5 : value(me, -1, i / 2)) : -3;
    MPI_CHECK(MPI_Bcast(buf, 1, strided, root, comm));
    for (int i = 0; i < 2 * N; i++) {
        int want = leaf      ? (i % 2 ? -3 : value(root_world, -1, i / 2))
                   : is_root ? (i % 2 ? -5 : value(me, -1, i / 2))
                             : -3;
        if (buf[i] != want)
            fail("bcast: element %d is %d, want %d", i, buf[i], want);
    }

    /* Its nonblocking form, at root rank 0 only: MPICH 4.0.2's own
     * Ibcast (the "site" intercommunicator, 4 against 3 members) fails an
     * assertion (mpir_localproc.c: r < comm_ptr->remote_size) with root
     * rank 3. */
    MPI_Request req;
    for (int i = 0; i < N && rr == 0; i++)
        buf[i] = is_root ? value(me, -2, i) : -4;
    if (rr == 0) {
        MPI_CHECK(MPI_Ibcast(buf, N, MPI_INT, root, comm, &req));
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    for (int i = 0; i < N && rr == 0; i++)
        expect_int(buf[i],
                   leaf      ? value(root_world, -2, i)
                   : is_root ? value(me, -2, i)
                             : -4,
                   "ibcast");

    /* Reduce: sum, and a non-commutative product in group-rank order. */
    for (int i = 0; i < N; i++)
        mine[i] = value(me, -1, i);
    MPI_CHECK(MPI_Reduce(mine, buf, N, MPI_INT, MPI_SUM, root, comm));
    for (int i = 0; is_root && i < N; i++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], -1, i);
        expect_int(buf[i], want, "reduce sum");
    }
    MPI_Datatype mtype;
    MPI_Op product;
    MPI_CHECK(MPI_Type_contiguous(4, MPI_UNSIGNED, &mtype));
    MPI_CHECK(MPI_Type_commit(&mtype));
    MPI_CHECK(MPI_Op_create(matrix_product, 0, &product));
    struct matrix mm[N], mr[N];
    for (int i = 0; i < N; i++)
        mm[i] = matrix_of(x->lrank, (size_t)i);
    MPI_CHECK(MPI_Reduce(mm, mr, N, mtype, product, root, comm));
    for (int i = 0; is_root && i < N; i++) {
        struct matrix want = matrix_product_of(0, r - 1, (size_t)i);
        if (memcmp(&want, &mr[i], sizeof want))
            fail("non-commutative reduce element %d", i);
    }
    MPI_CHECK(MPI_Op_free(&product));
    MPI_CHECK(MPI_Type_free(&mtype));

    /* Gather: strided blocks from every leaf into the root, in rank
     * order; Scatter: back. */
    for (int i = 0; i < 2 * N; i++)
        mine[i] = i % 2 ? -7 : value(me, -1, i / 2);
    MPI_CHECK(MPI_Gather(mine, 1, strided, buf, N, MPI_INT, root, comm));
    for (int j = 0; is_root && j < r; j++)
        expect_ints(buf + j * N, N, x->rw[j], -1, "gather");
    for (int j = 0; is_root && j < r; j++)
        for (int i = 0; i < N; i++)
            buf[j * N + i] = value(me, x->rw[j], i);
    for (int i = 0; i < 2 * N; i++)
        mine[i] = -9;
    MPI_CHECK(MPI_Scatter(buf, N, MPI_INT, mine, 1, strided, root, comm));
    for (int i = 0; leaf && i < 2 * N; i++)
        expect_int(mine[i], i % 2 ? -9 : value(root_world, me, i / 2),
                   "scatter");

    /* Gatherv and Scatterv: rank j's block has j + 1 elements. */
    for (int j = 0, at = 0; j < r; j++) {
        counts[j] = j + 1;
        displs[j] = at;
        at += j + 2; /* a hole between blocks */
    }
    for (int i = 0; i < N; i++)
        mine[i] = value(me, -1, i);
    for (int i = 0; i < big; i++)
        buf[i] = -11;
    /* The arrays matter at the root only: the others pass NULL. */
    const int *root_counts = is_root ? counts : NULL;
    const int *root_displs = is_root ? displs : NULL;
    MPI_CHECK(MPI_Gatherv(mine, x->lrank + 1, MPI_INT, buf, root_counts,
                          root_displs, MPI_INT, root, comm));
    for (int j = 0; is_root && j < r; j++) {
        expect_ints(buf + displs[j], j + 1, x->rw[j], -1, "gatherv");
        expect_int(buf[displs[j] + j + 1], -11, "gatherv hole");
    }
    /* The large-count form, with MPI_Count and MPI_Aint arrays. */
    MPI_Count *wide = wide_counts(root_counts, r);
    MPI_Aint *wide_at = wide_displs(root_displs, r);
    for (int i = 0; i < big; i++)
        buf[i] = -11;
    MPI_CHECK(MPI_Gatherv_c(mine, x->lrank + 1, MPI_INT, buf, wide, wide_at,
                            MPI_INT, root, comm));
    for (int j = 0; is_root && j < r; j++) {
        expect_ints(buf + displs[j], j + 1, x->rw[j], -1, "gatherv_c");
        expect_int(buf[displs[j] + j + 1], -11, "gatherv_c hole");
    }
    for (int j = 0; is_root && j < r; j++)
        for (int i = 0; i < counts[j]; i++)
            buf[displs[j] + i] = value(me, x->rw[j], i);
    MPI_CHECK(MPI_Scatterv(buf, root_counts, root_displs, MPI_INT, mine,
                           x->lrank + 1, MPI_INT, root, comm));
    if (leaf)
        expect_ints(mine, x->lrank + 1, root_world, me, "scatterv");
    for (int i = 0; i < N; i++)
        mine[i] = -9;
    MPI_CHECK(MPI_Scatterv_c(buf, wide, wide_at, MPI_INT, mine, x->lrank + 1,
                             MPI_INT, root, comm));
    if (leaf)
        expect_ints(mine, x->lrank + 1, root_world, me, "scatterv_c");
    free(wide);
    free(wide_at);

    MPI_CHECK(MPI_Type_free(&strided));
    free(buf);
    free(mine);
    free(counts);
    free(displs);
}

static void check_all(const struct ic *x, MPI_Comm comm)
{
    int r = x->rsize, l = x->lsize, me = world_rank;
    int cap = (r + 1) * (N + r + l) * 2;
    int *in = xmalloc((size_t)cap * sizeof *in);
    int *out = xmalloc((size_t)cap * sizeof *out);
    int *sc = xmalloc((size_t)(r + l) * sizeof *sc);
    int *sd = xmalloc((size_t)(r + l) * sizeof *sd);
    int *rc = xmalloc((size_t)(r + l) * sizeof *rc);
    int *rd = xmalloc((size_t)(r + l) * sizeof *rd);
    MPI_Datatype *types = xmalloc((size_t)r * sizeof *types);

    MPI_CHECK(MPI_Barrier(comm));
    MPI_Request barrier;
    MPI_CHECK(MPI_Ibarrier(comm, &barrier));
    MPI_CHECK(MPI_Wait(&barrier, MPI_STATUS_IGNORE));

    for (int i = 0; i < N; i++)
        out[i] = value(me, -1, i);
    MPI_CHECK(MPI_Allreduce(out, in, N, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < N; i++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], -1, i);
        expect_int(in[i], want, "allreduce");
    }

    MPI_CHECK(MPI_Allgather(out, N, MPI_INT, in, N, MPI_INT, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + j * N, N, x->rw[j], -1, "allgather");

    for (int j = 0, at = 0; j < r; j++) {
        rc[j] = j + 1;
        rd[j] = at;
        at += j + 2;
    }
    MPI_CHECK(
        MPI_Allgatherv(out, x->lrank + 1, MPI_INT, in, rc, rd, MPI_INT, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + rd[j], j + 1, x->rw[j], -1, "allgatherv");
    MPI_Count *wrc = wide_counts(rc, r);
    MPI_Aint *wrd = wide_displs(rd, r);
    memset(in, 0, (size_t)cap * sizeof *in);
    MPI_CHECK(MPI_Allgatherv_c(out, x->lrank + 1, MPI_INT, in, wrc, wrd,
                               MPI_INT, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + rd[j], j + 1, x->rw[j], -1, "allgatherv_c");
    free(wrc);
    free(wrd);

    for (int j = 0; j < r; j++)
        for (int i = 0; i < N; i++)
            out[j * N + i] = value(me, x->rw[j], i);
    MPI_CHECK(MPI_Alltoall(out, N, MPI_INT, in, N, MPI_INT, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + j * N, N, x->rw[j], me, "alltoall");
    /* Its nonblocking form, and the persistent one started twice. */
    MPI_Request req;
    memset(in, 0, (size_t)cap * sizeof *in);
    MPI_CHECK(MPI_Ialltoall(out, N, MPI_INT, in, N, MPI_INT, comm, &req));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int j = 0; j < r; j++)
        expect_ints(in + j * N, N, x->rw[j], me, "ialltoall");
    MPI_CHECK(MPI_Alltoall_init(out, N, MPI_INT, in, N, MPI_INT, comm,
                                MPI_INFO_NULL, &req));
    for (int round = 0; round < 2; round++) {
        memset(in, 0, (size_t)cap * sizeof *in);
        MPI_CHECK(MPI_Start(&req));
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int j = 0; j < r; j++)
            expect_ints(in + j * N, N, x->rw[j], me, "alltoall_init");
    }
    MPI_CHECK(MPI_Request_free(&req));

    /* Alltoallv/w: (a + b) % 3 + 1 elements between ranks a and b. */
    for (int j = 0, so = 0, ro = 0; j < r; j++) {
        sc[j] = rc[j] = (x->lrank + j) % 3 + 1;
        sd[j] = so;
        rd[j] = ro;
        so += sc[j] + 1;
        ro += rc[j] + 2;
        for (int i = 0; i < sc[j]; i++)
            out[sd[j] + i] = value(me, x->rw[j], i);
    }
    MPI_CHECK(MPI_Alltoallv(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + rd[j], rc[j], x->rw[j], me, "alltoallv");
    /* The large-count form, nonblocking. */
    MPI_Count *wsc = wide_counts(sc, r), *wrcv = wide_counts(rc, r);
    MPI_Aint *wsd = wide_displs(sd, r), *wrdv = wide_displs(rd, r);
    memset(in, 0, (size_t)cap * sizeof *in);
    MPI_CHECK(MPI_Ialltoallv_c(out, wsc, wsd, MPI_INT, in, wrcv, wrdv, MPI_INT,
                               comm, &req));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int j = 0; j < r; j++)
        expect_ints(in + rd[j], rc[j], x->rw[j], me, "ialltoallv_c");
    for (int j = 0; j < r; j++) {
        sd[j] *= (int)sizeof(int);
        rd[j] *= (int)sizeof(int);
        types[j] = MPI_INT;
    }
    memset(in, 0, (size_t)cap * sizeof *in);
    MPI_CHECK(MPI_Alltoallw(out, sc, sd, types, in, rc, rd, types, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + rd[j] / (int)sizeof(int), rc[j], x->rw[j], me,
                    "alltoallw");
    for (int j = 0; j < r; j++) {
        wsd[j] = sd[j];
        wrdv[j] = rd[j];
    }
    memset(in, 0, (size_t)cap * sizeof *in);
    MPI_CHECK(
        MPI_Alltoallw_c(out, wsc, wsd, types, in, wrcv, wrdv, types, comm));
    for (int j = 0; j < r; j++)
        expect_ints(in + rd[j] / (int)sizeof(int), rc[j], x->rw[j], me,
                    "alltoallw_c");
    free(wsc);
    free(wrcv);
    free(wsd);
    free(wrdv);

    /* Reduce_scatter(_block): both groups reduce l * r elements. */
    for (int e = 0; e < l * r; e++)
        out[e] = value(me, -1, e);
    for (int i = 0; i < l; i++)
        rc[i] = r + (l > 1 && i == 0) - (l > 1 && i == l - 1);
    int offset = 0;
    for (int i = 0; i < x->lrank; i++)
        offset += rc[i];
    MPI_CHECK(MPI_Reduce_scatter(out, in, rc, MPI_INT, MPI_SUM, comm));
    for (int k = 0; k < rc[x->lrank]; k++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], -1, offset + k);
        expect_int(in[k], want, "reduce_scatter");
    }
    MPI_Count *wrs = wide_counts(rc, l);
    memset(in, 0, (size_t)cap * sizeof *in);
    MPI_CHECK(MPI_Reduce_scatter_c(out, in, wrs, MPI_INT, MPI_SUM, comm));
    for (int k = 0; k < rc[x->lrank]; k++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], -1, offset + k);
        expect_int(in[k], want, "reduce_scatter_c");
    }
    free(wrs);
    MPI_CHECK(MPI_Reduce_scatter_block(out, in, r, MPI_INT, MPI_SUM, comm));
    for (int k = 0; k < r; k++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], -1, x->lrank * r + k);
        expect_int(in[k], want, "reduce_scatter_block");
    }
    free(in);
    free(out);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(types);
}

/*
 * The collectives that compose group collectives with steps between the
 * groups, in their nonblocking and persistent forms, rooted at rank `rr`
 * of group `rg`: all outstanding at once on the intercommunicator and
 * completed in reverse order; the persistent ones started twice, in
 * opposite orders on the members of odd and even world rank (MPI 4.1
 * §6.13 lets them), their inputs changed between the runs.
 */
enum { CALLS = 9, IGATHER = 2, ISCATTER = 3, IALLGATHER = 5, IRSB = 8 };

struct pending {
    int r, l, key; /* key: tells the runs' data apart */
    /* Persistent calls left out (bit per call): on an intercommunicator,
     * MPICH 4.0.2's own MPI_Gather_init, MPI_Scatter_init and
     * MPI_Allgather_init deliver the data of an earlier call, its
     * MPI_Reduce_scatter_block_init none. */
    unsigned skip;
    int *red, *red_out, *gat, *gat_out, *sca, *sca_out;
    int *all, *all_out, *ag_out, *agv_out, *rc, *rd;
    int *rs, *rs_counts, *rs_out, *rsb_out;
    struct matrix mm[N], mr[N];
    MPI_Datatype strided, mtype;
    MPI_Op product;
};

static void pending_make(const struct ic *x, struct pending *p)
{
    int r = x->rsize, l = x->lsize, at = 0;
    memset(p, 0, sizeof *p);
    p->r = r;
    p->l = l;
    p->red = xmalloc(N * sizeof(int));
    p->red_out = xmalloc(N * sizeof(int));
    p->gat = xmalloc(2 * N * sizeof(int));
    p->gat_out = xmalloc((size_t)r * N * sizeof(int));
    p->sca = xmalloc((size_t)r * N * sizeof(int));
    p->sca_out = xmalloc(2 * N * sizeof(int));
    p->all = xmalloc(N * sizeof(int));
    p->all_out = xmalloc(N * sizeof(int));
    p->ag_out = xmalloc((size_t)r * N * sizeof(int));
    p->rc = xmalloc((size_t)r * sizeof(int));
    p->rd = xmalloc((size_t)r * sizeof(int));
    for (int j = 0; j < r; j++) {
        p->rc[j] = j + 1;
        p->rd[j] = at;
        at += j + 2; /* a hole between blocks */
    }
    p->agv_out = xmalloc((size_t)(at + 1) * sizeof(int));
    p->rs = xmalloc((size_t)l * r * sizeof(int));
    p->rs_counts = xmalloc((size_t)l * sizeof(int));
    for (int i = 0; i < l; i++)
        p->rs_counts[i] = r + (l > 1 && i == 0) - (l > 1 && i == l - 1);
    p->rs_out = xmalloc((size_t)(r + 1) * sizeof(int));
    p->rsb_out = xmalloc((size_t)r * sizeof(int));
    MPI_CHECK(MPI_Type_vector(N, 1, 2, MPI_INT, &p->strided));
    MPI_CHECK(MPI_Type_commit(&p->strided));
    MPI_CHECK(MPI_Type_contiguous(4, MPI_UNSIGNED, &p->mtype));
    MPI_CHECK(MPI_Type_commit(&p->mtype));
    MPI_CHECK(MPI_Op_create(matrix_product, 0, &p->product));
}

static void pending_free(struct pending *p)
{
    int *bufs[] = {p->red,    p->red_out,   p->gat,    p->gat_out,
                   p->sca,    p->sca_out,   p->all,    p->all_out,
                   p->ag_out, p->agv_out,   p->rc,     p->rd,
                   p->rs,     p->rs_counts, p->rs_out, p->rsb_out};
    for (size_t k = 0; k < sizeof bufs / sizeof *bufs; k++)
        free(bufs[k]);
    MPI_CHECK(MPI_Type_free(&p->strided));
    MPI_CHECK(MPI_Type_free(&p->mtype));
    MPI_CHECK(MPI_Op_free(&p->product));
}

/* Inputs of run `key`, outputs poisoned. */
static void pending_fill(const struct ic *x, struct pending *p, int key,
                         int root)
{
    int me = world_rank;
    p->key = key;
    for (int i = 0; i < N; i++) {
        p->red[i] = p->all[i] = value(me, key, i);
        p->red_out[i] = p->all_out[i] = -1;
        p->mm[i] = matrix_of(x->lrank, (size_t)(i + key));
        memset(&p->mr[i], 0, sizeof p->mr[i]);
    }
    for (int i = 0; i < 2 * N; i++) {
        p->gat[i] = i % 2 ? -7 : value(me, key, i / 2);
        p->sca_out[i] = -9;
    }
    for (int j = 0; j < p->r; j++)
        for (int i = 0; i < N; i++) {
            p->gat_out[j * N + i] = p->ag_out[j * N + i] = -1;
            p->sca[j * N + i] =
                root == MPI_ROOT ? value(me, x->rw[j], i + key) : -1;
        }
    for (int i = 0; i <= p->rd[p->r - 1] + p->r; i++)
        p->agv_out[i] = -11;
    for (int e = 0; e < p->l * p->r; e++)
        p->rs[e] = value(me, key, e);
    for (int k = 0; k < p->r + 1; k++)
        p->rs_out[k] = -1;
    for (int k = 0; k < p->r; k++)
        p->rsb_out[k] = -1;
}

/* Post every call, nonblocking or (persistent) initialised. */
static void pending_post(const struct ic *x, MPI_Comm comm, struct pending *p,
                         int root, int persistent, MPI_Request *req)
{
    int l = x->lrank + 1;
    if (!persistent) {
        MPI_CHECK(MPI_Ireduce(p->red, p->red_out, N, MPI_INT, MPI_SUM, root,
                              comm, &req[0]));
        MPI_CHECK(MPI_Ireduce(p->mm, p->mr, N, p->mtype, p->product, root, comm,
                              &req[1]));
        MPI_CHECK(MPI_Igather(p->gat, 1, p->strided, p->gat_out, N, MPI_INT,
                              root, comm, &req[2]));
        MPI_CHECK(MPI_Iscatter(p->sca, N, MPI_INT, p->sca_out, 1, p->strided,
                               root, comm, &req[3]));
        MPI_CHECK(MPI_Iallreduce(p->all, p->all_out, N, MPI_INT, MPI_SUM, comm,
                                 &req[4]));
        MPI_CHECK(MPI_Iallgather(p->all, N, MPI_INT, p->ag_out, N, MPI_INT,
                                 comm, &req[5]));
        MPI_CHECK(MPI_Iallgatherv(p->all, l, MPI_INT, p->agv_out, p->rc, p->rd,
                                  MPI_INT, comm, &req[6]));
        MPI_CHECK(MPI_Ireduce_scatter(p->rs, p->rs_out, p->rs_counts, MPI_INT,
                                      MPI_SUM, comm, &req[7]));
        MPI_CHECK(MPI_Ireduce_scatter_block(p->rs, p->rsb_out, p->r, MPI_INT,
                                            MPI_SUM, comm, &req[8]));
        return;
    }
    MPI_Info no = MPI_INFO_NULL;
    for (int k = 0; k < CALLS; k++)
        req[k] = MPI_REQUEST_NULL;
    MPI_CHECK(MPI_Reduce_init(p->red, p->red_out, N, MPI_INT, MPI_SUM, root,
                              comm, no, &req[0]));
    MPI_CHECK(MPI_Reduce_init(p->mm, p->mr, N, p->mtype, p->product, root, comm,
                              no, &req[1]));
    if (!(p->skip >> IGATHER & 1))
        MPI_CHECK(MPI_Gather_init(p->gat, 1, p->strided, p->gat_out, N, MPI_INT,
                                  root, comm, no, &req[IGATHER]));
    if (!(p->skip >> ISCATTER & 1))
        MPI_CHECK(MPI_Scatter_init(p->sca, N, MPI_INT, p->sca_out, 1,
                                   p->strided, root, comm, no, &req[ISCATTER]));
    MPI_CHECK(MPI_Allreduce_init(p->all, p->all_out, N, MPI_INT, MPI_SUM, comm,
                                 no, &req[4]));
    if (!(p->skip >> IALLGATHER & 1))
        MPI_CHECK(MPI_Allgather_init(p->all, N, MPI_INT, p->ag_out, N, MPI_INT,
                                     comm, no, &req[IALLGATHER]));
    MPI_CHECK(MPI_Allgatherv_init(p->all, l, MPI_INT, p->agv_out, p->rc, p->rd,
                                  MPI_INT, comm, no, &req[6]));
    MPI_CHECK(MPI_Reduce_scatter_init(p->rs, p->rs_out, p->rs_counts, MPI_INT,
                                      MPI_SUM, comm, no, &req[7]));
    if (!(p->skip >> IRSB & 1))
        MPI_CHECK(MPI_Reduce_scatter_block_init(
            p->rs, p->rsb_out, p->r, MPI_INT, MPI_SUM, comm, no, &req[IRSB]));
}

static void pending_check(const struct ic *x, const struct pending *p, int rg,
                          int rr, int root)
{
    int r = p->r, me = world_rank, key = p->key, is_root = root == MPI_ROOT;
    int leaf = x->group != rg, root_world = leaf ? x->rw[rr] : x->lw[rr];
    for (int i = 0; i < N; i++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], key, i);
        expect_int(p->red_out[i], is_root ? want : -1, "ireduce sum");
        expect_int(p->all_out[i], want, "iallreduce");
        struct matrix product = matrix_product_of(0, r - 1, (size_t)(i + key));
        struct matrix none = {0};
        if (memcmp(is_root ? &product : &none, &p->mr[i], sizeof none))
            fail("non-commutative ireduce element %d", i);
    }
    for (int j = 0; j < r; j++) {
        for (int i = 0; i < N && !(p->skip >> IGATHER & 1); i++)
            expect_int(p->gat_out[j * N + i],
                       is_root ? value(x->rw[j], key, i) : -1, "igather");
        if (!(p->skip >> IALLGATHER & 1))
            expect_ints(p->ag_out + j * N, N, x->rw[j], key, "iallgather");
        for (int i = 0; i < j + 1; i++)
            expect_int(p->agv_out[p->rd[j] + i], value(x->rw[j], key, i),
                       "iallgatherv");
        expect_int(p->agv_out[p->rd[j] + j + 1], -11, "iallgatherv hole");
    }
    for (int i = 0; i < 2 * N && !(p->skip >> ISCATTER & 1); i++)
        expect_int(p->sca_out[i],
                   leaf && i % 2 == 0 ? value(root_world, me, i / 2 + key) : -9,
                   "iscatter");
    int offset = 0, mine = p->rs_counts[x->lrank];
    for (int i = 0; i < x->lrank; i++)
        offset += p->rs_counts[i];
    for (int k = 0; k < mine; k++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], key, offset + k);
        expect_int(p->rs_out[k], want, "ireduce_scatter");
    }
    for (int k = 0; k < r && !(p->skip >> IRSB & 1); k++) {
        int want = 0;
        for (int j = 0; j < r; j++)
            want += value(x->rw[j], key, x->lrank * r + k);
        expect_int(p->rsb_out[k], want, "ireduce_scatter_block");
    }
}

static void wait_reversed(MPI_Request *req)
{
    for (int k = CALLS - 1; k >= 0; k--)
        MPI_CHECK(MPI_Wait(&req[k], MPI_STATUS_IGNORE));
}

static void check_pending(const struct ic *x, MPI_Comm comm, int rg, int rr)
{
    int root = root_arg(x, rg, rr);
    MPI_Request req[CALLS];
    struct pending p;
    pending_make(x, &p);
    pending_fill(x, &p, 2, root);
    pending_post(x, comm, &p, root, 0, req);
    wait_reversed(req);
    pending_check(x, &p, rg, rr, root);

    if (one_site(x))
        p.skip = 1u << IGATHER | 1u << ISCATTER | 1u << IALLGATHER | 1u << IRSB;
    pending_post(x, comm, &p, root, 1, req);
    for (int run = 0; run < 2; run++) {
        pending_fill(x, &p, 5 + run, root);
        for (int k = 0; k < CALLS; k++) {
            MPI_Request *started = &req[world_rank % 2 ? CALLS - 1 - k : k];
            if (*started != MPI_REQUEST_NULL)
                MPI_CHECK(MPI_Start(started));
        }
        wait_reversed(req);
        pending_check(x, &p, rg, rr, root);
    }
    for (int k = 0; k < CALLS; k++)
        if (req[k] != MPI_REQUEST_NULL)
            MPI_CHECK(MPI_Request_free(&req[k]));
    pending_free(&p);
}

static void check_collectives(const struct ic *x, MPI_Comm comm)
{
    /* Each group roots in turn, at its first and its last rank. */
    for (int rg = 0; rg < 2; rg++) {
        int size = x->group == rg ? x->lsize : x->rsize;
        check_rooted(x, comm, rg, 0);
        check_rooted(x, comm, rg, size - 1);
        check_pending(x, comm, rg, 0);
        check_pending(x, comm, rg, size - 1);
    }
    check_all(x, comm);
}

/* ---- merge, dup, split, compare ---------------------------------------- */

/* World ranks of comm's members by rank. */
static void members_of(MPI_Comm comm, int n, int *out)
{
    MPI_CHECK(MPI_Allgather(&world_rank, 1, MPI_INT, out, 1, MPI_INT, comm));
    (void)n;
}

static void check_merge(const struct ic *x)
{
    int *got = xmalloc((size_t)world_size * sizeof *got);
    int n = x->lsize + x->rsize;
    for (int way = 0; way < 3; way++) {
        /* way 0: group 0 low; 1: group 1 low; 2: both the same */
        int high = way == 2 ? 1 : (x->group == 0) == (way == 1);
        MPI_Comm merged;
        int size, flag;
        MPI_CHECK(MPI_Intercomm_merge(x->comm, high, &merged));
        MPI_CHECK(MPI_Comm_test_inter(merged, &flag));
        expect_int(flag, 0, "merged test_inter");
        MPI_CHECK(MPI_Comm_size(merged, &size));
        expect_int(size, n, "merged size");
        members_of(merged, n, got);
        /* The low group first, each in group order. */
        int low_is_mine = way == 2 ? got[0] == x->lw[0] : !high;
        const int *first = low_is_mine ? x->lw : x->rw;
        const int *second = low_is_mine ? x->rw : x->lw;
        int nfirst = low_is_mine ? x->lsize : x->rsize;
        for (int i = 0; i < n; i++)
            expect_int(got[i], i < nfirst ? first[i] : second[i - nfirst],
                       "merged order");
        int sum = 0, total = 0;
        MPI_CHECK(
            MPI_Allreduce(&world_rank, &sum, 1, MPI_INT, MPI_SUM, merged));
        for (int i = 0; i < n; i++)
            total += got[i];
        expect_int(sum, total, "allreduce on the merged communicator");
        MPI_CHECK(MPI_Comm_free(&merged));
    }
    free(got);
}

static void check_dup_split(const struct ic *x)
{
    MPI_Comm dup, split;
    int result;
    MPI_CHECK(MPI_Comm_dup(x->comm, &dup));
    MPI_CHECK(MPI_Comm_compare(x->comm, dup, &result));
    expect_int(result, MPI_CONGRUENT, "compare with dup");
    MPI_CHECK(MPI_Comm_compare(x->comm, x->comm, &result));
    expect_int(result, MPI_IDENT, "compare with itself");
    check_members(x, dup);
    check_p2p(x, dup);
    check_all(x, dup);

    /* MPI_Comm_idup, outstanding while point-to-point runs on the parent,
     * with a persistent collective initialised and run after the call:
     * every member copies the group's communicators in call order, also
     * when its copy completes later than the others'. */
    MPI_Comm idup;
    MPI_Request request, persistent;
    int token = world_rank + 1, sum = -1, want = 0;
    MPI_CHECK(MPI_Comm_idup(dup, &idup, &request));
    MPI_CHECK(MPI_Allreduce_init(&token, &sum, 1, MPI_INT, MPI_SUM, dup,
                                 MPI_INFO_NULL, &persistent));
    check_p2p(x, x->comm);
    MPI_CHECK(MPI_Start(&persistent));
    MPI_CHECK(MPI_Wait(&persistent, MPI_STATUS_IGNORE));
    for (int i = 0; i < x->rsize; i++)
        want += x->rw[i] + 1;
    expect_int(sum, want, "persistent allreduce after idup");
    MPI_CHECK(MPI_Request_free(&persistent));
    MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Comm_compare(dup, idup, &result));
    expect_int(result, MPI_CONGRUENT, "compare with idup");
    check_members(x, idup);
    check_all(x, idup);
    MPI_CHECK(MPI_Comm_free(&idup));

    /* Split by group-rank parity, reversed order by key: a color with no
     * member in one group gives MPI_COMM_NULL. */
    int color = x->lrank % 2;
    MPI_CHECK(MPI_Comm_split(dup, color, -x->lrank, &split));
    struct ic y = {.comm = split, .group = x->group};
    y.lw = xmalloc((size_t)world_size * sizeof(int));
    y.rw = xmalloc((size_t)world_size * sizeof(int));
    for (int i = x->lsize - 1; i >= 0; i--)
        if (i % 2 == color) {
            if (i == x->lrank)
                y.lrank = y.lsize;
            y.lw[y.lsize++] = x->lw[i];
        }
    for (int j = x->rsize - 1; j >= 0; j--)
        if (j % 2 == color)
            y.rw[y.rsize++] = x->rw[j];
    if (y.rsize == 0) {
        if (split != MPI_COMM_NULL)
            fail("split with an empty remote part is not MPI_COMM_NULL");
    } else {
        check_members(&y, split);
        check_p2p(&y, split);
        check_collectives(&y, split);
        MPI_CHECK(MPI_Comm_free(&split));
    }

    /* MPI_Comm_create from each group's even ranks. */
    MPI_Group whole, even;
    int *ranks = xmalloc((size_t)x->lsize * sizeof *ranks), n = 0;
    for (int i = 0; i < x->lsize; i += 2)
        ranks[n++] = i;
    MPI_CHECK(MPI_Comm_group(dup, &whole));
    MPI_CHECK(MPI_Group_incl(whole, n, ranks, &even));
    MPI_Comm created;
    MPI_CHECK(MPI_Comm_create(dup, even, &created));
    y.comm = created;
    y.lsize = y.rsize = 0;
    y.lrank = x->lrank / 2;
    for (int i = 0; i < x->lsize; i += 2)
        y.lw[y.lsize++] = x->lw[i];
    for (int j = 0; j < x->rsize; j += 2)
        y.rw[y.rsize++] = x->rw[j];
    if (x->lrank % 2) {
        if (created != MPI_COMM_NULL)
            fail("MPI_Comm_create gave a communicator to a non-member");
    } else {
        check_members(&y, created);
        check_p2p(&y, created);
        MPI_CHECK(MPI_Comm_free(&created));
    }
    MPI_CHECK(MPI_Group_free(&even));
    MPI_CHECK(MPI_Group_free(&whole));
    free(ranks);
    free(y.lw);
    free(y.rw);
    MPI_CHECK(MPI_Comm_free(&dup));
}

static void run_cases(const char *name, struct ic *x)
{
    int in = x->comm != MPI_COMM_NULL;
    if (begin("%s_members", name)) {
        if (in)
            check_members(x, x->comm);
        passed();
    }
    if (begin("%s_p2p", name)) {
        if (in) {
            check_p2p(x, x->comm);
            check_p2p_persistent(x, x->comm);
        }
        passed();
    }
    if (begin("%s_collectives", name)) {
        if (in)
            check_collectives(x, x->comm);
        passed();
    }
    if (begin("%s_merge", name)) {
        if (in)
            check_merge(x);
        passed();
    }
    if (begin("%s_dup_split", name)) {
        if (in)
            check_dup_split(x);
        passed();
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    check_setup(world_rank, argc - 1, argv + 1);
    if (world_size < 3)
        fail("needs at least 3 processes");
    struct ic x;

    /* Two groups of one site over that site's communicator: MPICH's own
     * intercommunicator.  First made by the last site's processes alone,
     * which know it without asking the others, before any collective over
     * MPI_COMM_WORLD (MPICH 4.0.2 has made no group of its world yet),
     * while the others reduce on their sites' communicators: nothing spans
     * the sites around the creation. */
    MPI_Comm site;
    int site_size, site_rank, first = INT_MAX, mine;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                                  MPI_INFO_NULL, &site));
    MPI_CHECK(MPI_Comm_size(site, &site_size));
    MPI_CHECK(MPI_Comm_rank(site, &site_rank));
    int base = world_rank - site_rank;
    memset(&x, 0, sizeof x);
    x.comm = MPI_COMM_NULL;
    x.lw = xmalloc((size_t)site_size * sizeof(int));
    x.rw = xmalloc((size_t)site_size * sizeof(int));
    if (base + site_size == world_size) {
        MPI_Comm local;
        if (site_size < 2)
            fail("the last site has one process");
        x.group = site_rank % 2;
        for (int r = 0; r < site_size; r++) {
            if (r == site_rank)
                x.lrank = x.lsize;
            if (r % 2 == x.group)
                x.lw[x.lsize++] = base + r;
            else
                x.rw[x.rsize++] = base + r;
        }
        MPI_CHECK(MPI_Comm_split(site, x.group, site_rank, &local));
        MPI_CHECK(
            MPI_Intercomm_create(local, 0, site, !x.group, 54321, &x.comm));
        MPI_CHECK(MPI_Comm_free(&local));
    } else {
        int one = 1, sum = 0;
        MPI_CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, site));
        expect_int(sum, site_size, "reduction over another site");
    }
    run_cases("alone", &x);
    free_ic(&x);

    site_of = xmalloc((size_t)world_size * sizeof *site_of);
    MPI_CHECK(
        MPI_Allgather(&base, 1, MPI_INT, site_of, 1, MPI_INT, MPI_COMM_WORLD));

    /* Then by all processes, on the first site with two processes or
     * more. */
    mine = site_size >= 2 ? base : INT_MAX;
    MPI_CHECK(
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (first == INT_MAX)
        fail("no site has two processes");
    make_ic(&x, mine == first ? site_rank % 2 : -1, site, (const int[2]){0, 1});
    run_cases("site", &x);
    free_ic(&x);

    MPI_CHECK(MPI_Comm_free(&site));

    /* Groups by parity: both interleave the sites. */
    make_ic(&x, world_rank % 2, MPI_COMM_WORLD, (const int[2]){0, 1});
    run_cases("parity", &x);
    free_ic(&x);

    /* The same groups from MPI_Intercomm_create_from_groups: no peer
     * communicator, the stringtag names the creation. */
    MPI_Group world_group, groups[2];
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    for (int g = 0; g < 2; g++) {
        int *ranks = xmalloc((size_t)world_size * sizeof *ranks), n = 0;
        for (int r = g; r < world_size; r += 2)
            ranks[n++] = r;
        MPI_CHECK(MPI_Group_incl(world_group, n, ranks, &groups[g]));
        free(ranks);
    }
    make_ic(&x, world_rank % 2, MPI_COMM_WORLD, (const int[2]){0, 1});
    MPI_CHECK(MPI_Comm_free(&x.comm));
    MPI_CHECK(MPI_Intercomm_create_from_groups(
        groups[x.group], 0, groups[!x.group], 0, "intercomm_check groups",
        MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &x.comm));
    run_cases("groups", &x);
    free_ic(&x);
    MPI_CHECK(MPI_Group_free(&groups[0]));
    MPI_CHECK(MPI_Group_free(&groups[1]));
    MPI_CHECK(MPI_Group_free(&world_group));

    /* The first third against the rest, over a grid peer of its own. */
    MPI_Comm peer;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &peer));
    int third = world_size / 3;
    make_ic(&x, world_rank >= third, peer, (const int[2]){0, third});
    run_cases("uneven", &x);
    free_ic(&x);
    MPI_CHECK(MPI_Comm_free(&peer));
    free(site_of);

    MPI_Finalize();
    return 0;
}
