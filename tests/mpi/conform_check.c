/*
 * conform_check: the conformance failures third-party MPI tests found in
 * GridColl (issue 12), each as a self-checking case.  Only MPI is used,
 * so it runs under plain MPICH too; through gridrun rank 0 and the last
 * rank sit on different sites.
 *
 *   gridrun --site-sizes 2,2 -- conform_check [CASE...]
 *
 * Conventions of check_util.h: MPI_ERRORS_RETURN from the start, every
 * byte of every payload checked, "OK <case>" from rank 0 after each case,
 * "FAIL <case>: rank R: ..." and MPI_Abort on the first mismatch; cases
 * named on the command line run (by prefix), else all but large_local.
 *
 * Cases (default: all but large_local):
 *   type_free_pending  receives whose derived datatype is freed while they
 *                      are pending: from another site, held behind an
 *                      earlier wildcard, and MPI_Imrecv of a probed message
 *   bottom             MPI_BOTTOM with absolute-address struct types, to
 *                      and from another site, blocking and not, and Bcast
 *   status_error       MPI_ERROR of a status is left alone by every
 *                      single-completion call and matched probe (MPI 4.1,
 *                      3.2.5), for messages from this and another site
 *   io_waitall         MPI_Waitall over MPI-IO requests of a file opened
 *                      on MPI_COMM_SELF mixed with cross-site receives
 *   request_free       MPI_Request_free on pending cross-site sends and
 *                      receives: the data still arrives, intact
 *   request_get_status MPI_Request_get_status alone completes a
 *                      cross-site receive
 *   request_kinds      every completion call over persistent (active and
 *                      inactive), generalized, null, nonblocking
 *                      collective and cross-site requests in one array
 *   group_calls        MPI-4 constructors from groups: a group of this
 *                      site's members works, MPI_Comm_create_from_group
 *                      of the world's group gives the world (CONGRUENT),
 *                      MPI_Intercomm_create_from_groups across sites,
 *                      called by its two members alone, connects them
 *   session_init       prints "SESSION <error string>" ("success" when
 *                      it worked, as it must across sites too)
 *   large_local        2^31 + 4096 bytes between ranks 0 and 1 (same site
 *                      in a 2+1 layout) on MPI_COMM_WORLD; needs ~5 GiB
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_util.h"

static int world_rank, world_size, last_rank;

/* The value of element i of a message from src with tag. */
static int pattern(int src, int tag, size_t i)
{
    return (int)((unsigned)src * 1000003u + (unsigned)tag * 7919u +
                 (unsigned)i) &
           0x3fffffff;
}

static void fill(int *v, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++)
        v[i] = pattern(src, tag, i);
}

/* A vector type picking every other int of 2n ints: n elements. */
static MPI_Datatype every_other(int n)
{
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_vector(n, 1, 2, MPI_INT, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

/* Received with every_other(n) into v (2n ints pre-set to -1): the even
 * slots hold the pattern, the odd ones are untouched. */
static void check_every_other(const int *v, int n, int src, int tag,
                              const char *what)
{
    for (int i = 0; i < 2 * n; i++) {
        int want = i % 2 == 0 ? pattern(src, tag, (size_t)i / 2) : -1;
        if (v[i] != want)
            fail("%s: int %d is %d, expected %d", what, i, v[i], want);
    }
}

static void check_status(const MPI_Status *st, int source, int tag,
                         MPI_Datatype type, int count, const char *what)
{
    int got;
    MPI_CHECK(MPI_Get_count(st, type, &got));
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || got != count)
        fail("%s: status source %d tag %d count %d, expected %d %d %d", what,
             st->MPI_SOURCE, st->MPI_TAG, got, source, tag, count);
}

/* ---- type_free_pending ------------------------------------------------- */

static void case_type_free_pending(void)
{
    enum { N = 5000 };
    int *sendbuf = xmalloc(N * sizeof *sendbuf);
    int *v = xmalloc(2 * N * sizeof *v);
    int *w = xmalloc(2 * N * sizeof *w);
    int *x = xmalloc(2 * N * sizeof *x);
    int wild = -1;
    MPI_Status st;
    /* The receive behind the wildcard names a rank of rank 0's site when
     * there is one (2+2: rank 1), where it waits in the engine. */
    int held_src = world_size > 2 ? 1 : last_rank;
    if (world_rank == 0) {
        /* 1. From another site, the type freed before the data comes. */
        MPI_Request r[3];
        MPI_Datatype t = every_other(N);
        for (int i = 0; i < 2 * N; i++)
            v[i] = w[i] = x[i] = -1;
        MPI_CHECK(MPI_Irecv(v, 1, t, last_rank, 1, MPI_COMM_WORLD, &r[0]));
        /* 2. A wildcard first, so the named receive after it waits in the
         * engine (MPI gives the next message to the wildcard). */
        MPI_CHECK(MPI_Irecv(&wild, 1, MPI_INT, MPI_ANY_SOURCE, 2,
                            MPI_COMM_WORLD, &r[1]));
        MPI_CHECK(MPI_Irecv(w, 1, t, held_src, 2, MPI_COMM_WORLD, &r[2]));
        MPI_CHECK(MPI_Type_free(&t));
        /* Overwrite the freed type's memory with other types. */
        MPI_Datatype junk[8];
        for (int i = 0; i < 8; i++) {
            MPI_CHECK(MPI_Type_contiguous(3 + i, MPI_CHAR, &junk[i]));
            MPI_CHECK(MPI_Type_commit(&junk[i]));
        }
        MPI_CHECK(MPI_Send(NULL, 0, MPI_INT, last_rank, 9, MPI_COMM_WORLD));
        if (held_src != last_rank)
            MPI_CHECK(MPI_Send(NULL, 0, MPI_INT, held_src, 9, MPI_COMM_WORLD));
        MPI_Status sts[3];
        MPI_CHECK(MPI_Waitall(3, r, sts));
        for (int i = 0; i < 8; i++)
            MPI_CHECK(MPI_Type_free(&junk[i]));
        check_every_other(v, N, last_rank, 1, "remote receive");
        if (wild != pattern(held_src, 2, 0))
            fail("wildcard receive got %d, expected %d", wild,
                 pattern(held_src, 2, 0));
        check_every_other(w, N, held_src, 2, "receive behind a wildcard");
        /* 3. Improbe, free the type, Imrecv. */
        MPI_Message message;
        MPI_CHECK(MPI_Mprobe(last_rank, 3, MPI_COMM_WORLD, &message, &st));
        t = every_other(N);
        MPI_CHECK(MPI_Imrecv(x, 1, t, &message, &r[0]));
        MPI_CHECK(MPI_Type_free(&t));
        MPI_CHECK(MPI_Wait(&r[0], &st));
        check_every_other(x, N, last_rank, 3, "Imrecv");
    } else if (world_rank == last_rank || world_rank == held_src) {
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_INT, 0, 9, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        for (int tag = 1; tag <= 3; tag++) {
            if ((tag == 2) != (world_rank == held_src))
                continue;
            fill(sendbuf, N, world_rank, tag);
            if (tag == 2) /* first the wildcard's */
                MPI_CHECK(
                    MPI_Send(sendbuf, 1, MPI_INT, 0, tag, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Send(sendbuf, N, MPI_INT, 0, tag, MPI_COMM_WORLD));
        }
    }
    free(sendbuf);
    free(v);
    free(w);
    free(x);
}

/* ---- bottom ------------------------------------------------------------ */

/* Three separate arrays described by absolute addresses. */
struct scattered {
    int a[3];
    double b[2];
    char c[5];
};

static MPI_Datatype absolute_type(struct scattered *s)
{
    int lengths[3] = {3, 2, 5};
    MPI_Aint where[3];
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, t;
    MPI_CHECK(MPI_Get_address(s->a, &where[0]));
    MPI_CHECK(MPI_Get_address(s->b, &where[1]));
    MPI_CHECK(MPI_Get_address(s->c, &where[2]));
    MPI_CHECK(MPI_Type_create_struct(3, lengths, where, types, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

static void fill_scattered(struct scattered *s, int seed)
{
    for (int i = 0; i < 3; i++)
        s->a[i] = seed * 10 + i;
    for (int i = 0; i < 2; i++)
        s->b[i] = seed + 0.25 * i;
    for (int i = 0; i < 5; i++)
        s->c[i] = (char)('a' + (seed + i) % 26);
}

static void check_scattered(const struct scattered *s, int seed,
                            const char *what)
{
    struct scattered want;
    fill_scattered(&want, seed);
    if (memcmp(s->a, want.a, sizeof want.a) != 0 ||
        memcmp(s->b, want.b, sizeof want.b) != 0 ||
        memcmp(s->c, want.c, sizeof want.c) != 0)
        fail("%s: MPI_BOTTOM data differs (a[0] %d, c[0] %c; seed %d)", what,
             s->a[0], s->c[0], seed);
}

static void case_bottom(void)
{
    struct scattered *s = xmalloc(sizeof *s);
    MPI_Datatype t = absolute_type(s);
    if (world_rank == 0 || world_rank == last_rank) {
        int peer = last_rank - world_rank;
        /* Blocking, both ways: rank 0 first. */
        for (int round = 0; round < 2; round++) {
            int sender = round == 0 ? 0 : last_rank;
            if (world_rank == sender) {
                fill_scattered(s, sender + 1);
                MPI_CHECK(MPI_Send(MPI_BOTTOM, 1, t, peer, 5, MPI_COMM_WORLD));
            } else {
                memset(s, 0, sizeof *s);
                MPI_CHECK(MPI_Recv(MPI_BOTTOM, 1, t, peer, 5, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                check_scattered(s, sender + 1, "Send/Recv");
            }
        }
        /* Nonblocking and synchronous, exchanged at once. */
        struct scattered *in = xmalloc(sizeof *in);
        MPI_Datatype tin = absolute_type(in);
        memset(in, 0, sizeof *in);
        fill_scattered(s, 100 + world_rank);
        MPI_Request rr[2];
        MPI_CHECK(
            MPI_Irecv(MPI_BOTTOM, 1, tin, peer, 6, MPI_COMM_WORLD, &rr[0]));
        MPI_CHECK(
            MPI_Issend(MPI_BOTTOM, 1, t, peer, 6, MPI_COMM_WORLD, &rr[1]));
        MPI_Status sts[2];
        MPI_CHECK(MPI_Waitall(2, rr, sts));
        check_scattered(in, 100 + peer, "Issend/Irecv");
        MPI_CHECK(MPI_Type_free(&tin));
        free(in);
    }
    /* A collective from and into MPI_BOTTOM on every rank. */
    if (world_rank == 0)
        fill_scattered(s, 77);
    else
        memset(s, 0, sizeof *s);
    MPI_CHECK(MPI_Bcast(MPI_BOTTOM, 1, t, 0, MPI_COMM_WORLD));
    check_scattered(s, 77, "Bcast");
    MPI_CHECK(MPI_Type_free(&t));
    free(s);
}

/* ---- status_error ------------------------------------------------------ */

#define UNTOUCHED 0x7A7A

static void expect_untouched(const MPI_Status *st, const char *call)
{
    if (st->MPI_ERROR != UNTOUCHED)
        fail("%s wrote MPI_ERROR = %d; MPI leaves it alone", call,
             st->MPI_ERROR);
}

/* Receive one int from src with tag through each single-completion call
 * and probe in turn; src sends them all with tags tag..tag+9. */
static void receive_statuses(int src, int tag)
{
    MPI_Status st;
    MPI_Request r;
    MPI_Message m;
    int value, flag;
    const char *calls[] = {"MPI_Recv",    "MPI_Wait",        "MPI_Test",
                           "MPI_Waitany", "MPI_Testany",     "MPI_Mrecv",
                           "MPI_Imrecv",  "MPI_Request_get", "MPI_Probe",
                           "MPI_Iprobe"};
    for (int k = 0; k < 10; k++) {
        st.MPI_ERROR = UNTOUCHED;
        int index;
        switch (k) {
        case 0:
            MPI_CHECK(MPI_Recv(&value, 1, MPI_INT, src, tag + k, MPI_COMM_WORLD,
                               &st));
            break;
        case 1:
            MPI_CHECK(MPI_Irecv(&value, 1, MPI_INT, src, tag + k,
                                MPI_COMM_WORLD, &r));
            MPI_CHECK(MPI_Wait(&r, &st));
            break;
        case 2:
            MPI_CHECK(MPI_Irecv(&value, 1, MPI_INT, src, tag + k,
                                MPI_COMM_WORLD, &r));
            do
                MPI_CHECK(MPI_Test(&r, &flag, &st));
            while (!flag);
            break;
        case 3:
            MPI_CHECK(MPI_Irecv(&value, 1, MPI_INT, src, tag + k,
                                MPI_COMM_WORLD, &r));
            MPI_CHECK(MPI_Waitany(1, &r, &index, &st));
            break;
        case 4:
            MPI_CHECK(MPI_Irecv(&value, 1, MPI_INT, src, tag + k,
                                MPI_COMM_WORLD, &r));
            do
                MPI_CHECK(MPI_Testany(1, &r, &index, &flag, &st));
            while (!flag);
            break;
        case 5:
            MPI_CHECK(MPI_Mprobe(src, tag + k, MPI_COMM_WORLD, &m, &st));
            expect_untouched(&st, "MPI_Mprobe");
            MPI_CHECK(MPI_Mrecv(&value, 1, MPI_INT, &m, &st));
            break;
        case 6:
            do
                MPI_CHECK(
                    MPI_Improbe(src, tag + k, MPI_COMM_WORLD, &flag, &m, &st));
            while (!flag);
            expect_untouched(&st, "MPI_Improbe");
            MPI_CHECK(MPI_Imrecv(&value, 1, MPI_INT, &m, &r));
            MPI_CHECK(MPI_Wait(&r, &st));
            break;
        case 7:
            MPI_CHECK(MPI_Irecv(&value, 1, MPI_INT, src, tag + k,
                                MPI_COMM_WORLD, &r));
            do
                MPI_CHECK(MPI_Request_get_status(r, &flag, &st));
            while (!flag);
            expect_untouched(&st, "MPI_Request_get_status");
            MPI_CHECK(MPI_Wait(&r, &st));
            break;
        case 8:
            /* MPICH 4.0.2's own MPI_Probe and MPI_Iprobe set MPI_ERROR
             * (to MPI_SUCCESS), so only their other fields are checked. */
            MPI_CHECK(MPI_Probe(src, tag + k, MPI_COMM_WORLD, &st));
            check_status(&st, src, tag + k, MPI_INT, 1, "MPI_Probe");
            st.MPI_ERROR = UNTOUCHED;
            MPI_CHECK(MPI_Recv(&value, 1, MPI_INT, src, tag + k, MPI_COMM_WORLD,
                               &st));
            break;
        default:
            do
                MPI_CHECK(MPI_Iprobe(src, tag + k, MPI_COMM_WORLD, &flag, &st));
            while (!flag);
            check_status(&st, src, tag + k, MPI_INT, 1, "MPI_Iprobe");
            st.MPI_ERROR = UNTOUCHED;
            MPI_CHECK(MPI_Recv(&value, 1, MPI_INT, src, tag + k, MPI_COMM_WORLD,
                               &st));
            break;
        }
        expect_untouched(&st, calls[k]);
        check_status(&st, src, tag + k, MPI_INT, 1, calls[k]);
        if (value != pattern(src, tag + k, 0))
            fail("%s: got %d, expected %d", calls[k], value,
                 pattern(src, tag + k, 0));
    }
}

static void case_status_error(void)
{
    /* Rank 0 receives from the last rank (another site) and from rank 1
     * (its own site in layouts with two ranks or more on the first). */
    int near = world_size > 2 ? 1 : -1;
    if (world_rank == 0) {
        receive_statuses(last_rank, 20);
        if (near > 0)
            receive_statuses(near, 40);
    } else if (world_rank == last_rank || world_rank == near) {
        int tag = world_rank == last_rank ? 20 : 40;
        for (int k = 0; k < 10; k++) {
            int value = pattern(world_rank, tag + k, 0);
            MPI_CHECK(MPI_Send(&value, 1, MPI_INT, 0, tag + k, MPI_COMM_WORLD));
        }
    }
    /* Sends: MPI_Wait and MPI_Test on a cross-site send. */
    if (world_rank == 0 || world_rank == last_rank) {
        int peer = last_rank - world_rank, out = 5, in = 0, flag = 0;
        MPI_Request r[2];
        MPI_Status st = {.MPI_ERROR = UNTOUCHED};
        MPI_CHECK(MPI_Irecv(&in, 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &r[0]));
        MPI_CHECK(MPI_Isend(&out, 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &r[1]));
        MPI_CHECK(MPI_Wait(&r[1], &st));
        expect_untouched(&st, "MPI_Wait (send)");
        do
            MPI_CHECK(MPI_Test(&r[0], &flag, &st));
        while (!flag);
        expect_untouched(&st, "MPI_Test");
    }
}

/* ---- io_waitall -------------------------------------------------------- */

static void case_io_waitall(void)
{
    enum { BLOCKS = 6, INTS = 2048 };
    char path[256];
    const char *dir = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/conform_check.%ld.%d", dir, (long)getpid(),
             world_rank);
    MPI_File fh;
    MPI_CHECK(MPI_File_open(MPI_COMM_SELF, path,
                            MPI_MODE_CREATE | MPI_MODE_RDWR |
                                MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    int *data = xmalloc(BLOCKS * INTS * sizeof *data);
    fill(data, BLOCKS * INTS, world_rank, 70);
    MPI_Request r[BLOCKS + 2];
    MPI_Status st[BLOCKS + 2];
    for (int b = 0; b < BLOCKS; b++)
        MPI_CHECK(MPI_File_iwrite_at(fh,
                                     (MPI_Offset)b * INTS * (int)sizeof(int),
                                     data + b * INTS, INTS, MPI_INT, &r[b]));
    /* A cross-site exchange in the same array. */
    int peer = world_rank == 0           ? last_rank
               : world_rank == last_rank ? 0
                                         : MPI_PROC_NULL;
    int out = pattern(world_rank, 71, 0), in = -1;
    MPI_CHECK(MPI_Irecv(&in, 1, MPI_INT, peer, 71, MPI_COMM_WORLD, &r[BLOCKS]));
    MPI_CHECK(
        MPI_Isend(&out, 1, MPI_INT, peer, 71, MPI_COMM_WORLD, &r[BLOCKS + 1]));
    MPI_CHECK(MPI_Waitall(BLOCKS + 2, r, st));
    for (int b = 0; b < BLOCKS + 2; b++)
        if (r[b] != MPI_REQUEST_NULL)
            fail("request %d not freed by MPI_Waitall", b);
    if (peer != MPI_PROC_NULL && in != pattern(peer, 71, 0))
        fail("cross-site value %d, expected %d", in, pattern(peer, 71, 0));
    int *back = xmalloc(BLOCKS * INTS * sizeof *back);
    MPI_CHECK(MPI_File_read_at(fh, 0, back, BLOCKS * INTS, MPI_INT,
                               MPI_STATUS_IGNORE));
    if (memcmp(back, data, BLOCKS * INTS * sizeof *data) != 0)
        fail("file content differs from what MPI_File_iwrite_at wrote");
    MPI_CHECK(MPI_File_close(&fh));
    free(back);
    free(data);
}

/* ---- request_kinds ----------------------------------------------------- */

/* A generalized request of the program's own: its status says tag 321. */
static int user_query(void *extra, MPI_Status *status)
{
    (void)extra;
    status->MPI_SOURCE = 0;
    status->MPI_TAG = 321;
    MPI_Status_set_elements(status, MPI_BYTE, 3);
    MPI_Status_set_cancelled(status, 0);
    return MPI_SUCCESS;
}

static int user_free(void *extra)
{
    ++*(int *)extra;
    return MPI_SUCCESS;
}

static int user_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

enum {
    KIND_SELF_RECV,
    KIND_SELF_SEND,
    KIND_INACTIVE,
    KIND_USER,
    KIND_NULL,
    KIND_IBARRIER,
    KIND_GRID_RECV,
    KIND_GRID_SEND,
    KIND_COUNT
};

static const char *const methods[] = {"MPI_Waitall",  "MPI_Waitany",
                                      "MPI_Waitsome", "MPI_Testall",
                                      "MPI_Testany",  "MPI_Testsome"};

/* Complete every request of r with methods[m]; statuses by slot. */
static void complete_with(int m, MPI_Request *r, MPI_Status *st)
{
    MPI_Status one, some[KIND_COUNT];
    int index, flag = 0, n, idx[KIND_COUNT];
    switch (m) {
    case 0: MPI_CHECK(MPI_Waitall(KIND_COUNT, r, st)); return;
    case 3:
        while (!flag)
            MPI_CHECK(MPI_Testall(KIND_COUNT, r, &flag, st));
        return;
    case 1:
    case 4:
        for (;;) {
            if (m == 1)
                MPI_CHECK(MPI_Waitany(KIND_COUNT, r, &index, &one));
            else
                MPI_CHECK(MPI_Testany(KIND_COUNT, r, &index, &flag, &one));
            if (m == 4 && !flag)
                continue;
            if (index == MPI_UNDEFINED)
                return;
            st[index] = one;
            /* Persistent requests stay; mark them as seen. */
            if (index == KIND_SELF_RECV || index == KIND_SELF_SEND)
                MPI_CHECK(MPI_Request_free(&r[index]));
        }
    default:
        for (;;) {
            if (m == 2)
                MPI_CHECK(MPI_Waitsome(KIND_COUNT, r, &n, idx, some));
            else
                MPI_CHECK(MPI_Testsome(KIND_COUNT, r, &n, idx, some));
            if (n == MPI_UNDEFINED)
                return;
            for (int i = 0; i < n; i++) {
                st[idx[i]] = some[i];
                if (idx[i] == KIND_SELF_RECV || idx[i] == KIND_SELF_SEND)
                    MPI_CHECK(MPI_Request_free(&r[idx[i]]));
            }
        }
    }
}

static void case_request_kinds(void)
{
    int peer = world_rank == 0           ? last_rank
               : world_rank == last_rank ? 0
                                         : MPI_PROC_NULL;
    for (int m = 0; m < 6; m++) {
        MPI_Request r[KIND_COUNT];
        MPI_Status st[KIND_COUNT];
        int self_out = pattern(world_rank, m, 1), self_in = -1;
        int grid_out = pattern(world_rank, m, 2), grid_in = -1;
        int spare = -1, frees = 0, tag = 200 + m;
        MPI_CHECK(MPI_Recv_init(&self_in, 1, MPI_INT, 0, tag, MPI_COMM_SELF,
                                &r[KIND_SELF_RECV]));
        MPI_CHECK(MPI_Send_init(&self_out, 1, MPI_INT, 0, tag, MPI_COMM_SELF,
                                &r[KIND_SELF_SEND]));
        MPI_CHECK(MPI_Recv_init(&spare, 1, MPI_INT, 0, tag + 1, MPI_COMM_SELF,
                                &r[KIND_INACTIVE]));
        MPI_CHECK(MPI_Startall(2, r));
        MPI_CHECK(MPI_Grequest_start(user_query, user_free, user_cancel, &frees,
                                     &r[KIND_USER]));
        MPI_CHECK(MPI_Grequest_complete(r[KIND_USER]));
        r[KIND_NULL] = MPI_REQUEST_NULL;
        MPI_CHECK(MPI_Ibarrier(MPI_COMM_SELF, &r[KIND_IBARRIER]));
        MPI_CHECK(MPI_Irecv(&grid_in, 1, MPI_INT, peer, tag, MPI_COMM_WORLD,
                            &r[KIND_GRID_RECV]));
        MPI_CHECK(MPI_Isend(&grid_out, 1, MPI_INT, peer, tag, MPI_COMM_WORLD,
                            &r[KIND_GRID_SEND]));
        MPI_Request inactive = r[KIND_INACTIVE];
        complete_with(m, r, st);
        const char *how = methods[m];
        /* Waitall and Testall keep persistent requests; the others saw
         * them freed above. */
        if ((m == 0 || m == 3) && (r[KIND_SELF_RECV] == MPI_REQUEST_NULL ||
                                   r[KIND_SELF_SEND] == MPI_REQUEST_NULL))
            fail("%s freed a persistent request", how);
        if (r[KIND_INACTIVE] != inactive)
            fail("%s changed an inactive persistent request", how);
        for (int k = KIND_USER; k < KIND_COUNT; k++)
            if (r[k] != MPI_REQUEST_NULL)
                fail("%s left request kind %d set", how, k);
        if (self_in != self_out)
            fail("%s: persistent self receive got %d", how, self_in);
        check_status(&st[KIND_SELF_RECV], 0, tag, MPI_INT, 1, how);
        if (m == 0 || m == 3)
            check_status(&st[KIND_INACTIVE], MPI_ANY_SOURCE, MPI_ANY_TAG,
                         MPI_INT, 0, "inactive persistent request");
        check_status(&st[KIND_USER], 0, 321, MPI_BYTE, 3, how);
        if (frees != 1)
            fail("%s: user free_fn called %d times", how, frees);
        if (peer != MPI_PROC_NULL) {
            check_status(&st[KIND_GRID_RECV], peer, tag, MPI_INT, 1, how);
            if (grid_in != pattern(peer, m, 2))
                fail("%s: cross-site receive got %d", how, grid_in);
        }
        for (int k = KIND_SELF_RECV; k <= KIND_INACTIVE; k++)
            if (r[k] != MPI_REQUEST_NULL)
                MPI_CHECK(MPI_Request_free(&r[k]));
    }
}

/* ---- request_free ------------------------------------------------------ */

static void case_request_free(void)
{
    enum { N = 1 << 20 }; /* 4 MiB: several relay chunks */
    if (world_rank != 0 && world_rank != last_rank)
        return;
    int peer = last_rank - world_rank;
    int *buf = xmalloc(N * sizeof *buf);
    MPI_Request r;
    if (world_rank == 0) {
        /* A send freed at once, then a receive freed at once: the second
         * message, sent after the first arrived, tells when it landed. */
        fill(buf, N, 0, 80);
        MPI_CHECK(MPI_Isend(buf, N, MPI_INT, peer, 80, MPI_COMM_WORLD, &r));
        MPI_CHECK(MPI_Request_free(&r));
        if (r != MPI_REQUEST_NULL)
            fail("MPI_Request_free left the handle set");
        int *in = xmalloc(N * sizeof *in);
        for (int i = 0; i < N; i++)
            in[i] = -1;
        MPI_CHECK(MPI_Irecv(in, N, MPI_INT, peer, 81, MPI_COMM_WORLD, &r));
        MPI_CHECK(MPI_Request_free(&r));
        MPI_CHECK(MPI_Send(NULL, 0, MPI_INT, peer, 82, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_INT, peer, 83, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++)
            if (in[i] != pattern(peer, 81, (size_t)i))
                fail("freed receive: int %d is %d, expected %d", i, in[i],
                     pattern(peer, 81, (size_t)i));
        free(in);
    } else {
        for (int i = 0; i < N; i++)
            buf[i] = -1;
        MPI_CHECK(MPI_Recv(buf, N, MPI_INT, peer, 80, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++)
            if (buf[i] != pattern(0, 80, (size_t)i))
                fail("from a freed send: int %d is %d, expected %d", i, buf[i],
                     pattern(0, 80, (size_t)i));
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_INT, peer, 82, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        fill(buf, N, world_rank, 81);
        MPI_CHECK(MPI_Send(buf, N, MPI_INT, peer, 81, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Send(NULL, 0, MPI_INT, peer, 83, MPI_COMM_WORLD));
    }
    free(buf);
}

/* ---- request_get_status ------------------------------------------------ */

static void case_request_get_status(void)
{
    if (world_rank != 0 && world_rank != last_rank)
        return;
    int peer = last_rank - world_rank;
    int in = -1, out = pattern(world_rank, 90, 0), flag = 0;
    MPI_Request r[2];
    MPI_Status st;
    MPI_CHECK(MPI_Irecv(&in, 1, MPI_INT, peer, 90, MPI_COMM_WORLD, &r[0]));
    MPI_CHECK(MPI_Isend(&out, 1, MPI_INT, peer, 90, MPI_COMM_WORLD, &r[1]));
    /* Nothing else drives the engine: the calls themselves must. */
    for (int i = 0; i < 2; i++) {
        do
            MPI_CHECK(MPI_Request_get_status(r[i], &flag, &st));
        while (!flag);
        if (r[i] == MPI_REQUEST_NULL)
            fail("MPI_Request_get_status freed the request");
        if (i == 0)
            check_status(&st, peer, 90, MPI_INT, 1, "MPI_Request_get_status");
    }
    MPI_Status sts[2];
    MPI_CHECK(MPI_Waitall(2, r, sts));
    if (in != pattern(peer, 90, 0))
        fail("received %d, expected %d", in, pattern(peer, 90, 0));
}

/* ---- group_calls ------------------------------------------------------- */

static void case_group_calls(void)
{
    MPI_Group world, mine;
    MPI_Comm comm;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    /* This rank alone: on one site whatever the layout. */
    MPI_CHECK(MPI_Group_incl(world, 1, &world_rank, &mine));
    MPI_CHECK(MPI_Comm_create_from_group(
        mine, "conform_check.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    int size = 0, rank = -1;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    if (size != 1 || rank != 0)
        fail("MPI_Comm_create_from_group of one rank: size %d rank %d", size,
             rank);
    MPI_CHECK(MPI_Comm_free(&comm));
    MPI_CHECK(MPI_Group_free(&mine));
    if (getenv("CONFORM_MULTI_SITE") != NULL) {
        int result;
        MPI_CHECK(MPI_Comm_create_from_group(world, "conform_check.world",
                                             MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                             &comm));
        MPI_CHECK(MPI_Comm_compare(comm, MPI_COMM_WORLD, &result));
        if (result != MPI_CONGRUENT)
            fail("MPI_Comm_create_from_group of the world's group: compare "
                 "%d, want MPI_CONGRUENT",
                 result);
        MPI_CHECK(MPI_Barrier(comm));
        MPI_CHECK(MPI_Comm_free(&comm));
        MPI_Group zero, last;
        int z = 0;
        MPI_CHECK(MPI_Group_incl(world, 1, &z, &zero));
        MPI_CHECK(MPI_Group_incl(world, 1, &last_rank, &last));
        if (world_rank == 0 || world_rank == last_rank) {
            int remote_size = 0, other = -1;
            MPI_CHECK(MPI_Intercomm_create_from_groups(
                world_rank == 0 ? zero : last, 0, world_rank == 0 ? last : zero,
                0, "conform_check.inter", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                &comm));
            MPI_CHECK(MPI_Comm_remote_size(comm, &remote_size));
            MPI_CHECK(MPI_Sendrecv(&world_rank, 1, MPI_INT, 0, 0, &other, 1,
                                   MPI_INT, 0, 0, comm, MPI_STATUS_IGNORE));
            if (remote_size != 1 || other != (world_rank ? 0 : last_rank))
                fail("MPI_Intercomm_create_from_groups of ranks 0 and %d: "
                     "remote size %d, the other is %d",
                     last_rank, remote_size, other);
            MPI_CHECK(MPI_Comm_free(&comm));
        }
        MPI_CHECK(MPI_Group_free(&zero));
        MPI_CHECK(MPI_Group_free(&last));
    }
    MPI_CHECK(MPI_Group_free(&world));
}

/* ---- session_init ------------------------------------------------------ */

static void case_session_init(void)
{
    MPI_Session session;
    char text[MPI_MAX_ERROR_STRING] = "success";
    int length = 0;
    int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session);
    if (rc == MPI_SUCCESS)
        MPI_CHECK(MPI_Session_finalize(&session));
    else
        MPI_Error_string(rc, text, &length);
    if (world_rank == 0) {
        printf("SESSION %s\n", text);
        fflush(stdout);
    }
}

/* ---- dup_copy_error ---------------------------------------------------- */

static int copy_fails(MPI_Comm comm, int keyval, void *extra, void *in,
                      void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

/* MPICH's attr/attrerr: a failing attribute copy callback fails the dup,
 * which must then give MPI_COMM_NULL (MPI 4.1 section 7.7.2). */
static void case_dup_copy_error(void)
{
    MPI_Comm dup = MPI_COMM_NULL, copy = MPI_COMM_WORLD;
    int keyval;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_create_keyval(copy_fails, MPI_COMM_NULL_DELETE_FN,
                                     &keyval, NULL));
    MPI_CHECK(MPI_Comm_set_attr(dup, keyval, &world_rank));
    int rc = MPI_Comm_dup(dup, &copy);
    if (rc == MPI_SUCCESS || copy != MPI_COMM_NULL)
        fail("MPI_Comm_dup with a failing copy callback: rc %d, %s", rc,
             copy == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator");
    MPI_CHECK(MPI_Comm_delete_attr(dup, keyval));
    MPI_CHECK(MPI_Comm_free_keyval(&keyval));
    MPI_CHECK(MPI_Comm_free(&dup));
}

/* ---- large_local ------------------------------------------------------- */

static void case_large_local(void)
{
    /* 2^31 + 4096 bytes as 2^29 + 1024 ints. */
    const MPI_Count ints = ((MPI_Count)1 << 29) + 1024;
    if (world_size < 2 || world_rank > 1)
        return;
    int *buf = xmalloc((size_t)ints * sizeof *buf);
    MPI_Status st;
    if (world_rank == 0) {
        for (MPI_Count i = 0; i < ints; i++)
            buf[i] = (int)(i * 2654435761u);
        MPI_CHECK(MPI_Send(buf, (int)ints, MPI_INT, 1, 95, MPI_COMM_WORLD));
    } else {
        memset(buf, 0, (size_t)ints * sizeof *buf);
        MPI_CHECK(
            MPI_Recv(buf, (int)ints, MPI_INT, 0, 95, MPI_COMM_WORLD, &st));
        MPI_Count count = -1;
        MPI_CHECK(MPI_Get_count_c(&st, MPI_INT, &count));
        if (count != ints || st.MPI_SOURCE != 0 || st.MPI_TAG != 95)
            fail("status: count %lld source %d tag %d", (long long)count,
                 st.MPI_SOURCE, st.MPI_TAG);
        for (MPI_Count i = 0; i < ints; i++)
            if (buf[i] != (int)(i * 2654435761u))
                fail("int %lld differs", (long long)i);
    }
    free(buf);
}

/* ---- driver ------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*run)(void);
    int by_default;
} cases[] = {
    {"type_free_pending", case_type_free_pending, 1},
    {"bottom", case_bottom, 1},
    {"status_error", case_status_error, 1},
    {"io_waitall", case_io_waitall, 1},
    {"request_free", case_request_free, 1},
    {"request_get_status", case_request_get_status, 1},
    {"request_kinds", case_request_kinds, 1},
    {"group_calls", case_group_calls, 1},
    {"session_init", case_session_init, 1},
    {"dup_copy_error", case_dup_copy_error, 1},
    {"large_local", case_large_local, 0},
};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    last_rank = world_size - 1;
    if (world_size < 2) {
        printf("SKIP conform_check: needs 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    check_setup(world_rank, argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if ((cases[i].by_default || argc > 1) && begin("%s", cases[i].name)) {
            cases[i].run();
            passed();
        }
    MPI_Finalize();
    return 0;
}
